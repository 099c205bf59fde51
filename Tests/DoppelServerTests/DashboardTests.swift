import DoppelCore
import DoppelTestSupport
import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import DoppelServer

/// What the dashboard reads and does, without sockets: why each answer was
/// chosen, the state it changed, answers forced through the admin API, the
/// page's files, and the event hub's bounds.
@Suite("Dashboard: why, forced answers, files and the event hub")
struct DashboardStageTests {
    let engine: MockEngine
    let admin: AdminAPI

    init() throws {
        engine = MockEngine(contract: try ContractLoader.load(file: contractPath("tales.yaml")))
        admin = AdminAPI(engine: engine)
    }

    func request(
        _ method: String, _ target: String, json: JSON? = nil, token: Bool = true, session: String? = nil,
        headers extra: [(name: String, value: String)] = []
    ) -> RecordedRequest {
        var headers = extra
        if token { headers.append((name: "Authorization", value: "Bearer \(sampleJWT)")) }
        if let session { headers.append((name: "Doppel-Session", value: session)) }
        if json != nil { headers.append((name: "Content-Type", value: "application/json")) }
        return RecordedRequest(method: method, target: target, headers: headers, body: json.map(JSONWriter.encode) ?? [])
    }

    func call(_ method: String, _ target: String, json: JSON? = nil) -> MockResponse {
        admin.respond(
            to: RecordedRequest(
                method: method, target: "/__doppel" + target,
                headers: json == nil ? [] : [(name: "Content-Type", value: "application/json")], body: json.map(JSONWriter.encode) ?? []))
    }

    func lastEntry() throws -> Journal.Entry { try #require(engine.journal.entries.last) }

    func createChild(session: String? = nil) throws -> String {
        let made = engine.respond(
            to: request(
                "POST", "/api/v1/children", json: ["name": "Emma", "age_category": "5-7", "gender": "female", "interests": ["fairies"]],
                session: session))
        #expect(made.status == 200)
        return try #require((try JSONReader.parse(made.body))["id"]?.stringValue)
    }

    func generate(_ child: String, session: String? = nil, extra: [(name: String, value: String)] = []) -> MockResponse {
        engine.respond(
            to: request("POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(child)], session: session, headers: extra))
    }

    @Test("Each journal entry says why its response was chosen, and what state it changed")
    func entriesSayWhy() throws {
        _ = engine.respond(to: request("GET", "/api/v1/free-stories", token: false))
        #expect(try lastEntry().reason == "the endpoint's first response (no `when`)")

        _ = engine.respond(to: request("GET", "/api/v1/users/subscription", token: false))
        #expect(try lastEntry().reason == "auth scheme 'bearer': no credential was sent")

        let child = try createChild()
        #expect(try lastEntry().changes == ["children.\(child)"])

        _ = generate("123e4567-e89b-12d3-a456-426614174999")
        #expect(try lastEntry().status == 404)
        #expect(try lastEntry().reason == "`when: body.child_id not in state.children` held")
        #expect(try lastEntry().changes.isEmpty, "a refused generate changes nothing")

        #expect(generate(child).status == 200)
        #expect(try lastEntry().changes == ["stories_used", "usage_month"])

        #expect(generate(child, extra: [(name: "Prefer", value: "code=500")]).status == 500)
        #expect(try lastEntry().reason == "the request's `Prefer: code=500`")

        _ = engine.respond(to: request("GET", "/api/v1/free-storie", token: false))
        let miss = try lastEntry()
        #expect(miss.status == 404 && miss.endpointID == nil)
        #expect(miss.reason?.contains("The nearest is list-free-stories") == true, "\(miss.reason ?? "")")

        // The JSON the admin API and the dashboard read carries both.
        let json = try lastEntry().json
        #expect(json["reason"]?.stringValue == miss.reason)
        #expect(json["changes"] == .array([]))
    }

    @Test("A rate limit, a scenario's override and a sequence say so")
    func limitsOverridesAndSequencesSayWhy() throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                state:
                  counters: { calls: 0 }
                rate_limits:
                  per-client:
                    key: headers["x-client"]
                    limit: 1
                    window: 1m
                    endpoints: [flaky]
                    response: slow-down
                responses:
                  slow-down: { status: 429, body: { error: slow down } }
                endpoints:
                  flaky:
                    request: GET /flaky
                    responses:
                      - sequence:
                          - { status: 503, body: { error: busy } }
                          - { status: 200, body: { ok: true }, effects: [state.calls += 1] }
                  plain:
                    request: GET /plain
                    responses: [ { body: { ok: true } }, { name: gone, status: 410, body: { gone: true } } ]
                """, file: "/tmp/why.yaml")
        let engine = MockEngine(contract: contract)
        let flaky = RecordedRequest(method: "GET", target: "/flaky", headers: [(name: "X-Client", value: "a")])
        #expect(engine.respond(to: flaky).status == 503)
        #expect(engine.journal.entries.last?.reason == "the endpoint's first response (no `when`); sequence call 1: answer 1 of 2")
        #expect(engine.respond(to: flaky).status == 429)
        #expect(
            engine.journal.entries.last?.reason?.hasPrefix("rate limit 'per-client' reached: 1 requests per 60 s; free again in ") == true,
            "\(engine.journal.entries.last?.reason ?? "")")
        let other = RecordedRequest(method: "GET", target: "/flaky", headers: [(name: "X-Client", value: "b")])
        #expect(engine.respond(to: other).status == 200)
        #expect(engine.journal.entries.last?.reason?.hasSuffix("sequence call 2: answer 2 of 2") == true)
        #expect(engine.journal.entries.last?.changes == ["calls"])

        let scenario = try ScenarioLoader.load(
            text: """
                contract: why.yaml
                overrides:
                  - { endpoint: plain, example: gone, call: 1 }
                """, file: "/tmp/why-scenario.yaml", contract: contract)
        engine.sessions.start("s", scenario: scenario)
        let plain = RecordedRequest(method: "GET", target: "/plain", headers: [(name: "Doppel-Session", value: "s")])
        #expect(engine.respond(to: plain).status == 410)
        #expect(engine.journal.entries.last?.reason == "scenario '\(scenario.name)' overrides call 1")
        #expect(engine.respond(to: plain).status == 200)
    }

    @Test("A forced answer is the endpoint's next answer, once, rendered as the contract's own; the session's state stays")
    func forcedAnswers() throws {
        let child = try createChild(session: "f")
        #expect(generate(child, session: "f").status == 200)
        let forced = call("POST", "/next?session=f", json: ["endpoint": "generate-story", "status": 402])
        #expect(forced.status == 200)
        #expect(
            try JSONReader.parse(forced.body)["waiting"] == .array([["endpoint": "generate-story", "status": 402, "response": "generate-story[3]"]]))
        #expect(try JSONReader.parse(call("GET", "/next?session=f").body)["waiting"]?.arrayValue?.count == 1)

        // A request refused before the contract's choice (no token) leaves it waiting.
        #expect(
            engine.respond(
                to: request("POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(child)], token: false, session: "f")
            ).status == 401)
        let refused = generate(child, session: "f")
        #expect(refused.status == 402)
        // The endpoint's `let`s are bound: limit_info is the session's.
        let body = try JSONReader.parse(refused.body)
        #expect(body["limit_info"]?["monthly_limit"] == 5)
        #expect(body["limit_info"]?["stories_used"] == 1)
        #expect(try lastEntry().reason == "forced as this call's answer through the admin API (POST /__doppel/next)")
        #expect(generate(child, session: "f").status == 200, "used once")
        #expect(try JSONReader.parse(call("GET", "/state?session=f").body)["state"]?["stories_used"] == 2, "the state was kept")

        // Queued in order; DELETE drops them.
        #expect(call("POST", "/next?session=f", json: ["endpoint": "generate-story", "status": 500]).status == 200)
        #expect(call("POST", "/next?session=f", json: ["endpoint": "generate-story", "response": "generate-story[3]"]).status == 200)
        #expect(generate(child, session: "f").status == 500)
        #expect(call("DELETE", "/next?session=f").status == 200)
        #expect(generate(child, session: "f").status == 200)
        // Other sessions never see them.
        #expect(call("POST", "/next?session=f", json: ["endpoint": "generate-story", "status": 402]).status == 200)
        let other = try createChild(session: "g")
        #expect(generate(other, session: "g").status == 200)
    }

    @Test("Forcing what the contract does not document is refused with what it does")
    func forcingIsChecked() throws {
        func problem(_ body: JSON) throws -> String {
            let answer = call("POST", "/next", json: body)
            #expect(answer.status == 400)
            return try JSONReader.parse(answer.body)["detail"]?.stringValue ?? ""
        }
        #expect(try problem(["endpoint": "generate-story", "status": 418]).contains("documents no status 418; it documents 400 "))
        #expect(try problem(["endpoint": "generate-stroy", "status": 402]).contains("no endpoint 'generate-stroy' (did you mean 'generate-story'?)"))
        #expect(try problem(["endpoint": "generate-story"]).contains("give 'status' or 'response'"))
        #expect(try problem(["endpoint": "generate-story", "status": 402, "times": 2]).contains("unknown key 'times'"))
        for _ in 0..<SessionData.maximumForced { #expect(call("POST", "/next", json: ["endpoint": "list-plans", "status": 200]).status == 200) }
        #expect(try problem(["endpoint": "list-plans", "status": 200]).contains("holds 100 forced answers already"))
    }

    @Test("Forced answers survive a shared store's round trip; a session's first change says so")
    func forcedAnswersAreStored() throws {
        let session = engine.sessions.session("stored")
        let response = try #require(engine.contract.forcibleResponse(endpointID: "generate-story", name: nil, status: 402))
        session.transact { (data: inout SessionData) in _ = data.force(response, endpointID: "generate-story") }
        let bytes = session.current.encoded()
        let read = try SessionData(
            decoding: bytes,
            forced: { endpoint, name, status in
                self.engine.contract.forcibleResponse(endpointID: endpoint, name: name, status: status)
            }, scenario: { _, _ in nil })
        #expect(read.forced.map(\.endpointID) == ["generate-story"])
        #expect(read.forced.first?.response?.name == "generate-story[3]")
        // One that the contract no longer documents is dropped.
        let dropped = try SessionData(decoding: bytes, forced: { _, _, _ in nil }, scenario: { _, _ in nil })
        #expect(dropped.forced.isEmpty)
    }

    @Test("The page's files are served without the token, with a strict content policy; the data is not")
    func pageFiles() throws {
        let guarded = AdminAPI(engine: engine, token: "secret")
        let page = guarded.respond(to: RecordedRequest(method: "GET", target: "/__doppel/ui/"))
        #expect(page.status == 200)
        #expect(page.header("content-type") == "text/html; charset=utf-8")
        #expect(page.header("content-security-policy")?.contains("script-src 'self'") == true)
        #expect(String(decoding: page.body, as: UTF8.self).contains(#"<script src="dashboard.js" defer></script>"#))
        for (file, type) in [("dashboard.js", "text/javascript; charset=utf-8"), ("dashboard.css", "text/css; charset=utf-8")] {
            let answer = guarded.respond(to: RecordedRequest(method: "GET", target: "/__doppel/ui/" + file))
            #expect(answer.status == 200 && answer.header("content-type") == type && answer.body.count > 1000)
        }
        let settings = guarded.respond(to: RecordedRequest(method: "GET", target: "/__doppel/ui/settings.json"))
        #expect(try JSONReader.parse(settings.body) == ["token_required": true])
        #expect(
            try JSONReader.parse(admin.respond(to: RecordedRequest(method: "GET", target: "/__doppel/ui/settings.json")).body) == [
                "token_required": false
            ])
        #expect(guarded.respond(to: RecordedRequest(method: "GET", target: "/__doppel/ui")).header("location") == "/__doppel/ui/")
        #expect(guarded.respond(to: RecordedRequest(method: "GET", target: "/__doppel/ui/../journal")).status == 404)
        #expect(guarded.respond(to: RecordedRequest(method: "POST", target: "/__doppel/ui/")).status == 405)
        #expect(guarded.respond(to: RecordedRequest(method: "GET", target: "/__doppel/journal")).status == 401)
        // Without the HTTP server, the event stream cannot be had.
        #expect(admin.respond(to: RecordedRequest(method: "GET", target: "/__doppel/events")).status == 501)
    }

    final class Collector: EventHub.Reader, @unchecked Sendable {
        let eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let frames = Locked<[String]>([])
        func take(_ frames: [ByteBuffer]) { self.frames.withLock { $0 += frames.map { String(buffer: EventHub.unchunked($0)) } } }
        /// Waits (at most 60 s: the full suite can hold a test task that long) until `count` events have arrived: the hub hands them over in batches, 10 ms after the first.
        func settled(_ count: Int) async throws {
            await eventually(within: 60, every: .milliseconds(10)) { frames.withLock { $0.count } >= count }
        }
    }

    @Test("The hub: a limit of readers, events by session, and a bound on what all readers may hold")
    func hubBounds() async throws {
        let hub = EventHub(maximumReaders: 2)
        #expect(!hub.isObserved)
        let all = Collector()
        let alice = Collector()
        #expect(hub.subscribe(all, session: nil))
        #expect(hub.subscribe(alice, session: "alice"))
        #expect(!hub.subscribe(Collector(), session: nil), "a third reader is refused")
        #expect(hub.isObserved && hub.readerCount == 2)
        hub.publish("request", session: "bob", data: ["n": 1])
        hub.publish("request", session: "alice", data: ["n": 2])
        hub.publish("journal", session: nil, data: ["n": 3])
        try await all.settled(3)
        try await alice.settled(2)
        #expect(
            all.frames.withLock { $0 } == [
                "event: request\ndata: {\"n\":1}\n\n", "event: request\ndata: {\"n\":2}\n\n", "event: journal\ndata: {\"n\":3}\n\n",
            ])
        #expect(alice.frames.withLock { $0.count } == 2)
        hub.unsubscribe(all)
        hub.unsubscribe(alice)
        #expect(!hub.isObserved)

        // Every frame is an HTTP chunk, the heartbeat's comment too (written as it is to chunked streams).
        #expect(String(buffer: EventHub.frame("ready", data: ["n": 1])) == "1c\r\nevent: ready\ndata: {\"n\":1}\n\n\r\n")
        #expect(String(buffer: EventHub.comment("ping")) == "8\r\n: ping\n\n\r\n")
        #expect(String(buffer: EventHub.unchunked(EventHub.comment("ping"))) == ": ping\n\n")

        #expect(hub.account(EventHub.totalQueueLimit - 10))
        #expect(!hub.account(11), "past the total, refused and not counted")
        #expect(hub.account(10))
        #expect(hub.account(-EventHub.totalQueueLimit))
    }

    @Test("An answer's event, written as bytes, says what its journal entry (built as JSON) says, for every bundled contract's sample requests")
    func eventsAgreeWithTheJournal() throws {
        let folder = repositoryRoot.appendingPathComponent("contracts")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(files.count >= 5)
        var compared = 0
        for file in files {
            let engine = MockEngine(contract: try ContractLoader.load(file: folder.appendingPathComponent(file).path))
            for endpoint in engine.contract.endpoints {
                // Twice: the second answer of a stateful endpoint differs (and may change state).
                for round in 0..<2 {
                    var request = engine.sampleRequest(for: endpoint, session: "s\(round)")
                    if round == 1 {
                        request.headers.append(
                            (name: "Prefer", value: "code=\(engine.contract.documentedResponses(of: endpoint).last?.status ?? 200)"))
                    }
                    let decision = engine.decide(request)
                    let sequence = engine.complete(decision, durationMicros: 42)
                    let event = try #require(
                        EventHub.answer(decision, of: request, sent: decision.responseInFull.status, sequence: sequence, durationMicros: 42))
                    var parsed = try #require(try JSONReader.parse(event.json).objectValue)
                    #expect(parsed["request"]?["body_bytes"]?.intValue == request.body.count)
                    #expect(parsed["answer"]?["body_bytes"]?.intValue == decision.responseInFull.body.count)
                    parsed["request"] = nil
                    parsed["answer"] = nil
                    let entry = try #require(engine.journal.entries.last)
                    #expect(JSON.object(parsed) == entry.json, "\(file) \(endpoint.id) round \(round)")
                    compared += 1
                }
            }
        }
        #expect(compared > 40)
    }

    @Test("An answer's event: bodies cut to 16 KiB, bytes that are not text as base64, the admin token never shown")
    func answerEvents() throws {
        let big = String(repeating: "é", count: 9_000)  // 18,000 bytes
        let request = RecordedRequest(
            method: "POST", target: "/x?q=1", headers: [(name: "Doppel-Admin-Token", value: "secret"), (name: "Content-Type", value: "text/plain")],
            body: Array(big.utf8))
        let decision = engine.decide(request)
        let event = try #require(EventHub.answer(decision, of: request, sent: 404, sequence: 7, durationMicros: 12))
        #expect(event.session == "default")
        let data = try JSONReader.parse(event.json)
        #expect(data["sequence"] == 7 && data["status"] == 404 && data["query"] == "q=1")
        #expect(data["request"]?["truncated"] == true && data["request"]?["body_bytes"] == 18_000)
        #expect(data["request"]?["body"]?.stringValue?.utf8.count == EventHub.bodyLimit, "cut on a character's boundary")
        #expect(data["request"]?["headers"]?.arrayValue?.first == ["doppel-admin-token", "***"])
        #expect(data["answer"]?["headers"]?.arrayValue?.first == ["Content-Type", "application/problem+json"])

        let binary = RecordedRequest(method: "POST", target: "/x", body: [0xFF, 0xFE, 0x00])
        let binaryEvent = try #require(EventHub.answer(engine.decide(binary), of: binary, sent: 404, sequence: nil, durationMicros: 0))
        #expect(try JSONReader.parse(binaryEvent.json)["request"]?["body_base64"] == "//4A")
    }
}
