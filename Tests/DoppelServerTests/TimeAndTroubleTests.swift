import DoppelCore
import DoppelServer
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let troubleContract = repositoryRoot.appendingPathComponent("Tests/DoppelServerTests/Fixtures/trouble.yaml").path

@Suite("Time and trouble over loopback")
struct TimeAndTroubleTests {
    @Test func rateLimitIsExactPerTokenAndFreesAfterTheWindow() async throws {
        try await DoppelTestServer.with(contract: troubleContract) { server in
            let client = TestClient(base: server.baseURL, maxConnections: 64)
            // A frozen clock makes "seconds left in the window" exact.
            #expect(try await client.send("POST", "/__doppel/clock", json: ["freeze": true]).status == 200)
            let tokens = ["token-a", "token-b", "token-c"]
            let results = try await withThrowingTaskGroup(of: (String, HTTPResult).self) { group in
                for token in tokens {
                    for _ in 0..<100 {
                        group.addTask { (token, try await client.send("GET", "/limited", token: token)) }
                    }
                }
                return try await group.reduce(into: [(String, HTTPResult)]()) { $0.append($1) }
            }
            for token in tokens {
                let mine = results.filter { $0.0 == token }.map(\.1)
                #expect(mine.filter { $0.status == 200 }.count == 10, "\(token)")
                let refused = mine.filter { $0.status == 429 }
                #expect(refused.count == 90, "\(token)")
                for response in refused {
                    #expect(response.json == ["error": "rate_limited", "message": "Too many requests, retry in 60 seconds"])
                    #expect(response.header("retry-after") == "60")
                    #expect(response.header("ratelimit-remaining") == "0")
                }
                #expect(mine.allSatisfy { $0.header("ratelimit-limit") == "10" })
            }
            let later = try await client.send("POST", "/__doppel/clock", json: ["advance": "45s"])
            #expect(later.json?["frozen"] == true)
            let stillLimited = try await client.send("GET", "/limited", token: "token-a")
            #expect(stillLimited.header("retry-after") == "15")
            _ = try await client.send("POST", "/__doppel/clock", json: ["advance": "15s"])
            let again = try await client.send("GET", "/limited", token: "token-a")
            #expect(again.status == 200)
            #expect(again.header("ratelimit-remaining") == "9")
            #expect(again.header("ratelimit-reset") == "60")
        }
    }

    @Test func slidingWindowsCountTheLastWindowOfTime() async throws {
        try await DoppelTestServer.with(contract: troubleContract) { server in
            let client = TestClient(base: server.baseURL)
            _ = try await client.send("POST", "/__doppel/clock", json: ["set": "2025-01-01T00:00:00Z", "freeze": true])
            #expect(try await client.send("GET", "/sliding").status == 200)
            _ = try await client.send("POST", "/__doppel/clock", json: ["advance": "6s"])
            #expect(try await client.send("GET", "/sliding").status == 200)
            let refused = try await client.send("GET", "/sliding")
            #expect(refused.status == 429)
            #expect(refused.header("retry-after") == "4")
            #expect(refused.json?["type"] == "urn:doppel:problem:rate-limited")
            _ = try await client.send("POST", "/__doppel/clock", json: ["advance": "4s"])
            #expect(try await client.send("GET", "/sliding").status == 200)
            #expect(try await client.send("GET", "/sliding").status == 429)
        }
    }

    @Test func aRealClientSeesTheSequenceInOrder() async throws {
        try await DoppelTestServer.with(contract: troubleContract) { server in
            let client = TestClient(base: server.baseURL)
            var seen: [Int] = []
            for _ in 0..<4 { seen.append(try await client.send("GET", "/flaky", token: nil).status) }
            #expect(seen == [503, 503, 200, 200])
            let rotating = TestClient(base: server.baseURL)
            var numbers: [JSON?] = []
            for client in ["a", "a", "b", "a"] {
                numbers.append(try await rotating.send("GET", "/rotating", token: nil, headers: ["X-Client": client]).json?["n"])
            }
            #expect(numbers == [1, 2, 1, 1])
        }
    }

    @Test func issuedTokensExpireOnTheClockAndRefresh() async throws {
        try await DoppelTestServer.with(contract: troubleContract) { server in
            let client = TestClient(base: server.baseURL)
            let signIn = try await client.send("POST", "/auth/sign-in", json: ["username": "u", "password": "p"], token: nil)
            let access = try #require(signIn.json?["access_token"]?.stringValue)
            let refresh = try #require(signIn.json?["refresh_token"]?.stringValue)
            #expect(try await client.send("GET", "/me", token: access).status == 200)
            #expect(try await client.send("GET", "/me", token: "at_unknown").json == ["error": "unauthorized"])

            _ = try await client.send("POST", "/__doppel/clock", json: ["advance": "16m"])
            let expired = try await client.send("GET", "/me", token: access)
            #expect(expired.status == 401)
            #expect(expired.json == ["error": "token_expired"])

            let renewed = try await client.send("POST", "/auth/refresh", json: ["refresh_token": .string(refresh)], token: nil)
            let newAccess = try #require(renewed.json?["access_token"]?.stringValue)
            #expect(try await client.send("GET", "/me", token: newAccess).status == 200)
            let reused = try await client.send("POST", "/auth/refresh", json: ["refresh_token": .string(refresh)], token: nil)
            #expect(reused.status == 401)
            #expect(reused.json == ["error": "invalid_refresh_token"])
        }
    }

    @Test func aDelayedResponseDoesNotSlowOthers() async throws {
        try await DoppelTestServer.with(contract: troubleContract) { server in
            let client = TestClient(base: server.baseURL)
            let started = ContinuousClock.now
            // Each answer's arrival is taken where it arrives, so the order
            // compared is the order the answers came in, not the order awaited.
            async let slow = { (try await client.send("GET", "/slow", token: nil), ContinuousClock.now) }()
            try await Task.sleep(for: .milliseconds(100))
            let (fast, fastArrived) = try await { (try await client.send("GET", "/fast", token: nil), ContinuousClock.now) }()
            #expect(fast.json == ["fast": true])
            let (slowResult, slowArrived) = try await slow
            #expect(slowResult.json == ["slow": true])
            // Ordering, not timing: the fast answer arrived while the slow one was still waiting.
            #expect(fastArrived < slowArrived)
            #expect(slowArrived - started >= .seconds(2))
        }
    }

    /// Pipelined on one connection, a plain request behind a delayed one is
    /// still answered second, and the engine runs once per request.
    @Test func pipelinedAnswersKeepTheirOrderBehindADelayedOne() async throws {
        try await DoppelTestServer.with(contract: troubleContract) { server in
            let port = server.port
            let reply = try await RawSocket.run {
                let socket = try RawSocket(port: port)
                socket.send(
                    "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                )
                return socket.receive(timeout: 10) { $0.components(separatedBy: #"{"fast":true}"#).count == 3 }
            }
            let slow = try #require(reply.text.range(of: #"{"slow":true}"#))
            let fast = try #require(reply.text.range(of: #"{"fast":true}"#))
            #expect(slow.lowerBound < fast.lowerBound)
            #expect(reply.text.components(separatedBy: "HTTP/1.1 200 OK").count == 4)
            #expect(reply.text.contains("Server: Doppel"))
            #expect(reply.text.contains("Date: "))
            #expect(server.engine.journal.entries.map(\.path) == ["/slow", "/fast", "/fast"])
        }
    }

    @Test func eachFaultIsSeenByARealClientAsItsClientSideError() async throws {
        var configuration = ServerConfiguration.testing
        configuration.hangLimit = 2
        try await DoppelTestServer.with(contract: troubleContract, configuration: configuration) { server in
            let client = TestClient(base: server.baseURL)
            // What URLSession reports for each (libcurl's mapping on Linux, CFNetwork's elsewhere).
            #if os(Linux)
            let expected: [String: Set<URLError.Code>] = [
                "/faults/reset": [.networkConnectionLost], "/faults/empty": [.badServerResponse], "/faults/truncated": [.unknown],
            ]
            #else
            let lost: Set<URLError.Code> = [.networkConnectionLost, .badServerResponse, .cannotParseResponse]
            let expected: [String: Set<URLError.Code>] = ["/faults/reset": lost, "/faults/empty": lost, "/faults/truncated": lost]
            #endif
            for (path, codes) in expected {
                do {
                    _ = try await client.send("GET", path, token: nil)
                    Issue.record("\(path) answered")
                } catch let error as URLError {
                    #expect(codes.contains(error.code), "\(path): \(error.code)")
                }
            }
            // And on the wire: a reset is a TCP RST, an empty reply a clean close with no byte.
            let reset = try await RawHTTP.exchangeDetailed(port: server.port, Array("GET /faults/reset HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            #expect(reset.reply.isEmpty)
            #expect(reset.endedBy == .reset)
            let empty = try await RawHTTP.exchangeDetailed(port: server.port, Array("GET /faults/empty HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            #expect(empty.reply.isEmpty)
            #expect(empty.endedBy == .closed)
            let truncated = try await RawHTTP.exchangeDetailed(port: server.port, Array("GET /faults/truncated HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            let text = String(decoding: truncated.reply, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200"))
            #expect(text.lowercased().contains("content-length: 61"))
            let bodyBytes = text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n").utf8.count
            #expect(bodyBytes == 30)
            #expect(truncated.endedBy == .closed)

            let malformed = try await client.send("GET", "/faults/malformed", token: nil)
            #expect(malformed.status == 200)
            #expect(!malformed.body.isEmpty)
            #expect((try? JSONSerialization.jsonObject(with: malformed.body)) == nil)

            let impatient = TestClient(base: server.baseURL, timeout: 1)
            do {
                _ = try await impatient.send("GET", "/faults/hang", token: nil)
                Issue.record("no_answer answered")
            } catch let error as URLError {
                #expect(error.code == .timedOut)
            }
            // The server is still serving.
            #expect(try await client.send("GET", "/fast", token: nil).status == 200)
        }
    }

    @Test func serverSentEventsArriveAsThreeEvents() async throws {
        try await DoppelTestServer.with(contract: troubleContract) { server in
            let client = TestClient(base: server.baseURL)
            let started = ContinuousClock.now
            let response = try await client.send("GET", "/events", token: nil)
            #expect(ContinuousClock.now - started >= .milliseconds(300))
            #expect(response.header("content-type") == "text/event-stream")
            let events = String(decoding: response.body, as: UTF8.self).components(separatedBy: "\n\n").filter { !$0.isEmpty }
            #expect(
                events == [
                    "event: progress\nid: 1\ndata: {\"percent\":50}",
                    "event: progress\nid: 2\ndata: {\"percent\":100}",
                    "event: done\nid: 3\ndata: finished",
                ])
            let chunks = try await client.send("GET", "/chunks", token: nil)
            #expect(String(decoding: chunks.body, as: UTF8.self) == "first,second,third")
        }
    }

    @Test func multipartAndFormBodiesAreMatchedAndValidated() async throws {
        try await DoppelTestServer.with(contract: troubleContract) { server in
            let client = TestClient(base: server.baseURL)
            func multipart(_ parts: [(name: String, filename: String?, type: String?, content: String)]) -> Data {
                MultipartBody.encode(
                    parts.map { MultipartBody.Part(name: $0.name, filename: $0.filename, contentType: $0.type, content: $0.content) }, boundary: "XyZ"
                )
            }
            let headers = ["Content-Type": "multipart/form-data; boundary=XyZ"]
            let ok = try await client.send(
                "POST", "/upload", token: nil, headers: headers,
                body: multipart([("title", nil, nil, "Cover"), ("pages", nil, nil, "12"), ("file", "cover.png", "image/png", "PNGDATA")]))
            #expect(ok.status == 201)
            #expect(ok.json == ["title": "Cover", "pages": 12, "filename": "cover.png", "size": 7])

            let missing = try await client.send("POST", "/upload", token: nil, headers: headers, body: multipart([("title", nil, nil, "Cover")]))
            #expect(missing.status == 400)
            #expect(missing.json == ["error": "invalid_upload", "fields": ["/body/file"]])

            let tooBig = try await client.send(
                "POST", "/upload", token: nil, headers: headers,
                body: multipart([("title", nil, nil, "Cover"), ("file", "big.gif", "image/gif", String(repeating: "x", count: 2000))]))
            #expect(tooBig.json == ["error": "invalid_upload", "fields": ["/body/file/content_type", "/body/file/size"]])

            // A body that cannot be read at all gets the endpoint's own 400 too, pointing at the body.
            let broken = try await client.send("POST", "/upload", token: nil, headers: headers, body: Data("--XyZ\r\nno end".utf8))
            #expect(broken.status == 400)
            #expect(broken.json == ["error": "invalid_upload", "fields": ["/body"]])

            let formHeaders = ["Content-Type": "application/x-www-form-urlencoded"]
            let form = try await client.send("POST", "/form", token: nil, headers: formHeaders, body: Data("name=Ann+Lee&age=41".utf8))
            #expect(form.json == ["greeting": "Hello Ann Lee", "next_year": 42])
            let badForm = try await client.send("POST", "/form", token: nil, headers: formHeaders, body: Data("age=old".utf8))
            #expect(badForm.status == 400)
            #expect(badForm.json == ["error": "invalid_form", "fields": ["/body/age", "/body/name"]])
        }
    }
}
