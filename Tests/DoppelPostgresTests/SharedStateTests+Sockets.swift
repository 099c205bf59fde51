import DoppelCore
import DoppelPostgres
import DoppelProtobuf
import DoppelRunner
import DoppelTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// WebSockets across replicas: a socket's rules run in the shared session,
/// and a push made on any replica reaches the session's sockets on every
/// one. (In `SharedStateTests`, whose tests run one at a time.)
extension SharedStateTests {
    static let counting = """
        doppel: 1
        state:
          counters: { ticks: 0, used: 0, beats: 0 }
        data: { limit: 50 }
        endpoints:
          live:
            request: GET /live
            auth: none
            websocket:
              on_message:
                - name: take
                  when: message.type == 'take' && state.used < data.limit
                  effects: [ state.used += 1 ]
                  send: { type: taken, used: "{{ state.used }}" }
                - name: refuse
                  when: message.type == 'take'
                  send: { type: refused }
                - name: beat
                  when: message.type == 'beat'
                  send: { type: beat }
          beating:
            request: GET /beating
            auth: none
            websocket:
              every:
                - name: beat
                  interval: 100ms
                  effects: [ state.beats += 1 ]
                  send: { beats: "{{ state.beats }}" }
          tick:
            request: POST /tick
            auth: none
            responses:
              - effects: [ state.ticks += 1 ]
                body: { ticks: "{{ state.ticks }}" }
                push:
                  - socket: live
                    send: { tick: "{{ state.ticks }}" }
          take:
            request: POST /take
            auth: none
            responses:
              - when: state.used < data.limit
                effects: [ state.used += 1 ]
                body: { used: "{{ state.used }}" }
              - status: 402
                body: { error: limit_reached }
          shout:
            request: POST /shout
            auth: none
            responses:
              - status: 204
                push:
                  - socket: live
                    send: { said: "{{ body.text }}" }
          counts:
            request: GET /counts
            auth: none
            responses:
              - body: { ticks: "{{ state.ticks }}", used: "{{ state.used }}", beats: "{{ state.beats }}" }
        """

    /// Two replicas of `counting`, each listening for the other's messages, stopped after `body`.
    func withCountingReplicas(
        messageBytesWaiting: Int = PostgresStateStore.maximumMessageBytesWaiting, _ body: (SharedReplicas, [TestClient]) async throws -> Void
    ) async throws {
        try await withTemporaryContract(Self.counting) { file in
            let replicas = try await SharedReplicas.start(2, contract: file, timeout: 30, messageBytesWaiting: messageBytesWaiting)
            let clients = replicas.clients()
            try await listening(clients)
            try await body(replicas, clients)
            await replicas.stop()
        }
    }

    /// Waits until every replica listens for the others' messages (health's `replica_messages.listening`).
    func listening(_ clients: [TestClient]) async throws {
        for client in clients {
            let ready = try await eventually(within: 20) {
                try await client.send("GET", "/__doppel/health").json?["state_store"]?["replica_messages"]?["listening"] == .bool(true)
            }
            #expect(ready, "a replica does not listen for pushes")
        }
    }

    func open(_ replica: SharedReplicas.Replica, _ path: String, session: String) async throws -> WebSocketClient {
        let socket = try await WebSocketClient.connect(
            to: URL(string: "ws://127.0.0.1:\(replica.port)\(path)")!, headers: [("Doppel-Session", session)])
        #expect(socket.handshake.status == 101, "\(String(decoding: socket.handshake.body, as: UTF8.self))")
        return socket
    }

    /// A socket on `/live` of `session` on each replica.
    func openOnEach(_ replicas: SharedReplicas, session: String) async throws -> [WebSocketClient] {
        var sockets: [WebSocketClient] = []
        for replica in replicas.replicas { sockets.append(try await open(replica, "/live", session: session)) }
        return sockets
    }

    /// The texts `socket` receives until `count` arrived or `seconds` pass without one.
    func texts(_ socket: WebSocketClient, count: Int, within seconds: Double = 10) async -> [String] {
        var texts: [String] = []
        while texts.count < count, let message = await socket.receive(within: seconds) {
            guard case .text(let text) = message else { break }
            texts.append(text)
        }
        return texts
    }

    @Test("1,000 pushes made by requests to one replica reach a socket on the other, and one on the same, each in order and once")
    func pushesCrossReplicas() async throws {
        try await withCountingReplicas { replicas, clients in
            let far = try await open(replicas.replicas[1], "/live", session: "pushes")
            let near = try await open(replicas.replicas[0], "/live", session: "pushes")
            let other = try await open(replicas.replicas[1], "/live", session: "another")
            // Read while the requests run, so nothing waits on an unread socket.
            async let farTexts = texts(far, count: 1_000)
            async let nearTexts = texts(near, count: 1_000)
            for tick in 1...1_000 {
                let answer = try await clients[0].send("POST", "/tick", token: nil, session: "pushes")
                #expect(answer.status == 200 && answer.json?["ticks"]?.intValue == tick)
            }
            let expected = (1...1_000).map { #"{"tick":\#($0)}"# }
            let (farGot, nearGot) = await (farTexts, nearTexts)
            #expect(farGot == expected, "the far socket got \(farGot.count): \(farGot.prefix(3)) … \(farGot.suffix(3))")
            #expect(nearGot == expected, "the near socket got \(nearGot.count)")
            // Once: nothing more arrives; another session's socket got none.
            #expect(await far.receive(within: 0.5) == nil)
            #expect(await other.receive(within: 0.2) == nil)
            let health = try await clients[1].send("GET", "/__doppel/health").json?["state_store"]?["replica_messages"]
            #expect(health?["received"]?.intValue == 1_000, "\(health ?? .null)")
            #expect(health?["lost"]?.intValue == 0)
            for socket in [far, near, other] { await socket.close() }
        }
    }

    @Test("Pushes made through both replicas at once reach a socket on each in one order, the same for both, each once")
    func pushesThroughBothReplicasInOneOrder() async throws {
        try await withCountingReplicas { replicas, clients in
            let sockets = try await openOnEach(replicas, session: "both")
            let count = 400
            async let firstTexts = texts(sockets[0], count: count)
            async let secondTexts = texts(sockets[1], count: count)
            // Eight requests at a time, alternating replicas: pairs made within a round trip of each other on two replicas.
            try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        for index in stride(from: worker, to: count, by: 8) {
                            let answer = try await clients[index % 2].send(
                                "POST", "/shout", json: ["text": .string("\(index)")], token: nil, session: "both")
                            #expect(answer.status == 204)
                        }
                        return worker
                    }
                }
                for try await _ in group {}
            }
            let (first, second) = await (firstTexts, secondTexts)
            let expected = Set((0..<count).map { #"{"said":"\#($0)"}"# })
            #expect(
                first.count == count && Set(first) == expected, "the socket on the first replica got \(first.count), \(Set(first).count) distinct")
            #expect(second.count == count && Set(second) == expected, "the socket on the second got \(second.count), \(Set(second).count) distinct")
            let differing = zip(first, second).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(differing == nil, "the two sockets' orders differ first at \(differing.map { "\($0.offset): \($0.element)" } ?? "")")
            for socket in sockets { #expect(await socket.receive(within: 0.5) == nil) }
            for client in clients {
                let health = try await client.send("GET", "/__doppel/health").json?["state_store"]?["replica_messages"]
                #expect(health?["lost"]?.intValue == 0, "\(health ?? .null)")
            }
            for socket in sockets { await socket.close() }
        }
    }

    @Test("Pushes made one after another through alternating replicas reach a socket on each, in one order for both, each once")
    func pushesThroughAlternatingReplicasInOneOrder() async throws {
        try await withCountingReplicas { replicas, clients in
            let sockets = try await openOnEach(replicas, session: "turns")
            let count = 300
            async let firstTexts = texts(sockets[0], count: count)
            async let secondTexts = texts(sockets[1], count: count)
            for tick in 1...count {
                let answer = try await clients[tick % 2].send("POST", "/tick", token: nil, session: "turns")
                #expect(answer.status == 200 && answer.json?["ticks"]?.intValue == tick)
            }
            let (first, second) = await (firstTexts, secondTexts)
            // The order is the one in which the replicas sent them: each replica's own in the order made; one
            // replica sending a push a little after its answer may let the other's next push go first.
            let expected = Set((1...count).map { #"{"tick":\#($0)}"# })
            #expect(first.count == count && Set(first) == expected, "the socket on the first replica got \(first.count)")
            #expect(first == second, "the two sockets' orders differ")
            let ticks = first.compactMap { Int($0.dropFirst(#"{"tick":"#.count).dropLast()) }
            for replica in 0..<2 {
                let made = ticks.filter { $0 % 2 == replica }
                #expect(made == made.sorted(), "pushes made through replica \(replica) came out of the order they were made in")
            }
            for socket in sockets { await socket.close() }
        }
    }

    @Test(
        "A batch past NOTIFY's 8,000 bytes crosses through doppel_pushes; one past the bytes that may wait is lost and counted, and the next arrives")
    func largeBatchesCross() async throws {
        try await withCountingReplicas(messageBytesWaiting: 50_000) { replicas, clients in
            let far = try await open(replicas.replicas[1], "/live", session: "large")
            let near = try await open(replicas.replicas[0], "/live", session: "large")
            func shout(_ text: String) async throws {
                let answer = try await clients[0].send("POST", "/shout", json: ["text": .string(text)], token: nil, session: "large")
                #expect(answer.status == 204)
            }
            let large = String(repeating: "a", count: 20_000)
            let tooLarge = String(repeating: "b", count: 60_000)
            try await shout(large)
            try await shout(tooLarge)
            try await shout("small")
            let said = { (text: String) in #"{"said":"\#(text)"}"# }
            let farGot = await texts(far, count: 2)
            #expect(farGot == [said(large), said("small")], "the one past the bytes that may wait does not cross: \(farGot.map { $0.prefix(40) })")
            #expect(await far.receive(within: 0.5) == nil)
            // The replica that holds a socket hands it every push, whatever crosses.
            let nearGot = await texts(near, count: 3)
            #expect(nearGot == [said(large), said(tooLarge), said("small")], "\(nearGot.map { $0.prefix(40) })")
            // (The sender counts a batch sent once the database answered it, which may be after the other replica heard it.)
            var sender: JSON?
            let counted = try await eventually(within: 60) {
                sender = try await clients[0].send("GET", "/__doppel/health").json?["state_store"]?["replica_messages"]
                return sender?["sent"]?.intValue == 2
            }
            #expect(counted && sender?["lost"]?.intValue == 1 && sender?["waiting_bytes"]?.intValue == 0, "\(sender ?? .null)")
            let receiver = try await clients[1].send("GET", "/__doppel/health").json?["state_store"]?["replica_messages"]
            #expect(receiver?["received"]?.intValue == 2 && receiver?["lost"]?.intValue == 0, "\(receiver ?? .null)")
            for socket in [far, near] { await socket.close() }
        }
    }

    @Test("8 sockets on each replica and 200 HTTP requests over both take from one limit of 50: exactly 50 taken, every other refused")
    func socketsAndRequestsCountExactly() async throws {
        try await withCountingReplicas { replicas, clients in
            var sockets: [WebSocketClient] = []
            for index in 0..<16 { sockets.append(try await open(replicas.replicas[index % 2], "/live", session: "limit")) }
            let (taken, refused, statuses) = try await withThrowingTaskGroup(of: (Int, Int, [Int]).self) { group in
                for socket in sockets {
                    group.addTask {
                        for _ in 0..<10 { try await socket.send(#"{"type":"take"}"#) }
                        let replies = await self.texts(socket, count: 10, within: 30)
                        return (replies.filter { $0.contains("taken") }.count, replies.filter { $0 == #"{"type":"refused"}"# }.count, [])
                    }
                }
                for index in 0..<200 {
                    group.addTask {
                        (0, 0, [try await clients[index % 2].send("POST", "/take", token: nil, session: "limit").status])
                    }
                }
                var totals = (0, 0, [Int]())
                for try await (taken, refused, statuses) in group {
                    totals.0 += taken
                    totals.1 += refused
                    totals.2 += statuses
                }
                return totals
            }
            let httpTaken = statuses.filter { $0 == 200 }.count
            #expect(taken + refused == 160, "every socket message answered once")
            #expect(statuses.count == 200 && statuses.allSatisfy { $0 == 200 || $0 == 402 })
            #expect(taken + httpTaken == 50, "\(taken) by sockets and \(httpTaken) by requests")
            #expect(try await clients[1].send("GET", "/counts", token: nil, session: "limit").json?["used"]?.intValue == 50)
            // Every socket message is in the journal read through either replica.
            let journal = try await clients[0].send("GET", "/__doppel/journal?session=limit&limit=1000")
            let received = (journal.json?["entries"]?.arrayValue ?? []).filter { $0["method"] == "RECEIVE" }
            #expect(received.count == 160)
            for socket in sockets { await socket.close() }
        }
    }

    @Test("An `every` rule runs once per tick for each socket, on the replica that holds it, in the shared session")
    func everyRulesRunOncePerSocket() async throws {
        try await withCountingReplicas { replicas, clients in
            let first = try await open(replicas.replicas[0], "/beating", session: "beats")
            let second = try await open(replicas.replicas[1], "/beating", session: "beats")
            async let firstTexts = texts(first, count: 10)
            async let secondTexts = texts(second, count: 10)
            let (a, b) = await (firstTexts, secondTexts)
            await first.close()
            await second.close()
            try await Task.sleep(for: .milliseconds(300))
            // Each socket's beats are numbered by the shared counter: all different, and as many as the counter says.
            let numbers = (a + b).compactMap { (try? JSONReader.parse(Array($0.utf8)))?["beats"]?.intValue }
            #expect(a.count == 10 && b.count == 10)
            #expect(Set(numbers).count == numbers.count, "\(numbers.sorted())")
            // The counter says how many beats ran over both sockets: each journaled once, as sent.
            let counted = try await clients[1].send("GET", "/counts", token: nil, session: "beats").json?["beats"]?.intValue ?? 0
            let journal = try await clients[0].send("GET", "/__doppel/journal?session=beats&limit=1000")
            let sent = (journal.json?["entries"]?.arrayValue ?? []).filter { $0["method"] == "SEND" }
            #expect(counted >= 20 && counted == sent.count, "the counter is \(counted); \(sent.count) beats journaled")
        }
    }

    @Test("A replica that stops closes its sockets 1001; the other keeps its own, and nothing counted is lost")
    func aStoppingReplicaClosesItsSockets() async throws {
        try await withTemporaryContract(Self.counting) { file in
            let replicas = try await SharedReplicas.start(2, contract: file, timeout: 30)
            let clients = replicas.clients()
            try await listening(clients)
            let leaving = try await open(replicas.replicas[1], "/live", session: "stop")
            let staying = try await open(replicas.replicas[0], "/live", session: "stop")
            for _ in 0..<5 { try await leaving.send(#"{"type":"take"}"#) }
            #expect(await texts(leaving, count: 5).count == 5)
            await replicas.replicas[1].group.triggerGracefulShutdown()
            _ = try? await replicas.replicas[1].task.value
            await replicas.replicas[1].store.shutdown()
            var code: Int?
            while code == nil, let message = await leaving.receive(within: 10) {
                if case .close(let closed, _) = message { code = closed }
            }
            #expect(code == 1001)
            // The one left serves the session as it was, and its socket still gets pushes.
            let answer = try await clients[0].send("POST", "/take", token: nil, session: "stop")
            #expect(answer.json?["used"]?.intValue == 6)
            #expect(try await clients[0].send("POST", "/tick", token: nil, session: "stop").status == 200)
            #expect(await texts(staying, count: 1) == [#"{"tick":1}"#])
            await staying.close()
            await replicas.replicas[0].group.triggerGracefulShutdown()
            _ = try? await replicas.replicas[0].task.value
            await replicas.replicas[0].store.shutdown()
        }
    }

    @Test(
        "A replica killed mid-run drops its sockets at once (no close frame: 1006); the other serves on, and every taken answer a client got is counted"
    )
    func aKilledReplicaDropsItsSockets() async throws {
        try await withTemporaryContract(Self.counting) { file in
            let options = [
                file, "--log-format", "none", "--state-store", try #require(TestDatabase.url), "--state-namespace",
                "k-\(UUID().uuidString.prefix(8))", "--state-store-timeout", "30s",
            ]
            let staying = try await DoppelCommand.serve(options)
            let killed = try await DoppelCommand.serve(options)
            defer {
                staying.process.terminate()
                killed.process.terminate()
            }
            let client = TestClient(base: URL(string: "http://127.0.0.1:\(staying.port)")!)
            let doomed = try await WebSocketClient.connect(
                to: URL(string: "ws://127.0.0.1:\(killed.port)/live")!, headers: [("Doppel-Session", "killed")])
            let kept = try await WebSocketClient.connect(
                to: URL(string: "ws://127.0.0.1:\(staying.port)/live")!, headers: [("Doppel-Session", "killed")])
            #expect(doomed.handshake.status == 101 && kept.handshake.status == 101)
            for _ in 0..<10 { try await doomed.send(#"{"type":"take"}"#) }
            #expect(await texts(doomed, count: 10).filter { $0.contains("taken") }.count == 10)
            // Ten more on their way while the replica is killed: some may be counted, none twice, none lost once answered.
            for _ in 0..<10 { try await doomed.send(#"{"type":"take"}"#) }
            killed.process.signal(SIGKILL)
            let started = ContinuousClock.now
            var answered = 10
            var closeFrame = false
            while let message = await doomed.receive(within: 30) {
                if case .text(let text) = message, text.contains("taken") { answered += 1 }
                if case .close = message { closeFrame = true }
            }
            #expect(!closeFrame, "a killed process sends no close frame")
            #expect(ContinuousClock.now - started < .seconds(20), "the connection ended, rather than falling silent")
            let used = try #require(try await client.send("GET", "/counts", token: nil, session: "killed").json?["used"]?.intValue)
            #expect(used >= answered && used <= 20, "\(answered) taken answers received, \(used) counted")
            // The replica left serves the session on, from the count the killed one committed.
            try await kept.send(#"{"type":"take"}"#)
            #expect(await texts(kept, count: 1) == [#"{"type":"taken","used":\#(used + 1)}"#])
            await kept.close()
        }
    }

    @Test(
        "gRPC streams with rules across replicas: a told line counted in the shared session; a watch on one replica gets the stories generated on the other"
    )
    func grpcStreamsAcrossReplicas() async throws {
        let replicas = try await SharedReplicas.start(2, contract: contractPath("tales-grpc.yaml"), timeout: 30)
        let clients = replicas.clients()
        try await listening(clients)
        let contract = try ContractLoader.load(file: contractPath("tales-grpc.yaml"))
        let definition = try #require(contract.grpc)
        let catalog = try #require(GRPCCatalog.load(definition).catalog)
        let metadata = [(name: "authorization", value: "Bearer t"), (name: "doppel-session", value: "told")]
        // Each line answered in order by rules that run in the shared session; "The End" ends the call OK.
        let lines: [JSON] = [["text": "a dragon"], ["text": "a castle"], ["text": "The End"]]
        let told = try await GRPCClient.call(
            replicas.replicas[1].base, path: "/tales.v1.Tales/TellTogether", metadata: metadata,
            messages: try GRPCClient.encode(lines, as: "tales.v1.StoryLine", catalog: catalog), timeout: 20)
        #expect(told.field("grpc-status") == "0", "\(told.metadata)")
        let texts = try told.messages.map { try catalog.codec.decode($0, as: "tales.v1.StoryLine")["text"]?.stringValue ?? "" }
        #expect(texts == ["Once upon a time...", "And then a dragon...", "And then a castle...", "And they lived happily ever after."])
        let state = try await clients[0].send("GET", "/__doppel/state?session=told").json
        #expect(state?["state"]?["lines_told"]?.intValue == 2, "\(state ?? .null)")
        // A watch held open on the second replica until its deadline; two stories generated through the first.
        let watching = Task {
            try await GRPCClient.call(
                replicas.replicas[1].base, path: "/tales.v1.Tales/WatchStories", metadata: metadata + [(name: "grpc-timeout", value: "4S")],
                messages: try GRPCClient.encode([[:]], as: "tales.v1.WatchStoriesRequest", catalog: catalog), timeout: 20)
        }
        let opened = try await eventually(within: 60) {
            try await clients[1].send("GET", "/__doppel/health").json?["sockets"]?["open"]?.intValue == 1
        }
        #expect(opened)
        for name in ["Ann", "Bo"] {
            let made = try await GRPCClient.call(
                replicas.replicas[0].base, path: "/tales.v1.Tales/GenerateStory", metadata: metadata,
                messages: try GRPCClient.encode([["childName": .string(name)]], as: "tales.v1.GenerateStoryRequest", catalog: catalog), timeout: 20)
            #expect(made.field("grpc-status") == "0", "\(made.metadata)")
        }
        let watched = try await watching.value
        #expect(watched.field("grpc-status") == "4", "the watch ends at its deadline: \(watched.metadata)")
        let ids = try watched.messages.map { try catalog.codec.decode($0, as: "tales.v1.Story")["id"]?.stringValue ?? "" }
        #expect(ids == ["story_1", "story_2"])
        await replicas.stop()
    }

    @Test("/__doppel/events on one replica carries the answers, socket messages and admin changes of the other, once another follows them")
    func eventsCrossReplicas() async throws {
        try await withCountingReplicas { replicas, clients in
            let port = replicas.replicas[1].port
            let reader = try await RawSocket.run { () -> RawSocket in
                let socket = try RawSocket(port: port)
                socket.send("GET /__doppel/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                _ = socket.receive(timeout: 10) { $0.contains("event: ready") }
                return socket
            }
            // The first replica learns from the second's heartbeat that it follows events, within a poll.
            let told = try await eventually(within: 60) {
                _ = try await clients[0].send("POST", "/tick", token: nil, session: "watched")
                return try await RawSocket.run { reader.receive(timeout: 0.3) { $0.contains(#""path":"/tick""#) }.text.contains(#""path":"/tick""#) }
            }
            #expect(told, "an answer of the first replica reached the second's events")
            let socket = try await open(replicas.replicas[0], "/live", session: "watched")
            try await socket.send(#"{"type":"beat"}"#)
            #expect(await texts(socket, count: 1) == [#"{"type":"beat"}"#])
            #expect(try await clients[0].send("POST", "/__doppel/reset", json: ["session": "watched"], token: nil).status == 200)
            let seen = try await RawSocket.run { reader.receive(timeout: 10) { $0.contains(#""call":"POST /__doppel/reset""#) }.text }
            #expect(seen.contains("event: socket\n") && seen.contains(#""method":"RECEIVE""#), "\(seen)")
            #expect(seen.contains("event: state\n"))
            await socket.close()
        }
    }
}
