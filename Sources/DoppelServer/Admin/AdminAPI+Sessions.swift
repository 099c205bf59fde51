import DoppelCore

extension AdminAPI {
    func sessions() -> MockResponse {
        let items = engine.sessions.ids.map { id in
            JSON.object(JSONObject([("id", .string(id)), ("scenario", engine.sessions.existing(id)?.scenarioName.map { .string($0) } ?? .null)]))
        }
        return json(
            200,
            .object(
                JSONObject([
                    ("sessions", .array(items)), ("limit", .int(engine.sessions.limit)),
                    ("idle_limit_seconds", engine.sessions.idleLimit.map { .double($0) } ?? .null), ("evicted", evictionsJSON()),
                ])))
    }

    func state(_ request: RecordedRequest) -> MockResponse {
        let id: String
        switch sessionID(request) {
        case .success(let found): id = found
        case .failure(let problem): return problem.response()
        }
        let session = engine.sessions.existing(id)
        let state = session?.snapshot ?? engine.sessions.initial
        return json(
            200,
            .object(
                JSONObject([
                    ("session", .string(id)), ("exists", .bool(session != nil)),
                    ("scenario", session?.scenarioName.map { .string($0) } ?? .null), ("state", .object(state)),
                ])))
    }

    /// Replaces a session's whole state: `{"state": {...}}`, every name the contract declares.
    func replaceState(_ request: RecordedRequest) -> MockResponse {
        let body: JSONObject
        let id: String
        switch bodyAndSession(request, example: #"{"state": {"stories_used": 4}}"#) {
        case .success(let parsed): (body, id) = parsed
        case .failure(let problem): return problem.response()
        }
        guard case .object(let replacement)? = body["state"] else {
            return Problem.invalidState(["the body needs \"state\": an object of the contract's state names"]).response()
        }
        let declaration = engine.contract.state
        var problems: [String] = []
        for name in replacement.keys where declaration.kinds[name] == nil {
            problems.append("the contract's state has no '\(name)'\(Suggestion.hint(for: name, in: declaration.kinds.keys))")
        }
        for (name, kind) in declaration.kinds.sorted(by: { $0.key < $1.key }) {
            guard let value = replacement[name] else {
                problems.append("'\(name)' is missing; a replacement gives every name")
                continue
            }
            if kind == .counter, value.intValue == nil || value.typeName != "integer" { problems.append("counter '\(name)' must be an integer") }
            if kind == .collection, value.objectValue == nil { problems.append("collection '\(name)' must be an object of records by key") }
        }
        guard problems.isEmpty else { return Problem.invalidState(problems).response() }
        let session = engine.sessions.session(id)
        var ordered = JSONObject()
        for name in declaration.initial.keys { ordered[name] = replacement[name] }
        session.replace(with: ordered)
        return state(request)
    }

    func reset(_ request: RecordedRequest) -> MockResponse {
        let body: JSONObject
        switch bodyObject(request, example: #"{"session": "s1"}"#) {
        case .success(let object): body = object
        case .failure(let problem): return problem.response()
        }
        guard parameter("session", of: request) != nil || body["session"] != nil else {
            engine.sessions.resetAll()
            return json(200, .object(JSONObject([("reset", "all")])))
        }
        switch sessionID(request, body: body) {
        case .success(let id):
            let existed = engine.sessions.reset(id)
            return json(200, .object(JSONObject([("reset", .string(id)), ("existed", .bool(existed))])))
        case .failure(let problem):
            return problem.response()
        }
    }

    /// Starts a session's sequences over: `?endpoint=ID` for one endpoint's,
    /// else all of them; the session's state and clock are kept.
    func resetSequences(_ request: RecordedRequest) -> MockResponse {
        let id: String
        switch sessionID(request) {
        case .success(let found): id = found
        case .failure(let problem): return problem.response()
        }
        let endpoint = parameter("endpoint", of: request)
        if let endpoint, endpoint != "fallbacks", engine.contract.endpoint(id: endpoint) == nil {
            let ids = engine.contract.endpoints.map(\.id)
            return Problem.invalidVerification(["the contract has no endpoint '\(endpoint)'\(Suggestion.hint(for: endpoint, in: ids))"]).response()
        }
        let dropped = engine.sessions.existing(id)?.resetSequences(of: endpoint) ?? 0
        return json(
            200,
            .object(
                JSONObject([
                    ("session", .string(id)), ("endpoint", endpoint.map { .string($0) } ?? .null), ("reset", .int(dropped)),
                ])))
    }

    /// Reads or changes one session's virtual clock: `advance`, `set`, `freeze`, `reset`.
    func clock(_ request: RecordedRequest) -> MockResponse {
        let body: JSONObject
        let id: String
        switch bodyAndSession(request, example: #"{"advance": "31d"}"#) {
        case .success(let parsed): (body, id) = parsed
        case .failure(let problem): return problem.response()
        }
        let session = engine.sessions.session(id)
        let real = engine.realNow
        if request.method == "POST" {
            switch ClockChange.parse(body, allowing: ["session"]) {
            case .success(let change): _ = session.adjustClock { change.apply(to: &$0, real: real) }
            case .failure(let error): return Problem.invalidClockChange(error.message).response()
            }
        }
        let clock = session.clock
        return json(
            200,
            .object(
                JSONObject([
                    ("session", .string(id)), ("now", .string(UTCCalendar.format(epoch: clock.now(real: real)))),
                    ("frozen", .bool(clock.frozenAt != nil)), ("offset_seconds", .double((clock.now(real: real) - real).rounded())),
                ])))
    }
}
