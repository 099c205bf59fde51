import DoppelCore
import Foundation

extension AdminAPI {
    func scenarios() -> MockResponse {
        let items = catalog.withLock { catalog in
            catalog.names.map { name in
                JSON.object(
                    JSONObject([
                        ("name", .string(name)), ("description", catalog[name]?.description.map { .string($0) } ?? .null),
                        ("steps", .int(catalog[name]?.steps.count ?? 0)),
                    ]))
            }
        }
        return json(200, .object(JSONObject([("scenarios", .array(items))])))
    }

    /// `GET`: the session's scenario; `PUT`: start the session over from a
    /// scenario (`{"name": ...}` from the catalog, or an inline
    /// `{"given": ..., "overrides": ...}`); `DELETE`: start it over without one.
    func scenario(_ request: RecordedRequest) -> MockResponse {
        let body: JSONObject
        let id: String
        switch bodyAndSession(request, example: #"{"name": "tales/monthly-limit"}"#) {
        case .success(let parsed): (body, id) = parsed
        case .failure(let problem): return problem.response()
        }
        switch request.method {
        case "GET":
            return json(
                200,
                .object(
                    JSONObject([("session", .string(id)), ("scenario", engine.sessions.existing(id)?.scenarioName.map { .string($0) } ?? .null)])))
        case "DELETE":
            engine.sessions.start(id, scenario: nil)
            return json(200, .object(JSONObject([("session", .string(id)), ("scenario", .null)])))
        default:
            let chosen: Scenario
            switch resolveScenario(body) {
            case .success(let scenario): chosen = scenario
            case .failure(let problem): return problem.response()
            }
            engine.sessions.start(id, scenario: chosen)
            return json(200, .object(JSONObject([("session", .string(id)), ("scenario", .string(chosen.name))])))
        }
    }

    private func resolveScenario(_ body: JSONObject) -> Result<Scenario, Problem> {
        if let name = body["name"]?.stringValue {
            guard var scenario = catalog.withLock({ $0[name] }) else {
                let names = catalog.withLock { $0.names }
                return .failure(.unknownScenario(name, known: names))
            }
            // Known by the name it was asked for (`tales/monthly-limit`), as the catalogue lists it.
            scenario.name = name
            return .success(scenario)
        }
        guard body["given"] != nil || body["overrides"] != nil else {
            return .failure(.invalidScenario(["the body needs \"name\" of a loaded scenario, or an inline \"given\" and/or \"overrides\""]))
        }
        // An inline scenario is YAML's JSON subset; it applies to the served contract.
        var inline = JSONObject()
        inline["contract"] = .string(engine.contract.file)
        inline["name"] = "inline"
        for key in ["given", "overrides"] { if let value = body[key] { inline[key] = value } }
        do {
            return .success(try ScenarioLoader.inline(JSONWriter.encodeString(.object(inline)), contract: engine.contract))
        } catch {
            return .failure(.invalidScenario(error.diagnostics.map { "\($0.message) (\($0.location.line):\($0.location.column))" }))
        }
    }
}

extension AdminAPI {
    /// `/__doppel/next?session=ID`: answers forced for endpoints' next
    /// calls, without starting the session over (its state, clock and
    /// scenario stay). `POST {"endpoint": "generate-story", "status": 402}`
    /// (or `"response": NAME`, or both) forces one more; `GET` lists those
    /// waiting, oldest first; `DELETE` drops them. Each is used by the
    /// endpoint's next call, before a scenario's override.
    func next(_ request: RecordedRequest) -> MockResponse {
        let body: JSONObject
        let id: String
        switch bodyAndSession(request, example: #"{"endpoint": "generate-story", "status": 402}"#) {
        case .success(let parsed): (body, id) = parsed
        case .failure(let problem): return problem.response()
        }
        func listing(_ forced: [Override]) -> MockResponse {
            json(
                200,
                .object(
                    JSONObject([
                        ("session", .string(id)),
                        (
                            "waiting",
                            .array(
                                forced.map { override in
                                    .object(
                                        JSONObject([
                                            ("endpoint", .string(override.endpointID)),
                                            ("status", override.response.map { .int($0.status) } ?? .null),
                                            ("response", override.response.map { .string($0.name) } ?? .null),
                                        ]))
                                })
                        ),
                    ])))
        }
        switch request.method {
        case "GET":
            return listing(engine.sessions.existing(id)?.current.forced ?? [])
        case "DELETE":
            let session = engine.sessions.existing(id)
            session?.transact { (data: inout SessionData) in data.dropForced() }
            return listing([])
        default:
            break
        }
        var problems: [String] = []
        let known: Set<String> = ["endpoint", "status", "response", "session"]
        for key in body.keys where !known.contains(key) {
            problems.append("unknown key '\(key)'\(Suggestion.hint(for: key, in: known))")
        }
        let endpointID = body["endpoint"]?.stringValue
        let status = body["status"]?.intValue
        let name = body["response"]?.stringValue
        if body["status"] != nil, status == nil { problems.append("'status' must be a number") }
        if body["response"] != nil, name == nil { problems.append("'response' must be a response's name") }
        if status == nil, name == nil { problems.append("give 'status' or 'response' (or both)") }
        guard let endpointID else { return Problem.invalidVerification(problems + ["'endpoint' is required"]).response() }
        guard let endpoint = engine.contract.endpoint(id: endpointID) else {
            let ids = engine.contract.endpoints.map(\.id)
            return Problem.invalidVerification(
                problems + ["the contract has no endpoint '\(endpointID)'\(Suggestion.hint(for: endpointID, in: ids))"]
            ).response()
        }
        guard problems.isEmpty else { return Problem.invalidVerification(problems).response() }
        guard let response = engine.contract.forcibleResponse(endpointID: endpointID, name: name, status: status) else {
            var seen: Set<String> = []
            let documented = engine.contract.documentedResponses(of: endpoint).map { "\($0.status) \($0.name)" }.filter { seen.insert($0).inserted }
            let asked = [status.map { "status \($0)" }, name.map { "response '\($0)'" }].compactMap { $0 }.joined(separator: " and ")
            return Problem.invalidVerification(["endpoint \(endpointID) documents no \(asked); it documents \(documented.joined(separator: ", "))"])
                .response()
        }
        let session = engine.sessions.session(id)
        let forced = session.transact { (data: inout SessionData) -> [Override]? in
            data.force(response, endpointID: endpointID) ? data.forced : nil
        }
        guard let forced else {
            return Problem.invalidVerification([
                "the session holds \(SessionData.maximumForced) forced answers already; DELETE /__doppel/next drops them"
            ]).response()
        }
        return listing(forced)
    }
}
