import DoppelCore
import DoppelServer
import DoppelTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Testing

@testable import DoppelRunner

#if canImport(Glibc)
import Glibc
#endif

/// What a stranger tried against the surfaces added last (the admin API from
/// web pages, sockets, callbacks, the runners against a hostile provider),
/// each as a request a browser, a client or a provider could make.
@Suite("Hardening, round three")
struct HardeningRoundThreeTests {
    static let tales = contractPath("tales.yaml")

    /// An admin call with the given headers and JSON body.
    static func admin(
        _ server: DoppelTestServer, _ method: String, _ target: String, headers: [String: String], body: String? = nil
    ) async throws -> HTTPResult {
        try await TestClient(base: server.baseURL).send(method, target, token: nil, headers: headers, body: body.map { Data($0.utf8) })
    }

    @Test("The admin API refuses web pages of other origins, rebound host names and bodies not sent as JSON; the dashboard's own calls pass")
    func adminFromBrowsers() async throws {
        try await DoppelTestServer.with(contract: Self.tales) { server in
            let forced = #"{"endpoint": "list-free-stories", "status": 500, "session": "victim"}"#
            // A page on another origin: Origin, or Sec-Fetch-Site, says so.
            let byOrigin = try await Self.admin(
                server, "POST", "/__doppel/next", headers: ["Origin": "https://evil.example", "Content-Type": "application/json"], body: forced)
            #expect(byOrigin.status == 403)
            #expect(byOrigin.json?["type"] == "urn:doppel:problem:admin-cross-site")
            let bySite = try await Self.admin(server, "POST", "/__doppel/reset", headers: ["Sec-Fetch-Site": "cross-site"])
            #expect(bySite.status == 403)
            let nullOrigin = try await Self.admin(
                server, "POST", "/__doppel/clock", headers: ["Origin": "null", "Content-Type": "application/json"], body: #"{"advance": "400d"}"#)
            #expect(nullOrigin.status == 403)
            // A form or text body (what a page may send without asking): 415.
            let form = try await Self.admin(server, "POST", "/__doppel/next", headers: ["Content-Type": "text/plain"], body: forced)
            #expect(form.status == 415)
            #expect(form.json?["detail"]?.stringValue?.contains("Content-Type: application/json") == true)
            let untyped = try await Self.admin(server, "POST", "/__doppel/next", headers: [:], body: forced)
            #expect(untyped.status == 415)
            // Nothing was forced: the next answer is the contract's own.
            let answer = try await TestClient(base: server.baseURL).send("GET", "/api/v1/free-stories?language=en", session: "victim")
            #expect(answer.status == 200)
            // A rebound name: refused for every call, the event stream and the dashboard included.
            for target in ["/__doppel/journal", "/__doppel/events", "/__doppel/ui/", "/__doppel/health"] {
                let rebound = try await Self.admin(server, "GET", target, headers: ["Host": "attacker.example:\(server.port)"])
                #expect(rebound.status == 403, "\(target)")
                #expect(rebound.json?["type"] == "urn:doppel:problem:admin-host-refused", "\(target)")
            }
            // Loopback names and addresses, and the dashboard's own origin, are served.
            for host in ["localhost:\(server.port)", "127.0.0.1:\(server.port)", "[::1]:\(server.port)", "doppel.localhost"] {
                #expect(try await Self.admin(server, "GET", "/__doppel/health", headers: ["Host": host]).status == 200, "\(host)")
            }
            let own = try await Self.admin(
                server, "POST", "/__doppel/clock",
                headers: [
                    "Origin": "http://127.0.0.1:\(server.port)", "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json",
                ], body: #"{"session": "victim", "advance": "1d"}"#)
            #expect(own.status == 200, "\(own.json.map { JSONWriter.encodeString($0) } ?? "")")
            // A link to the page from anywhere opens it; it holds no data.
            #expect(try await Self.admin(server, "GET", "/__doppel/ui/", headers: ["Sec-Fetch-Site": "cross-site"]).status == 200)
            // curl, test suites and `doppel run`: no Origin, a JSON body.
            #expect(
                try await Self.admin(
                    server, "POST", "/__doppel/reset", headers: ["Content-Type": "application/json"], body: #"{"session": "victim"}"#
                ).status == 200)
        }
        var configuration = ServerConfiguration.testing
        configuration.allowedHosts = ["mock.internal", "*.team.example"]
        try await DoppelTestServer.with(contract: Self.tales, configuration: configuration) { (server) async throws in
            #expect(try await Self.admin(server, "GET", "/__doppel/health", headers: ["Host": "mock.internal:8000"]).status == 200)
            #expect(try await Self.admin(server, "GET", "/__doppel/health", headers: ["Host": "ci.team.example"]).status == 200)
            #expect(try await Self.admin(server, "GET", "/__doppel/health", headers: ["Host": "team.example.evil"]).status == 403)
        }
    }

    static let sockets = """
        doppel: 1
        state: { counters: { ticks: 0 } }
        endpoints:
          feed:
            request: GET /feed
            auth: none
            websocket:
              every:
                - name: tick
                  interval: 100ms
                  effects: [ "state.ticks += 1" ]
                  send: { tick: true }
              on_message:
                - name: later
                  when: message == 'later'
                  # Longer than a loaded machine may take to read the test's 1,200 messages, so none is sent and frees its place.
                  delay: 30m
                  send: { late: true }
          ticks: { request: GET /ticks, auth: none, responses: [ { body: { ticks: "{{ state.ticks }}" } } ] }
        """

    /// Runs blocking socket calls on a Dispatch thread: blocking one of the
    /// few cooperative threads would starve every other test's clients and
    /// servers (a refused connection then times out).
    static func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// A raw upgrade of `/feed` from `source` (a loopback address), its answer's first line.
    static func rawUpgrade(port: Int, from source: String = "127.0.0.1", request: String? = nil) async throws -> (fd: Int32, status: String) {
        try await offThread { try blockingRawUpgrade(port: port, from: source, request: request) }
    }

    static func blockingRawUpgrade(port: Int, from source: String, request: String?) throws -> (fd: Int32, status: String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &local) { l in
            withUnsafePointer(to: &remote) { r in
                l.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } == 0
                    && r.withMemoryRebound(to: sockaddr.self, capacity: 1) { connectSocket(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard connected else {
            close(fd)
            throw TestServerError(message: "cannot connect from \(source)")
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        SocketScaleTests.send(
            fd,
            Array(
                (request
                    ?? "GET /feed HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
                    .utf8))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).contains("\r\n") {
            let n = receiveSome(fd, into: &buffer)
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        return (fd, String(decoding: received, as: UTF8.self).components(separatedBy: "\r\n").first ?? "")
    }

    /// The server's close code after `frame`, read from a raw socket (nil: none within 10 s).
    static func closeCode(after frame: [UInt8], port: Int) async throws -> Int? {
        try await offThread { try blockingCloseCode(after: frame, port: port) }
    }

    static func blockingCloseCode(after frame: [UInt8], port: Int) throws -> Int? {
        let (fd, status) = try blockingRawUpgrade(port: port, from: "127.0.0.1", request: nil)
        defer { close(fd) }
        guard status.hasPrefix("HTTP/1.1 101") else { return nil }
        SocketScaleTests.send(fd, frame)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = receiveSome(fd, into: &buffer)
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        // The close frame: 0x88, a length, then the code.
        guard let at = received.firstIndex(of: 0x88), at + 3 < received.count else { return nil }
        return Int(received[at + 2]) << 8 | Int(received[at + 3])
    }

    @Test(
        "RFC 6455 as a server must keep it: unmasked frames, RSV bits, reserved opcodes and unsendable close codes close 1002; HTTP/1.0 and HEAD do not upgrade"
    )
    func socketProtocolRules() async throws {
        try await SocketTests.withContract(Self.sockets) { server in
            let mask: [UInt8] = [1, 2, 3, 4]
            func masked(_ first: UInt8, _ payload: [UInt8]) -> [UInt8] {
                [first, 0x80 | UInt8(payload.count)] + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
            }
            #expect(try await Self.closeCode(after: [0x81, 0x02, 0x68, 0x69], port: server.port) == 1002, "unmasked")
            #expect(try await Self.closeCode(after: masked(0xC1, Array("hi".utf8)), port: server.port) == 1002, "RSV1")
            #expect(try await Self.closeCode(after: masked(0x83, Array("hi".utf8)), port: server.port) == 1002, "opcode 3")
            for code in [0, 1005, 1006, 1015, 65535, 999] {
                #expect(
                    try await Self.closeCode(after: masked(0x88, [UInt8(code >> 8), UInt8(code & 0xFF)]), port: server.port) == 1002, "close \(code)")
            }
            // A valid close is echoed.
            #expect(try await Self.closeCode(after: masked(0x88, [0x03, 0xE8]), port: server.port) == 1000)
            let upgrade =
                "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            let http10 = try await Self.rawUpgrade(port: server.port, request: "GET /feed HTTP/1.0\r\n" + upgrade)
            close(http10.fd)
            #expect(http10.status.contains(" 426"), "\(http10.status)")
            let head = try await Self.rawUpgrade(port: server.port, request: "HEAD /feed HTTP/1.1\r\n" + upgrade)
            close(head.fd)
            #expect(head.status.contains(" 400"), "\(head.status)")
        }
    }

    @Test("Upgrades from pages of other origins are refused 403; the server's own, loopback ones and --allow-origin ones open")
    func socketOrigins() async throws {
        var configuration = ServerConfiguration.testing
        configuration.allowedOrigins = ["https://app.example"]
        try await SocketTests.withContract(Self.sockets, configuration: configuration) { (server) async throws in
            func open(_ origin: String) async throws -> Int {
                let socket = try await WebSocketClient.connect(to: SocketTests.socketURL(server, "/feed"), headers: [("Origin", origin)])
                await socket.close()
                return socket.handshake.status
            }
            #expect(try await open("https://evil.example") == 403)
            #expect(try await open("null") == 403)
            #expect(try await open("http://localhost:3000") == 101)
            #expect(try await open("http://127.0.0.1:\(server.port)") == 101)
            #expect(try await open("https://app.example") == 101)
        }
    }

    @Test("Delayed socket answers wait at most 1,000 per socket; past that they are journaled as not sent")
    func delayedAnswersAreBounded() async throws {
        var configuration = ServerConfiguration.testing
        configuration.socketLimits.rate = 100_000
        try await SocketTests.withContract(Self.sockets, configuration: configuration) { server in
            let socket = try await SocketTests.open(server, "/feed", session: "slow", token: nil)
            for _ in 0..<1_200 { try await socket.send("later") }
            try await CallbackTests.eventually {
                server.engine.journal.entries.filter { $0.session == "slow" && $0.reason?.contains("1000 delayed messages already wait") == true }
                    .count == 200
            }
            let refused = server.engine.journal.entries.filter {
                $0.session == "slow" && $0.reason?.contains("1000 delayed messages already wait") == true
            }
            #expect(refused.count == 200)
            await socket.close()
        }
    }

    @Test("Clients that name no session each get their own places for sockets: one holding them leaves others theirs")
    func defaultSessionPlacesPerClient() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxSocketsPerSession = 2
        try await SocketTests.withContract(Self.sockets, configuration: configuration) { server in
            var held: [(fd: Int32, status: String)] = []
            for _ in 0..<2 { held.append(try await Self.rawUpgrade(port: server.port, from: "127.0.0.2")) }
            defer { for socket in held { close(socket.fd) } }
            #expect(held.allSatisfy { $0.status.hasPrefix("HTTP/1.1 101") })
            let third = try await Self.rawUpgrade(port: server.port, from: "127.0.0.2")
            close(third.fd)
            #expect(third.status.hasPrefix("HTTP/1.1 429"))
            // Another client, no session named either: served.
            let other = try await Self.rawUpgrade(port: server.port, from: "127.0.0.3")
            close(other.fd)
            #expect(other.status.hasPrefix("HTTP/1.1 101"))
        }
    }

    @Test("After a reload, an open socket's `every` rule runs as edited, stops when removed, and the socket closes 1001 when its endpoint is gone")
    func socketsFollowReloads() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("contract.yaml").path
        try Self.sockets.write(toFile: file, atomically: true, encoding: .utf8)
        let slot = EngineSlot(MockEngine(contract: try ContractLoader.load(file: file), configuration: .testing))
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = buildApplication(slot: slot, configuration: .testing) { port in
            continuation.yield(port)
            continuation.finish()
        }
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: Logger(label: "reload")))
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let socket = try await WebSocketClient.connect(to: URL(string: "ws://127.0.0.1:\(port)/feed")!, headers: [("Doppel-Session", "r")])
        #expect(await SocketTests.next(socket) == ["tick": true])
        // The rule edited: its new message from the next run on.
        try Self.sockets.replacingOccurrences(of: "send: { tick: true }", with: "send: { tock: true }").write(
            toFile: file, atomically: true, encoding: .utf8)
        slot.replace(with: MockEngine(contract: try ContractLoader.load(file: file), carryingOn: slot.current))
        // Ticks sent before the reload may still wait to be read (many, on a loaded machine): read on until the new message.
        var seen: JSON?
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            seen = await SocketTests.next(socket, within: 2)
            if seen == ["tock": true] { break }
        }
        #expect(seen == ["tock": true])
        // The endpoint removed: the socket is closed as going away, and nothing undeclared is written.
        let without = """
            doppel: 1
            state: { counters: { other: 0 } }
            endpoints:
              other: { request: GET /other, auth: none, responses: [ { body: { other: "{{ state.other }}" } } ] }
            """
        try without.write(toFile: file, atomically: true, encoding: .utf8)
        slot.replace(with: MockEngine(contract: try ContractLoader.load(file: file), carryingOn: slot.current))
        #expect(await SocketTests.closeCode(socket, within: 60) == 1001)
        try await Task.sleep(for: .milliseconds(300))
        let state = try #require(slot.current.sessions.existing("r")?.current.state)
        #expect(state["ticks"] == nil && state["other"] == 0, "\(JSONWriter.encodeString(.object(state)))")
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    static let chain = """
        doppel: 1
        endpoints:
          hop:
            request: POST /hop
            auth: none
            responses:
              - status: 202
                callbacks:
                  - name: again
                    url: "http://{{ headers.host }}/hop"
                    body: { again: true }
                    timeout: 120s
          slow:
            request: POST /slow
            auth: none
            responses:
              - status: 202
                callbacks:
                  - name: later
                    url: "http://127.0.0.1:9/never"
                    body: { later: true }
                    delay: 60s
        """

    @Test("Callbacks: a chain that calls itself ends at 8, a session holds at most 100 waiting, and a reset ends them")
    func callbacksAreBounded() async throws {
        try await SocketTests.withContract(Self.chain) { server in
            let client = TestClient(base: server.baseURL)
            #expect(try await client.send("POST", "/hop", json: [:], token: nil, session: "loop").status == 202)
            // Each hop is a request the server sends itself: a loaded machine may take seconds for one, so the wait is long.
            let ended = await eventually(within: 120, every: .milliseconds(50)) {
                server.engine.journal.entries.contains { $0.reason?.contains("a chain ends at 8") == true }
            }
            try await Task.sleep(for: .milliseconds(300))
            let hops = server.engine.journal.entries.filter { $0.method == "POST" && $0.path == "/hop" }
            let why = server.engine.journal.entries.compactMap(\.reason).filter { $0.contains("/hop") || $0.contains("chain") }
            #expect(ended, "the chain never ended: \(why)")
            #expect(hops.count == 9, "the request and 8 callbacks, then no more: \(why)")
            // A depth a client makes up below 0 lengthens nothing.
            #expect(
                try await client.send("POST", "/hop", json: [:], token: nil, session: "loop", headers: ["Doppel-Callback-Depth": "-1000000000"])
                    .status == 202)
            #expect(
                await eventually(within: 120, every: .milliseconds(50)) {
                    server.engine.journal.entries.filter { $0.reason?.contains("a chain ends at 8") == true }.count == 2
                })
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.engine.journal.entries.filter { $0.method == "POST" && $0.path == "/hop" }.count == 18)

            for _ in 0..<120 { _ = try await client.send("POST", "/slow", json: [:], token: nil, session: "greedy") }
            let refused = server.engine.journal.entries.filter { $0.reason?.contains("100 callbacks of session greedy are already waiting") == true }
            #expect(refused.count == 20)
            // Another session still has places.
            #expect(try await client.send("POST", "/slow", json: [:], token: nil, session: "other").status == 202)
            #expect(!server.engine.journal.entries.contains { $0.session == "other" && $0.reason?.hasPrefix("not sent") == true })
            // A reset of the session ends its waiting callbacks.
            let reset = try await client.send("POST", "/__doppel/reset", json: ["session": "greedy"], token: nil)
            #expect(reset.status == 200)
            for _ in 0..<100 { _ = try await client.send("POST", "/slow", json: [:], token: nil, session: "greedy") }
            #expect(
                server.engine.journal.entries.filter { $0.reason?.contains("100 callbacks of session greedy are already waiting") == true }.count
                    == 20)
        }
    }

    @Test(
        "The runners against a hostile provider: a status of 000 or 099 with a body is a failed step, and a body that never ends is bounded by the timeout"
    )
    func runnersDistrustTheProvider() async throws {
        for status in ["000", "099"] {
            let upstream = try RawUpstream(answer: "HTTP/1.1 \(status) Weird\r\nContent-Length: 5\r\n\r\nhello")
            defer { upstream.stop() }
            let runner = ScenarioRunner(baseURL: upstream.url, isDoppel: false)
            // Generous: the full suite loads the machine; what counts is the failure's words, not its time.
            await #expect { _ = try await runner.send(.init(method: "GET", url: upstream.url.absoluteString + "/x", timeout: 90)) } throws: { error in
                "\(error)".contains("status \(status)")
            }
        }
        let dripping = try RawUpstream(answer: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nab", holds: true)
        defer { dripping.stop() }
        let started = ContinuousClock.now
        let runner = ScenarioRunner(baseURL: dripping.url, isDoppel: false)
        await #expect { _ = try await runner.send(.init(method: "GET", url: dripping.url.absoluteString + "/x", timeout: 1)) } throws: { error in
            "\(error)" == "no answer within 1s"
        }
        // Bounded, not fast: the upstream holds the body forever, and a loaded suite may take long to resume the runner.
        #expect(ContinuousClock.now - started < .seconds(60))
    }
    /// A WebSocket server of a few lines that answers the upgrade and then
    /// sends `frames` as they are (unmasked, as a server's), and holds the
    /// connection until it is closed.
    final class HostileSocketServer: @unchecked Sendable {
        let port: Int
        private let listener: ListeningSocket
        /// Whether the client has closed the connection, after all frames were sent.
        let clientClosed = Locked(false)

        init(frames: [UInt8]) throws {
            let (listener, port) = try ListeningSocket.loopback(backlog: 4)
            self.listener = listener
            self.port = port
            Thread {
                defer { listener.close() }  // here, not in stop(): see ListeningSocket
                let client = acceptConnection(listener.fd)
                guard client >= 0 else { return }
                defer { close(client) }
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !String(decoding: received, as: UTF8.self).contains("\r\n\r\n") {
                    let n = receiveSome(client, into: &buffer)
                    if n <= 0 { return }
                    received += buffer[0..<n]
                }
                let text = String(decoding: received, as: UTF8.self)
                let key =
                    text.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("sec-websocket-key:") }?.split(
                        separator: ":", maxSplits: 1
                    ).last
                    .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                let head =
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(WebSocketClient.acceptValue(for: key))\r\n\r\n"
                sendAll(client, Array(head.utf8) + frames)
                // Held until the client closes it.
                while receiveSome(client, into: &buffer) > 0 {}
                self.clientClosed.withLock { $0 = true }
            }.start()
        }

        func stop() { listener.stop() }

        /// A server frame: unmasked.
        static func frame(fin: Bool, opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
            var head: [UInt8] = [(fin ? 0x80 : 0) | opcode]
            if payload.count < 126 {
                head.append(UInt8(payload.count))
            } else {
                head.append(127)
                head += withUnsafeBytes(of: UInt64(payload.count).bigEndian, Array.init)
            }
            return head + payload
        }
    }

    @Test("The WebSocket client of `doppel run --target` bounds a message's fragments and the messages waiting to be read")
    func socketClientDistrustsTheServer() async throws {
        // Endless fragments of one message: past the client's bound the socket ends.
        let piece = [UInt8](repeating: 0x61, count: 300 << 10)
        let fragments =
            HostileSocketServer.frame(fin: false, opcode: 1, piece) + (0..<8).flatMap { _ in HostileSocketServer.frame(fin: false, opcode: 0, piece) }
        let fragmenting = try HostileSocketServer(frames: fragments)
        defer { fragmenting.stop() }
        let first = try await WebSocketClient.connect(to: URL(string: "ws://127.0.0.1:\(fragmenting.port)/")!, maxMessage: 1 << 20)
        #expect(first.isOpen)
        #expect(await first.receive(within: 10) == nil, "a message of 2.7 MiB in fragments was taken past a bound of 1 MiB")

        // A flood of small messages nobody reads: at most 10,000 wait, then the socket ends.
        let flood = (0..<12_000).flatMap { _ in HostileSocketServer.frame(fin: true, opcode: 1, Array("x".utf8)) }
        let flooding = try HostileSocketServer(frames: flood)
        defer { flooding.stop() }
        let second = try await WebSocketClient.connect(to: URL(string: "ws://127.0.0.1:\(flooding.port)/")!)
        // Read once the client has cut the flood off (reading sooner, while it still arrives, would make room).
        #expect(await eventually(within: 60, every: .milliseconds(50)) { flooding.clientClosed.withLock { $0 } })
        var read = 0
        while await second.receive(within: 2) != nil { read += 1 }
        #expect(read == WebSocketClient.Inbox.maximumQueued, "\(read) messages were kept")
    }
    @Test("doppel lint writes each file's problems before its summary line, when both streams go to one pipe")
    func lintSaysEachFileInOrder() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lint-order-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let good = folder.appendingPathComponent("good.yaml")
        let bad = folder.appendingPathComponent("bad.yaml")
        try "doppel: 1\nendpoints:\n  a: { request: GET /a, responses: [ { status: 204 } ] }\n".write(to: good, atomically: true, encoding: .utf8)
        try "doppel: 1\nendpoints:\n  a:\n    request: GET /a\n   responses: []\n".write(to: bad, atomically: true, encoding: .utf8)
        let executable = try #require(DoppelCommand.executable, "build the doppel executable first (swift build)")
        let process = try ChildProcess(executable.path, ["lint", good.path, bad.path], errors: .sameAsOutput)
        let pipe = try #require(process.output)
        let lines = String(decoding: try await offThePool { pipe.readDataToEndOfFile() }, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(await process.ending(within: 60) == .exit(1))
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.first == good.path + ": ok", "\(lines)")
        #expect(lines.dropFirst().first?.hasPrefix(bad.path + ":5:4: error: YAML syntax:") == true, "\(lines)")
        #expect(lines.last == bad.path + ": 1 error", "\(lines)")
    }

    @Test("A callback whose receiver does not answer fails at the callback's own timeout, and says so")
    func callbackTimeoutIsNamedAsItsOwn() async throws {
        let silent = try RawUpstream(answer: "", silent: true)
        defer { silent.stop() }
        let contract = CallbackTests.webhook.replacingOccurrences(of: "retries: 2", with: "retries: 0").replacingOccurrences(
            of: "retry_delay: 100ms", with: "timeout: 200ms")
        try await SocketTests.withContract(contract) { server in
            #expect(
                try await TestClient(base: server.baseURL).send("POST", "/pay?port=\(silent.port)", json: ["amount": 1], token: nil).status == 202)
            try await CallbackTests.eventually { server.engine.journal.entries.contains { $0.method == "CALLBACK" } }
            let attempt = try #require(server.engine.journal.entries.first { $0.method == "CALLBACK" })
            #expect(attempt.reason?.contains("no answer within 0.2 s (the callback's timeout)") == true, "\(attempt.reason ?? "")")
            #expect(attempt.reason?.contains("--proxy-timeout") == false)
        }
    }
}
