import DoppelTesting
import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession
import TalesAPI
import Testing

/// The contract the generated client was generated from (by `doppel export`).
let talesContract = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("../../contracts/tales.yaml").standardized.path

/// Sends the bearer token and a session of its own on every request.
struct Credentials: ClientMiddleware {
    let session: String

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjJiOGMxZS03ZDRhLTRlNTktOWIxYy0yYTZmMGU4ZDRjNzEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCJ9.c2lnbmF0dXJl"
        request.headerFields[HTTPField.Name("Doppel-Session")!] = session
        return try await next(request, body, baseURL)
    }
}

func client(for server: DoppelTestServer, session: String) throws -> Client {
    try Client(
        serverURL: server.baseURL.appendingPathComponent("api/v1"),
        transport: URLSessionTransport(),
        middlewares: [Credentials(session: session)]
    )
}

@Suite("A client generated from the exported tales document")
struct TalesClientTests {
    @Test func theSixthGenerateDecodesAsTheTyped402WithLimitInfo() async throws {
        try await DoppelTestServer.with(contract: talesContract) { server in
            let client = try client(for: server, session: "limit-\(UUID().uuidString)")
            let created = try await client.create_hyphen_child(body: .json(.init(
                name: "Эмма", age_category: "5-7", gender: .female, interests: ["феи"])))
            let child = try created.ok.body.json
            let request = Components.Schemas.GenerateStoryRequest(language: .ru, child_id: child.id)

            for number in 1...5 {
                let story = try await client.generate_hyphen_story(body: .json(request))
                let generated = try story.ok.body.json
                #expect(generated.child.name == "Эмма", "generate \(number)")
                #expect(generated.story_length == 5)
            }
            let sixth = try await client.generate_hyphen_story(body: .json(request))
            guard case .code402(let refused) = sixth else {
                Issue.record("the sixth generate answered \(sixth), not the typed 402")
                return
            }
            let problem = try refused.body.json
            #expect(problem.error_code == "MONTHLY_LIMIT_EXCEEDED")
            let limit = try #require(problem.limit_info)
            #expect(limit.current_plan == "free")
            #expect(limit.monthly_limit == 5)
            #expect(limit.stories_used == 5)
            #expect(!limit.reset_date.isEmpty)
        }
    }

    @Test func aMissingChildDecodesAsTheTyped404() async throws {
        try await DoppelTestServer.with(contract: talesContract) { server in
            let client = try client(for: server, session: "missing-\(UUID().uuidString)")
            let answer = try await client.generate_hyphen_story(body: .json(.init(
                language: .en, child_id: "123e4567-e89b-12d3-a456-426614174000")))
            guard case .notFound(let missing) = answer else {
                Issue.record("a generate for a missing child answered \(answer), not the typed 404")
                return
            }
            #expect(try missing.body.json.detail == "Child with ID 123e4567-e89b-12d3-a456-426614174000 not found")
        }
    }
}
