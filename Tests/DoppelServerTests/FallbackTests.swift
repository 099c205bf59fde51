import DoppelCore
import DoppelServer
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
