import DoppelCore
import Foundation

extension AdminAPI {
    func scenarios() -> MockResponse {
        let items = catalog.withLock { catalog in
            catalog.names.map { name in
                JSON.object(JSONObject([
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
        let body: JSONObject, id: String
        switch bodyAndSession(request, example: #"{"name": "tales/monthly-limit"}"#) {
        case .success(let parsed): (body, id) = parsed
        case .failure(let problem): return problem.response()
        }
        switch request.method {
        case "GET":
            return json(200, .object(JSONObject([("session", .string(id)), ("scenario", engine.sessions.existing(id)?.scenarioName.map { .string($0) } ?? .null)])))
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
            return .success(try Self.inlineScenario(JSONWriter.encodeString(.object(inline)), contract: engine.contract))
        } catch {
            return .failure(.invalidScenario(error.diagnostics.map { "\($0.message) (\($0.location.line):\($0.location.column))" }))
        }
    }

    /// An inline scenario loaded from its JSON text, for `contract`; it
    /// keeps the text, so a shared store can load it again for a session.
    package static func inlineScenario(_ text: String, contract: Contract) throws(ContractError) -> Scenario {
        // Named as if it sat beside the contract, so a `file:` body resolves
        // against the contract's folder, with the contract's own checks
        // (never the server's working directory).
        let file = URL(fileURLWithPath: contract.file).deletingLastPathComponent().appendingPathComponent("inline-scenario").path
        var scenario = try ScenarioLoader.load(text: text, file: file, contract: contract)
        scenario.inlineSource = text
        return scenario
    }
}
