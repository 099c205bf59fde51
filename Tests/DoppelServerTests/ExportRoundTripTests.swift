import DoppelCore
import DoppelOpenAPI
import DoppelTestSupport
import Foundation
import Testing

/// Serving a contract's export answers as serving the contract: each
/// response's example is its body as rendered for a sample request.
@Suite("Exports that round-trip")
struct ExportRoundTripTests {
    static let bundled = ["tales", "currency", "cleveroo", "imagen", "eknetwork-demo"]

    @Test(arguments: bundled)
    func theExportAnswersItsGETsWithTheContractsBodies(_ name: String) throws {
        _ = try compare(name)
    }

    /// An export is the same every time: sample bodies render `uuid()` from a fixed sequence and the clock at a fixed instant.
    @Test(arguments: bundled)
    func anExportIsTheSameEveryTime(_ name: String) throws {
        let contract = try ContractLoader.load(file: repositoryRoot.appendingPathComponent("contracts/\(name).yaml").path)
        #expect(OpenAPIExporter.document(for: contract) == OpenAPIExporter.document(for: contract))
    }

    /// The comparison is not empty: the bundled contracts answer several of their GETs' sample requests with a 2xx.
    @Test func theRoundTripComparesRealAnswers() throws {
        let compared = try Self.bundled.map(compare).reduce(0, +)
        #expect(compared >= 5, "only \(compared) GETs compared")
    }

    /// Endpoints of one method and path (currency's `GET /rates`: one rate
    /// when a target is given, all rates otherwise) are one operation with
    /// every variant in it, not the first alone.
    @Test func variantsOfOneMethodAndPathAreOneOperationWithEveryVariant() throws {
        let contract = try ContractLoader.load(file: repositoryRoot.appendingPathComponent("contracts/currency.yaml").path)
        let operation = try #require(OpenAPIExporter.document(for: contract)["paths"]?["/rates"]?["get"])
        let description = operation["description"]?.stringValue ?? ""
        #expect(
            description.contains("`rate-pair` (when `query.target != null`)") && description.contains("`rates`: All exchange rates"), "\(description)"
        )
        #expect(operation["parameters"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["base", "target"])
        #expect(operation["parameters"]?.arrayValue?.allSatisfy { $0["required"] == nil } == true)
        let examples = try #require(operation["responses"]?["200"]?["content"]?["application/json"]?["examples"]?.objectValue)
        #expect(examples.keys == ["rate-pair-1", "rates-1"])
        #expect(examples["rate-pair-1"]?["value"]?["target"] == "EUR")
        #expect(examples["rates-1"]?["value"]?["rates"]?["EUR"] != nil)
        #expect(operation["responses"]?["200"]?["content"]?["application/json"]?["schema"]?["anyOf"]?.arrayValue?.count == 2)
    }

    /// Compares the contract's and its export's answers to each GET's sample request; returns how many were compared.
    private func compare(_ name: String) throws -> Int {
        let file = repositoryRoot.appendingPathComponent("contracts/\(name).yaml").path
        let contract = try ContractLoader.load(file: file)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let exported = folder.appendingPathComponent("\(name).json")
        try OpenAPIDocumentWriter.write(OpenAPIExporter.document(for: contract), as: .json).write(to: exported, atomically: true, encoding: .utf8)
        let served = try ContractDocument.load(file: exported.path)
        #expect(served.warnings.isEmpty, "\(served.warnings.map(\.description))")

        // The contract at the instant the export was rendered at.
        let original = MockEngine(contract: contract, clock: { MockEngine.sampleInstant })
        let mock = MockEngine(contract: served)
        var compared = 0
        // Endpoints that share a method and path (told apart by `match`) are one
        // operation in OpenAPI, which serves its first example; each variant's
        // answer is among its examples, served when a request prefers it.
        let shared = Set(Dictionary(grouping: contract.endpoints, by: \.signature).filter { $0.value.count > 1 }.keys)
        let document = OpenAPIExporter.document(for: contract)
        for endpoint in contract.endpoints where endpoint.method == "GET" {
            // The same request to both, each in a fresh session: where the contract answers it 2xx, the export's mock answers alike.
            let request = original.sampleRequest(for: endpoint, session: "round-trip")
            let decision = original.decide(request)
            original.complete(decision, durationMicros: 0)
            switch decision.delivery {
            case .whole, .stream: break
            case .fault, .forward: continue
            }
            // A stream's example is its parts together.
            let expected = decision.responseInFull
            let expectedBody = expected.body
            guard (200...299).contains(expected.status) else { continue }
            var asked = request
            if shared.contains(endpoint.signature) {
                let path = OpenAPIExporter.relativePath(endpoint.path.template, basePath: contract.basePath)
                let examples =
                    document["paths"]?[path]?["get"]?["responses"]?[String(expected.status)]?["content"]?
                    .objectValue?.values.first?["examples"]?.objectValue ?? JSONObject()
                let value = try? JSONReader.parse(expectedBody)
                let name = examples.pairs.first { $0.value["value"] == value }?.key
                #expect(name != nil, "\(name) \(endpoint.id): its answer is not among the export's examples \(examples.keys)")
                guard let name else { continue }
                asked = RecordedRequest(
                    method: request.method, path: request.path, query: request.query,
                    headers: request.headers + [(name: "Prefer", value: "example=\(name)")], body: request.body)
            }
            let answer = mock.respond(to: asked)
            #expect(answer.status == expected.status, "\(name) \(endpoint.id): \(answer.status), not \(expected.status)")
            #expect(
                answer.header("content-type").map(MediaTypes.essence) == expected.header("content-type").map(MediaTypes.essence),
                "\(name) \(endpoint.id): Content-Type \(answer.header("content-type") ?? "none")")
            let same = (try? JSONReader.parse(answer.body)).map { $0 == (try? JSONReader.parse(expectedBody)) } ?? (answer.body == expectedBody)
            #expect(
                same,
                "\(name) \(endpoint.id): \(String(decoding: answer.body, as: UTF8.self)) is not \(String(decoding: expectedBody, as: UTF8.self))")
            compared += 1
        }
        return compared
    }
}
