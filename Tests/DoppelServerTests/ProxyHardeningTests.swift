import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

@testable import DoppelServer

/// `--proxy` against requests and upstreams that try to misuse it: targets
/// that would reach another host, and status lines no HTTP server sends.
@Suite struct ProxyHardeningTests {
    func doppel(upstream: URL) async throws -> DoppelTestServer {
        var configuration = ServerConfiguration.testing
        configuration.proxy = upstream
        // Generous: these tests are about what comes back, and in the full suite load tests can hold the event loops for seconds.
        configuration.proxyTimeout = 30
        let contract = try ContractLoader.load(text: ProxyTests.contract, file: "proxied.yaml")
        return try await DoppelTestServer.start(engine: MockEngine(contract: contract, configuration: configuration), configuration: configuration)
    }

    /// Sends `request` on a connection of its own and returns what came back within a few seconds.
    static func exchange(_ request: String, port: Int) async throws -> String {
        try await RawSocket.run {
            let socket = try RawSocket(port: port)
            socket.send(request)
            return socket.receive(timeout: 5) { $0.contains("\r\n\r\n") && $0.hasSuffix("}") }.text
        }
    }

    @Test func targetsThatAreNotPathsNeverReachAnyHost() async throws {
        let upstream = try RawUpstream(answer: "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nupstream")
        let elsewhere = try RawUpstream(answer: "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nelsewhere")
        defer {
            upstream.stop()
            elsewhere.stop()
        }
        let server = try await doppel(upstream: upstream.url)
        defer { Task { await server.stop() } }
        let port = server.baseURL.port!
        let host = "127.0.0.1:\(elsewhere.port)"
        // CONNECT with a target glued onto the upstream URL as its user part
        // once reached any host; absolute and asterisk forms are refused alike.
        let refused = [
            "CONNECT @\(host)/any?q HTTP/1.1", "CONNECT user:pw@\(host)/any HTTP/1.1", "CONNECT @localhost:\(elsewhere.port)/x HTTP/1.1",
            "CONNECT @[::1]:\(elsewhere.port)/x HTTP/1.1", "CONNECT @2130706433:\(elsewhere.port)/x HTTP/1.1", "CONNECT \(host) HTTP/1.1",
            "CONNECT /any HTTP/1.1", "GET http://\(host)/any HTTP/1.1", "GET HTTP://\(host)/any HTTP/1.1", "POST http://\(host)/any HTTP/1.1",
            "OPTIONS * HTTP/1.1",
        ]
        for line in refused {
            let reply = try await Self.exchange("\(line)\r\nHost: \(host)\r\nContent-Length: 0\r\n\r\n", port: port)
            #expect(reply.hasPrefix("HTTP/1.1 400 "), "\(line): \(reply)")
            #expect(reply.contains("urn:doppel:problem:invalid-target"), "\(line): \(reply)")
        }
        // The same targets after other methods are not HTTP: the parser's 400.
        for line in ["GET @\(host)/any?q HTTP/1.1", "GET user:pw@\(host)/any HTTP/1.1", "POST @\(host)/any HTTP/1.1"] {
            let reply = try await Self.exchange("\(line)\r\nHost: \(host)\r\nContent-Length: 0\r\n\r\n", port: port)
            #expect(reply.hasPrefix("HTTP/1.1 400 "), "\(line): \(reply)")
        }
        #expect(elsewhere.heads.isEmpty)
        #expect(upstream.heads.isEmpty)
        // A path is still passed on to the upstream, and only there.
        let passed = try await Self.exchange("GET /any?q HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
        #expect(passed.hasPrefix("HTTP/1.1 200 ") && passed.hasSuffix("upstream"), "\(passed)")
        #expect(upstream.heads == ["GET /any?q HTTP/1.1"])
        #expect(elsewhere.heads.isEmpty)
    }

    @Test(arguments: ["000", "001", "099", "600", "999"])
    func anUpstreamStatusOutsideHTTPsRangeIsA502(status: String) async throws {
        let upstream = try RawUpstream(answer: "HTTP/1.1 \(status) Odd\r\nContent-Length: 2\r\n\r\nhi")
        defer { upstream.stop() }
        let server = try await doppel(upstream: upstream.url)
        defer { Task { await server.stop() } }
        let client = TestClient(base: server.baseURL)
        let answer = try await client.send("GET", "/elsewhere", token: nil)
        #expect(answer.status == 502)
        #expect(answer.json?["type"] == "urn:doppel:problem:bad-gateway")
        // The server goes on serving.
        #expect(try await client.send("GET", "/mocked", token: nil).status == 200)
        #expect(server.engine.journal.entries.map(\.status) == [502, 200])
    }

    /// Upstream bodies being received share one budget: an answer that would
    /// take it past its limit is a 502 while others hold it, and is passed
    /// back once they are done.
    @Test func upstreamBodiesInFlightHaveOneTotal() async throws {
        let body = String(repeating: "b", count: 200_000)
        let raw = try RawUpstream(answer: "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        defer { raw.stop() }
        // A generous timeout: the full suite loads the machine.
        let upstream = DoppelServer.Upstream(base: raw.url, timeout: 60, maxBodyBytesInFlight: 1_000_000)
        defer { Task { await upstream.shutdown() } }
        let request = RecordedRequest(method: "GET", target: "/large")
        // Other answers hold 900,000 of the 1,000,000 bytes.
        #expect(upstream.inFlight.reserve(900_000))
        // The budget is what is tested: a connection lost before any answer
        // (seen on a loaded machine in the full suite, for either exchange)
        // is tried again, three times at most.
        func forward() async -> (response: MockResponse, answered: Bool) {
            var answer = await upstream.forward(request)
            for _ in 0..<3 where String(decoding: answer.response.body, as: UTF8.self).contains("closed the connection without an answer") {
                answer = await upstream.forward(request)
            }
            return answer
        }
        let refused = await forward()
        #expect(refused.response.status == 502)
        #expect(String(decoding: refused.response.body, as: UTF8.self).contains("memory for upstream answers in flight"))
        #expect(upstream.inFlight.current == 900_000)
        upstream.inFlight.release(900_000)
        let passed = await forward()
        #expect(passed.response.status == 200, "\(String(decoding: passed.response.body, as: UTF8.self))")
        #expect(passed.response.body.count == 200_000)
        // Nothing stays held once answers are passed back.
        #expect(upstream.inFlight.current == 0)
    }
}
