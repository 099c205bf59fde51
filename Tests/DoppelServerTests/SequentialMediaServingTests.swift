import DoppelCore
import DoppelOpenAPI
import DoppelRunner
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

/// OpenAPI 3.2's sequential media types (`itemSchema`), end to end over
/// loopback: served item by item, a body read item by item, `doppel verify`
/// holding a provider's items to the item schema, and exported again.
@Suite("Sequential media served")
struct SequentialMediaServingTests {
    static let document = """
        openapi: 3.2.0
        info: {title: streams, version: '1'}
        paths:
          /logs:
            get:
              responses:
                '200':
                  description: log lines
                  content:
                    application/jsonl:
                      itemSchema: {type: object, required: [level, message], properties: {level: {type: string, enum: [info, warn]}, message: {type: string, example: started}}}
          /feed:
            get:
              responses:
                '200':
                  description: events
                  content:
                    text/event-stream:
                      itemSchema:
                        type: object
                        required: [data]
                        properties: {event: {type: string}, data: {type: string, contentMediaType: application/json}, id: {type: string}}
                      examples:
                        two:
                          dataValue:
                            - {event: tick, data: '{"n":1}', id: '1'}
                            - {event: tick, data: '{"n":2}', id: '2'}
          /numbers:
            get:
              responses:
                '200':
                  description: a JSON text sequence, given as sent
                  content:
                    application/json-seq:
                      itemSchema: {type: integer}
                      examples:
                        sent: {serializedValue: "\\x1E1\\n\\x1E2\\n"}
                    multipart/mixed:
                      itemSchema: {type: object, properties: {a: {type: integer}}}
          /ingest:
            post:
              requestBody:
                required: true
                content:
                  application/x-ndjson:
                    itemSchema: {type: object, required: [id], properties: {id: {type: integer}}}
              responses:
                '204': {description: taken}
        """

    static func withDocument<T>(_ text: String = document, _ body: (String) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-streams-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("api.yaml").path
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return try await body(file)
    }

    @Test func eachMediaTypeIsServedItemByItem() async throws {
        try await Self.withDocument { file in
            #expect(ContractDocument.lint(file: file).filter { $0.severity == .error }.isEmpty)
            try await DoppelTestServer.with(contract: file) { server in
                let client = TestClient(base: server.baseURL)
                let logs = try await client.send("GET", "/logs", token: nil)
                #expect(logs.status == 200 && logs.header("Content-Type") == "application/jsonl")
                #expect(
                    try SequentialMedia.jsonLines.read([UInt8](logs.body)) == Array(repeating: ["level": "info", "message": "started"], count: 3))
                let feed = try await client.send("GET", "/feed", token: nil)
                #expect(feed.header("Content-Type") == "text/event-stream")
                #expect(
                    String(decoding: feed.body, as: UTF8.self) == "event: tick\nid: 1\ndata: {\"n\":1}\n\nevent: tick\nid: 2\ndata: {\"n\":2}\n\n")
                let numbers = try await client.send("GET", "/numbers", token: nil)
                #expect([UInt8](numbers.body) == Array("\u{1E}1\n\u{1E}2\n".utf8) && numbers.header("Content-Type") == "application/json-seq")
                let parts = try await client.send("GET", "/numbers", token: nil, headers: ["Accept": "multipart/mixed"])
                let type = try #require(parts.header("Content-Type"))
                #expect(type.hasPrefix("multipart/mixed; boundary="))
                #expect(try SequentialMedia(type)?.read([UInt8](parts.body)) == Array(repeating: ["a": 0], count: 3))
                let ndjson = ["Content-Type": "application/x-ndjson"]
                #expect(
                    try await client.send("POST", "/ingest", token: nil, headers: ndjson, body: Data("{\"id\":1}\n{\"id\":2}\n".utf8)).status == 204)
                let refused = try await client.send("POST", "/ingest", token: nil, headers: ndjson, body: Data("{\"id\":1}\n{\"id\":\"two\"}\n".utf8))
                #expect(refused.status == 422 && refused.json?["errors"] == [["pointer": "/body/1/id", "message": "expected integer, got string"]])
            }
        }
    }

    @Test func verifyHoldsAProvidersItemsToTheItemSchema() async throws {
        try await Self.withDocument { file in
            let contract = try ContractDocument.load(file: file)
            // The document served by Doppel passes every check, an item of the wrong type sent included.
            try await DoppelTestServer.with(contract: file) { server in
                let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: .inTheSuite).run()
                #expect(report.failed == 0 && report.notReached == 0, "\(report.checks.flatMap(VerifyReport.lines))")
                #expect(
                    report.checks.contains {
                        $0.endpointID == "post-ingest" && $0.outcome == .passed
                            && VerifyReport.lines(for: $0).joined().contains("an item of the wrong type")
                    },
                    "\(report.checks.flatMap(VerifyReport.lines))")
            }
            // A provider whose second log line breaks the item schema, and that takes any body.
            let provider = URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent("provider.yaml").path
            try """
            doppel: 1
            endpoints:
              logs: { request: GET /logs, responses: [ { content_type: application/jsonl, items: [ { level: info, message: ok }, { level: debug } ] } ] }
              feed: { request: GET /feed, responses: [ { events: [ { event: tick, data: x } ] } ] }
              numbers: { request: GET /numbers, responses: [ { content_type: application/json-seq, text: "1\n2\n" } ] }
              ingest: { request: POST /ingest, responses: [ { status: 204 } ] }
            """.write(toFile: provider, atomically: true, encoding: .utf8)
            try await DoppelTestServer.with(contract: provider) { server in
                let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: .inTheSuite).run()
                func said(_ endpoint: String) -> String {
                    report.checks.filter { $0.endpointID == endpoint && $0.outcome == .failed }.flatMap(VerifyReport.lines).joined(separator: "\n")
                }
                #expect(said("get-logs").contains("/items/1/level: must be one of"), "\(said("get-logs"))")
                #expect(said("get-logs").contains("/items/1/message: is required"), "\(said("get-logs"))")
                #expect(
                    said("get-numbers").contains(
                        "the body cannot be read item by item: a JSON text sequence must start each item with a record separator"),
                    "\(said("get-numbers"))")
                #expect(said("post-ingest").contains("an item of the wrong type"), "\(said("post-ingest"))")
                #expect(said("get-feed").isEmpty, "\(said("get-feed"))")
            }
        }
    }

    @Test func theImportExportsAsThreeTwoWithItsItemSchemas() async throws {
        try await Self.withDocument { file in
            let contract = try ContractDocument.load(file: file)
            let exported = OpenAPIExporter.document(for: contract)
            #expect(exported["openapi"] == "3.2.0")
            let logs = try #require(exported["paths"]?["/logs"]?["get"]?["responses"]?["200"]?["content"]?["application/jsonl"])
            #expect(logs["itemSchema"]?["required"] == ["level", "message"] && logs["schema"] == nil)
            let numbers = try #require(exported["paths"]?["/numbers"]?["get"]?["responses"]?["200"]?["content"]?["application/json-seq"])
            #expect(numbers["examples"]?["sent"]?["serializedValue"] == "\u{1E}1\n\u{1E}2\n")
            // OpenAPIKit reads and validates it (the writer's check), and it serves the same items again.
            let text = try OpenAPIDocumentWriter.write(exported, as: .yaml)
            try await Self.withDocument(text) { again in
                try await DoppelTestServer.with(contract: again) { server in
                    let numbers = try await TestClient(base: server.baseURL).send("GET", "/numbers", token: nil)
                    #expect([UInt8](numbers.body) == Array("\u{1E}1\n\u{1E}2\n".utf8))
                }
            }
        }
    }
}
