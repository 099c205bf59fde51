import DoppelCore
import DoppelTesting
import Foundation
import Testing

/// Real documents' problems from minimal reproductions, served over loopback.
@Suite("Reproductions served")
struct ReproductionServingTests {
    /// Serves `text` as `api.yaml` from a temporary folder.
    static func serving(_ text: String, _ body: (TestClient) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-served-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("api.yaml")
        try text.write(to: file, atomically: true, encoding: .utf8)
        try await DoppelTestServer.with(contract: file.path) { server in
            try await body(TestClient(base: server.baseURL))
        }
    }

    /// `accept.yaml`: q-values were ignored; the media type `Accept` prefers is answered (RFC 9110 §12.5.1).
    @Test func acceptChoosesByQuality() async throws {
        try await Self.serving("""
            openapi: 3.0.2
            info: {title: accept negotiation, version: '1'}
            paths:
              /todos:
                get:
                  responses:
                    '200':
                      description: Get Todo Items
                      content:
                        'application/json':
                          example: hello
                        'application/xml':
                          example: <project><foo>1</foo><bar>2</bar></project>
            """) { client in
            func answered(_ accept: String?) async throws -> String? {
                let answer = try await client.send("GET", "/todos", token: nil, headers: accept.map { ["Accept": $0] } ?? [:])
                return answer.status == 200 ? answer.header("Content-Type") : "\(answer.status)"
            }
            let got1 = try await answered("application/xml;q=0.9, application/json;q=0.1")
            #expect(got1 == "application/xml")
            let got2 = try await answered("application/json;q=0.5, application/xml;q=0.5")
            #expect(got2 == "application/json", "a tie keeps the first documented")
            let got3 = try await answered("application/json;q=0, application/xml")
            #expect(got3 == "application/xml")
            let got4 = try await answered("*/*;q=0.1, application/xml")
            #expect(got4 == "application/xml")
            let got5 = try await answered("application/*;q=0.2, application/json;q=0.1")
            #expect(got5 == "application/xml", "the most specific range gives json its quality")
            let got6 = try await answered("text/html")
            #expect(got6 == "406")
            let got7 = try await answered(nil)
            #expect(got7 == "application/json")
        }
    }

    /// `encpath.yaml`: a `%` in a path's literal (no escape) was not matched by `%25`.
    @Test func aPercentSignInAPathIsMatchedEncoded() async throws {
        try await Self.serving("""
            openapi: 3.0.2
            info: {title: encoded path, version: '1'}
            paths:
              /test path > with | unsafe % characters:
                get:
                  responses:
                    '200': { description: ok, content: { application/json: { example: "ok" } } }
              /files/my report:
                get:
                  responses:
                    '200': { description: ok, content: { application/json: { example: "report" } } }
              /done%20already:
                get:
                  responses:
                    '200': { description: ok, content: { application/json: { example: "escaped" } } }
            """) { client in
            let got8 = try await client.send("GET", "/test%20path%20%3E%20with%20%7C%20unsafe%20%25%20characters", token: nil).json
            #expect(got8 == "ok")
            let got9 = try await client.send("GET", "/files/my%20report", token: nil).json
            #expect(got9 == "report")
            let got10 = try await client.send("GET", "/done%20already", token: nil).json
            #expect(got10 == "escaped")
        }
    }

    /// `bigint.yaml`: integers beyond 64 bits in the query were refused while JSON bodies took them.
    @Test func integersBeyondSixtyFourBitsAreIntegers() async throws {
        try await Self.serving("""
            openapi: 3.1.0
            info: {title: big integers, version: '1'}
            paths:
              /echo:
                get:
                  parameters:
                    - {name: n, in: query, schema: {type: integer, minimum: 1}}
                  responses:
                    '200': { description: ok, content: { application/json: { example: {ok: true} } } }
            """) { client in
            let got11 = try await client.send("GET", "/echo?n=123456789012345678901234567890", token: nil).status
            #expect(got11 == 200)
            let got12 = try await client.send("GET", "/echo?n=5", token: nil).status
            #expect(got12 == 200)
            let negative = try await client.send("GET", "/echo?n=-123456789012345678901234567890", token: nil)
            #expect(negative.status == 422)
            #expect(negative.json?["errors"]?.arrayValue?.first?["message"]?.stringValue?.hasPrefix("must be at least 1") == true, "\(negative.json ?? .null)")
            let got13 = try await client.send("GET", "/echo?n=12345678901234567890.5", token: nil).status
            #expect(got13 == 422)
        }
    }

    /// A boolean `required: true` inside a property (a Swagger 2.0-era habit) was fatal; it is a warning, and the document serves.
    @Test func aBooleanRequiredInAPropertyIsAWarning() async throws {
        try await Self.serving("""
            openapi: 3.0.3
            info: {title: required true, version: '1'}
            paths:
              /pets:
                post:
                  requestBody:
                    content:
                      application/json:
                        schema:
                          type: object
                          properties:
                            name: {type: string, required: true}
                  responses:
                    '200': { description: ok, content: { application/json: { example: {ok: true} } } }
            """) { client in
            let got14 = try await client.send("POST", "/pets", json: ["name": "Rex"], token: nil).status
            #expect(got14 == 200)
            let got15 = try await client.send("POST", "/pets", json: ["name": 1], token: nil).status
            #expect(got15 == 422)
        }
    }
}
