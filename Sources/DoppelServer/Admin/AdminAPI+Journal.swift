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
            (endpoint == nil || entry.endpointID == endpoint) && (status == nil || entry.status == status)
                && (session == nil || entry.session == session)
        }
        return json(
            200,
            .object(
                JSONObject([
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
        if let endpoint, !engine.contract.isCountable(endpoint) {
            problems.append("the contract has no endpoint '\(endpoint)'\(Suggestion.hint(for: endpoint, in: engine.contract.endpoints.map(\.id)))")
        }
        func number(_ key: String) -> Int? {
            guard let value = body[key] else { return nil }
            guard let n = value.intValue, n >= 0 else {
                problems.append("'\(key)' must be a whole number of at least 0")
                return nil
            }
            return n
        }
        let status = number("status")
        let exactly = number("count")
        let atLeast = number("min")
        let atMost = number("max")
        if exactly != nil, atLeast != nil || atMost != nil { problems.append("give 'count', or 'min' and/or 'max', not both") }
        let session = body["session"]?.stringValue
        let known: Set<String> = ["endpoint", "status", "session", "count", "min", "max"]
        for key in body.keys where !known.contains(key) {
            problems.append("unknown key '\(key)'\(Suggestion.hint(for: key, in: known))")
        }
        guard problems.isEmpty, let endpoint else { return Problem.invalidVerification(problems).response() }

        let expected: Verification.Expectation = exactly.map { .exactly($0) } ?? .between(min: atLeast ?? (atMost == nil ? 1 : 0), max: atMost)
        let verification = Verification(.init(endpoint: endpoint, status: status, session: session), expected: expected, in: engine.journal)
        return json(200, verification.json)
    }

    /// `GET /__doppel/coverage?session=`: each documented endpoint × status, reached or not.
    func coverage(_ request: RecordedRequest) -> MockResponse {
        let session = parameter("session", of: request)
        return json(200, Coverage(of: engine.contract, in: engine.journal, session: session).json)
    }
}
