import DoppelCore
import DoppelRunner
import DoppelServer
import DoppelTestSupport
import Foundation
import Testing

/// Subscriptions over a WebSocket (graphql-transport-ws) fed by `push`, over loopback.
@Suite("GraphQL subscriptions over loopback")
struct GraphQLSubscriptionTests {
    /// A socket at the server's GraphQL path, speaking graphql-transport-ws.
    struct Socket {
        let client: WebSocketClient

        /// `initialised`: its `connection_init` sent the moment the 101 is read (from the connection's
        /// event loop, so the server's 10 s for it run out only if the server is slow, not the test's tasks).
        static func open(
            _ server: DoppelTestServer, session: String, token: String? = "parent", protocols: String = "graphql-transport-ws",
            initialised: Bool = false, first messages: [String] = []
        ) async throws -> Socket {
            var headers: [(name: String, value: String)] = [("Doppel-Session", session), ("Sec-WebSocket-Protocol", protocols)]
            if let token { headers.append(("Authorization", "Bearer \(token)")) }
            let url = URL(string: server.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "ws://") + "/graphql")!
            // `messages` go the same way, after it: a loaded run can hold a test's task past the server's 10 s.
            let first = (initialised ? [#"{"type":"connection_init"}"#] : []) + messages
            return Socket(client: try await WebSocketClient.connect(to: url, headers: headers, first: first))
        }

        /// The `connection_ack` of a socket opened `initialised`.
        func acknowledged() async {
            #expect(await next() == ["type": "connection_ack"])
        }

        func send(_ message: JSON) async throws {
            try await client.send(String(decoding: JSONWriter.encode(message), as: UTF8.self))
        }

        /// The next message as JSON, or the close frame as `{close, reason}`; nil when nothing came within `seconds`
        /// (60 by default: a loaded run has held the server's deliveries up for more than 10 s).
        /// The server's `ping` is answered with `pong` and passed over, as a graphql-transport-ws client does
        /// (a test held up for half the idle time by a loaded machine gets one between two events),
        /// unless `pings` asks to see it.
        func next(within seconds: Double = 60, pings: Bool = false) async -> JSON? {
            while true {
                switch await client.receive(within: seconds) {
                case .text(let text)?:
                    let message = try? JSONReader.parse(text)
                    if !pings, message == ["type": "ping"] {
                        try? await send(["type": "pong"])
                        continue
                    }
                    return message
                case .close(let code, let reason)?: return ["close": .int(code), "reason": .string(reason)]
                default: return nil
                }
            }
        }

        func subscribe(_ id: String, _ query: String, variables: JSON? = nil) async throws {
            var payload: [(String, JSON)] = [("query", .string(query))]
            if let variables { payload.append(("variables", variables)) }
            try await send(["id": .string(id), "type": "subscribe", "payload": .object(JSONObject(payload))])
        }
    }

    static let storyReady = "subscription Ready { storyReady { id title child { name } } }"

    @Test("A subscription hears each story generated in its session, in order, as its selection shapes it; another session's hears none")
    func storiesReachTheirSession() async throws {
        try await GraphQLServingTests.withTales { server, client in
            let mine = try await Socket.open(server, session: "a", initialised: true)
            let theirs = try await Socket.open(server, session: "b", initialised: true)
            #expect(mine.client.handshake.headers.contains { $0.name.lowercased() == "sec-websocket-protocol" && $0.value == "graphql-transport-ws" })
            await mine.acknowledged()
            await theirs.acknowledged()
            try await mine.subscribe("1", Self.storyReady)
            // Following another child: its resolver passes over these stories (`skip: true`).
            try await mine.subscribe("other", #"subscription { storyReady(childId: "child_2") { id } }"#)
            try await theirs.subscribe("1", Self.storyReady)
            // The subscription is open once the operation has passed the contract (journaled as the `graphql` endpoint's request).
            #expect(await eventually(within: 30) { server.engine.journal.entries.filter { $0.query == "operation=subscription%20Ready" }.count == 2 })
            #expect(
                await eventually(within: 30) {
                    server.engine.journal.entries.filter { $0.responseName == "subscribe" && $0.method == "SEND" }.count == 3
                })

            #expect(try await GraphQLServingTests.ask(client, GraphQLServingTests.addChild, session: "a").status == 200)
            for _ in 0..<3 {
                #expect(try await GraphQLServingTests.ask(client, GraphQLServingTests.generate, session: "a").status == 200)
            }
            for n in 1...3 {
                let event = await mine.next()
                #expect(
                    event == [
                        "id": "1", "type": "next",
                        "payload": [
                            "data": ["storyReady": ["id": .string("story_\(n)"), "title": "Mia and the Magic Garden", "child": ["name": "Mia"]]]
                        ],
                    ])
            }
            // One passed over for the subscriber of child_2, per story (its runs come after the first subscriber's).
            #expect(
                await eventually(within: 30) { server.engine.journal.entries.filter { $0.session == "a" && $0.responseName == "skip" }.count == 3 })
            #expect(server.engine.journal.entries.filter { $0.endpointID == "Subscription.storyReady" }.count == 6)
            // The other session's subscriber: its next message is the answer to its own ping, nothing pushed before it.
            try await theirs.send(["type": "ping"])
            #expect(await theirs.next() == ["type": "pong"])

            // Operations other than subscriptions run over the socket too: `next`, then `complete`.
            try await mine.subscribe("2", "{ me { subscription { storiesUsed } } }")
            #expect(await mine.next() == ["id": "2", "type": "next", "payload": ["data": ["me": ["subscription": ["storiesUsed": 3]]]]])
            #expect(await mine.next() == ["id": "2", "type": "complete"])

            // Ended by the client: the next story is not sent to it.
            try await mine.send(["id": "1", "type": "complete"])
            #expect(await eventually(within: 30) { server.engine.journal.entries.contains { $0.responseName == "complete" && $0.session == "a" } })
            #expect(try await GraphQLServingTests.ask(client, GraphQLServingTests.generate, session: "a").status == 200)
            try await mine.send(["type": "ping"])
            #expect(await mine.next() == ["type": "pong"])
            await mine.client.close()
            await theirs.client.close()
        }
    }

    @Test("An operation over the socket is checked as over HTTP: validation errors, the contract's auth (token from the connection_init payload)")
    func operationsAreChecked() async throws {
        try await GraphQLServingTests.withTales { server, _ in
            let anonymous = try await Socket.open(server, session: "anon", token: nil, initialised: true)
            await anonymous.acknowledged()
            // Without a token the contract refuses the operation: an `error` for it, with the refusal's code and status.
            try await anonymous.subscribe("s", Self.storyReady)
            let refused = await anonymous.next()
            #expect(refused?["type"] == "error")
            #expect(refused?["id"] == "s")
            #expect(refused?["payload"]?.arrayValue?.first?["message"] == "Not authenticated")
            #expect(refused?["payload"]?.arrayValue?.first?["extensions"]?["code"] == "UNAUTHENTICATED")
            #expect(refused?["payload"]?.arrayValue?.first?["extensions"]?["status"] == 401)
            // Invalid: the specification's errors with their locations; the socket stays open.
            try await anonymous.subscribe("v", "subscription { storyReady { nope } }")
            let invalid = await anonymous.next()
            #expect(invalid?["type"] == "error")
            #expect(invalid?["payload"]?.arrayValue?.first?["locations"] == [["line": 1, "column": 29]])
            try await anonymous.subscribe("two", "subscription { storyReady { id } again: storyReady { id } }")
            #expect(
                await anonymous.next()?["payload"]?.arrayValue?.first?["message"] == "Anonymous Subscription must select only one top level field.")
            await anonymous.client.close()

            // A browser cannot send headers with an upgrade: the payload's fields are the operation's.
            let browser = try await Socket.open(
                server, session: "web", token: nil, first: [#"{"type":"connection_init","payload":{"Authorization":"Bearer from-payload"}}"#])
            await browser.acknowledged()
            try await browser.subscribe("q", "{ me { plan } }")
            #expect(await browser.next() == ["id": "q", "type": "next", "payload": ["data": ["me": ["plan": "FREE"]]]])
            #expect(await browser.next() == ["id": "q", "type": "complete"])
            await browser.client.close()

            // Over HTTP a subscription is a request error that says where it is served.
            let overHTTP = try await GraphQLServingTests.ask(TestClient(base: server.baseURL), Self.storyReady, session: "h")
            #expect(overHTTP.status == 400)
            #expect(GraphQLServingTests.firstError(overHTTP.json)?["message"]?.stringValue?.contains("WebSocket") == true)
        }
    }

    /// One protocol mistake and the close graphql-transport-ws gives it.
    struct Mistake: Sendable, CustomTestStringConvertible {
        let name: String
        let messages: [String]
        let code: Int
        var testDescription: String { "\(name): \(code)" }
    }

    static let mistakes: [Mistake] = [
        Mistake(
            name: "subscribe before connection_init", messages: [#"{"id":"1","type":"subscribe","payload":{"query":"{ me { plan } }"}}"#], code: 4401),
        Mistake(name: "a second connection_init", messages: [#"{"type":"connection_init"}"#, #"{"type":"connection_init"}"#], code: 4429),
        Mistake(
            name: "an id already subscribed",
            messages: [
                #"{"type":"connection_init"}"#, #"{"id":"1","type":"subscribe","payload":{"query":"subscription { storyReady { id } }"}}"#,
                #"{"id":"1","type":"subscribe","payload":{"query":"subscription { storyReady { id } }"}}"#,
            ], code: 4409),
        Mistake(name: "not JSON", messages: ["hello"], code: 4400),
        Mistake(name: "an unknown type", messages: [#"{"type":"connection_init"}"#, #"{"type":"start","id":"1"}"#], code: 4400),
        Mistake(name: "subscribe without a payload", messages: [#"{"type":"connection_init"}"#, #"{"type":"subscribe","id":"1"}"#], code: 4400),
        Mistake(name: "a payload that is not an object", messages: [#"{"type":"connection_init","payload":[1]}"#], code: 4400),
    ]

    @Test("A protocol mistake closes the socket with graphql-transport-ws's code, and the server keeps serving", arguments: mistakes)
    func protocolMistakes(_ mistake: Mistake) async throws {
        try await GraphQLServingTests.withTales { server, client in
            let socket = try await Socket.open(server, session: "m", first: mistake.messages)
            var last: JSON?
            for _ in 0..<mistake.messages.count + 1 {
                last = await socket.next()
                if last?["close"] != nil { break }
            }
            #expect(last?["close"] == .int(mistake.code), "\(String(describing: last))")
            #expect(try await GraphQLServingTests.ask(client, "{ me { plan } }", session: "m").status == 200)
            let journal = server.engine.journal.entries.filter { $0.endpointID == "graphql-ws" && $0.method == "CLOSE" }
            #expect(journal.first?.status == mistake.code)
        }
    }

    @Test("A socket that never says connection_init is closed with 4408")
    func initialisationTimeout() async throws {
        try await GraphQLServingTests.withTales { server, _ in
            let socket = try await Socket.open(server, session: "idle")
            #expect(await socket.next(within: 30) == ["close": 4408, "reason": "Connection initialisation timeout"])
        }
    }

    @Test("A quiet subscriber is asked for a pong at half the idle time: one that answers stays open, one that does not is closed 1001")
    func quietSubscribersArePinged() async throws {
        var configuration = ServerConfiguration.testing
        // (20 s: the full suite can hold a test's task up for seconds; the 10 s a client has to answer a ping is that margin.)
        configuration.socketIdleTimeout = 20
        try await DoppelTestServer.with(contract: contractPath("tales-graphql.yaml"), configuration: configuration) { server in
            let answering = try await Socket.open(server, session: "quiet", initialised: true)
            let silent = try await Socket.open(server, session: "quiet", initialised: true)
            for socket in [answering, silent] {
                await socket.acknowledged()
                try await socket.subscribe("1", Self.storyReady)
            }
            // Over more than two idle times, the answering client gets pings and answers each; it is never closed.
            var pings = 0
            let until = ContinuousClock.now + .seconds(42)
            while ContinuousClock.now < until {
                guard let message = await answering.next(within: 1, pings: true) else { continue }
                #expect(message == ["type": "ping"], "\(message)")
                if message == ["type": "ping"] {
                    pings += 1
                    try await answering.send(["type": "pong"])
                }
            }
            #expect(pings >= 2)
            try await answering.send(["type": "ping"])
            #expect(await answering.next() == ["type": "pong"], "still open")
            // The silent one was pinged, then closed as idle.
            #expect(await silent.next(pings: true) == ["type": "ping"])
            #expect(await silent.next(pings: true)?["close"] == 1001)
            await answering.client.close()
        }
    }

    @Test("200 parallel mutations push 200 events: each reaches the subscriber once; sequential ones arrive in order; an HTTP endpoint's push too")
    func everyPushArrivesOnce() async throws {
        let contract = """
            doppel: 1
            state:
              counters: { ticks: 0 }
            graphql:
              auth: none
              schema: |
                type Query { ticks: Int! }
                type Mutation { tick: Int! }
                type Subscription { ticked: Tick! }
                type Tick { n: Int! double: Int! }
              resolvers:
                Query.ticks: { value: "{{ state.ticks }}" }
                Mutation.tick:
                  responses:
                    - effects: [ state.ticks = state.ticks + 1 ]
                      value: "{{ state.ticks }}"
                      push:
                        - subscription: Subscription.ticked
                          send: { n: "{{ state.ticks }}" }
                Tick.double: { value: "{{ parent.n * 2 }}" }
            endpoints:
              # An HTTP endpoint feeds the subscription too.
              bell:
                request: POST /bell
                auth: none
                responses:
                  - status: 204
                    push:
                      - subscription: Subscription.ticked
                        send: { n: 1000 }
            """
        try await withTemporaryContract(contract) { file in
            try await DoppelTestServer.with(contract: file) { server in
                let client = TestClient(base: server.baseURL, maxConnections: 64)
                let socket = try await Socket.open(server, session: "t", token: nil, initialised: true)
                await socket.acknowledged()
                try await socket.subscribe("t", "subscription { ticked { n double } }")
                #expect(
                    await eventually(within: 30) { server.engine.journal.entries.contains { $0.responseName == "subscribe" && $0.method == "SEND" } })
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<200 {
                        group.addTask { try await GraphQLServingTests.ask(client, "mutation { tick }", session: "t", token: nil).status }
                    }
                    for try await status in group { #expect(status == 200) }
                }
                var seen: [Int] = []
                for _ in 0..<200 {
                    guard let event = await socket.next(), let n = event["payload"]?["data"]?["ticked"]?["n"]?.intValue else { break }
                    #expect(event["payload"]?["data"]?["ticked"]?["double"]?.intValue == n * 2)
                    seen.append(n)
                }
                #expect(seen.sorted() == Array(1...200))
                for _ in 0..<20 { #expect(try await GraphQLServingTests.ask(client, "mutation { tick }", session: "t", token: nil).status == 200) }
                var ordered: [Int] = []
                for _ in 0..<20 { ordered.append(await socket.next()?["payload"]?["data"]?["ticked"]?["n"]?.intValue ?? 0) }
                #expect(ordered == Array(201...220))
                #expect(try await client.send("POST", "/bell", token: nil, session: "t").status == 204)
                #expect(await socket.next() == ["id": "t", "type": "next", "payload": ["data": ["ticked": ["n": 1000, "double": 2000]]]])
                await socket.client.close()
            }
        }
    }

    @Test("A push to a subscription field the schema lacks, or without a graphql section, is a contract error at the push")
    func pushesAreChecked() async throws {
        let noSection = try GraphQLContractTests.lint(
            """
            doppel: 1
            endpoints:
              ping:
                request: POST /ping
                responses:
                  - push: [ { subscription: Subscription.ticked, send: 1 } ]
            """)
        #expect(noSection.contains { $0.contains("push names subscription 'Subscription.ticked', but the contract has no 'graphql:' section") })
        let unknownField = try GraphQLContractTests.lint(
            """
            doppel: 1
            graphql:
              schema: "type Query { a: Int } type Subscription { ticked: Int }"
            endpoints:
              ping:
                request: POST /ping
                responses:
                  - push: [ { subscription: Subscription.tickd, send: 1 } ]
            """)
        #expect(
            unknownField.contains {
                $0.contains("'Subscription.tickd', which is no field of the schema's Subscription type (did you mean 'Subscription.ticked'?)")
            })
        let both = try GraphQLContractTests.lint(
            """
            doppel: 1
            graphql:
              schema: "type Query { a: Int } type Subscription { ticked: Int }"
            endpoints:
              ping:
                request: POST /ping
                responses:
                  - push: [ { subscription: Subscription.ticked, socket: live, send: 1 } ]
            """)
        #expect(both.contains { $0.contains("a push goes to a 'socket' or to a GraphQL 'subscription', not both") })
        let skips = try GraphQLContractTests.lint(
            """
            doppel: 1
            graphql:
              schema: "type Query { a: Int } type Subscription { ticked: Int }"
              resolvers:
                Subscription.ticked:
                  responses:
                    - skip: false
                    - skip: true
                      value: 1
            """)
        #expect(skips.filter { $0.contains("is written 'skip: true', without a 'value' or an 'error'") }.count == 2, "\(skips)")
        let loop = try GraphQLContractTests.lint(
            """
            doppel: 1
            graphql:
              schema: "type Query { a: Int } type Subscription { ticked: Int }"
              resolvers:
                Subscription.ticked:
                  value: 1
                  push: [ { subscription: Subscription.ticked, send: 2 } ]
            """)
        #expect(
            loop == [
                "contract.yaml:7:15: error: Subscription.ticked runs for each event of its subscription; its push to 'Subscription.ticked' would make events without end"
            ])
        // (The schema's own checks run once the section reads clean.)
        let misplaced = try GraphQLContractTests.lint(
            """
            doppel: 1
            graphql:
              schema: "type Query { a: Int } type Subscription { ticked: Int }"
              resolvers:
                Query.a:
                  responses:
                    - skip: true
            """)
        #expect(
            misplaced == [
                "contract.yaml:7:11: error: 'skip: true' passes over a subscription's event; Query.a is not a field of the subscription type (Subscription)"
            ])
    }
}
