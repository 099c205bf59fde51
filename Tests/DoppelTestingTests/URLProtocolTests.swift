import DoppelTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Requests answered by the engine through `DoppelURLProtocol`: no socket.
struct URLProtocolTests {
    @Test func anInProcessServerListensNowhereAndAnswersAsTheContractSays() async throws {
        let server = try DoppelTestServer.inProcess(contract: "contracts/tales.yaml")
        #expect(!server.isListening)
        #expect(server.baseURL.host?.hasSuffix(".invalid") == true)
        let doppel = server.session()
        let (data, response) = try await doppel.urlSession.data(for: doppel.request("/api/v1/free-stories?language=en"))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("application/json") == true)
        let stories = try #require(try JSONReader.parse(Array(data)).arrayValue)
        #expect(!stories.isEmpty)
        doppel.verify(endpoint: "list-free-stories", status: 200, count: 1)
        // The query reached the engine: only English stories.
        #expect(stories.allSatisfy { $0["language"] == .string("en") })
    }

    @Test func theMonthlyLimitInProcessWithBodiesAndSessions() async throws {
        let server = try DoppelTestServer.inProcess(contract: "contracts/tales.yaml")
        let doppel = server.session()
        let other = server.session()
        let child = try await doppel.send(
            "POST", "/api/v1/children", headers: bearer,
            json: #"{"name":"Mia","age_category":"5-7","gender":"female","interests":["maps"]}"#)
        let childID = try #require(child.json?["id"]?.stringValue)
        var statuses: [Int] = []
        for _ in 1...6 {
            statuses.append(
                try await doppel.send(
                    "POST", "/api/v1/stories/generate", headers: bearer,
                    json: #"{"language":"en","child_id":"\#(childID)"}"#
                ).status)
        }
        #expect(statuses == [200, 200, 200, 200, 200, 402])
        #expect(other.state["stories_used"] == .int(0))
        // A body sent as a stream (as URLSession uploads do) reaches the engine too.
        var request = doppel.request("/api/v1/children", method: "POST")
        for (name, value) in bearer { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBodyStream = InputStream(data: Data(#"{"name":"Leo","age_category":"6-7","gender":"male","interests":["x"]}"#.utf8))
        let (_, created) = try await doppel.urlSession.data(for: request)
        #expect((created as? HTTPURLResponse)?.statusCode == 200)
    }

    @Test func aListeningServersSessionCanBeReachedInProcessToo() async throws {
        let server = try await DoppelTestServer.shared(contract: "contracts/tales.yaml")
        let doppel = server.session()
        let inProcess = URLSession(configuration: doppel.configuration(inProcess: true))
        _ = try await inProcess.data(for: doppel.request("/api/v1/free-stories"))
        // The same engine and session over HTTP.
        _ = try await doppel.send("GET", "/api/v1/free-stories")
        #expect(doppel.journal(endpoint: "list-free-stories").count == 2)
        #expect(doppel.journal().first?.path == "/api/v1/free-stories")
    }

    @Test func faultsBecomeTheErrorsAClientSeesAndStreamsArriveWhole() async throws {
        let server = try DoppelTestServer.inProcess(contract: "contracts/eknetwork-demo.yaml")
        let doppel = server.session()
        try doppel.start(scenario: "scenarios/eknetwork-demo/network-faults.yaml")
        let session = doppel.urlSession
        await #expect {
            _ = try await session.data(for: doppel.request("/v1/heartbeat"))
        } throws: { ($0 as? URLError)?.code == .networkConnectionLost }
        // The second heartbeat is answered: the override was for call 1 only.
        let (_, second) = try await session.data(for: doppel.request("/v1/heartbeat"))
        #expect((second as? HTTPURLResponse)?.statusCode == 200)

        let plain = server.session()
        let started = ContinuousClock.now
        let (chunks, _) = try await plain.urlSession.data(for: plain.request("/v1/download"))
        #expect(chunks.count == 64)
        // Four chunks 100 ms apart: at least the three intervals.
        #expect(ContinuousClock.now - started >= .milliseconds(290))
    }

    @Test func aRequestToAnUnregisteredHostIsNotTaken() throws {
        #expect(!DoppelURLProtocol.canInit(with: URLRequest(url: URL(string: "http://example.invalid/x")!)))
        let url = DoppelURLProtocol.register(MockEngine(contract: try ContractLoader.load(text: "doppel: 1\nendpoints: {}\n", file: "empty.yaml")))
        #expect(DoppelURLProtocol.canInit(with: URLRequest(url: url.appendingPathComponent("anything"))))
    }
}

extension URLProtocolTests {
    @Test func aBodyOverTheLimitGetsTheServers413() async throws {
        let doppel = try DoppelTestServer.inProcess(contract: "contracts/tales.yaml").session()
        let big = String(repeating: "x", count: DoppelURLProtocol.maxBodySize + 1)
        let refused = try await doppel.send("POST", "/api/v1/children", headers: bearer, json: #"{"name":"\#(big)"}"#)
        #expect(refused.status == 413)
        var request = doppel.request("/api/v1/children", method: "POST")
        request.httpBodyStream = InputStream(data: Data(big.utf8))
        let (_, streamed) = try await doppel.urlSession.data(for: request)
        #expect((streamed as? HTTPURLResponse)?.statusCode == 413)
    }
}
