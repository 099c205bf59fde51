import DoppelCore
import DoppelOpenAPI
import DoppelServer
import Foundation

/// Runs scenarios the way `doppel run` does: in-process (one server per
/// contract, each scenario in its own session) or against a target URL.
public enum ScenarioSuite {
    /// Scenario files named by the arguments: files as they are, folders searched for `.yaml`.
    public static func files(_ arguments: [String]) -> [String] {
        arguments.flatMap { argument -> [String] in
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), isDirectory.boolValue {
                return ScenarioCatalog.yamlFiles(under: URL(fileURLWithPath: argument)).map(\.path)
            }
            return [argument]
        }
    }

    /// A session prefix of its own for each run, `doppel-run-` and eight
    /// random hex digits: two runs against one server (two CI jobs) never
    /// share a session.
    public static func uniqueSessionPrefix() -> String {
        "doppel-run-" + String(UInt32.random(in: .min ... .max), radix: 16).leftPadded(to: 8) + "-"
    }

    /// Whether a session prefix leaves room for the scenario's number within a session id's rules.
    public static func isValid(sessionPrefix: String) -> Bool {
        sessionPrefix.utf8.count <= 100 && SessionStore.isValid(id: sessionPrefix + "1")
    }

    /// Runs loaded scenarios, the n-th in session `sessionPrefix` + n;
    /// `report` is called as each one finishes.
    public static func run(
        _ scenarios: [(label: String, scenario: Scenario)], target: URL?, adminToken: String? = nil,
        sessionPrefix: String = uniqueSessionPrefix(),
        report: (String, ScenarioRunner.ScenarioResult) -> Void
    ) async throws -> [(label: String, result: ScenarioRunner.ScenarioResult)] {
        var results: [(label: String, result: ScenarioRunner.ScenarioResult)] = []
        if let target {
            let runner = ScenarioRunner(baseURL: target, isDoppel: await ScenarioRunner.probe(target, adminToken: adminToken), adminToken: adminToken)
            for (index, item) in scenarios.enumerated() {
                let result = await runner.run(item.scenario, session: sessionPrefix + String(index + 1))
                report(item.label, result)
                results.append((item.label, result))
            }
            return results
        }
        // In-process: one server per contract, scenarios in their own sessions.
        var order: [String] = []
        var byContract: [String: [(Int, String, Scenario)]] = [:]
        for (index, item) in scenarios.enumerated() {
            if byContract[item.scenario.contractFile] == nil { order.append(item.scenario.contractFile) }
            byContract[item.scenario.contractFile, default: []].append((index, item.label, item.scenario))
        }
        var collected: [(Int, String, ScenarioRunner.ScenarioResult)] = []
        for contractFile in order {
            let contract = try ContractDocument.load(file: contractFile)
            let server = try await DoppelTestServer.start(engine: MockEngine(contract: contract))
            let runner = ScenarioRunner(baseURL: server.baseURL, isDoppel: true)
            for (index, label, scenario) in byContract[contractFile]! {
                let result = await runner.run(scenario, session: sessionPrefix + String(index + 1))
                report(label, result)
                collected.append((index, label, result))
            }
            await server.stop()
        }
        results = collected.sorted { $0.0 < $1.0 }.map { ($0.1, $0.2) }
        return results
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
