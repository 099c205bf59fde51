import DoppelCore
import DoppelServer
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

/// `fallbacks:`: the contract's own bodies for each of Doppel's own answers.
@Suite("Fallbacks over loopback")
struct FallbackTests {
    static let contract = """
        doppel: 1
        responses:
          bad-request:
            status: 400
            body: { detail: "{{ problem.detail }}" }
        fallbacks:
          not_found: { body: { detail: Not Found } }
          method_not_allowed: { body: { detail: Method Not Allowed, allowed: "{{ problem.allowed }}" } }
          malformed_body: bad-request
          unsupported_media_type: { status: 400, body: { detail: "Unsupported media type" } }
          payload_too_large: { body: { detail: "Request entity too large" } }
          validation_failed:
            status: 400
            body: { detail: "{{ errors[0].message }}", status_was: "{{ problem.status }}" }
        endpoints:
          create:
            request: POST /things
            body: { schema: { type: object, required: [name], properties: { name: { type: string } } } }
            responses: [ { status: 201, body: { created: "{{ body.name }}" } } ]
          strict:
            request: POST /strict
            body: { schema: { type: object, required: [name] } }
            on_invalid: { status: 422, body: { own: true } }
            responses: [ { status: 201 } ]
        """

    @Test func eachOfDoppelsOwnAnswersGivesTheContractsBody() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-fallbacks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("api.yaml").path
        try Self.contract.write(toFile: file, atomically: true, encoding: .utf8)
        var configuration = ServerConfiguration.testing
        configuration.maxBodySize = 1_024

        try await DoppelTestServer.with(contract: file, configuration: configuration) { server in
            let client = TestClient(base: server.baseURL)
            let missing = try await client.send("GET", "/nowhere")
            #expect(missing.status == 404)
            #expect(missing.header("content-type") == "application/json")
            #expect(missing.json == ["detail": "Not Found"])

            let wrongMethod = try await client.send("DELETE", "/things")
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.json == ["detail": "Method Not Allowed", "allowed": ["POST"]])
            #expect(wrongMethod.header("allow") == "POST")

            let malformed = try await client.send("POST", "/things", headers: ["Content-Type": "application/json"], body: Data("{\"name\": ".utf8))
            #expect(malformed.status == 400)
            #expect(malformed.json?["detail"]?.stringValue?.hasPrefix("The request body is not valid JSON") == true)

            let wrongType = try await client.send("POST", "/things", headers: ["Content-Type": "text/plain"], body: Data("name".utf8))
            #expect(wrongType.status == 400)
            #expect(wrongType.json == ["detail": "Unsupported media type"])

            let large = try await client.send("POST", "/things", json: ["name": .string(String(repeating: "x", count: 4_096))])
            #expect(large.status == 413)
            #expect(large.json == ["detail": "Request entity too large"])

            let invalid = try await client.send("POST", "/things", json: ["name": 7])
            #expect(invalid.status == 400)
            #expect(invalid.json?["status_was"] == 422)
            #expect(invalid.json?["detail"]?.stringValue?.isEmpty == false)

            // An endpoint's own on_invalid comes first.
            let own = try await client.send("POST", "/strict", json: [:])
            #expect(own.status == 422)
            #expect(own.json == ["own": true])

            // And the server keeps serving.
            let created = try await client.send("POST", "/things", json: ["name": "ok"])
            #expect(created.status == 201)
            #expect(created.json == ["created": "ok"])
        }
    }
}

@Suite("Sequences over loopback")
struct SequenceResetTests {
    @Test func anAdminCallStartsAnEndpointsSequenceOver() async throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                endpoints:
                  flaky:
                    request: GET /flaky
                    responses:
                      - sequence: [ { status: 503 }, { status: 503 }, { status: 200 } ]
                  other:
                    request: GET /other
                    responses:
                      - sequence: [ { status: 500 }, { status: 204 } ]
                """, file: "s.yaml")
        try await DoppelTestServer.with(engine: MockEngine(contract: contract)) { server in
            let client = TestClient(base: server.baseURL)
            func statuses(_ path: String, _ count: Int) async throws -> [Int] {
                var result: [Int] = []
                for _ in 0..<count { result.append(try await client.send("GET", path, session: "s").status) }
                return result
            }
            #expect(try await statuses("/flaky", 3) == [503, 503, 200])
            #expect(try await statuses("/other", 2) == [500, 204])
            let reset = try await client.send("DELETE", "/__doppel/sequences?session=s&endpoint=flaky")
            #expect(reset.json == ["session": "s", "endpoint": "flaky", "reset": 1])
            #expect(try await statuses("/flaky", 3) == [503, 503, 200])
            // Only that endpoint's: the other stays where it was.
            #expect(try await statuses("/other", 1) == [204])
            #expect(try await client.send("DELETE", "/__doppel/sequences?session=s").json?["reset"] == 2)
            #expect(try await statuses("/other", 1) == [500])
            let unknown = try await client.send("DELETE", "/__doppel/sequences?session=s&endpoint=flakey")
            #expect(unknown.status == 400)
            #expect(unknown.json?["detail"]?.stringValue?.contains("did you mean 'flaky'?") == true)
        }
    }
}
