import DoppelCore

/// The control plane under `/__doppel/`: health, routes, session state and reset.
///
/// Works on `RecordedRequest`/`MockResponse` like the engine, so it is
/// testable without a socket. Admin calls are not journaled.
public struct AdminAPI: Sendable {
    /// The path prefix of every admin call.
    public static let prefix = "/__doppel"

    let engine: MockEngine
    let startedAt: ContinuousClock.Instant

    public init(engine: MockEngine) {
        self.engine = engine
        self.startedAt = .now
    }

    /// Whether a path belongs to the admin API.
    public static func handles(_ path: String) -> Bool {
        path == prefix || path.hasPrefix(prefix + "/")
    }

    public func respond(to request: RecordedRequest) -> MockResponse {
        let route = String(request.path.dropFirst(Self.prefix.count))
        switch (request.method, route) {
        case ("GET", "/health"), ("HEAD", "/health"):
            return health()
        case ("GET", "/routes"):
            return routes()
        case ("GET", "/sessions"):
            return json(200, .object(JSONObject([("sessions", .array(engine.sessions.ids.map { .string($0) }))])))
        case ("GET", "/state"):
            return state(sessionID: parameter("session", of: request) ?? SessionStore.defaultID)
        case ("POST", "/reset"):
            return reset(request)
        case ("GET", "/clock"):
            return clock(request, change: nil)
        case ("POST", "/clock"):
            guard let body = request.body.isEmpty ? JSON.object(JSONObject()) : try? JSONReader.parse(request.body), let change = body.objectValue else {
                return Problem.malformedJSON("expected an object like {\"advance\": \"31d\"}").response()
            }
            return clock(request, change: change)
        default:
            let known = ["GET /__doppel/health", "GET /__doppel/routes", "GET /__doppel/sessions", "GET /__doppel/state", "POST /__doppel/reset",
                         "GET /__doppel/clock", "POST /__doppel/clock"]
            return Problem.unknownAdminCall(method: request.method, path: request.path, known: known).response()
        }
    }

    private func health() -> MockResponse {
        let contract = engine.contract
        let uptime = ContinuousClock.now - startedAt
        return json(200, .object(JSONObject([
            ("status", "ok"), ("contract", .string(contract.info.title)), ("version", .string(contract.info.version)),
            ("endpoints", .int(contract.endpoints.count)), ("sessions", .int(engine.sessions.ids.count)),
            ("uptime_seconds", .int(Int(uptime.components.seconds))),
        ])))
    }

    private func routes() -> MockResponse {
        let items = engine.contract.endpoints.map { endpoint in
            JSON.object(JSONObject([
                ("id", .string(endpoint.id)), ("method", .string(endpoint.method)), ("path", .string(endpoint.path.template)),
                ("auth", endpoint.auth.map { .string($0) } ?? .null), ("summary", endpoint.summary.map { .string($0) } ?? .null),
                ("statuses", .array(Self.statuses(of: endpoint, in: engine.contract).map { .int($0) })),
            ]))
        }
        return json(200, .object(JSONObject([("routes", .array(items))])))
    }

    /// The statuses an endpoint documents, in order, without repeats.
    static func statuses(of endpoint: Endpoint, in contract: Contract) -> [Int] {
        var statuses = endpoint.responses.map(\.status)
        if let auth = endpoint.auth, let scheme = contract.authSchemes[auth] { statuses.append(scheme.failure.status) }
        if let invalid = endpoint.onInvalid { statuses.append(invalid.status) }
        var seen: Set<Int> = []
        return statuses.filter { seen.insert($0).inserted }
    }

    private func state(sessionID: String) -> MockResponse {
        guard SessionStore.isValid(id: sessionID) else { return Problem.invalidSession(sessionID).response() }
        let session = engine.sessions.existing(sessionID)
        let state = session?.snapshot ?? engine.contract.state.initial
        return json(200, .object(JSONObject([("session", .string(sessionID)), ("exists", .bool(session != nil)), ("state", .object(state))])))
    }

    private func reset(_ request: RecordedRequest) -> MockResponse {
        var sessionID = parameter("session", of: request)
        if sessionID == nil, !request.body.isEmpty {
            guard let body = try? JSONReader.parse(request.body), body.objectValue != nil else {
                return Problem.malformedJSON("expected an object like {\"session\": \"s1\"}").response()
            }
            sessionID = body["session"]?.stringValue
        }
        guard let sessionID else {
            engine.sessions.resetAll()
            return json(200, .object(JSONObject([("reset", "all")])))
        }
        guard SessionStore.isValid(id: sessionID) else { return Problem.invalidSession(sessionID).response() }
        let existed = engine.sessions.reset(sessionID)
        return json(200, .object(JSONObject([("reset", .string(sessionID)), ("existed", .bool(existed))])))
    }

    /// Reads or changes one session's virtual clock: `advance`, `set`, `freeze`, `reset`.
    private func clock(_ request: RecordedRequest, change: JSONObject?) -> MockResponse {
        let sessionID = parameter("session", of: request) ?? change?["session"]?.stringValue ?? SessionStore.defaultID
        guard SessionStore.isValid(id: sessionID) else { return Problem.invalidSession(sessionID).response() }
        guard let session = engine.sessions.session(sessionID) else { return Problem.tooManySessions(limit: engine.sessions.limit).response() }
        let real = engine.realNow
        if let change {
            let known: Set<String> = ["session", "advance", "set", "freeze", "reset"]
            if let unknown = change.keys.first(where: { !known.contains($0) }) {
                return Problem.invalidClockChange("unknown key '\(unknown)'\(Suggestion.hint(for: unknown, in: known)); use advance, set, freeze or reset").response()
            }
            var advance: Duration?
            if let value = change["advance"] {
                guard let text = value.stringValue, let parsed = Duration.parse(text) else {
                    return Problem.invalidClockChange("'advance' must be a duration like 60s, 31d or 1mo").response()
                }
                advance = parsed
            }
            var instant: Double?
            if let value = change["set"] {
                guard let text = value.stringValue, let parsed = UTCCalendar.parse(text) else {
                    return Problem.invalidClockChange("'set' must be an ISO 8601 date like 2025-01-01T00:00:00Z").response()
                }
                instant = parsed
            }
            if let value = change["freeze"], case .bool = value {} else if change["freeze"] != nil {
                return Problem.invalidClockChange("'freeze' must be true or false").response()
            }
            _ = session.adjustClock { clock in
                if change["reset"] == .bool(true) { clock = SessionClock() }
                if let instant { clock.set(instant, real: real) }
                if let advance { clock.advance(by: advance, real: real) }
                if case .bool(let frozen)? = change["freeze"] { clock.freeze(frozen, real: real) }
            }
        }
        let clock = session.adjustClock { _ in }
        return json(200, .object(JSONObject([
            ("session", .string(sessionID)), ("now", .string(UTCCalendar.format(epoch: clock.now(real: real)))),
            ("frozen", .bool(clock.frozenAt != nil)), ("offset_seconds", .double((clock.now(real: real) - real).rounded())),
        ])))
    }

    private func parameter(_ name: String, of request: RecordedRequest) -> String? {
        request.queryItems.last { $0.0 == name }?.1
    }

    private func json(_ status: Int, _ value: JSON) -> MockResponse {
        MockResponse(status: status, headers: [(name: "Content-Type", value: "application/json")], body: JSONWriter.encode(value))
    }
}
