import DoppelCore

/// The problems of a scenario's text against `contract`, each as `line:column: message`; none when it loads.
package func scenarioProblems(_ text: String, contract: Contract) -> [String] {
    do {
        _ = try ScenarioLoader.load(text: text, file: "s.yaml", contract: contract)
        return []
    } catch {
        return error.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
    }
}
