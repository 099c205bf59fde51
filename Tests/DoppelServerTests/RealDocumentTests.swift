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
        let lintErrors = ContractDocument.lint(file: file).filter { $0.severity == .error }
        let served: Contract
        do {
            served = try ContractDocument.load(file: file)
        } catch {
            #expect(!lintErrors.isEmpty, "serving refused it, lint did not: \(error.diagnostics.prefix(3))")
            return
        }
        #expect(lintErrors.isEmpty, "lint refused it, serving did not: \(lintErrors.prefix(3))")

        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-real-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let imported = scratch.appendingPathComponent("contract.yaml")
        let run = try await DoppelCommand.run(["import", file, "-o", imported.path])
        try #require(run.status == 0, "import failed: \(run.errors.prefix(600))")
        let contractErrors = ContractDocument.lint(file: imported.path).filter { $0.severity == .error }
        try #require(contractErrors.isEmpty, "the import does not lint: \(contractErrors.prefix(3))")
        let contract = try ContractDocument.load(file: imported.path)

        let document = MockEngine(contract: served)
        let importedEngine = MockEngine(contract: contract)
        #expect(contract.endpoints.count == served.endpoints.count)
        for endpoint in served.endpoints {
            let request = document.sampleRequest(for: endpoint)
            let expected = document.respond(to: request)
            let answered = importedEngine.respond(to: request)
            let what = "\(request.method) \(request.path)\(request.query.map { "?" + $0 } ?? "")"
            // A sample request reaches its own endpoint (not only two 404s compared).
            #expect(expected.endpointID == endpoint.id, "\(what) reached \(expected.endpointID ?? "nothing"), not \(endpoint.id): \(expected.status)")
            #expect(answered.status == expected.status, "\(what): \(answered.status), the document \(expected.status)")
            #expect(answered.header("Content-Type") == expected.header("Content-Type"), "\(what)")
            #expect(
                answered.body == expected.body,
                "\(what): \(String(decoding: answered.body.prefix(300), as: UTF8.self)) / the document: \(String(decoding: expected.body.prefix(300), as: UTF8.self))"
            )
        }

        let exported = OpenAPIExporter.document(for: contract)
        let text: String
        do {
            text = try OpenAPIDocumentWriter.write(exported, as: .yaml)
        } catch {
            Issue.record("the export is refused: \(error.description.prefix(600))")
            return
        }
        let written = scratch.appendingPathComponent("exported.yaml")
        try text.write(to: written, atomically: true, encoding: .utf8)
        let exportErrors = ContractDocument.lint(file: written.path).filter { $0.severity == .error }
        #expect(exportErrors.isEmpty, "the export does not lint: \(exportErrors.prefix(3))")
        let again = try ContractDocument.load(file: written.path)
        #expect(again.endpoints.count == contract.endpoints.count)
    }
}
