import DoppelCore
import DoppelRunner
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

@testable import DoppelServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Each attack of the hardening issue, sent over loopback to one running
/// `doppel serve`; after each, a normal request must still get its 200
/// (the client gives up after 10s, so a hung server fails the test; speed
/// is the benchmarks' business), and the server's resident memory must stay under
/// `rssBound`. The server's standard output is never read, so the request
/// log also meets a reader that does not keep up.
@Suite("Hardening", .serialized)
struct HardeningTests {
    static let fixture = "Tests/DoppelServerTests/Fixtures/hardening.yaml"
    /// What the server may hold at any point of the attack run.
    static let rssBound = 400 << 20

    final class Server: Sendable {
        let process: ChildProcess
        let port: Int
        let client: TestClient

        init(_ arguments: [String] = []) async throws {
            let served = try await DoppelCommand.serve([HardeningTests.fixture, "--header-timeout", "1s", "--body-timeout", "1s"] + arguments)
            process = served.process
            port = served.port
            client = TestClient(base: URL(string: "http://127.0.0.1:\(port)")!, maxConnections: 8, timeout: 10)
        }

        deinit { process.terminate() }

        /// A normal request gets its 200 before the client's 10s timeout, and memory is within the bound.
        func expectHealthy(after attack: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) async throws {
            let answer = try await client.send("GET", "/ok")
            #expect(answer.status == 200, "after \(attack)", sourceLocation: sourceLocation)
            #expect(process.isRunning, "after \(attack): the server died", sourceLocation: sourceLocation)
            let rss = residentBytes(of: process.processIdentifier) ?? 0
            #expect(rss < HardeningTests.rssBound, "after \(attack): RSS \(rss >> 20) MiB", sourceLocation: sourceLocation)
        }

        func raw(_ request: String, timeout: Double = 5) async throws -> (text: String, closed: Bool) {
            let port = port
            return try await RawSocket.run {
                let socket = try RawSocket(port: port)
                socket.send(request)
                return socket.receive(timeout: timeout)
            }
        }
    }

    static func nested(_ depth: Int, open: String, close: String, inner: String) -> String {
        String(repeating: open, count: depth) + inner + String(repeating: close, count: depth)
    }

    @Test func everyAttackLeavesTheServerServing() async throws {
        let server = try await Server()
        try await server.expectHealthy(after: "start")

        // A polymorphic recursive schema: deep bodies are refused or checked, never a crash.
        let deepJSON = Self.nested(100_000, open: "[", close: "]", inner: "")
        #expect(try await server.client.send("POST", "/pets", headers: ["Content-Type": "application/json"], body: Data(deepJSON.utf8)).status == 400)
        var pets = #"{"kind": "cat"}"#
        // 250 levels of objects in lists: 500 levels of JSON, within the reader's 512.
        for _ in 0..<250 { pets = #"{"kind": "dog", "friends": [\#(pets)]}"# }
        #expect(try await server.client.send("POST", "/pets", headers: ["Content-Type": "application/json"], body: Data(pets.utf8)).status == 200)
        try await server.expectHealthy(after: "cyclic-schema bodies")

        // Admin calls with 100,000-deep JSON and a 20,000-deep expression.
        let deepAdmin = try await server.client.send(
            "PUT", "/__doppel/scenario", headers: ["Content-Type": "application/json"],
            body: Data(Self.nested(100_000, open: #"{"a":"#, close: "}", inner: "1").utf8))
        #expect(deepAdmin.status == 400)
        let deepWhen = #"{"overrides": [{"endpoint": "ok", "when": "\#(Self.nested(20_000, open: "(", close: ")", inner: "1"))", "status": 200}]}"#
        let refusedWhen = try await server.client.send(
            "PUT", "/__doppel/scenario", headers: ["Content-Type": "application/json"], body: Data(deepWhen.utf8))
        #expect(refusedWhen.status == 400)
        try await server.expectHealthy(after: "deep admin calls")

        // An admin file: outside the contract's folder.
        let outside = #"{"overrides": [{"endpoint": "ok", "response": {"status": 200, "file": "../../../../../../../../etc/passwd"}}]}"#
        let disclosed = try await server.client.send(
            "PUT", "/__doppel/scenario", headers: ["Content-Type": "application/json"], body: Data(outside.utf8))
        #expect(disclosed.status == 400)
        #expect(String(decoding: disclosed.body, as: UTF8.self).contains("outside the contract's folder"))
        #expect(!(String(decoding: try await server.client.send("GET", "/ok").body, as: UTF8.self).contains("root:")))
        try await server.expectHealthy(after: "an admin file outside the folder")

        // 20,000 distinct invalid session ids, then 20,000 distinct valid ones.
        let client = server.client
        let invalid = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var refused = 0
                    for i in stride(from: worker, to: 20_000, by: 8) {
                        let id = "bad id \(i) " + String(repeating: "x", count: 1000)
                        if try await client.send("GET", "/ok", session: id).status == 400 { refused += 1 }
                    }
                    return refused
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(invalid == 20_000)
        try await server.expectHealthy(after: "20,000 invalid session ids")
        let valid = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var answered = 0
                    for i in stride(from: worker, to: 20_000, by: 8) where try await client.send("GET", "/ok", session: "ci-job-\(i)").status == 200 {
                        answered += 1
                    }
                    return answered
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(valid == 20_000)
        #expect(try await client.send("GET", "/ok", session: "job-20001").status == 200)
        let health = try await client.send("GET", "/__doppel/health").json
        #expect(health?["sessions"]?.intValue == 10_000)
        #expect(health?["sessions_evicted"]?["for_room"]?.intValue ?? 0 >= 10_000)
        try await server.expectHealthy(after: "20,000 valid session ids")

        // A template that would build gigabytes from a 1 MB body.
        let join = #"{"a": [\#(Array(repeating: "0", count: 100_000).joined(separator: ","))], "s": "\#(String(repeating: "x", count: 300_000))"}"#
        let budget = try await client.send("POST", "/join", headers: ["Content-Type": "application/json"], body: Data(join.utf8))
        #expect(budget.status == 413)
        #expect(budget.json?["type"] == "urn:doppel:problem:evaluation-budget-exceeded")
        try await server.expectHealthy(after: "the join/map template")

        // The catastrophic pattern: a quick 422 for the attack, a quick 200 for a long valid value.
        let evil = #"{"code": "\#(String(repeating: "x", count: 100_000))"}"#
        #expect(try await client.send("POST", "/codes", headers: ["Content-Type": "application/json"], body: Data(evil.utf8)).status == 422)
        let fine = #"{"code": "\#(String(repeating: "x", count: 100_000))y"}"#
        #expect(try await client.send("POST", "/codes", headers: ["Content-Type": "application/json"], body: Data(fine.utf8)).status == 200)
        try await server.expectHealthy(after: "the catastrophic pattern")

        // 1,000 idle connections held open while a normal request is served.
        let port = server.port
        let idle = try await RawSocket.run { try (0..<1_000).map { _ in try RawSocket(port: port) } }
        try await server.expectHealthy(after: "1,000 idle connections")
        withExtendedLifetime(idle) {}

        // Headers that never finish, and a body that stops: 408 and closed at the deadlines.
        let slowHeaders = try await server.raw("GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        #expect(slowHeaders.text.hasPrefix("HTTP/1.1 408 Request Timeout"))
        #expect(slowHeaders.text.contains(#""type":"urn:doppel:problem:request-timeout""#))
        #expect(slowHeaders.closed)
        let slowBody = try await server.raw(
            "POST /pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"kind\"")
        #expect(slowBody.text.contains("408 Request Timeout"))
        #expect(slowBody.closed)
        // A body dripped a byte every 250 ms, each within the 1 s pause: the
        // whole body has 1 s and a second per 500 bytes, so 408 after ~1 s.
        let dripped: (text: String, drips: Int) = try await RawSocket.run {
            let socket = try RawSocket(port: port)
            socket.send("POST /pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
            var drips = 0
            while drips < 40 {
                socket.send(" ")
                drips += 1
                let reply = socket.receive(timeout: 0.25)
                if !reply.text.isEmpty || reply.closed { return (text: reply.text, drips: drips) }
            }
            return (text: "", drips: drips)
        }
        #expect(dripped.text.hasPrefix("HTTP/1.1 408 Request Timeout"), "after \(dripped.drips) drips: \(dripped.text)")
        #expect(dripped.drips < 12, "a dripped body held its connection for \(dripped.drips) drips of 250 ms")
        try await server.expectHealthy(after: "slow headers and bodies")

        // Two Host fields: 400 and closed. HTTP/1.0 with a transfer coding: answered, then closed.
        let twoHosts = try await server.raw("GET /ok HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n")
        #expect(twoHosts.text.hasPrefix("HTTP/1.1 400 "), "\(twoHosts.text)")
        #expect(twoHosts.text.contains("urn:doppel:problem:invalid-headers"))
        #expect(twoHosts.closed)
        let chunked10 = try await server.raw(
            "POST /pets HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n\r\nf\r\n{\"kind\": \"cat\"}\r\n0\r\n\r\n")
        #expect(chunked10.text.contains(" 200 "), "\(chunked10.text)")
        #expect(chunked10.text.lowercased().contains("connection: close"))
        #expect(chunked10.closed)
        try await server.expectHealthy(after: "two Host fields and HTTP/1.0 with Transfer-Encoding")

        // HTTP/1.0 without keep-alive is closed after its response; Expect: 100-continue is answered.
        let old = try await server.raw("GET /ok HTTP/1.0\r\n\r\n")
        #expect(old.text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(old.text.lowercased().contains("connection: close"))
        #expect(old.closed)
        let continued = try await RawSocket.run {
            let socket = try RawSocket(port: port)
            socket.send("POST /pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 15\r\nExpect: 100-continue\r\n\r\n")
            let interim = socket.receive(timeout: 2) { $0.contains("\r\n\r\n") }.text
            socket.send(#"{"kind": "cat"}"#)
            return (interim, socket.receive(timeout: 2) { $0.contains(#"{"kind":"cat"}"#) }.text)
        }
        #expect(continued.0 == "HTTP/1.1 100 Continue\r\n\r\n")
        #expect(continued.1.hasPrefix("HTTP/1.1 200 OK"))
        try await server.expectHealthy(after: "HTTP/1.0 and Expect")

        // Nobody read the server's standard output: lines were dropped and counted, requests never waited.
        #expect((try await client.send("GET", "/__doppel/health").json?["log_lines_dropped"]?.intValue ?? 0) > 0)
    }

    @Test func billionLaughsLintsWithinBoundedMemory() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("laughs-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: file) }
        var text = "doppel: 1\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        for i in 1...9 { text += "a\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 10).joined(separator: ", ") + "]\n" }
        try text.write(to: file, atomically: true, encoding: .utf8)
        let result = try await DoppelCommand.run(["lint", file.path])
        #expect(result.status == 1)
        #expect(result.errors.contains("expands to more than 1000000 nodes"))
        // The lint's own peak: measured by a Python parent whose only child it
        // is (this process's RUSAGE_CHILDREN would count the largest of every
        // server the other tests started). ru_maxrss is in kilobytes on Linux.
        let probe = try ChildProcess(
            "/usr/bin/env",
            [
                "python3", "-c",
                """
                import resource, subprocess, sys
                subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
                print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
                """, try #require(DoppelCommand.executable).path, "lint", file.path,
            ], errors: .inherit)
        let out = try #require(probe.output)
        let printed = String(decoding: try await offThePool { out.readDataToEndOfFile() }, as: UTF8.self)
        #expect(await probe.ending(within: 300) == .exit(0))
        let peakKiB = try #require(Int(printed.trimmingCharacters(in: .whitespacesAndNewlines)), "the probe printed \(printed.debugDescription)")
        #expect(peakKiB > 0)
        #expect(peakKiB * 1024 < HardeningTests.rssBound, "lint peaked at \(peakKiB >> 10) MiB")
    }

    @Test func sigtermEndsAnHourLongDelayWithinTheGracePeriod() async throws {
        let server = try await Server(["--shutdown-grace", "2s"])
        let client = server.client
        let slow = Task { try await client.send("GET", "/slow") }
        try await Task.sleep(for: .milliseconds(300))
        let signalled = Date()
        server.process.terminate()
        let answer = try await slow.value
        #expect(answer.status == 200)
        // The answer came and the process ends: the shutdown, not the hour the
        // delay asks for, ended the wait (15 s is a loaded machine's margin, not a claim about speed).
        let ending = await server.process.ending(within: 15 - Date().timeIntervalSince(signalled))
        #expect(ending == .exit(0), "the grace period, not the delay, ends the wait")
    }

    @Test func idleConnectionsAreClosedQuietlyAndBusyOnesKept() async throws {
        let server = try await Server(["--idle-timeout", "1s"])
        let port = server.port
        // A connection that never sends a byte, and one idle after its answer: closed, with no 408.
        let silent = try await server.raw("", timeout: 5)
        #expect(silent.closed)
        #expect(silent.text.isEmpty)
        let answered = try await server.raw("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n", timeout: 5)
        #expect(answered.text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(!answered.text.contains("408"))
        #expect(answered.closed)
        // A connection asking every 0.3s for 2.4s (over twice the idle timeout) stays open throughout.
        let busy = try await RawSocket.run {
            let socket = try RawSocket(port: port)
            var answers: [(text: String, closed: Bool)] = []
            for _ in 0..<8 {
                socket.send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
                answers.append(socket.receive(timeout: 2) { $0.contains(#"{"ok":true}"#) })
                Thread.sleep(forTimeInterval: 0.3)
            }
            return answers
        }
        #expect(busy.count == 8)
        for answer in busy {
            #expect(answer.text.hasPrefix("HTTP/1.1 200 OK"))
            #expect(!answer.closed)
        }
    }

    @Test func aSecondSignalExitsAtOnce() async throws {
        let server = try await Server(["--shutdown-grace", "60s", "--body-timeout", "60s"])
        // A request whose body never finishes keeps graceful shutdown waiting.
        let port = server.port
        let holder = try await RawSocket.run {
            let socket = try RawSocket(port: port)
            socket.send("POST /pets HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            return socket
        }
        try await Task.sleep(for: .milliseconds(200))
        server.process.terminate()
        try await Task.sleep(for: .milliseconds(700))
        #expect(server.process.isRunning, "graceful shutdown waits for the request in progress")
        let second = Date()
        server.process.terminate()
        // Ended long before the 60 s grace period the first signal started (15 s is a loaded machine's margin).
        let ending = await server.process.ending(within: 15 - Date().timeIntervalSince(second))
        #expect(ending == .exit(128 + SIGTERM), "the second signal, not the grace period, ends the process")
        withExtendedLifetime(holder) {}
    }
}

@Suite struct HardeningUnitTests {
    @Test func directAnswersAreEncodedWithCheckedHeaders() {
        var response = MockResponse(
            status: 402,
            headers: [
                (name: "Content-Type", value: "application/json"),
                (name: "X-Echo", value: "a\r\nX-Injected: 1"),
                (name: "Bad Name", value: "dropped"),
                (name: "content-length", value: "999"),
                (name: "Server", value: "other"),
            ], body: Array(#"{"error":"limit"}"#.utf8))
        let text = { (close: Bool) in
            var buffer = ResponseBytes.encode(response, date: "Mon, 23 Nov 2026 03:56:35 GMT", close: close, allocator: .init())
            return buffer.readString(length: buffer.readableBytes)!
        }
        #expect(
            text(false) == "HTTP/1.1 402 Payment Required\r\nContent-Type: application/json\r\nX-Echo: a  X-Injected: 1\r\n"
                + "Content-Length: 17\r\nDate: Mon, 23 Nov 2026 03:56:35 GMT\r\nServer: Doppel\r\n\r\n{\"error\":\"limit\"}")
        #expect(text(true).contains("\r\nConnection: close\r\n\r\n"))
        response.status = 299
        response.headers = []
        response.body = []
        #expect(text(false).hasPrefix("HTTP/1.1 299 \r\nContent-Length: 0\r\n"))
    }

    @Test func dateHeadersAreIMFFixdate() {
        #expect(HTTPDate.format(epochSecond: 1_795_406_195) == "Mon, 23 Nov 2026 03:56:35 GMT")
        #expect(HTTPDate.format(epochSecond: 1_709_164_809) == "Thu, 29 Feb 2024 00:00:09 GMT")
        #expect(HTTPDate.format(epochSecond: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    @Test func adminTokensCompareWholly() {
        #expect(AdminAPI.constantTimeEquals("secret", "secret"))
        #expect(!AdminAPI.constantTimeEquals("secreT", "secret"))
        #expect(!AdminAPI.constantTimeEquals("secre", "secret"))
        #expect(!AdminAPI.constantTimeEquals("secrets", "secret"))
        #expect(!AdminAPI.constantTimeEquals(nil, "secret"))
    }

    @Test func oneEngineBuilderHonoursEverySessionSetting() throws {
        var configuration = ServerConfiguration.testing
        configuration.sessionLimit = 7
        configuration.sessionIdleLimit = nil
        configuration.journalCapacity = 3
        let contract = try ContractLoader.load(
            text: "doppel: 1\nendpoints:\n  e: { request: GET /e, responses: [ { status: 200 } ] }", file: "e.yaml")
        let engine = MockEngine(contract: contract, configuration: configuration)
        #expect(engine.sessions.limit == 7)
        #expect(engine.sessions.idleLimit == nil)
        #expect(engine.journal.capacity == 3)
    }

    @Test func sizesTooLargeToHoldAreRefused() {
        #expect(ByteSize.parse("1e19b") == nil)
        #expect(ByteSize.parse("inf") == nil)
        #expect(ByteSize.parse("99999999999999999999") == nil)
        #expect(ByteSize.parse("1MiB") == 1 << 20)
    }

    @Test func onlyLoopbackHostsAreLoopback() {
        #expect(ServerConfiguration(host: "127.0.0.1").bindsLoopbackOnly)
        #expect(ServerConfiguration(host: "::1").bindsLoopbackOnly)
        #expect(ServerConfiguration(host: "localhost").bindsLoopbackOnly)
        #expect(!ServerConfiguration(host: "0.0.0.0").bindsLoopbackOnly)
        #expect(!ServerConfiguration(host: "::").bindsLoopbackOnly)
        #expect(!ServerConfiguration(host: "192.168.1.5").bindsLoopbackOnly)
    }

    @Test func aStalledStandardOutputNeverHoldsUpRequests() {
        let gate = DispatchSemaphore(value: 0)
        let written = Locked<[String]>([])
        let log = RequestLog(format: .text, capacity: 100) { line in
            gate.wait()
            written.withLock { $0.append(line) }
        }
        // The writer is stuck on its first write (of the lines that waited when it started); 10,000 more requests must not wait for it.
        for i in 0..<10_001 { log.request(method: "GET", path: "/\(i)", status: 200, endpointID: nil, session: "s", durationMicros: 1) }
        let dropped = log.dropped
        #expect(dropped >= 10_001 - 200 && dropped < 10_001 - 100, "the writer took at most 100 lines before it stalled, 100 more wait")
        for _ in 0..<200 { gate.signal() }
        #expect(log.flush(timeout: 5))
        // The writer writes what waits in one call: every line kept, and notes that together count every line dropped.
        let lines = written.withLock { $0 }.joined().split(separator: "\n").map(String.init)
        let notes = lines.filter { $0.hasPrefix("doppel: ") && $0.hasSuffix(" log lines dropped: standard output was not read fast enough") }
        #expect(lines.count - notes.count == 10_001 - dropped)
        #expect(notes.compactMap { Int($0.split(separator: " ")[1]) }.reduce(0, +) == dropped)
        #expect(lines.last.map(notes.contains) == true)
    }
}
