import DoppelCore

extension AdminAPI {
    /// `GET /__doppel/journal?endpoint=&status=&session=&limit=`: newest last.
    func journal(_ request: RecordedRequest) -> MockResponse {
        let endpoint = parameter("endpoint", of: request)
        let session = parameter("session", of: request)
        var status: Int?
        if let text = parameter("status", of: request) {
            guard let value = Int(text) else { return Problem.invalidVerification(["'status' must be a number"]).response() }
            status = value
        }
        var limit = 100
        if let text = parameter("limit", of: request) {
            guard let value = Int(text), value > 0 else { return Problem.invalidVerification(["'limit' must be a positive number"]).response() }
            limit = value
        }
        let matching = engine.journal.entries.filter { entry in
            (endpoint == nil || entry.endpointID == endpoint) && (status == nil || entry.status == status) && (session == nil || entry.session == session)
        }
        return json(200, .object(JSONObject([
            ("total", .int(matching.count)), ("capacity", .int(engine.journal.capacity)),
            ("entries", .array(matching.suffix(limit).map(\.json))),
        ])))
    }

    /// `POST /__doppel/verify`: did an endpoint answer with a status as often as expected?
    ///
    /// Body: `endpoint` (required), optional `status` and `session`, and `count`
    /// (exactly) or `min`/`max`; without any, at least once. Counts come from
    /// the journal's tally, which survives the journal's bound.
    func verify(_ request: RecordedRequest) -> MockResponse {
        let body: JSONObject
        switch bodyObject(request, example: #"{"endpoint": "generate-story", "status": 402, "session": "s1", "count": 1}"#) {
        case .success(let object): body = object
        case .failure(let problem): return problem.response()
        }
        var problems: [String] = []
        let endpoint = body["endpoint"]?.stringValue
        if endpoint == nil { problems.append("'endpoint' is required") }
        if let endpoint, engine.contract.endpoint(id: endpoint) == nil {
            problems.append("the contract has no endpoint '\(endpoint)'\(Suggestion.hint(for: endpoint, in: engine.contract.endpoints.map(\.id)))")
        }
        func number(_ key: String) -> Int? {
            guard let value = body[key] else { return nil }
            guard let n = value.intValue, n >= 0 else { problems.append("'\(key)' must be a whole number of at least 0"); return nil }
            return n
        }
        let status = number("status"), exactly = number("count"), atLeast = number("min"), atMost = number("max")
        if exactly != nil, atLeast != nil || atMost != nil { problems.append("give 'count', or 'min' and/or 'max', not both") }
        let session = body["session"]?.stringValue
        let known: Set<String> = ["endpoint", "status", "session", "count", "min", "max"]
        for key in body.keys where !known.contains(key) {
            problems.append("unknown key '\(key)'\(Suggestion.hint(for: key, in: known))")
        }
        guard problems.isEmpty, let endpoint else { return Problem.invalidVerification(problems).response() }

        let tally = engine.journal.tally
        let actual = tally.count { $0.endpointID == endpoint && (status == nil || $0.status == status) && (session == nil || $0.session == session) }
        let minimum = exactly ?? atLeast ?? (atMost == nil ? 1 : 0)
        let maximum = exactly ?? atMost
        let pass = actual >= minimum && (maximum.map { actual <= $0 } ?? true)
        var expected = JSONObject()
        if let exactly { expected["count"] = .int(exactly) } else {
            expected["min"] = .int(minimum)
            if let atMost { expected["max"] = .int(atMost) }
        }
        // Near matches: what the same endpoint answered otherwise, and what
        // other sessions got, so a failure says where the requests went.
        var near: [Journal.Tally.Key: Int] = [:]
        for (key, count) in tally.counts where key.endpointID == endpoint {
            let statusMatches = status == nil || key.status == status
            let sessionMatches = session == nil || key.session == session
            if statusMatches && sessionMatches { continue }
            near[key, default: 0] += count
        }
        let nearMatches = near.sorted { ($0.key.session, $0.key.status) < ($1.key.session, $1.key.status) }.map { key, count in
            JSON.object(JSONObject([("endpoint", .string(endpoint)), ("status", .int(key.status)), ("session", .string(key.session)), ("count", .int(count))]))
        }
        var criteria = JSONObject([("endpoint", .string(endpoint))])
        if let status { criteria["status"] = .int(status) }
        if let session { criteria["session"] = .string(session) }
        return json(200, .object(JSONObject([
            ("pass", .bool(pass)), ("criteria", .object(criteria)), ("expected", .object(expected)), ("actual", .int(actual)),
            ("near_matches", .array(nearMatches)),
        ])))
    }

    /// `GET /__doppel/coverage?session=`: each documented endpoint × status, reached or not.
    func coverage(_ request: RecordedRequest) -> MockResponse {
        let session = parameter("session", of: request)
        let tally = engine.journal.tally
        var reachedCount = 0, total = 0
        var unreached: [JSON] = []
        let endpoints = engine.contract.endpoints.map { endpoint -> JSON in
            let statuses = engine.contract.statuses(of: endpoint).map { status -> JSON in
                let count = tally.count { $0.endpointID == endpoint.id && $0.status == status && (session == nil || $0.session == session) }
                total += 1
                if count > 0 { reachedCount += 1 } else { unreached.append(.string("\(endpoint.id) \(status)")) }
                return .object(JSONObject([("status", .int(status)), ("reached", .bool(count > 0)), ("count", .int(count))]))
            }
            return .object(JSONObject([
                ("id", .string(endpoint.id)), ("request", .string(endpoint.signature)), ("statuses", .array(statuses)),
            ]))
        }
        return json(200, .object(JSONObject([
            ("session", session.map { .string($0) } ?? .null), ("reached", .int(reachedCount)), ("total", .int(total)),
            ("unreached", .array(unreached)), ("endpoints", .array(endpoints)),
        ])))
    }
}
