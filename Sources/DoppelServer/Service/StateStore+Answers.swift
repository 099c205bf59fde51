import DoppelCore

/// What requests and admin calls do with a store's verbs, written once for
/// every store: a request is decided in its session's transaction by the
/// engine's one `decide(_:refusing:in:)`, at once in memory and once the
/// store answers in a shared one; an admin call is answered by the same
/// `AdminAPI` code, on the engine's own sessions in memory and around the
/// rows a shared store reads.
extension StateStore {
    /// Decides `request` in its session, or (a shared store out of reach)
    /// a 503 `state-store-unavailable` within `timeout`. A session id no
    /// store may hold is refused without touching the store (it may be any
    /// size: it never becomes a row).
    func decide(_ request: RecordedRequest, refusal: Problem?, engine: MockEngine) -> StoreAnswer<Decision> {
        let id = request.sessionID
        guard SessionStore.isValid(id: id) else { return .now(engine.decide(request, refusing: refusal, in: nil)) }
        // A refusal reads its session only for the contract's fallback; other requests as the store says.
        let needed = refusal.map { engine.contract.fallback(for: $0) != nil } ?? needsStore(request, engine: engine)
        guard needed else { return .now(engine.decide(request, refusing: refusal)) }
        switch transact(session: id, engine: engine, { session in engine.decide(request, refusing: refusal, in: session) }) {
        case .now(let decision):
            return .now(decision)
        case .later(let transaction):
            return .later {
                do {
                    return try await Deadline.run(timeout) { try await transaction() }
                } catch {
                    let problem = Problem.stateStoreUnavailable(failed(error, request: true), retryAfter: retryAfter)
                    return engine.decide(request, refusing: problem, in: Session(id: id, data: SessionData(state: engine.contract.state.initial)))
                }
            }
        }
    }

    /// The seconds a client is told to wait after a 503.
    private var retryAfter: Int { max(1, Int(timeout.rounded(.up))) }

    /// An admin call, its token checked: in memory, on the engine's own
    /// sessions and journal, at once. In a shared store every call answers
    /// as it does in memory: a call on one session locks that session, as
    /// a request does; calls on the journal read it after a barrier, so
    /// they count what every replica answered; calls that change overrides
    /// end with a barrier, so no replica answers from an override set older
    /// than the change.
    func admin(_ request: RecordedRequest, api: AdminAPI) -> StoreAnswer<MockResponse> {
        if isLocal { return .now(api.respond(to: request)) }
        return .later {
            do {
                return try await Deadline.run(timeout * 3) { try await self.answer(request, api: api) }
            } catch {
                return Problem.stateStoreUnavailable(failed(error, request: false), retryAfter: retryAfter).response()
            }
        }
    }

    /// By what the call reaches (`AdminCall.reach`).
    private func answer(_ request: RecordedRequest, api: AdminAPI) async throws -> MockResponse {
        guard let call = AdminCall.of(request) else { return api.respond(to: request) }
        if call.path == "/health" { return health(of: api.respond(to: request)) }
        let engine = api.engine
        switch call.reach {
        case .server:
            return api.respond(to: request)
        case .sessionList:
            return sessionList(try await storedSessions(), engine: engine)
        case .journal where call.changes:
            try await barrier()
            try await clearJournal()
            return api.respond(to: request)
        case .journal:
            try await barrier()
            let journal = try await self.journal(capacity: engine.journal.capacity)
            return api.rebased(on: MockEngine(stages: engine, sessions: Self.blankStore(engine), journal: journal)).respond(to: request)
        case .sessionOrEvery where api.namesNoSession(request):
            try await removeAllSessions()
            try await barrier()
            return api.respond(to: request)
        case .session, .sessionOrEvery:
            // A body or session id the call refuses is refused by the API itself, before any state is read.
            guard let id = api.namedSession(request) else { return api.respond(to: request) }
            let response = try await transact(session: id) { stored in
                let store = Self.blankStore(engine)
                if let stored { store.adopt(id, data: stored) }
                let response = api.rebased(on: MockEngine(stages: engine, sessions: store, journal: Journal(capacity: 1))).respond(to: request)
                return (response, store.existing(id)?.current)
            }
            // A forced answer is an override too: every replica must know the session has one.
            if call.changesOverrides { try await barrier() }
            return response
        }
    }

    /// A store for one admin call, with the served engine's settings and `--scenario`.
    private static func blankStore(_ engine: MockEngine) -> SessionStore {
        let sessions = engine.sessions
        let store = SessionStore(
            initial: engine.contract.state.initial, limit: sessions.limit, idleLimit: nil,
            stateLimit: sessions.budget.limit, clock: { [engine] in engine.realNow })
        store.defaultScenario = sessions.defaultScenario
        return store
    }

    /// `GET /sessions` from the store: ids, scenarios and evictions of every replica.
    private func sessionList(_ stored: StoredSessions, engine: MockEngine) -> MockResponse {
        let items = stored.sessions.map { JSON.object(JSONObject([("id", .string($0.id)), ("scenario", $0.scenario.map(JSON.string) ?? .null)])) }
        let evicted = JSONObject([
            ("for_room", .int(stored.evictedForRoom)), ("idle", .int(stored.evictedIdle)), ("for_state", .int(stored.evictedForState)),
        ])
        return AdminAPI.json(
            200,
            .object(
                JSONObject([
                    ("sessions", .array(items)), ("limit", .int(engine.sessions.limit)),
                    ("idle_limit_seconds", engine.sessions.idleLimit.map { .double($0) } ?? .null), ("evicted", .object(evicted)),
                ])))
    }

    /// The API's health, with the store's: 503 while this replica cannot reach it.
    private func health(of response: MockResponse) -> MockResponse {
        guard var object = (try? JSONReader.parse(response.body))?.objectValue else { return response }
        let (reachable, details) = health()
        object["status"] = .string(reachable ? "ok" : "state-store-unavailable")
        // Sessions and evictions are the store's, listed by GET /__doppel/sessions.
        object["sessions"] = nil
        object["sessions_evicted"] = nil
        object["state_store"] = .object(details)
        return AdminAPI.json(reachable ? 200 : 503, .object(object))
    }
}

/// An answer now (memory), or once a shared store has answered: its
/// failure, a 503 within the store's timeout, is an answer too.
enum StoreAnswer<T: Sendable>: Sendable {
    case now(T)
    case later(@Sendable () async -> T)
}
