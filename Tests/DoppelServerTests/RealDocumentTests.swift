import DoppelCore
import DoppelOpenAPI
import DoppelTestSupport
import Foundation
import Testing

/// Real public API documents, pinned copies (see `Fixtures/openapi/real/README.md`):
/// what each promises about another, for every one of them.
@Suite("Real public documents")
struct RealDocumentTests {
    static let folder = repositoryRoot.appendingPathComponent("Tests/DoppelServerTests/Fixtures/openapi/real")

    /// Every document of the corpus, relative to its folder.
    static let documents: [String] = {
        let enumerator = FileManager.default.enumerator(atPath: folder.path)
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            if path.hasSuffix(".yaml") || path.hasSuffix(".json") { found.append(path) }
        }
        return found.sorted()
    }()

    @Test func theCorpusIsThere() {
        #expect(Self.documents.count >= 58, "\(Self.documents)")
    }

    /// `doppel lint` and serving agree on whether it can be served; one that
    /// serves imports to a contract that lints clean and answers every
    /// endpoint's sample request as the document does (status, type and
    /// bytes), and that contract exports to a document OpenAPIKit reads
    /// which serves again.
    @Test(arguments: documents)
    func servesImportsExportsAndRoundTrips(_ name: String) async throws {
        let file = Self.folder.appendingPathComponent(name).path
        // Each document costs seconds of parsing and answering, and the
        // cases run at once: the work runs off the tasks' shared threads
        // (`offThePool`), and what it found is recorded here.
        let (served, refusals) = try await offThePool { Self.lintAndLoad(file) }
        for refusal in refusals { Issue.record(Comment(rawValue: refusal)) }
        guard let served else { return }

        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-real-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let imported = scratch.appendingPathComponent("contract.yaml")
        let run = try await DoppelCommand.run(["import", file, "-o", imported.path])
        try #require(run.status == 0, "import failed: \(run.errors.prefix(600))")
        let problems = try await offThePool { try Self.roundTrip(served, imported: imported, scratch: scratch) }
        for problem in problems { Issue.record(Comment(rawValue: problem)) }
    }

    /// The document served (nil when it cannot be), and where `doppel lint` and serving disagree.
    static func lintAndLoad(_ file: String) -> (Contract?, [String]) {
        let lintErrors = ContractDocument.lint(file: file).filter { $0.severity == .error }
        do {
            let served = try ContractDocument.load(file: file)
            return (served, lintErrors.isEmpty ? [] : ["lint refused it, serving did not: \(lintErrors.prefix(3))"])
        } catch {
            return (nil, lintErrors.isEmpty ? ["serving refused it, lint did not: \(error.diagnostics.prefix(3))"] : [])
        }
    }

    /// What differs between the document served and its import (`imported`),
    /// and what its export written to `scratch` does not do.
    static func roundTrip(_ served: Contract, imported: URL, scratch: URL) throws -> [String] {
        var problems: [String] = []
        let contractErrors = ContractDocument.lint(file: imported.path).filter { $0.severity == .error }
        guard contractErrors.isEmpty else { return ["the import does not lint: \(contractErrors.prefix(3))"] }
        let contract = try ContractDocument.load(file: imported.path)

        let document = MockEngine(contract: served)
        let importedEngine = MockEngine(contract: contract)
        if contract.endpoints.count != served.endpoints.count {
            problems.append("the import has \(contract.endpoints.count) endpoints, the document \(served.endpoints.count)")
        }
        for endpoint in served.endpoints {
            let request = document.sampleRequest(for: endpoint)
            let expected = document.respond(to: request)
            let answered = importedEngine.respond(to: request)
            let what = "\(request.method) \(request.path)\(request.query.map { "?" + $0 } ?? "")"
            // A sample request reaches its own endpoint (not only two 404s compared).
            if expected.endpointID != endpoint.id {
                problems.append("\(what) reached \(expected.endpointID ?? "nothing"), not \(endpoint.id): \(expected.status)")
            }
            if answered.status != expected.status { problems.append("\(what): \(answered.status), the document \(expected.status)") }
            if answered.header("Content-Type") != expected.header("Content-Type") {
                problems.append(
                    "\(what): Content-Type \(answered.header("Content-Type") ?? "none"), the document \(expected.header("Content-Type") ?? "none")")
            }
            if answered.body != expected.body {
                problems.append(
                    "\(what): \(String(decoding: answered.body.prefix(300), as: UTF8.self)) / the document: \(String(decoding: expected.body.prefix(300), as: UTF8.self))"
                )
            }
        }

        let exported = OpenAPIExporter.document(for: contract)
        let text: String
        do {
            text = try OpenAPIDocumentWriter.write(exported, as: .yaml)
        } catch {
            return problems + ["the export is refused: \(error.description.prefix(600))"]
        }
        let written = scratch.appendingPathComponent("exported.yaml")
        try text.write(to: written, atomically: true, encoding: .utf8)
        let exportErrors = ContractDocument.lint(file: written.path).filter { $0.severity == .error }
        if !exportErrors.isEmpty { problems.append("the export does not lint: \(exportErrors.prefix(3))") }
        let again = try ContractDocument.load(file: written.path)
        if again.endpoints.count != contract.endpoints.count {
            problems.append("the export serves \(again.endpoints.count) endpoints, the import \(contract.endpoints.count)")
        }
        return problems
    }
}
