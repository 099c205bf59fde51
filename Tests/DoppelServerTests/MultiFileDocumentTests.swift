import DoppelCore
import DoppelOpenAPI
import DoppelRunner
import DoppelTestSupport
import Foundation
import Testing

/// OpenAPI documents split over files (`$ref: schemas/pet.yaml`,
/// `common.yaml#/Limit`) serve as one; references that leave the
/// document's folder, name a URL, loop or multiply are refused, each with
/// its place.
@Suite("Documents in several files")
struct MultiFileDocumentTests {
    static let store = repositoryRoot.appendingPathComponent("Tests/DoppelServerTests/Fixtures/openapi/corpus/multi-file/store.yaml").path

    @Test func aDocumentInPartsServesAsOne() async throws {
        #expect(ContractDocument.lint(file: Self.store).isEmpty)
        // The files it read are watched with it.
        let contract = try ContractDocument.load(file: Self.store)
        #expect(
            Set(contract.bodyFiles.map { URL(fileURLWithPath: $0).lastPathComponent }) == [
                "pet.yaml", "owners.yaml", "parameters.yaml", "responses.yaml", "error.yaml",
            ])

        try await DoppelTestServer.with(contract: Self.store) { server in
            let client = TestClient(base: server.baseURL)
            // A path item, a parameter, a response and a schema from other files.
            let pets = try await client.send("GET", "/pets", token: nil)
            #expect(pets.status == 200)
            #expect(pets.json == [["id": 1, "name": "Rex", "tag": "dog", "children": [["id": 2, "name": "Pup", "children": []]]]])
            #expect(try await client.send("GET", "/pets?limit=500", token: nil).status == 422)
            #expect(try await client.send("GET", "/pets/1", token: nil).json == ["id": 1, "name": "Rex", "tag": "dog", "children": []])
            #expect(try await client.send("GET", "/pets/abc", token: nil).status == 422)
            // The recursive schema checks a grandchild; the document's own 400 answers it.
            let invalid = try await client.send(
                "POST", "/owners", json: ["name": "Ada", "pets": [["id": 1, "name": "x", "children": [["id": 0, "name": "y"]]]]], token: nil)
            #expect(invalid.status == 400 && invalid.json == ["code": "invalid", "message": "An owner needs a name"])
            let made = try await client.send(
                "POST", "/owners", json: ["name": "Ada", "pets": [["id": 1, "name": "x", "children": [["id": 3, "name": "y"]]]]], token: nil)
            #expect(made.status == 201)
        }

        // Its export is one document: every reference inside it.
        let exported = try await DoppelCommand.run(["export", Self.store])
        #expect(exported.status == 0)
        let refs = exported.output.split(separator: "\n").filter { $0.contains("$ref") }
        #expect(!refs.isEmpty && refs.allSatisfy { $0.contains("'#/components/") }, "\(refs)")
        #expect(exported.output.contains("    Pet:\n"))
    }

    @Test func aMistakeInAReferencedFileIsReportedInThatFile() throws {
        let folder = try Self.folder([
            "api.yaml": Self.document(
                paths: """
                      /things:
                        get:
                          responses:
                            "200": { $ref: "parts/things.yaml#/Listed" }
                    """),
            "parts/things.yaml": """
            Listed:
              description: Things
              content:
                application/json:
                  schema: { type: object, properties: { count: { type: integer } } }
                  example: { count: many }
            """,
        ])
        defer { try? FileManager.default.removeItem(at: folder) }
        let diagnostics = ContractDocument.lint(file: folder.appendingPathComponent("api.yaml").path).map(\.description)
        #expect(diagnostics.count == 1)
        #expect(diagnostics.first?.hasPrefix(folder.appendingPathComponent("parts/things.yaml").path + ":6:") == true, "\(diagnostics)")
        #expect(diagnostics.first?.contains("warning: ") == true)
    }

    /// A reference Doppel refuses: the files, the document's path items, and
    /// what the error says (after the document's name and the place).
    struct Refused: CustomTestStringConvertible, Sendable {
        let name: String
        let paths: String
        var files: [String: String] = [:]
        let message: String
        var testDescription: String { name }
    }

    static let refused: [Refused] = [
        Refused(
            name: "outside the folder", paths: parameter("../outside.yaml#/P"),
            message:
                "api.yaml:7:17: error: $ref '../outside.yaml#/P' resolves outside the document's folder; Doppel reads only files beside the document or below it"
        ),
        Refused(
            name: "a link out of the folder", paths: parameter("link.yaml#/P"),
            message:
                "api.yaml:7:17: error: $ref 'link.yaml#/P' resolves outside the document's folder; Doppel reads only files beside the document or below it"
        ),
        Refused(
            name: "an absolute path", paths: parameter("/etc/passwd"),
            message:
                "api.yaml:7:17: error: $ref '/etc/passwd' resolves outside the document's folder; Doppel reads only files beside the document or below it"
        ),
        Refused(
            name: "a URL", paths: parameter("https://example.com/p.yaml#/P"),
            message:
                "api.yaml:7:17: error: $ref 'https://example.com/p.yaml#/P' is a URL; Doppel reads references to files in the document's folder, not from the network"
        ),
        Refused(
            name: "a missing file", paths: parameter("missing.yaml#/P"),
            message: "api.yaml:7:17: error: $ref 'missing.yaml#/P' cannot be read: no such file"),
        Refused(
            name: "a pointer to nothing", paths: parameter("p.yaml#/Nope"),
            files: ["p.yaml": "P: { name: a, in: query, schema: { type: string } }\n"],
            message: "api.yaml:7:17: error: unresolved $ref 'p.yaml#/Nope': 'p.yaml' has nothing at '/Nope'"),
        Refused(
            name: "a fragment that is not a pointer", paths: parameter("p.yaml#P"),
            files: ["p.yaml": "P: { name: a, in: query, schema: { type: string } }\n"],
            message: "api.yaml:7:17: error: $ref 'p.yaml#P' has a fragment that is not a JSON pointer (it must start with '/')"),
        Refused(
            name: "a cycle", paths: parameter("a.yaml#/P"), files: ["a.yaml": "P: { $ref: 'b.yaml#/Q' }\n", "b.yaml": "Q: { $ref: 'a.yaml#/P' }\n"],
            message: "b.yaml:1:12: error: $ref 'a.yaml#/P' leads back to itself through other references"),
        Refused(
            name: "a file that does not parse", paths: parameter("p.yaml#/P"), files: ["p.yaml": "P: [unclosed\n"],
            message: "p.yaml:2:1: error: "),
    ]

    @Test(arguments: refused)
    func aReferenceThatCannotBeFollowedIsAnError(_ example: Refused) throws {
        var files = example.files
        files["api.yaml"] = Self.document(paths: example.paths)
        let folder = try Self.folder(files)
        defer { try? FileManager.default.removeItem(at: folder) }
        let outside = folder.deletingLastPathComponent().appendingPathComponent("outside-\(UUID().uuidString).yaml")
        try "P: { name: a, in: query, schema: { type: string } }\n".write(to: outside, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: outside) }
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("link.yaml"), withDestinationURL: outside)

        let diagnostics = ContractDocument.lint(file: folder.appendingPathComponent("api.yaml").path).map(\.description)
        #expect(diagnostics.count == 1, "\(diagnostics)")
        #expect(diagnostics.first?.hasPrefix(folder.path + "/" + example.message) == true, "\(diagnostics)")
    }

    /// Seconds of reading in a debug build: each lint on a thread of its own (`offThePool`).
    @Test func referencesThatMultiplyOrHoldTooMuchAreRefusedAndManyFilesRead() async throws {
        // 40 references to a file of 40 references to a file of 1,000 values: 1.6 million nodes.
        let big = (0..<1_000).map { "k\($0): v" }.joined(separator: "\n") + "\n"
        let middle = "M:\n" + (0..<40).map { _ in "  - { $ref: 'big.yaml' }" }.joined(separator: "\n") + "\n"
        let many = "tags:\n" + (0..<40).map { _ in "  - { $ref: 'middle.yaml#/M' }" }.joined(separator: "\n") + "\n"
        let multiplied = try Self.folder(["api.yaml": Self.document(paths: "  {}", extra: many), "middle.yaml": middle, "big.yaml": big])
        defer { try? FileManager.default.removeItem(at: multiplied) }
        let first = try await offThePool { ContractDocument.lint(file: multiplied.appendingPathComponent("api.yaml").path).map(\.description) }
        #expect(first.count == 1 && first[0].contains("error: references to other files bring in more than 1000000 nodes"), "\(first)")

        // A document of 2,850 files (as real ones are) is read: files are bounded by what they hold, not by their count.
        let count = 2_850
        var files = [
            "api.yaml": Self.document(
                paths: "  /a:\n    get:\n      parameters:\n" + (0..<count).map { "        - $ref: 'parameters/p\($0).yaml'" }.joined(separator: "\n")
                    + "\n      responses: { '200': { description: ok } }")
        ]
        for index in 0..<count { files["parameters/p\(index).yaml"] = "{ name: p\(index), in: query, schema: { type: integer } }\n" }
        let crowded = try Self.folder(files)
        defer { try? FileManager.default.removeItem(at: crowded) }
        let (second, properties) = try await offThePool {
            (
                ContractDocument.lint(file: crowded.appendingPathComponent("api.yaml").path).map(\.description),
                try ContractDocument.load(file: crowded.appendingPathComponent("api.yaml").path, checkingWithOpenAPIKit: false)
                    .endpoints.first?.query?.properties.count
            )
        }
        #expect(second.isEmpty, "\(second.prefix(3))")
        #expect(properties == count)

        // Five files of 14 MiB, each within the bound of one: past 64 MiB together, the fifth is refused unread.
        let text = "note: '" + String(repeating: "a", count: 14 << 20) + "'\n"
        var heavy = [
            "api.yaml": Self.document(paths: "  {}", extra: "tags:\n" + (0..<5).map { "  - { $ref: 'h\($0).yaml' }" }.joined(separator: "\n") + "\n")
        ]
        for index in 0..<5 { heavy["h\(index).yaml"] = text }
        let weighty = try Self.folder(heavy)
        defer { try? FileManager.default.removeItem(at: weighty) }
        let third = try await offThePool { ContractDocument.lint(file: weighty.appendingPathComponent("api.yaml").path).map(\.description) }
        #expect(
            third.count == 1 && third[0].contains("error: the files the document references hold more than 64 MiB together"),
            "\(third.map { $0.prefix(300) })")
    }

    // MARK: Helpers

    static func parameter(_ ref: String) -> String {
        """
          /p:
            get:
              parameters:
                - $ref: "\(ref)"
              responses: { "204": { description: Done } }
        """
    }

    static func document(paths: String, extra: String = "") -> String {
        "openapi: 3.0.3\ninfo: { title: Parts, version: \"1\" }\npaths:\n" + paths + "\n" + extra
    }

    /// A fresh folder with the files written in it.
    static func folder(_ files: [String: String]) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("parts-\(UUID().uuidString)").resolvingSymlinksInPath()
        for (name, text) in files {
            let url = folder.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        return folder
    }
}
