import DoppelCore
import DoppelRunner
import DoppelServer
import DoppelTestSupport
import Foundation
import Testing

/// WebSocket endpoints over loopback, with `WebSocketClient` (NIO): the
/// upgrade's checks, the contract's rules, pushes from HTTP endpoints, the
/// journal, and every bound.
@Suite("WebSockets over loopback")
struct SocketTests {
    static let token = "Bearer abc"

    static func socketURL(_ server: DoppelTestServer, _ path: String) -> URL {
        URL(string: "ws://127.0.0.1:\(server.port)\(path)")!
    }

    static func open(
        _ server: DoppelTestServer, _ path: String = "/v1/live", session: String, token: String? = SocketTests.token
    ) async throws -> WebSocketClient {
        var headers: [(name: String, value: String)] = [("Doppel-Session", session)]
        if let token { headers.append(("Authorization", token)) }
        return try await WebSocketClient.connect(to: socketURL(server, path), headers: headers)
    }

    /// The next text message, parsed as JSON.
    static func next(_ socket: WebSocketClient, within seconds: Double = 60) async -> JSON? {
        guard case .text(let text)? = await socket.receive(within: seconds) else { return nil }
        return try? JSONReader.parse(Array(text.utf8))
    }

    /// A contract in a folder of its own.
    static func withContract<T: Sendable>(
        _ text: String, configuration: ServerConfiguration = .testing,
        _ body: @Sendable (DoppelTestServer) async throws -> T
    ) async throws -> T {
        try await withTemporaryContract(text) { file in
            try await DoppelTestServer.with(contract: file, configuration: configuration, body)
        }
    }

    @Test("The demo's socket: refused without a token, welcomed, answered, told of a story a POST asked for, closed with 4000")
    func demoSocket() async throws {
        // The demo's heartbeat comes every 15 s; a loaded machine can stretch this test past that, and a heartbeat
        // would then come between the messages the test reads. Its copy here beats once an hour.
        let demo = try String(contentsOfFile: contractPath("realtime-demo.yaml"), encoding: .utf8)
        #expect(demo.contains("interval: 15s"))
        let quiet = demo.replacingOccurrences(of: "interval: 15s", with: "interval: 1h")
        try await Self.withContract(quiet) { server in
            // Refused with the documented 401 and its body, as HTTP.
            let refused = try await Self.open(server, session: "d1", token: nil)
            #expect(refused.handshake.status == 401)
            #expect(try JSONReader.parse(refused.handshake.body) == ["error": "unauthorized", "message": "Sign in first."])
            #expect(!refused.isOpen)

            let socket = try await Self.open(server, session: "d1")
            #expect(socket.handshake.status == 101)
            #expect(await Self.next(socket) == ["type": "welcome", "stories_used": 0, "monthly_limit": 3])
            try await socket.send(#"{"type":"ping"}"#)
            #expect(await Self.next(socket) == ["type": "pong"])
            try await socket.send(#"{"type":"subscribe","topic":"news"}"#)
            #expect(await Self.next(socket) == ["type": "subscribed", "topic": "news", "topics": 1])
            // A subscribe that breaks the rule's schema is not the rule's: on_unmatched answers.
            try await socket.send(#"{"type":"subscribe","topic":""}"#)
            #expect(await Self.next(socket)?["type"] == "error")
            try await socket.send("not json")
            #expect(await Self.next(socket)?["type"] == "error")

            // The socket's effects are the session's state, as HTTP sees it.
            let client = TestClient(base: server.baseURL)
            let topics = try await client.send("GET", "/v1/subscriptions", token: "abc", session: "d1")
            #expect(topics.json == ["topics": ["news"]])

            // A POST in the same session: 202 now, `story_ready` on the socket two seconds later.
            let posted = ContinuousClock.now
            let created = try await client.send("POST", "/v1/stories", json: ["title": "Dragons"], token: "abc", session: "d1")
            #expect(created.status == 202)
            #expect(await Self.next(socket) == ["type": "story_ready", "id": "st_1", "title": "Dragons"])
            #expect(ContinuousClock.now - posted >= .milliseconds(1900), "the push waits its delay")
            // Another session's POST reaches no socket of this one.
            #expect(try await client.send("POST", "/v1/stories", json: ["title": "Other"], token: "abc", session: "d2").status == 202)
            #expect(await socket.receive(within: 2.5) == nil)

            try await socket.send(#"{"type":"bye"}"#)
            #expect(await Self.next(socket) == ["type": "goodbye"])
            #expect(await socket.receive(within: 60) == .close(code: 4000, reason: "client said bye"))

            // Journaled both ways, verifiable, covered.
            let journal = server.engine.journal.entries.filter { $0.session == "d1" }
            #expect(
                journal.map(\.method) == [
                    "GET", "GET", "SEND", "RECEIVE", "RECEIVE", "RECEIVE", "RECEIVE", "GET", "POST", "SEND", "RECEIVE", "CLOSE",
                ])
            #expect(journal.first?.status == 401)
            let subscribe = journal.first { $0.endpointID == "live.subscribe" }
            #expect(subscribe?.message == #"{"type":"subscribe","topic":"news"}"#)
            #expect(subscribe?.sent == [#"{"type":"subscribed","topic":"news","topics":1}"#])
            #expect(subscribe?.changes == ["topics"])
            #expect(journal.last?.status == 4000 && journal.last?.endpointID == "live")
            #expect(journal.first { $0.endpointID == "live.push" }?.reason == "pushed by accepted")
            #expect(Verification(.init(endpoint: "live.ping", session: "d1"), expected: .exactly(1), in: server.engine.journal).passed)
            #expect(Verification(.init(endpoint: "live.on_unmatched", session: "d1"), expected: .exactly(2), in: server.engine.journal).passed)
            let verify = try await client.send(
                "POST", "/__doppel/verify", json: ["endpoint": "live.subscribe", "session": "d1", "count": 1], token: nil)
            #expect(verify.status == 200 && verify.json?["pass"] == true)
            let coverage = Coverage(of: server.engine.contract, in: server.engine.journal, session: "d1")
            #expect(coverage.endpoints.first { $0.id == "live.ping" }?.statuses.first?.reached == true)
            #expect(coverage.unreached.contains("live.heartbeat 101"))
            #expect(coverage.endpoints.first { $0.id == "live" }?.statuses.map(\.status) == [101, 401, 4000])
        }
    }

    @Test("A plain GET gets 426, a wrong version 426, a bad key 400; no socket opens")
    func handshakeChecks() async throws {
        try await DoppelTestServer.with(contract: contractPath("realtime-demo.yaml")) { server in
            let plain = try await TestClient(base: server.baseURL).send("GET", "/v1/live", token: "abc")
            #expect(plain.status == 426)
            #expect(plain.header("Upgrade") == "websocket" && plain.header("Sec-WebSocket-Version") == "13")
            let version = try await RawHTTP.exchange(
                port: server.port,
                Array(
                    "GET /v1/live HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n"
                        .utf8))
            #expect(version.hasPrefix("HTTP/1.1 426"))
            let key = try await RawHTTP.exchange(
                port: server.port,
                Array(
                    "GET /v1/live HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n"
                        .utf8))
            #expect(key.hasPrefix("HTTP/1.1 400") && key.contains("malformed-websocket-upgrade"))
            // The RFC's own example key and accept value.
            let upgraded = try await RawHTTP.exchange(
                port: server.port,
                Array(
                    "GET /v1/live HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                        .utf8), timeout: 2)
            #expect(upgraded.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
            #expect(upgraded.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        }
    }

    @Test("A subprotocol the endpoint speaks is answered in Sec-WebSocket-Protocol; one it does not is refused 400")
    func subprotocols() async throws {
        let contract = """
            doppel: 1
            endpoints:
              gql:
                request: GET /graphql
                auth: none
                websocket:
                  protocols: [graphql-transport-ws]
                  on_message:
                    - { when: "message.type == 'connection_init'", send: { type: connection_ack } }
            """
        try await Self.withContract(contract) { server in
            let url = Self.socketURL(server, "/graphql")
            let socket = try await WebSocketClient.connect(to: url, headers: [("Sec-WebSocket-Protocol", "graphql-ws, graphql-transport-ws")])
            #expect(socket.isOpen)
            #expect(socket.handshake.headers.contains { $0.name == "Sec-WebSocket-Protocol" && $0.value == "graphql-transport-ws" })
            try await socket.send(#"{"type":"connection_init"}"#)
            #expect(await Self.next(socket) == ["type": "connection_ack"])
            let refused = try await WebSocketClient.connect(to: url, headers: [("Sec-WebSocket-Protocol", "graphql-ws")])
            #expect(refused.handshake.status == 400)
            // None offered: opened, and no protocol answered.
            let plain = try await WebSocketClient.connect(to: url)
            #expect(plain.isOpen && !plain.handshake.headers.contains { $0.name == "Sec-WebSocket-Protocol" })
        }
    }

    static let limits = """
        doppel: 1
        state: { counters: { hits: 0 } }
        data: { big: \(String(repeating: "x", count: 60_000)) }
        endpoints:
          feed:
            request: GET /feed
            auth: none
            websocket:
              every:
                - name: tick
                  interval: 50ms
                  when: state.hits < 1000
                  send: { tick: true }
              on_message:
                - name: hit
                  when: message == 'hit'
                  effects: [ "state.hits += 1" ]
                - name: flood
                  when: message == 'flood'
                  send: [ "{{ data.big }}", "{{ data.big }}", "{{ data.big }}", "{{ data.big }}" ]
                - name: broken
                  when: message == 'broken'
                  effects: [ "state.hits = 1 / 0" ]
          hits: { request: GET /hits, auth: none, responses: [ { body: { hits: "{{ state.hits }}" } } ] }
          bump:
            request: POST /bump
            auth: none
            responses: [ { status: 204, push: [ { socket: feed, send: { bumped: true } } ] } ]
        """

    @Test("Scheduled messages every interval; a broken rule closes 1011 and changes nothing; binary is refused 1003")
    func scheduledAndBroken() async throws {
        try await Self.withContract(Self.limits) { server in
            let socket = try await Self.open(server, "/feed", session: "t1", token: nil)
            #expect(await Self.next(socket) == ["tick": true])
            #expect(await Self.next(socket) == ["tick": true])
            try await socket.send("broken")
            var closed: WebSocketClient.Message?
            while let message = await socket.receive(within: 60) {
                if case .close = message {
                    closed = message
                    break
                }
            }
            #expect(closed == .close(code: 1011, reason: "the contract's rule failed; see the journal"))
            let close = server.engine.journal.entries.last { $0.method == "RECEIVE" && $0.session == "t1" }
            #expect(close?.reason?.contains("broken") == true)

            let binary = try await Self.open(server, "/feed", session: "t2", token: nil)
            try await binary.send(opcode: .binary, data: [1, 2, 3])
            var last: WebSocketClient.Message?
            while let message = await binary.receive(within: 60) {
                last = message
                if case .close = message { break }
            }
            #expect(last == .close(code: 1003, reason: "binary messages are not taken"))
        }
    }

    @Test("Messages from many sockets and HTTP calls at once change the session's state exactly once each")
    func concurrentMessagesCountExactly() async throws {
        try await Self.withContract(Self.limits) { server in
            let sockets = try await withThrowingTaskGroup(of: WebSocketClient.self) { group in
                for _ in 0..<8 { group.addTask { try await Self.open(server, "/feed", session: "c", token: nil) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(sockets.allSatisfy { $0.isOpen })
            try await withThrowingTaskGroup(of: Void.self) { group in
                for socket in sockets {
                    group.addTask { for _ in 0..<25 { try await socket.send("hit") } }
                }
                try await group.waitForAll()
            }
            // Each message is answered in order on its socket: a 26th round trip means the 25 before it were taken.
            var hits = 0
            try await eventually(within: 60, every: .milliseconds(50)) {
                hits = try await TestClient(base: server.baseURL).send("GET", "/hits", token: nil, session: "c").json?["hits"]?.intValue ?? 0
                return hits == 200
            }
            #expect(hits == 200)
            #expect(Verification(.init(endpoint: "feed.hit", session: "c"), expected: .exactly(200), in: server.engine.journal).passed)
            // A push reaches every socket of the session.
            #expect(try await TestClient(base: server.baseURL).send("POST", "/bump", token: nil, session: "c").status == 204)
            for socket in sockets {
                var bumped = false
                while let message = await socket.receive(within: 60) {
                    if message == .text(#"{"bumped":true}"#) {
                        bumped = true
                        break
                    }
                }
                #expect(bumped)
                await socket.close()
            }
        }
    }

    @Test("Bounds: sockets per session (429), message size (1009), message rate (1008), idle time (1001)")
    func bounds() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxSocketsPerSession = 2
        configuration.maxSocketMessage = 1024
        // 5 a second here (100 by default), so a loaded machine's slow sends still go past it.
        configuration.socketLimits.rate = 5
        try await Self.withContract(Self.limits, configuration: configuration) { server in
            let first = try await Self.open(server, "/feed", session: "b", token: nil)
            let second = try await Self.open(server, "/feed", session: "b", token: nil)
            let third = try await Self.open(server, "/feed", session: "b", token: nil)
            #expect(first.isOpen && second.isOpen)
            #expect(third.handshake.status == 429)
            #expect(String(decoding: third.handshake.body, as: UTF8.self).contains("too-many-sockets"))
            // Another session has places of its own.
            #expect(try await Self.open(server, "/feed", session: "b2", token: nil).isOpen)

            try? await first.send(String(repeating: "x", count: 2000))
            #expect(await Self.closeCode(first) == 1009)

            // 300 messages are past 5 a second (with a burst of 5) however slowly they go.
            for _ in 0..<300 { try? await second.send("hit") }
            #expect(await Self.closeCode(second) == 1008)

            // Pings count toward the rate as messages do.
            let pinger = try await Self.open(server, "/feed", session: "p", token: nil)
            for _ in 0..<300 { try? await pinger.send(opcode: .ping, data: [1]) }
            #expect(await Self.closeCode(pinger) == 1008)

            // Both closed sockets gave their places back.
            var again = try await Self.open(server, "/feed", session: "b", token: nil)
            try await eventually(within: 60, every: .milliseconds(100)) {
                if !again.isOpen { again = try await Self.open(server, "/feed", session: "b", token: nil) }
                return again.isOpen
            }
            #expect(again.isOpen)
            let health = try await TestClient(base: server.baseURL).send("GET", "/__doppel/health", token: nil)
            #expect(health.json?["sockets"]?["per_session_limit"] == 2)
        }
        configuration.socketIdleTimeout = 1
        try await Self.withContract(Self.limits, configuration: configuration) { server in
            // Silent for over a second (ticks are the server's frames, not the client's): 1001.
            let silent = try await Self.open(server, "/feed", session: "i", token: nil)
            #expect(await Self.closeCode(silent, within: 20) == 1001)
            #expect(server.engine.journal.entries.last { $0.method == "CLOSE" }?.reason?.contains("--socket-idle-timeout") == true)
        }
    }

    /// Reads until the server's close frame; its code.
    static func closeCode(_ socket: WebSocketClient, within seconds: Double = 60) async -> Int? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline, let message = await socket.receive(within: seconds) {
            if case .close(let code, _) = message { return code }
        }
        return nil
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// 1,000 idle sockets and one client that asks for much and reads nothing,
/// against a `doppel serve` process: its memory stays bounded, the silent
/// client is dropped, the idle ones stay open, and HTTP is answered on time.
@Suite("WebSockets at scale")
struct SocketScaleTests {
    /// What `doppel serve` may hold with 1,000 open sockets (docs/limits.md).
    static let rssBound = 300 << 20

    /// A client's text frame: masked, as RFC 6455 requires of clients.
    static func frame(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        precondition(payload.count < 126)
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        return [0x81, 0x80 | UInt8(payload.count)] + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    static func upgrade(_ fd: Int32, session: String) {
        send(
            fd,
            Array(
                "GET /feed HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nDoppel-Session: \(session)\r\n\r\n"
                    .utf8))
    }

    @Test("1,000 idle sockets and a client that never reads: RSS bounded, the silent one dropped, answers on time")
    func thousandIdleSocketsAndOneThatNeverReads() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sockets-scale-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let contract = folder.appendingPathComponent("feed.yaml")
        try """
        doppel: 1
        data: { big: \(String(repeating: "x", count: 60_000)) }
        endpoints:
          feed:
            request: GET /feed
            auth: none
            websocket:
              on_connect: [ { send: { hello: true } } ]
              every: [ { interval: 1s, send: { tick: "{{ clock.now }}" } } ]
              on_message:
                - { when: "message == 'flood'", send: [ "{{ data.big }}", "{{ data.big }}", "{{ data.big }}", "{{ data.big }}" ] }
          small: { request: GET /small, auth: none, responses: [ { body: { ok: true } } ] }
        """.write(to: contract, atomically: true, encoding: .utf8)
        let served = try await DoppelCommand.serve([contract.path, "--log-format", "none", "--max-sockets-per-session", "2000"])
        defer { served.process.terminate() }
        let port = served.port
        let pid = served.process.processIdentifier
        let client = TestClient(base: URL(string: "http://127.0.0.1:\(port)")!, maxConnections: 4)
        let count = 1_000

        let idle = try await RawSocket.run { () -> [Int32] in
            var fds: [Int32] = []
            for index in 0..<count {
                let fd = try connectLoopback(port: port)
                Self.upgrade(fd, session: "s\(index % 10)")
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                fds.append(fd)
            }
            return fds
        }
        defer { for fd in idle { close(fd) } }
        var open = 0
        // (60 s: the full suite's load has held the last upgrades of 1,000 past 10 s.)
        try await eventually(within: 60, every: .milliseconds(50)) {
            open = try await client.send("GET", "/__doppel/health", token: nil).json?["sockets"]?["open"]?.intValue ?? 0
            return open >= count
        }
        #expect(open == count)

        // The silent client: a 4 KiB receive buffer, 60 floods of 240 KB asked for, nothing read.
        let silent = try await RawSocket.run { () -> Int32 in
            let fd = try connectLoopback(port: port, receiveBuffer: 4096)
            Self.upgrade(fd, session: "silent")
            // Frames only after the server's 101, as RFC 6455 §4.1 asks of clients: bytes sent before it are the
            // HTTP request's, dropped at the upgrade (a loaded run once took longer than a fixed pause to answer).
            var handshake: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1)
            while !handshake.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)), waitReadable(fd, millis: 60_000), receiveSome(fd, into: &buffer) > 0 {
                handshake.append(buffer[0])
            }
            #expect(String(decoding: handshake, as: UTF8.self).hasPrefix("HTTP/1.1 101"), "\(String(decoding: handshake, as: UTF8.self))")
            for _ in 0..<60 { Self.send(fd, Self.frame("flood")) }
            return fd
        }
        defer { close(silent) }

        // Meanwhile: peak RSS sampled, and HTTP answered.
        var peak = 0
        var slowest = 0.0
        var dropped = 0
        // Within 180 s: under the full suite's load the flood has taken more than 30 s to back up, and
        // once (a clean-clone CI run, the debug server ticking its 1,000 sockets beside the suite) over 90 s.
        try await eventually(within: 180, every: .milliseconds(100)) {
            peak = max(peak, residentBytes(of: pid) ?? 0)
            let started = Date()
            #expect(try await client.send("GET", "/small", token: nil).status == 200)
            slowest = max(slowest, Date().timeIntervalSince(started))
            let health = try await client.send("GET", "/__doppel/health", token: nil).json
            dropped = health?["sockets"]?["dropped"]?.intValue ?? 0
            open = health?["sockets"]?["open"]?.intValue ?? 0
            return dropped == 1
        }
        // The idle sockets' ticks keep coming (read now, a second's worth each at most).
        let reading = try await RawSocket.run { () -> Int in
            var buffer = [UInt8](repeating: 0, count: 4096)
            var alive = 0
            for fd in idle where recv(fd, &buffer, buffer.count, 0) > 0 { alive += 1 }
            return alive
        }
        print(
            "socket scale: \(count) idle sockets; peak RSS \(peak >> 20) MiB; slowest answer \(Int(slowest * 1000)) ms; dropped \(dropped); open \(open)"
        )
        #expect(dropped == 1, "the client that reads nothing is dropped")
        #expect(open == count, "the idle sockets stay open")
        #expect(reading == count, "every idle socket got its messages")
        #expect(peak < Self.rssBound, "peak RSS \(peak >> 20) MiB")
        // Not a speed check (Benchmarks/ measures speed): a bound only a server held up by its sockets misses.
        // 30 s, not 5: the full suite's load alone has held one answer of the event stream's twin of this test for 10 s.
        #expect(slowest < 30, "an answer took \(slowest) s")
        #expect(served.process.isRunning)
    }
}
