import DoppelCore
import DoppelRunner
import DoppelServer
import Foundation

extension DoppelTools {
    /// `run_scenario`: a scenario's steps in the session, as `doppel run`
    /// runs them, through the host in this process (its requests journaled
    /// as any client's). The session starts over from the scenario's
    /// `given` and `overrides` first.
    func runScenario(_ input: ToolInput) async throws(ToolInput.Refusal) -> ToolResult {
        let session = try self.session(of: input)
        let scenario: Scenario
        switch (try input.string("name"), try input.string("text")) {
        case (let name?, nil):
            let catalog = host.scenarios
            guard let found = catalog[name] else {
                let loaded =
                    catalog.names.isEmpty ? "none is loaded (serve with --scenarios DIR)" : "loaded: " + catalog.names.joined(separator: ", ")
                throw ToolInput.Refusal(message: "run_scenario: there is no scenario named '\(name)'; \(loaded). Or give the scenario as `text`.")
            }
            scenario = found
        case (nil, .some):
            let text = try Self.document("text", input)
            // Read as a file beside the contract: a step's body file resolves
            // there, with the contract's own checks.
            let contract = host.engine.contract
            let file = URL(fileURLWithPath: contract.file).deletingLastPathComponent().appendingPathComponent("agent-scenario.yaml").path
            do throws(ContractError) {
                scenario = try ScenarioLoader.load(text: text, file: file, contract: contract)
            } catch {
                let listed = error.diagnostics.filter { $0.severity == .error }.map { Self.text($0) }.joined(separator: "\n")
                return Self.failure("run_scenario: the scenario does not load; fix these first:\n" + listed)
            }
        default:
            throw ToolInput.Refusal(message: "run_scenario takes `name` (a loaded scenario) or `text` (a scenario file's YAML), one of them.")
        }
        let host = self.host
        var runner = ScenarioRunner(baseURL: URL(string: "http://127.0.0.1")!, isDoppel: true)
        runner.answer = { request in
            AdminAPI.handles(request.path) ? await host.admin(request) : await host.send(request)
        }
        let result = await runner.run(scenario, session: session)
        let steps = result.steps.map { step in
            JSON.object(
                JSONObject([
                    ("name", .string(step.name)), ("outcome", .string("\(step.outcome)")), ("summary", .string(step.summary)),
                    ("details", .array(step.details.map(JSON.string))),
                ]))
        }
        return Self.result(
            .object(
                JSONObject([
                    ("scenario", .string(scenario.name)), ("session", .string(session)), ("passed", .bool(result.passed)),
                    ("failed", .int(result.steps.filter { $0.outcome == .failed }.count)), ("steps", .array(steps)),
                    ("notes", .array(result.notes.map(JSON.string))),
                ])))
    }
}
