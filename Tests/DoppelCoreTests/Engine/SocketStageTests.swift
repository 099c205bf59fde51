import Foundation
import Testing

@testable import DoppelCore

/// WebSocket endpoints without sockets: what the loader accepts and
/// refuses, and the engine's upgrade checks and rules, in one session.
@Suite struct SocketStageTests {
    static let contract = """
        doppel: 1
        state: { counters: { count: 0 }, variables: { last: null } }
        auth:
          default: bearer
          schemes: { bearer: { type: bearer, tokens: [good], failure: { status: 401, body: { error: no } } } }
        endpoints:
          chat:
            request: GET /chat/{room}
            let: { room: path.room }
            websocket:
              on_connect:
                - { name: hello, send: { hello: "{{ room }}", count: "{{ state.count }}" } }
              on_message:
                - name: count
                  schema: { type: object, required: [add], properties: { add: { type: integer, minimum: 1 } } }
                  effects: [ "state.count += message.add", "state.last = message" ]
                  send: [ { count: "{{ state.count }}" }, "plain {{ state.count }}" ]
                  push: [ { socket: chat, send: { seen: "{{ message.add }}" } } ]
                - name: quit
                  when: message == 'quit'
                  close: { code: 4001, reason: bye }
          closed-room:
            request: GET /closed
            websocket: { protocols: [chat.v2, chat.v1] }
            responses:
              - { when: "true", status: 403, body: { error: closed } }
              - { status: 101 }
          notify:
            request: POST /notify
            responses: [ { status: 204, push: [ { socket: chat, send: "{{ body.text }}", delay: 1s } ] } ]
        """

    static func upgrade(
        _ path: String, token: String? = "good", session: String = "s", extra: [(name: String, value: String)] = []
    ) -> RecordedRequest {
        var headers: [(name: String, value: String)] = [
            ("Upgrade", "websocket"), ("Connection", "keep-alive, Upgrade"), ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Doppel-Session", session),
        ]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return RecordedRequest(method: "GET", target: path, headers: headers + extra)
    }

    @Test("An upgrade with a credential opens a socket with the request's roots; without one, the documented 401")
    func upgradeDecisions() throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        let opened = engine.decided(Self.upgrade("/chat/lobby"))
        #expect(opened.response?.status == 101)
        #expect(opened.effects?.socket?.endpointID == "chat" && opened.effects?.socket?.session == "s")
        let refused = engine.decided(Self.upgrade("/chat/lobby", token: nil))
        #expect(refused.response?.status == 401 && refused.effects?.socket == nil)
        #expect(try JSONReader.parse(refused.response?.body ?? []) == ["error": "no"])
        // A response other than 101 is sent as HTTP; no socket.
        let closed = engine.decided(Self.upgrade("/closed"))
        #expect(closed.response?.status == 403 && closed.effects?.socket == nil)
        // Subprotocols: none offered is fine; offered, one must be spoken, the endpoint's preference first.
        let unspoken = engine.respond(to: Self.upgrade("/closed", extra: [("Sec-WebSocket-Protocol", "chat.v3, other")]))
        #expect(unspoken.status == 400)
        #expect(String(decoding: unspoken.body, as: UTF8.self).contains("this endpoint speaks chat.v2, chat.v1"))
        #expect(engine.respond(to: Self.upgrade("/closed", extra: [("Sec-WebSocket-Protocol", "chat.v1")])).status == 403)
        #expect(MockEngine.chosenProtocol(offered: ["chat.v1", "chat.v2"], spoken: ["chat.v2", "chat.v1"]) == "chat.v2")
        // Not an upgrade at all: 426, after auth.
        let plain = engine.respond(to: RecordedRequest(method: "GET", target: "/chat/lobby", headers: [("Authorization", "Bearer good")]))
        #expect(plain.status == 426)
        #expect(plain.headers.contains { $0.name == "Sec-WebSocket-Version" && $0.value == "13" })
        let badKey = engine.respond(
            to: RecordedRequest(
                method: "GET", target: "/chat/lobby",
                headers: [
                    ("Authorization", "Bearer good"), ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
                    ("Sec-WebSocket-Key", "abc"),
                ]))
        #expect(badKey.status == 400)
    }

    @Test("Rules: schema and when pick the rule; effects change the session; messages, pushes and closes are rendered")
    func rules() throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        let opening = try #require(engine.decided(Self.upgrade("/chat/lobby")).effects?.socket)
        let socket = try #require(engine.contract.endpoint(id: "chat")?.socket)
        let hello = try #require(engine.runSocketRule(socket.onConnect[0], of: opening))
        #expect(hello.messages == [#"{"hello":"lobby","count":0}"#])

        let counted = engine.socketMessage(#"{"add": 2}"#, of: opening)
        #expect(counted.rule == "count")
        #expect(counted.messages == [#"{"count":2}"#, "plain 2"])
        #expect(counted.pushes == [RenderedPush(socket: "chat", text: #"{"seen":2}"#, delay: 0)])
        #expect(counted.changes.sorted() == ["count", "last"])
        #expect(engine.sessions.session("s").snapshot["last"] == ["add": 2])

        // Refused by the schema, and no other rule's `when` holds: nothing sent, nothing changed.
        let refused = engine.socketMessage(#"{"add": 0}"#, of: opening)
        #expect(refused.rule == nil && refused.messages.isEmpty)
        #expect(refused.reason?.text.contains("1 of them refused it by schema") == true)
        #expect(engine.sessions.session("s").snapshot["count"] == 2)

        let quit = engine.socketMessage("quit", of: opening)
        #expect(quit.rule == "quit" && quit.close == SocketClose(code: 4001, reason: "bye"))

        // An HTTP response's push, rendered in its request.
        let notified = engine.decided(
            RecordedRequest(
                method: "POST", target: "/notify",
                headers: [
                    ("Authorization", "Bearer good"), ("Content-Type", "application/json"), ("Doppel-Session", "s"),
                ], body: Array(#"{"text": "hi"}"#.utf8)))
        #expect(notified.response?.status == 204)
        #expect(notified.effects?.pushes == [RenderedPush(socket: "chat", text: "hi", delay: 1)])
    }

    @Test("Journal entries of a socket: counted under endpoint.rule, closes under the endpoint with their code")
    func journal() throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        let opening = try #require(engine.decided(Self.upgrade("/chat/lobby")).effects?.socket)
        let outcome = engine.socketMessage(#"{"add": 1}"#, of: opening)
        let entry = engine.journalSocket(opening, method: "RECEIVE", rule: outcome.rule, outcome: outcome, message: #"{"add": 1}"#)
        #expect(entry.endpointID == "chat.count" && entry.status == 101)
        #expect(entry.json["sent"] == [#"{"count":1}"#, "plain 1"])
        engine.journalSocket(opening, method: "CLOSE", rule: nil, status: 4001, reason: Reason("rule quit closed the socket"))
        #expect(Verification(.init(endpoint: "chat.count"), expected: .exactly(1), in: engine.journal).passed)
        #expect(Verification(.init(endpoint: "chat", status: 4001), expected: .exactly(1), in: engine.journal).passed)
        #expect(
            engine.contract.isCountable("chat.count") && engine.contract.isCountable("chat.on_unmatched") && !engine.contract.isCountable("chat.nope")
        )
        // A long message is kept cut.
        let long = engine.journalSocket(opening, method: "RECEIVE", rule: nil, message: String(repeating: "ж", count: 5000))
        #expect(long.message!.utf8.count <= Journal.maximumMessage && long.message!.hasSuffix("…"))
    }

    @Test(
        "The loader refuses what cannot work, each at its place",
        arguments: [
            ("request: POST /ws\n    websocket: {}", "a WebSocket upgrade is a GET request"),
            ("request: GET /ws\n    websocket: { on_message: [ { close: { code: 1006 } } ] }", "close code 1006 cannot be sent"),
            ("request: GET /ws\n    websocket: { every: [ { send: x } ] }", "of websocket of endpoint 'e' needs 'interval'"),
            ("request: GET /ws\n    websocket: { every: [ { interval: 1ms, send: x } ] }", "'interval' must be a duration of at least 10ms"),
            ("request: GET /ws\n    websocket: { on_connect: [ { schema: { type: string }, send: x } ] }", "unknown key 'schema'"),
            ("request: GET /ws\n    websocket: { on_connect: [ { send: '{{ message }}' } ] }", "message"),
            ("request: GET /ws\n    websocket: { on_unmatched: { when: 'true', send: x } }", "'on_unmatched' takes every message"),
            (
                "request: GET /ws\n    websocket: { on_message: [ { name: a, send: x }, { name: a, send: y } ] }",
                "two rules of websocket of endpoint 'e' are named 'a'"
            ),
            ("request: GET /plain\n    responses: [ { status: 101 } ]", "status 101 switches to a WebSocket"),
            (
                "request: GET /plain\n    responses: [ { push: [ { socket: nowhere, send: x } ] } ]",
                "push names 'nowhere', which is neither a WebSocket endpoint nor a gRPC method with 'stream:' rules"
            ),
            ("request: GET /plain\n    responses: [ { callbacks: [ { url: 'ftp://x/y' } ] } ]", "a callback's url must be an http or https URL"),
            (
                "request: GET /plain\n    responses: [ { callbacks: [ { url: 'http://x/y', retries: 11 } ] } ]",
                "'retries' must be a whole number from 0 to 10"
            ),
            (
                "request: GET /plain\n    responses: [ { callbacks: [ { url: 'http://x/y', body: 1, schema: { type: integer } } ] } ]",
                "stands for its body"
            ),
            (
                "request: GET /plain\n    responses: [ { callbacks: [ { url: 'http://x/y', timeout: 1h } ] } ]",
                "'timeout' must be a duration from 100ms to 300s"
            ),
            ("request: GET /plain\n    responses: [ { callbacks: [ { url: 'http://x/y', delay: 2h } ] } ]", "a callback waits at most 1h"),
        ])
    func loaderErrors(endpoint: String, message: String) {
        let text = "doppel: 1\nendpoints:\n  e:\n    auth: none\n    \(endpoint)\n"
        let found = diagnostics(of: text)
        #expect(found.contains { $0.severity == .error && $0.message.contains(message) }, "\(found.map(\.description))")
        #expect(found.allSatisfy { $0.location.line >= 3 }, "each problem is placed in the endpoint")
    }

    @Test(
        "Scenario socket steps: what the loader refuses, at its place",
        arguments: [
            ("  - send: hi\n", "no earlier step opens one"),
            ("  - socket: GET /chat/a\n    as: a\n  - receive: x\n    from: b\n", "no earlier step opens a socket named 'b'"),
            ("  - socket: POST /chat/a\n", "a WebSocket opens with GET"),
            ("  - socket: GET /chat/a\n  - send: x\n    within: 2s\n", "'within' does not go with 'send'"),
            ("  - socket: GET /chat/a\n  - closed: soon\n", "'closed' is the close code expected"),
            ("  - socket: GET /chat/a\n  - receive: x\n    within: 1h\n", "'within' must be a duration up to 10m"),
        ])
    func scenarioErrors(steps: String, message: String) throws {
        let contract = try loadContract(Self.contract)
        let text = "contract: test.yaml\nsteps:\n" + steps
        do {
            _ = try ScenarioLoader.load(text: text, file: "scenario.yaml", contract: contract)
            Issue.record("loaded: \(text)")
        } catch {
            #expect(error.diagnostics.contains { $0.message.contains(message) && $0.location.line >= 3 }, "\(error.diagnostics.map(\.description))")
        }
    }

    @Test("Scenario socket steps read as their actions, the socket named by as/to/from or the last opened")
    func scenarioSteps() throws {
        let contract = try loadContract(Self.contract)
        let text = """
            contract: test.yaml
            steps:
              - socket: GET /chat/a
                as: a
                headers: { Authorization: Bearer good }
              - socket: GET /chat/b
                expect: { status: 401 }
              - send: { add: 1 }
                to: a
              - receive: { count: 1 }
                from: a
                within: 2s
                capture: { n: message.count }
              - closed: 4001
              - close: a
            """
        let scenario = try ScenarioLoader.load(text: text, file: "scenario.yaml", contract: contract)
        #expect(scenario.steps.count == 6)
        guard case .openSocket(let request, let name) = scenario.steps[0].action else {
            Issue.record("not an open")
            return
        }
        #expect(request.method == "GET" && name == "a" && scenario.steps[0].expectation.status == 101)
        guard case .openSocket(_, let second) = scenario.steps[1].action else {
            Issue.record("not an open")
            return
        }
        #expect(second == "socket" && scenario.steps[1].expectation.status == 401)
        guard case .send(_, let to) = scenario.steps[2].action, case .receive(let wait, let from) = scenario.steps[3].action else {
            Issue.record("not send/receive")
            return
        }
        #expect(to == "a" && from == "a" && wait.within == 2 && scenario.steps[3].captures.map(\.0) == ["n"])
        guard case .receive(let closed, let last) = scenario.steps[4].action, case .closeSocket(let closing, let code) = scenario.steps[5].action
        else {
            Issue.record("not closed/close")
            return
        }
        #expect(closed.waitsForClose && closed.closeCode == 4001 && last == "socket")
        #expect(closing == "a" && code == 1000)
    }

    @Test("A response's callbacks are rendered in its request: URL, headers, body and content type, delay drawn")
    func callbacksRender() throws {
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                endpoints:
                  pay:
                    request: POST /pay
                    auth: none
                    responses:
                      - status: 202
                        effects: [ ]
                        callbacks:
                          - { name: hook, url: "{{ body.hook }}?id={{ body.id }}", headers: { X-Id: "{{ body.id }}", X-None: "{{ null }}", X-Note: "{{ body.note }}", "Bad Name": x },
                              body: { id: "{{ body.id }}" }, delay: 2s, retries: 3 }
                          - { url: "http://127.0.0.1/plain", method: put, body: "done {{ body.id }}" }
                          - { url: "http://127.0.0.1/generated", schema: { type: object, required: [n], properties: { n: { type: integer, minimum: 4 } } } }
                """))
        let decision = engine.decided(
            RecordedRequest(
                method: "POST", target: "/pay", headers: [("Content-Type", "application/json")],
                body: Array(#"{"hook": "http://127.0.0.1:9/h", "id": 7, "note": "a\r\nX-Evil: 1"}"#.utf8)))
        #expect(decision.response?.status == 202)
        let callbacks = decision.effects?.callbacks ?? []
        #expect(callbacks.map(\.name) == ["hook", "callbacks[1]", "callbacks[2]"])
        #expect(callbacks[0].url == "http://127.0.0.1:9/h?id=7" && callbacks[0].delay == 2 && callbacks[0].retries == 3 && callbacks[0].timeout == 10)
        // A header name that is not a token is left out; a value's line breaks become spaces.
        #expect(callbacks[0].headers.map(\.name) == ["X-Id", "X-Note", "Content-Type"] && callbacks[0].headers.last?.value == "application/json")
        #expect(callbacks[0].headers[1].value == "a  X-Evil: 1")
        #expect(callbacks[0].body == Array(#"{"id":7}"#.utf8))
        #expect(
            callbacks[1].method == "PUT" && callbacks[1].body == Array("done 7".utf8)
                && callbacks[1].headers.last?.value == "text/plain; charset=utf-8")
        #expect(callbacks[2].body == Array(#"{"n":4}"#.utf8))
    }
}
