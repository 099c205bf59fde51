import DoppelCore

/// The sessions and journal of the engine that answers, in this process:
/// the `StateStore` a server has without `--state-store`. A request's
/// transaction runs at once, on the session its engine's `SessionStore`
/// holds (whose lock each read and change takes, `Session.transact`), so
/// an answer decided in memory costs no task hop and no wait.
struct MemoryState: StateStore {
    /// The server's engine, for the verbs that are not handed one.
    let slot: EngineSlot

    /// Nothing to wait for.
    var timeout: Double { 0 }

    var isLocal: Bool { true }

    /// Every request is decided on the engine's own session: it is at hand.
    func needsStore(_ request: RecordedRequest, engine: MockEngine) -> Bool { true }

    func transact<T: Sendable>(session id: String, engine: MockEngine, _ body: @escaping @Sendable (Session) -> T) -> Stored<T> {
        .now(body(engine.sessions.session(id)))
    }

    func transact<T: Sendable>(session id: String, _ body: @escaping @Sendable (SessionData?) throws -> (T, SessionData?)) async throws -> T {
        let sessions = slot.current.sessions
        guard let session = sessions.existing(id) else {
            let (result, data) = try body(nil)
            // A new session is made by the store, as a request's is: counted against its limit and state budget.
            if let data { sessions.session(id).transact { $0 = data } }
            return result
        }
        var removed = false
        let result = try session.transact { (current: inout SessionData) throws -> T in
            let (result, data) = try body(current)
            if let data { current = data } else { removed = true }
            return result
        }
        if removed { _ = sessions.reset(id) }
        return result
    }

    func append(_ decision: Decision, status: Int, durationMicros: Int, engine: MockEngine) -> Int? {
        engine.complete(decision, status: status, durationMicros: durationMicros)
    }

    /// One process: what it has written, it reads.
    func barrier() async throws {}

    func journal(capacity: Int) async throws -> Journal {
        let journal = slot.current.journal
        guard journal.capacity > capacity else { return journal }
        let newest = Journal(capacity: capacity)
        for entry in journal.entries.suffix(capacity) {
            newest.record(
                time: entry.time, session: entry.session, method: entry.method, path: entry.path, query: entry.query, status: entry.status,
                endpointID: entry.endpointID, responseName: entry.responseName, durationMicros: entry.durationMicros, proxied: entry.proxied,
                sequence: entry.sequence, reason: entry.why, changes: entry.changes, message: entry.message, sent: entry.sent)
        }
        return newest
    }

    func clearJournal() async throws { slot.current.journal.clear() }

    func removeAllSessions() async throws { slot.current.sessions.resetAll() }

    func storedSessions() async throws -> StoredSessions {
        let sessions = slot.current.sessions
        var stored = StoredSessions()
        stored.sessions = sessions.ids.map { id in (id, sessions.existing(id)?.current.scenario?.name) }
        let evictions = sessions.evictions
        (stored.evictedForRoom, stored.evictedIdle, stored.evictedForState) = (evictions.forRoom, evictions.idle, evictions.forState)
        return stored
    }

    /// Memory is never out of reach.
    func failed(_ error: any Error, request: Bool) -> String { "\(error)" }

    func health() -> (reachable: Bool, details: JSONObject) { (true, JSONObject()) }
}
