import DoppelCore
import Foundation
import Testing

@testable import DoppelServer

/// The in-memory store is a `StateStore` like any other: requests are
/// decided through the same `StateStore.decide` as in a shared store, at
/// once (no task hop), and its storage verbs act on the engine's own
/// sessions and journal.
@Suite("The in-memory store behind the storage seam")
struct MemoryStateTests {
    let engine: MockEngine
    let answerer: Answerer
    var store: any StateStore { answerer.store }

    init() throws {
        engine = MockEngine(contract: try ContractLoader.load(text: StateStoreSeamTests.contract, file: "seam.yaml"))
        answerer = Answerer(slot: EngineSlot(engine), log: RequestLog(format: .none), maxBodySize: 1 << 20)
    }

    static func use(_ session: String) -> RecordedRequest { StateStoreSeamTests.request("POST", "/use", session: session) }

    @Test("Without --state-store the answerer's store is memory, and 200 parallel requests in one session are decided at once: 5 × 200, 195 × 402")
    func parallelRequestsAreDecidedAtOnceAndExactly() async throws {
        #expect(store is MemoryState)
        #expect(store.isLocal)
        let (answerer, engine) = (self.answerer, self.engine)
        let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
            for _ in 0..<200 {
                group.addTask {
                    guard case .now(let decision) = answerer.decision(for: Self.use("m1"), refusal: nil, engine: engine) else { return (0, false) }
                    let status = decision.responseInFull.status
                    answerer.finish(decision, of: Self.use("m1"), sent: status, engine: engine, started: .now)
                    return (status, true)
                }
            }
            var outcomes: [Int: Int] = [:]
            for await (status, atOnce) in group where atOnce { outcomes[status, default: 0] += 1 }
            return outcomes
        }
        #expect(outcomes == [200: 5, 402: 195])
        #expect(engine.sessions.existing("m1")?.current.state["used"] == 5)
        // Journaled through the store's append, numbered at once.
        #expect(engine.journal.count == 200)
        #expect(engine.journal.entries.map(\.sequence) == Array(1...200))
    }

    @Test("A transaction on a session's data writes back what the body returns, and removes the session when it returns nil")
    func dataTransactionsWriteBackOrRemove() async throws {
        _ = engine.respond(to: Self.use("m2"))
        let seen = try await store.transact(session: "m2") { data -> (JSON?, SessionData?) in
            guard var data else { return (nil, nil) }
            let used = data.state["used"]
            data.clock.freeze(true, real: 1_000)
            return (used, data)
        }
        #expect(seen == 1)
        #expect(engine.sessions.existing("m2")?.current.clock.frozenAt == 1_000)
        let absent = try await store.transact(session: "m3") { data in (data == nil, nil) }
        #expect(absent)
        #expect(engine.sessions.existing("m3") == nil)
        // Data for a session not held starts it, in the engine's store.
        let written = try await store.transact(session: "m4") { data -> (Bool, SessionData?) in
            var started = SessionData(state: JSONObject([("used", .int(4))]))
            started.clock.freeze(true, real: 2_000)
            return (data == nil, started)
        }
        #expect(written)
        #expect(engine.sessions.existing("m4")?.current.state["used"] == 4)
        #expect(engine.respond(to: Self.use("m4")).status == 200)
        #expect(engine.sessions.existing("m4")?.current.state["used"] == 5)
        _ = try await store.transact(session: "m2") { _ in ((), nil) }
        #expect(engine.sessions.existing("m2") == nil)
        // The next request starts the session over.
        #expect(engine.respond(to: Self.use("m2")).status == 200)
        #expect(engine.sessions.existing("m2")?.current.state["used"] == 1)
    }

    @Test("The journal, the session list, and their removal are the engine's own")
    func journalAndSessionsAreTheEngines() async throws {
        for session in ["a", "b", "a"] { _ = engine.respond(to: Self.use(session)) }
        let newest = try await store.journal(capacity: 2)
        #expect(newest.entries.map(\.sequence) == [2, 3])
        #expect(newest.entries.map(\.session) == ["b", "a"])
        #expect(try await store.journal(capacity: engine.journal.capacity) === engine.journal)
        #expect(try await store.storedSessions().sessions.map(\.id) == ["a", "b"])
        try await store.clearJournal()
        #expect(engine.journal.count == 0)
        try await store.removeAllSessions()
        #expect(engine.sessions.count == 0)
        try await store.barrier()
        #expect(store.health().reachable)
    }
}
