import DoppelCore
import DoppelTestSupport
import Testing

@testable import DoppelServer

/// The admin calls' table (`AdminCall`), held to what the calls do: the
/// API answers every call it declares, a HEAD as its GET, and a call
/// declared to change nothing changes no session and no journal entry
/// (a shared store locks, writes back and tells other replicas by it).
@Suite("Admin calls, declared once")
struct AdminCallTests {
    static func engine() throws -> MockEngine { MockEngine(contract: try ContractLoader.load(file: contractPath("tales.yaml"))) }

    static func request(_ call: AdminCall, method: String? = nil) -> RecordedRequest {
        RecordedRequest(method: method ?? call.method, path: AdminAPI.prefix + call.path, query: "session=alice")
    }

    @Test("Every declared call is answered, and only those", arguments: AdminCall.all.map { "\($0.method) \($0.path)" })
    func everyDeclaredCallIsAnswered(_ name: String) throws {
        let call = try #require(AdminCall.all.first { "\($0.method) \($0.path)" == name })
        let api = AdminAPI(engine: try Self.engine())
        let answer = api.respond(to: Self.request(call))
        #expect(answer.json?["type"]?.stringValue?.hasSuffix("unknown-admin-call") != true, "\(name): \(answer.status)")
        #expect(AdminAPI.calls.contains(name))
        if call.method == "GET" {
            // A HEAD is the GET's answer (the transport drops its body).
            let head = api.respond(to: Self.request(call, method: "HEAD"))
            #expect(head.status == answer.status, "HEAD \(call.path)")
        }
    }

    @Test("A call the table does not declare is the 404 that lists the calls")
    func anUndeclaredCallIsRefused() throws {
        let api = AdminAPI(engine: try Self.engine())
        for (method, path) in [("PATCH", "/state"), ("POST", "/health"), ("GET", "/nothing"), ("GET", "")] {
            let answer = api.respond(to: RecordedRequest(method: method, path: AdminAPI.prefix + path))
            #expect(answer.status == 404, "\(method) \(path)")
            #expect(answer.json?["detail"]?.stringValue?.contains("GET /__doppel/state") == true)
        }
        #expect(AdminCall.of(RecordedRequest(method: "GET", path: "/api/v1/state")) == nil)
    }

    @Test("A call declared to change nothing changes no session and no journal", arguments: AdminCall.all.filter { !$0.changes }.map(\.path))
    func aReadingCallChangesNothing(_ path: String) throws {
        let engine = try Self.engine()
        // A session with state, a scenario and a journal to change.
        _ = engine.respond(
            to: RecordedRequest(
                method: "POST", path: "/api/v1/subscription/purchase",
                query: "plan_tier=premium&billing_cycle=monthly&payment_method=card",
                headers: [("Authorization", "Bearer \(sampleJWT)"), ("Doppel-Session", "alice")]))
        let before = try #require(engine.sessions.existing("alice")).current.encoded()
        let entries = engine.journal.entries.count
        let api = AdminAPI(engine: engine)
        for call in AdminCall.all where call.path == path && !call.changes {
            _ = api.respond(to: Self.request(call))
            _ = api.respond(
                to: RecordedRequest(
                    method: call.method, path: AdminAPI.prefix + call.path, query: "session=alice",
                    headers: [(name: "Content-Type", value: "application/json")],
                    body: Array(#"{"session": "alice", "endpoint": "generate-story", "count": 1}"#.utf8)))
        }
        #expect(try #require(engine.sessions.existing("alice")).current.encoded() == before, "\(path)")
        #expect(engine.sessions.ids == ["alice"], "\(path) made a session")
        #expect(engine.journal.entries.count == entries, "\(path)")
    }

    @Test("A call declared to change its session does change it")
    func aChangingCallChangesItsSession() throws {
        let engine = try Self.engine()
        let api = AdminAPI(engine: engine)
        let json = [(name: "Content-Type", value: "application/json")]
        let moved = api.respond(
            to: RecordedRequest(
                method: "POST", path: AdminAPI.prefix + "/clock", query: "session=alice", headers: json,
                body: Array(#"{"advance": "40d"}"#.utf8)))
        #expect(moved.status == 200)
        #expect(AdminCall.of(RecordedRequest(method: "POST", path: AdminAPI.prefix + "/clock"))?.changes == true)
        let forced = api.respond(
            to: RecordedRequest(
                method: "POST", path: AdminAPI.prefix + "/next", query: "session=alice", headers: json,
                body: Array(#"{"endpoint": "generate-story", "status": 402}"#.utf8)))
        #expect(forced.status == 200 || forced.status == 201, "\(forced.status) \(String(decoding: forced.body, as: UTF8.self))")
        let call = try #require(AdminCall.of(RecordedRequest(method: "POST", path: AdminAPI.prefix + "/next")))
        #expect(call.changes && call.changesOverrides && call.reach == .session)
        let listed = api.respond(to: RecordedRequest(method: "GET", path: AdminAPI.prefix + "/next", query: "session=alice"))
        #expect(String(decoding: listed.body, as: UTF8.self).contains("generate-story"))
    }
}
