import DoppelTestSupport
import DoppelTesting
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Testing

/// `doppel serve --proxy`: an upstream (a small Hummingbird app) serves what
/// the contract does not; Doppel answers its own endpoints and passes the
/// rest on, byte for byte.
@Suite struct ProxyTests {
    static let contract = """
        doppel: 1
        info: { title: Proxied, version: "1" }
        endpoints:
          mocked:
            request: GET /mocked
            responses:
              - body: { mocked: true }
          thing:
            request: GET /things/{id}
            proxy: true
            documented:
              - { name: unavailable, status: 503, body: { error: maintenance } }
        """

    /// Doppel in front of `upstream`. The forwarding tests wait as long as a
    /// loaded machine may take (the full suite once took the in-process
    /// upstream past 2 s); the timeout's own test passes 1 s.
    func doppel(upstream: URL, timeout: Double = 30) async throws -> DoppelTestServer {
        var configuration = ServerConfiguration.testing
        configuration.proxy = upstream
        configuration.proxyTimeout = timeout
        let contract = try ContractLoader.load(text: Self.contract, file: "proxied.yaml")
        return try await DoppelTestServer.start(engine: MockEngine(contract: contract, configuration: configuration), configuration: configuration)
    }

    @Test func mockedEndpointsAreDoppelsAndTheRestComeFromTheUpstreamByteForByte() async throws {
        let upstream = try await ProxyUpstream.start()
        defer { Task { await upstream.stop() } }
        let server = try await doppel(upstream: upstream.url)
        defer { Task { await server.stop() } }
        let client = TestClient(base: server.baseURL)
        let direct = TestClient(base: upstream.url)

        let mocked = try await client.send("GET", "/mocked", token: nil)
        #expect(mocked.json == ["mocked": true])

        // A `proxy: true` endpoint: forwarded, body and headers as the upstream sent them.
        let viaDoppel = try await client.send("GET", "/things/7", token: nil)
        let fromUpstream = try await direct.send("GET", "/things/7", token: nil)
        #expect(viaDoppel.status == 200)
        #expect(viaDoppel.body == fromUpstream.body)
        #expect(String(decoding: viaDoppel.body, as: UTF8.self) == "{ \"id\" : 7,\n  \"from\": \"upstream\" }")
        #expect(viaDoppel.header("X-Upstream") == "yes")

        // No endpoint takes it: method, path, query, headers and body reach the upstream.
        let echoed = try await client.send(
            "POST", "/echo?x=1&y=two", token: nil, headers: ["Authorization": "Bearer abc", "Content-Type": "text/plain"],
            body: Data("hello upstream".utf8))
        #expect(echoed.status == 201)
        #expect(String(decoding: echoed.body, as: UTF8.self) == "POST /api/echo?x=1&y=two auth=Bearer abc type=text/plain body=hello upstream")

        let journal = server.engine.journal.entries
        #expect(journal.map(\.path) == ["/mocked", "/things/7", "/echo"])
        #expect(journal.map(\.proxied) == [false, true, true])
        #expect(journal.map(\.status) == [200, 200, 201])
        #expect(journal.map(\.endpointID) == ["mocked", "thing", nil])
    }

    @Test func aScenarioMocksOneCallOfAProxiedEndpoint() async throws {
        let upstream = try await ProxyUpstream.start()
        defer { Task { await upstream.stop() } }
        let server = try await doppel(upstream: upstream.url)
        defer { Task { await server.stop() } }
        let client = TestClient(base: server.baseURL)
        let overrides: JSON = ["overrides": [["endpoint": "thing", "call": 2, "status": 503]]]
        #expect(try await client.send("PUT", "/__doppel/scenario?session=s1", json: overrides, token: nil).status == 200)

        var statuses: [Int] = []
        for _ in 1...3 { statuses.append(try await client.send("GET", "/things/1", token: nil, session: "s1").status) }
        #expect(statuses == [200, 503, 200])
        // The client may ask for the documented answer too.
        #expect(try await client.send("GET", "/things/1", token: nil, headers: ["Prefer": "code=503"]).json == ["error": "maintenance"])
        #expect(server.engine.journal.entries.map(\.proxied) == [true, false, true, false])
    }

    @Test func aStoppedUpstreamIsA502AndASlowOneA504WithinTheTimeout() async throws {
        let upstream = try await ProxyUpstream.start()
        let server = try await doppel(upstream: upstream.url, timeout: 1)
        defer { Task { await server.stop() } }
        let client = TestClient(base: server.baseURL)

        // The upstream answers after 5 s: a 504 (rather than its 200) is Doppel giving up at its 1 s timeout.
        let slow = try await client.send("GET", "/slow", token: nil)
        #expect(slow.status == 504)
        #expect(slow.json?["type"] == "urn:doppel:problem:gateway-timeout")
        #expect(slow.json?["upstream"] == .string(upstream.url.absoluteString))

        await upstream.stop()
        let refused = try await client.send("GET", "/things/3", token: nil)
        #expect(refused.status == 502)
        #expect(refused.json?["type"] == "urn:doppel:problem:bad-gateway")
        #expect(refused.json?["detail"]?.stringValue?.contains(upstream.url.absoluteString) == true)
        // Doppel's own endpoints are answered still.
        #expect(try await client.send("GET", "/mocked", token: nil).status == 200)
    }
}
