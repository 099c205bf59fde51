import DoppelCore
import DoppelServer
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

@Suite("Live server over loopback")
struct LiveServerTests {
    func createChild(_ client: TestClient, session: String? = nil) async throws -> String {
        let child = try await client.send(
            "POST", "/api/v1/children", json: ["name": "Эмма", "age_category": "5-7", "gender": "female", "interests": ["феи"]], session: session)
        #expect(child.status == 200)
        return try #require(child.json?["id"]?.stringValue)
    }

    func generate(_ client: TestClient, child: String, session: String? = nil) async throws -> HTTPResult {
        try await client.send("POST", "/api/v1/stories/generate", json: ["language": "ru", "child_id": .string(child)], session: session)
    }

    @Test func monthlyLimitWalk() async throws {
        try await DoppelTestServer.with(contract: contractPath("tales.yaml")) { server in
            let client = TestClient(base: server.baseURL)
            let child = try await createChild(client)
            for _ in 1...5 { #expect(try await generate(client, child: child).status == 200) }
            let refused = try await generate(client, child: child)
            #expect(refused.status == 402)
            #expect(refused.header("content-type") == "application/json")
            #expect(refused.json?["detail"] == "Monthly story limit exceeded. You have used 5/5 stories this month.")
            #expect(refused.json?["limit_info"]?["stories_used"] == 5)
            let subscription = try await client.send("GET", "/api/v1/users/subscription")
            #expect(subscription.json?["limits"]?["stories_used"] == 5)
            #expect(subscription.json?["limits"]?["stories_remaining"] == 0)
            let purchase = try await client.send(
                "POST", "/api/v1/subscription/purchase?plan_tier=premium&billing_cycle=monthly&payment_method=apple_pay")
            #expect(purchase.status == 200)
            #expect(try await generate(client, child: child).status == 200)
            let unauthenticated = try await client.send("GET", "/api/v1/users/subscription", token: nil)
            #expect(unauthenticated.status == 401)
            #expect(unauthenticated.json == ["detail": "Not authenticated"])
        }
    }

    @Test func twoSessionsKeepSeparateCounts() async throws {
        try await DoppelTestServer.with(contract: contractPath("tales.yaml")) { server in
            let client = TestClient(base: server.baseURL)
            let a = try await createChild(client, session: "alice")
            let b = try await createChild(client, session: "bob")
            for _ in 1...5 { #expect(try await generate(client, child: a, session: "alice").status == 200) }
            #expect(try await generate(client, child: a, session: "alice").status == 402)
            #expect(try await generate(client, child: b, session: "bob").status == 200)
            let alice = try await client.send("GET", "/api/v1/users/subscription", session: "alice")
            let bob = try await client.send("GET", "/api/v1/users/subscription", session: "bob")
            #expect(alice.json?["limits"]?["stories_used"] == 5)
            #expect(bob.json?["limits"]?["stories_used"] == 1)
        }
    }

    /// 200 parallel generate requests in a fresh session: exactly 5 succeed,
    /// every round.
    @Test func concurrentGenerateRequestsGetExactlyFiveSuccesses() async throws {
        try await DoppelTestServer.with(contract: contractPath("tales.yaml")) { server in
            let client = TestClient(base: server.baseURL, maxConnections: 64)
            for round in 1...3 {
                let session = "burst-\(round)"
                let child = try await createChild(client, session: session)
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<200 {
                        group.addTask { try await generate(client, child: child, session: session).status }
                    }
                    return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
                }
                #expect(statuses == [200: 5, 402: 195], "round \(round)")
            }
        }
    }

    @Test func badRequestsGetDocumented4xxAndTheServerKeepsServing() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxBodySize = 1024
        try await DoppelTestServer.with(contract: contractPath("tales.yaml"), configuration: configuration) { server in
            let client = TestClient(base: server.baseURL)

            let malformed = try await client.send(
                "POST", "/api/v1/children", headers: ["Content-Type": "application/json"], body: Data("{\"name\": ".utf8))
            // The document's 400 shape, from the contract's fallbacks.
            #expect(malformed.status == 400)
            #expect(malformed.header("content-type") == "application/json")
            #expect(malformed.json?["detail"]?.stringValue?.hasPrefix("The request body is not valid JSON") == true)

            let notAJWT = try await client.send("GET", "/api/v1/users/subscription", token: "dev-token")
            #expect(notAJWT.status == 401)
            #expect(notAJWT.json == ["detail": "Not authenticated"])

            let wrongType = try await client.send("POST", "/api/v1/children", headers: ["Content-Type": "text/plain"], body: Data("name".utf8))
            #expect(wrongType.status == 415)

            let tooLarge = try await client.send(
                "POST", "/api/v1/children", headers: ["Content-Type": "application/json"], body: Data(repeating: 0x20, count: 4096))
            #expect(tooLarge.status == 413)
            #expect(tooLarge.json?["limit"] == 1024)

            // A chunked body has no Content-Length; the limit applies while reading.
            let chunk = String(repeating: "a", count: 600)
            let chunked =
                "POST /api/v1/children HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n"
            let chunkedReply = try await RawHTTP.exchange(port: server.port, Array(chunked.utf8))
            #expect(chunkedReply.hasPrefix("HTTP/1.1 413"))

            let unknown = try await client.send("GET", "/api/v2/nothing")
            #expect(unknown.status == 404)
            #expect(unknown.header("content-type") == "application/problem+json")

            let garbage = try await RawHTTP.exchange(port: server.port, Array("NOT HTTP AT ALL\r\n\r\n".utf8))
            #expect(garbage.hasPrefix("HTTP/1.1 400"))

            let health = try await client.send("GET", "/__doppel/health")
            #expect(health.status == 200)
            #expect(health.json?["status"] == "ok")
            let stillServing = try await client.send("GET", "/api/v1/free-stories?limit=1", token: nil)
            #expect(stillServing.json?.arrayValue?.count == 1)
        }
    }

    @Test func adminAPIShowsAndResetsSessionState() async throws {
        try await DoppelTestServer.with(contract: contractPath("tales.yaml")) { server in
            let client = TestClient(base: server.baseURL)
            _ = try await createChild(client, session: "s1")
            _ = try await createChild(client, session: "s2")
            let state = try await client.send("GET", "/__doppel/state?session=s1")
            #expect(state.json?["exists"] == true)
            #expect(state.json?["state"]?["children"]?.objectValue?.count == 1)
            #expect(try await client.send("POST", "/__doppel/reset?session=s1").json == ["reset": "s1", "existed": true])
            #expect(try await client.send("GET", "/__doppel/state?session=s1").json?["exists"] == false)
            let evicted: JSON = ["for_room": 0, "idle": 0, "for_state": 0]
            #expect(
                try await client.send("GET", "/__doppel/sessions").json
                    == ["sessions": [["id": "s2", "scenario": nil]], "limit": 10_000, "idle_limit_seconds": 3600.0, "evicted": evicted])
            #expect(try await client.send("POST", "/__doppel/reset").json == ["reset": "all"])
            #expect(try await client.send("GET", "/__doppel/sessions").json?["sessions"] == [])
            let routes = try await client.send("GET", "/__doppel/routes")
            #expect(routes.json?["routes"]?.arrayValue?.first?["statuses"] == [400, 404, 402, 200, 500, 401])
            #expect(try await client.send("GET", "/__doppel/nope").status == 404)
        }
    }
}
