import DoppelCore
import Foundation
import Testing

@testable import DoppelServer

/// What requests and admin calls do with a shared store is written once
/// over `StateStore`'s storage verbs, so any store that implements them
/// serves sessions exactly. Here a store of a dictionary behind one lock
/// (no database, no socket) stands in for PostgreSQL, and the server's
/// code decides requests and answers admin calls through it.
@Suite("The shared store's seam: storage verbs only")
struct StateStoreSeamTests {
    static let contract = """
        doppel: 1
        info: { title: Seam, version: "1" }
        state:
          counters: { used: 0 }
        endpoints:
          use:
            request: POST /use
            responses:
              - when: state.used >= 5
                status: 402
                body: { error: monthly limit reached }
              - status: 200
                effects: [ "state.used = state.used + 1" ]
                body: { used: "{{ state.used }}" }
        """

    /// Sessions and journal in memory, each verb as a database would give it.
    final class DictionaryStore: StateStore {
        /// Generous by default: these tests count outcomes, and a busy machine running the whole suite
        /// may hold 200 transactions' turns for many seconds (a 503 there would be the deadline's, not the seam's).
        let timeout: Double
        /// Stored sessions, and the journal's entries as appended.
        private let rows = Locked([String: SessionData]())
        private let entries = Locked([(Decision.Entry, Int)]())
        /// A transaction at a time, as one row lock over every session.
        private let serial = Serial()
        /// When set, every transaction fails as an unreachable database does.
        let broken: Bool
        let failures = Locked(0)
        let barriers = Locked(0)

        init(broken: Bool = false, timeout: Double = 120) {
            self.broken = broken
            self.timeout = timeout
        }

        actor Serial {
            func run<T>(_ body: () throws -> T) rethrows -> T { try body() }
        }

        struct Unreachable: Error, CustomStringConvertible { var description: String { "the store is unreachable" } }

        func needsStore(_ request: RecordedRequest, engine: MockEngine) -> Bool { true }

        func transact<T: Sendable>(session id: String, _ body: @escaping @Sendable (SessionData?) throws -> (T, SessionData?)) async throws -> T {
            if broken { throw Unreachable() }
            return try await serial.run {
                let (result, data) = try body(rows.withLock { $0[id] })
                rows.withLock { $0[id] = data }
                return result
            }
        }

        func append(_ decision: Decision, status: Int, durationMicros: Int, engine: MockEngine) -> Int? {
            guard let entry = decision.entry else { return nil }
            entries.withLock { $0.append((entry, status)) }
            return nil
        }

        func barrier() async throws { barriers.withLock { $0 += 1 } }

        func journal(capacity: Int) async throws -> Journal {
            let journal = Journal(capacity: capacity)
            for (entry, status) in entries.withLock({ $0 }).suffix(capacity) {
                journal.record(
                    time: entry.time, session: entry.session, method: entry.method, path: entry.path, query: entry.query, status: status,
                    endpointID: entry.endpointID, responseName: entry.responseName, durationMicros: 0, reason: entry.reason, changes: entry.changes)
            }
            return journal
        }

        func clearJournal() async throws { entries.withLock { $0.removeAll() } }
        func removeAllSessions() async throws { rows.withLock { $0.removeAll() } }

        func storedSessions() async throws -> StoredSessions {
            var stored = StoredSessions()
            stored.sessions = rows.withLock { $0.keys.sorted() }.map { ($0, nil) }
            return stored
        }

        func failed(_ error: any Error, request: Bool) -> String {
            if request { failures.withLock { $0 += 1 } }
            return "\(error)"
        }

        func health() -> (reachable: Bool, details: JSONObject) { (!broken, JSONObject([("kind", "dictionary")])) }

        func used(_ session: String) -> JSON? { rows.withLock { $0[session] }?.state["used"] }
    }

    let engine: MockEngine
    let store: DictionaryStore
    let answerer: Answerer

    init() throws {
        engine = MockEngine(contract: try ContractLoader.load(text: Self.contract, file: "seam.yaml"))
        store = DictionaryStore()
        answerer = Answerer(slot: EngineSlot(engine), log: RequestLog(format: .none), maxBodySize: 1 << 20, shared: store)
    }

    /// A request through the answerer as a door sends it: decided (by the store when it must be) and finished, so it is journaled.
    static func send(_ request: RecordedRequest, to answerer: Answerer, engine: MockEngine) async -> MockResponse {
        let decision: Decision
        switch answerer.decision(for: request, refusal: nil, engine: engine) {
        case .now(let now): decision = now
        case .later(let work): decision = await work()
        case .events: return MockResponse(status: 0)
        }
        let response = decision.responseInFull
        answerer.finish(decision, of: request, sent: response.status, engine: engine, started: .now)
        return response
    }

    static func request(_ method: String, _ target: String, session: String) -> RecordedRequest {
        RecordedRequest(method: method, target: target, headers: [(MockEngine.sessionHeader, session)])
    }

    @Test("200 parallel requests in one session through the seam: exactly 5 × 200 and 195 × 402, and the stored count is 5")
    func parallelRequestsAreExact() async throws {
        let (answerer, engine) = (self.answerer, self.engine)
        let tally = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask { await Self.send(Self.request("POST", "/use", session: "s1"), to: answerer, engine: engine).status }
            }
            var tally: [Int: Int] = [:]
            for await status in group { tally[status, default: 0] += 1 }
            return tally
        }
        #expect(tally == [200: 5, 402: 195])
        #expect(store.used("s1") == 5)
        // The server's own sessions were never touched: the store holds them.
        #expect(engine.sessions.existing("s1") == nil)
    }

    @Test("Admin calls are answered through the verbs: the journal after a barrier, a session's reset in its transaction, the list from the store")
    func adminCallsUseTheVerbs() async throws {
        for _ in 0..<6 { _ = await Self.send(Self.request("POST", "/use", session: "s2"), to: answerer, engine: engine) }
        let journal = await Self.send(Self.request("GET", "/__doppel/journal?session=s2", session: "s2"), to: answerer, engine: engine)
        #expect(journal.status == 200)
        #expect(try JSONReader.parse(journal.body)["total"] == 6)
        #expect(store.barriers.withLock { $0 } == 1)
        let listed = await Self.send(Self.request("GET", "/__doppel/sessions", session: "s2"), to: answerer, engine: engine)
        #expect(try JSONReader.parse(listed.body)["sessions"] == [["id": "s2", "scenario": nil]])
        // A reset removes the session (as in memory): the next use starts it over, and is allowed again.
        let reset = await Self.send(Self.request("POST", "/__doppel/reset?session=s2", session: "s2"), to: answerer, engine: engine)
        #expect(reset.status == 200)
        #expect(store.used("s2") == nil)
        #expect(await Self.send(Self.request("POST", "/use", session: "s2"), to: answerer, engine: engine).status == 200)
        #expect(store.used("s2") == 1)
    }

    @Test("A session id no store may hold is refused with its 400 and never becomes a row, even when the store is asked")
    func anInvalidSessionNeverReachesTheStore() async throws {
        let invalid = String(repeating: "x", count: 129)
        for session in [invalid, "no spaces", ""] {
            let answer = await Self.send(Self.request("POST", "/use", session: session), to: answerer, engine: engine)
            #expect(answer.status == 400, "\(session)")
            #expect(String(decoding: answer.body, as: UTF8.self).contains("invalid-session"), "\(session)")
        }
        #expect(try await store.storedSessions().sessions.isEmpty)
        #expect(engine.sessions.existing(invalid) == nil)
    }

    @Test("A store that cannot be used: 503 state-store-unavailable with Retry-After, counted; health says so")
    func anUnusableStoreIsA503() async throws {
        let broken = DictionaryStore(broken: true, timeout: 5)
        let answerer = Answerer(slot: EngineSlot(engine), log: RequestLog(format: .none), maxBodySize: 1 << 20, shared: broken)
        let answer = await Self.send(Self.request("POST", "/use", session: "s3"), to: answerer, engine: engine)
        #expect(answer.status == 503)
        #expect(answer.header("retry-after") == "5")
        #expect(String(decoding: answer.body, as: UTF8.self).contains("state-store-unavailable"))
        #expect(broken.failures.withLock { $0 } == 1)
        let health = await Self.send(Self.request("GET", "/__doppel/health", session: "s3"), to: answerer, engine: engine)
        #expect(health.status == 503)
        #expect(try JSONReader.parse(health.body)["state_store"] == ["kind": "dictionary"])
    }
}
