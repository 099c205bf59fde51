import DoppelCore
import DoppelServer
import PostgresNIO

/// The admin API on shared sessions: every call answers as it does in
/// memory, because the same `AdminAPI` code answers it, around the rows it
/// reads. A call on one session locks that session's row, as a request
/// does; calls on the journal read it after a barrier, so they count what
/// every replica answered; calls that change scenarios end with a barrier,
/// so no replica answers from an override set older than the change.
extension PostgresStateStore {
    package func admin(_ request: RecordedRequest, api: AdminAPI) async -> MockResponse {
        do {
            return try await Self.deadline(options.timeout * 3) { try await self.answer(request, api: api) }
        } catch {
            let reason = Self.describe(error)
            status.withLock { $0.lastError = reason }
            return Problem.stateStoreUnavailable(reason, retryAfter: max(1, Int(options.timeout.rounded(.up)))).response()
        }
    }

    /// By what the call reaches (`AdminCall.reach`): the list of sessions
    /// from the rows; the journal after a barrier; one session in a
    /// transaction on its locked row, with a barrier after a change to its
    /// overrides; every session's rows at once.
    private func answer(_ request: RecordedRequest, api: AdminAPI) async throws -> MockResponse {
        guard let call = AdminCall.of(request) else { return api.respond(to: request) }
        if call.path == "/health" { return health(api.respond(to: request)) }
        switch call.reach {
        case .server:
            return api.respond(to: request)
        case .sessionList:
            return try await sessions()
        case .journal where call.changes:
            try await barrier()
            try await client.query("DELETE FROM doppel_journal WHERE namespace = \(options.namespace)", logger: logger)
            return api.respond(to: request)
        case .journal:
            try await barrier()
            let journal = try await loadJournal()
            return api.rebased(on: MockEngine(stages: engine, sessions: blankStore(), journal: journal)).respond(to: request)
        case .sessionOrEvery where api.namesNoSession(request):
            try await client.query("DELETE FROM doppel_sessions WHERE namespace = \(options.namespace)", logger: logger)
            try await barrier()
            return api.respond(to: request)
        case .session, .sessionOrEvery:
            // A body or session id the call refuses is refused by the API itself, before any state is read.
            guard let id = api.namedSession(request) else { return api.respond(to: request) }
            let response = try await client.withTransaction(logger: logger) { connection in
                let store = self.blankStore()
                if let data = try await self.lockedSession(id, on: connection) { store.adopt(id, data: data) }
                let response = api.rebased(on: MockEngine(stages: self.engine, sessions: store, journal: Journal(capacity: 1))).respond(to: request)
                if let session = store.existing(id) {
                    try await self.write(session, on: connection)
                } else {
                    try await connection.query(
                        "DELETE FROM doppel_sessions WHERE namespace = \(self.options.namespace) AND id = \(id)", logger: self.logger)
                }
                return response
            }
            // A forced answer is an override too: every replica must know the session has one.
            if call.changesOverrides { try await barrier() }
            return response
        }
    }

    /// A store for one admin call, with the served engine's settings and `--scenario`.
    func blankStore() -> SessionStore {
        let sessions = engine.sessions
        let store = SessionStore(
            initial: engine.contract.state.initial, limit: sessions.limit, idleLimit: nil,
            stateLimit: sessions.budget.limit, clock: { [engine] in engine.realNow })
        store.defaultScenario = defaultScenario
        return store
    }

    /// `GET /sessions` from the rows: ids, scenarios and evictions of every replica.
    private func sessions() async throws -> MockResponse {
        let namespace = options.namespace
        var items: [JSON] = []
        for try await (id, scenario) in try await client.query(
            """
            SELECT id, scenario FROM doppel_sessions WHERE namespace = \(namespace) AND data IS NOT NULL ORDER BY id
            """, logger: logger
        ).decode((String, String?).self) {
            items.append(.object(JSONObject([("id", .string(id)), ("scenario", scenario.map(JSON.string) ?? .null)])))
        }
        var evicted = JSONObject([("for_room", .int(0)), ("idle", .int(0)), ("for_state", .int(0))])
        for try await (room, idle, state) in try await client.query(
            """
            SELECT evicted_room, evicted_idle, evicted_state FROM doppel_namespaces WHERE namespace = \(namespace)
            """, logger: logger
        ).decode((Int, Int, Int).self) {
            evicted = JSONObject([("for_room", .int(room)), ("idle", .int(idle)), ("for_state", .int(state))])
        }
        let sessions = engine.sessions
        return AdminAPI.json(
            200,
            .object(
                JSONObject([
                    ("sessions", .array(items)), ("limit", .int(sessions.limit)),
                    ("idle_limit_seconds", sessions.idleLimit.map { .double($0) } ?? .null), ("evicted", .object(evicted)),
                ])))
    }

    /// The newest journal entries of every replica, as an in-memory journal,
    /// in the order their answers were completed (replicas write theirs in
    /// batches, so the rows' own order is the order they were written).
    func loadJournal() async throws -> Journal {
        let journal = Journal(capacity: engine.journal.capacity)
        let rows = try await client.query(
            """
            SELECT seq, time, session, method, path, query, status, endpoint, response, duration_us, proxied, reason, changes FROM (
                SELECT * FROM doppel_journal WHERE namespace = \(options.namespace) ORDER BY seq DESC LIMIT \(engine.journal.capacity)) AS newest
            ORDER BY completed, seq
            """, logger: logger)
        for try await (seq, time, session, method, path, query, status, endpoint, response, duration, proxied, reason, changes) in rows.decode(
            (Int, Double, String, String, String, String?, Int, String?, String?, Int, Bool, String?, [String]).self)
        {
            journal.record(
                time: time, session: session, method: method, path: path, query: query, status: status, endpointID: endpoint,
                responseName: response, durationMicros: duration, proxied: proxied, sequence: seq, reason: reason.map { Reason($0) }, changes: changes
            )
        }
        return journal
    }

    /// The API's health, with the store's: 503 while this replica cannot reach it.
    private func health(_ response: MockResponse) -> MockResponse {
        guard var object = (try? JSONReader.parse(response.body))?.objectValue else { return response }
        let (state, buffered) = (status.withLock { $0 }, buffer.withLock { ($0.rows.count, $0.dropped) })
        let reachable = state.lastPoll.map { SessionStore.uptime() - $0 < Self.trustedFor * 2 } ?? false
        object["status"] = .string(reachable ? "ok" : "state-store-unavailable")
        // Sessions and evictions are the store's, listed by GET /__doppel/sessions.
        object["sessions"] = nil
        object["sessions_evicted"] = nil
        object["state_store"] = .object(
            JSONObject([
                ("kind", "postgres"), ("url", .string(Self.redacted(options.url))), ("namespace", .string(options.namespace)),
                ("replica", .string(replica)), ("reachable", .bool(reachable)), ("last_error", state.lastError.map(JSON.string) ?? .null),
                ("requests_refused", .int(state.failedRequests)), ("journal_buffered", .int(buffered.0)), ("journal_dropped", .int(buffered.1)),
            ]))
        return AdminAPI.json(reachable ? 200 : 503, .object(object))
    }
}
