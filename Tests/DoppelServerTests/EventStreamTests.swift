import DoppelCore
import DoppelRunner
import DoppelServer
import DoppelTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `GET /__doppel/events` over loopback: what it carries, who may read it,
/// and that no number or kind of reader can slow the server or grow its memory.
@Suite("Event stream over loopback", .serialized)
struct EventStreamTests {
    static let token = "events-token"

    var configuration: ServerConfiguration {
        var configuration = ServerConfiguration.testing
        configuration.adminToken = Self.token
        return configuration
    }

    /// Opens a stream and waits for its `ready` event.
    static func open(port: Int, query: String = "", token: String? = EventStreamTests.token) -> (socket: RawSocket, head: String) {
        let socket = try! RawSocket(port: port)
        socket.send("GET /__doppel/events\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(token.map { "Doppel-Admin-Token: \($0)\r\n" } ?? "")\r\n")
        let head = socket.receive(timeout: 10) { $0.contains("event: ready") || $0.hasPrefix("HTTP/1.1 4") || $0.hasPrefix("HTTP/1.1 5") }.text
        return (socket, head)
    }

    @Test("Answers and admin changes arrive as they happen, with why; by session when asked; only with the token")
    func eventsArriveLive() async throws {
        try await DoppelTestServer.with(contract: contractPath("tales.yaml"), configuration: configuration) { server in
            let port = server.port
            let refused = try await rawAnswer(port: port, "GET /__doppel/events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            #expect(refused.hasPrefix("HTTP/1.1 401"))
            let invalid = try await rawAnswer(
                port: port,
                "GET /__doppel/events?session=a%20b HTTP/1.1\r\nHost: 127.0.0.1\r\nDoppel-Admin-Token: \(Self.token)\r\nConnection: close\r\n\r\n")
            #expect(invalid.hasPrefix("HTTP/1.1 400"))

            let (all, head) = try await RawSocket.run { Self.open(port: port) }
            #expect(head.hasPrefix("HTTP/1.1 200 OK"))
            #expect(head.contains("Content-Type: text/event-stream; charset=utf-8"))
            #expect(head.contains("Transfer-Encoding: chunked"))
            let (alice, _) = try await RawSocket.run { Self.open(port: port, query: "?session=alice") }
            let health = try await TestClient(base: server.baseURL).send("GET", "/__doppel/health", headers: ["Doppel-Admin-Token": Self.token])
            #expect(health.json?["event_streams"]?["open"] == 2)

            let client = TestClient(base: server.baseURL)
            #expect(try await client.send("GET", "/api/v1/free-stories", token: nil, session: "bob").status == 200)
            #expect(try await client.send("GET", "/api/v1/users/subscription", token: nil, session: "alice").status == 401)
            #expect(
                try await client.send(
                    "POST", "/__doppel/clock?session=alice", json: ["advance": "1d"], token: nil,
                    headers: ["Doppel-Admin-Token": Self.token]
                ).status == 200)
            let seen = try await RawSocket.run { all.receive(timeout: 10) { $0.contains(#""call":"POST /__doppel/clock""#) }.text }
            #expect(seen.contains(#""session":"bob","method":"GET","path":"/api/v1/free-stories""#))
            #expect(seen.contains(#""reason":"auth scheme 'bearer': no credential was sent""#))
            #expect(seen.contains("event: state\r\n") == false && seen.contains("event: state\n"))
            let onlyAlice = try await RawSocket.run { alice.receive(timeout: 10) { $0.contains(#""call":"POST /__doppel/clock""#) }.text }
            #expect(onlyAlice.contains(#""session":"alice""#))
            #expect(!onlyAlice.contains(#""session":"bob""#), "a session's stream carries no other session's answers")

            // HTTP/1.0 has no chunks: the events follow the head as they are, until the connection ends.
            let old = try await RawSocket.run { () -> String in
                let socket = try RawSocket(port: port)
                socket.send("GET /__doppel/events HTTP/1.0\r\nDoppel-Admin-Token: \(Self.token)\r\n\r\n")
                return socket.receive(timeout: 10) { $0.contains("event: ready") }.text
            }
            #expect(old.hasPrefix("HTTP/1.1 200 OK") && !old.contains("Transfer-Encoding"))
            #expect(old.hasSuffix("\r\n\r\nevent: ready\ndata: {\"session\":null,\"readers\":3}\n\n"), "\(old)")

            // Clearing the journal is told to every reader.
            #expect(try await client.send("DELETE", "/__doppel/journal", token: nil, headers: ["Doppel-Admin-Token": Self.token]).status == 200)
            let cleared = try await RawSocket.run { alice.receive(timeout: 10) { $0.contains("event: journal") }.text }
            #expect(cleared.contains("event: journal"))
        }
    }

    @Test("Past --max-event-streams, a stream is refused with 503; a closed one frees its place")
    func streamsAreLimited() async throws {
        var configuration = self.configuration
        configuration.maxEventStreams = 2
        try await DoppelTestServer.with(contract: contractPath("tales.yaml"), configuration: configuration) { server in
            let port = server.port
            var first: (socket: RawSocket, head: String)? = try await RawSocket.run { Self.open(port: port) }
            let second = try await RawSocket.run { Self.open(port: port) }
            #expect(first?.head.contains("event: ready") == true && second.head.contains("event: ready"))
            let third = try await RawSocket.run { Self.open(port: port).head }
            #expect(third.hasPrefix("HTTP/1.1 503"))
            #expect(third.contains("urn:doppel:problem:too-many-event-streams"))
            first = nil  // its socket closes
            let freed = try await eventually(within: 60, every: .milliseconds(50)) {
                try await RawSocket.run { Self.open(port: port).head.contains("event: ready") }
            }
            #expect(freed)
        }
    }
}

/// A thousand readers, and one that never reads, against a `doppel serve`
/// process: its memory stays bounded, every answer comes on time, every
/// reader gets every event of its session, and the silent one is dropped.
@Suite("Event stream readers at scale", .serialized)
struct EventStreamScaleTests {
    /// What `doppel serve` may hold with 1,000 readers (docs/limits.md).
    static let rssBound = 400 << 20

    @Test("1,000 readers and one that never reads: RSS bounded, answers on time, the silent reader dropped")
    func thousandReadersAndOneThatNeverReads() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("events-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try String(repeating: "x", count: 16_000).write(to: folder.appendingPathComponent("big.txt"), atomically: true, encoding: .utf8)
        let contract = folder.appendingPathComponent("events.yaml")
        try """
        doppel: 1
        endpoints:
          small: { request: GET /small, responses: [ { body: { ok: true } } ] }
          big: { request: POST /big, responses: [ { content_type: text/plain, file: big.txt } ] }
        """.write(to: contract, atomically: true, encoding: .utf8)
        let served = try await DoppelCommand.serve([contract.path, "--log-format", "none"])
        defer { served.process.terminate() }
        let port = served.port
        let pid = served.process.processIdentifier
        let base = URL(string: "http://127.0.0.1:\(port)")!
        let readerCount = 1_000
        let smallRequests = 300
        let bigRequests = 400

        // 999 readers of session s, and one of every session that reads nothing (a 4 KiB receive buffer).
        let (readers, silent) = try await RawSocket.run { () -> ([Int32], Int32) in
            var readers: [Int32] = []
            for _ in 0..<(readerCount - 1) {
                let fd = try connectLoopback(port: port)
                let request = Array("GET /__doppel/events?session=s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
                _ = request.withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                readers.append(fd)
            }
            let silent = try connectLoopback(port: port, receiveBuffer: 4096)
            let request = Array("GET /__doppel/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { Foundation.send(silent, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return (readers, silent)
        }
        defer {
            for fd in readers { close(fd) }
            close(silent)
        }
        let client = TestClient(base: base, maxConnections: 8)
        var open = 0
        try await eventually(within: 60, every: .milliseconds(50)) {
            open = try await client.send("GET", "/__doppel/health", token: nil).json?["event_streams"]?["open"]?.intValue ?? 0
            return open >= readerCount
        }
        #expect(open == readerCount)

        // The readers read on a thread of their own: events counted per reader, peak RSS sampled.
        let stop = Locked(false)
        let reading = Task.detached { () -> (counts: [Int], peak: Int) in
            var counts = [Int](repeating: 0, count: readers.count)
            var tails = [[UInt8]](repeating: [], count: readers.count)
            let marker = Array("event: request".utf8)
            var buffer = [UInt8](repeating: 0, count: 65536)
            var peak = 0
            var polls = readers.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            var lastSample = Date.distantPast
            while !stop.withLock({ $0 }), counts.contains(where: { $0 < smallRequests }) {
                if Date().timeIntervalSince(lastSample) > 0.05 {
                    peak = max(peak, residentBytes(of: pid) ?? 0)
                    lastSample = Date()
                }
                guard poll(&polls, nfds_t(polls.count), 50) > 0 else { continue }
                for index in polls.indices where polls[index].revents != 0 {
                    while true {
                        let n = recv(polls[index].fd, &buffer, buffer.count, 0)
                        if n <= 0 { break }
                        // Counted with strstr (the stream is text, without NUL): a byte
                        // loop in a debug build would take the server's CPU.
                        var bytes = tails[index] + buffer[0..<n] + [0]
                        var consumed = 0
                        bytes.withUnsafeBufferPointer { raw in
                            raw.withMemoryRebound(to: CChar.self) { text in
                                while let found = strstr(text.baseAddress! + consumed, "event: request") {
                                    counts[index] += 1
                                    consumed = text.baseAddress!.distance(to: found) + marker.count
                                }
                            }
                        }
                        bytes.removeLast()
                        bytes.removeFirst(max(consumed, bytes.count - marker.count + 1))
                        tails[index] = bytes
                    }
                }
            }
            return (counts, peak)
        }

        // Traffic while they read, from 4 clients each sending one request
        // at a time: small answers for session s (to all 1,000 readers), big
        // ones for another session (to the silent reader only).
        let bigBody = Data(repeating: UInt8(ascii: "y"), count: 16_000)
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for lane in 0..<4 {
                group.addTask {
                    var mine: [Double] = []
                    for index in stride(from: lane, to: smallRequests + bigRequests, by: 4) {
                        let started = Date()
                        let answer =
                            index % 7 < 3
                            ? try await client.send("GET", "/small", token: nil, session: "s")
                            : try await client.send(
                                "POST", "/big", token: nil, session: "big", headers: ["Content-Type": "text/plain"], body: bigBody)
                        #expect(answer.status == 200)
                        mine.append(Date().timeIntervalSince(started))
                    }
                    return mine
                }
            }
            var all: [Double] = []
            for try await lane in group { all += lane }
            return all.sorted()
        }
        // Every reader of s gets every one of its answers (the reading task ends when they have, or at the deadline).
        let deadline = Task {
            try? await Task.sleep(for: .seconds(60))
            stop.withLock { $0 = true }
        }
        let result = await reading.value
        deadline.cancel()
        let counts = result.counts
        let health = try await client.send("GET", "/__doppel/health", token: nil).json
        print(
            "event stream scale: \(readerCount) readers; answers median \(Int(latencies[latencies.count / 2] * 1000)) ms, "
                + "max \(Int(latencies.last! * 1000)) ms; peak RSS \(result.peak >> 20) MiB; events per reader \(counts.min() ?? 0)–\(counts.max() ?? 0); "
                + "health \(health.map { JSONWriter.encodeString($0["event_streams"] ?? .null) } ?? "")")
        // Not a speed check (Benchmarks/ measures that): a bound that only a server held up by its readers misses.
        // 30 s, not 10: under the full suite's load one answer of a clean-clone CI run took 10.3 s (median 163 ms).
        #expect(latencies.last! < 30, "an answer took \(latencies.last!) s: the readers held the server up")
        #expect(result.peak < Self.rssBound, "peak RSS \(result.peak >> 20) MiB")
        #expect(counts.allSatisfy { $0 == smallRequests }, "every reader gets every event of its session")
        #expect(health?["event_streams"]?["dropped"] == 1, "the reader that reads nothing is dropped")
        #expect(health?["event_streams"]?["open"]?.intValue == readerCount - 1)
        #expect(served.process.isRunning)
    }
}
