import DoppelCore
import Foundation

/// Turns scenario results into the lines `doppel run` prints and into JUnit XML.
public enum ScenarioReport {
    /// Lines for one scenario: a heading, a line per step, and what differed.
    public static func lines(for result: ScenarioRunner.ScenarioResult, label: String) -> [String] {
        var lines = ["\(label)\(result.scenario.description.map { " — \($0.trimmingCharacters(in: .whitespacesAndNewlines))" } ?? "")"]
        for note in result.notes { lines.append("  note: \(note)") }
        for (index, step) in result.steps.enumerated() {
            let mark =
                switch step.outcome {
                case .passed: "ok  "
                case .failed: "FAIL"
                case .skipped: "skip"
                }
            let title = step.summary.hasPrefix(step.name) ? step.summary : "\(step.name): \(step.summary)"
            lines.append("  \(mark) \(index + 1). \(title)")
            for detail in step.details { lines.append("         \(detail)") }
        }
        return lines
    }

    /// `N passed, N failed` (and `, N skipped` when any were), counting steps.
    public static func summary(_ results: [ScenarioRunner.ScenarioResult]) -> String {
        let steps = results.flatMap(\.steps)
        let passed = steps.filter { $0.outcome == .passed }.count
        let failed = steps.filter { $0.outcome == .failed }.count
        let skipped = steps.filter { $0.outcome == .skipped }.count
        return "\(passed) passed, \(failed) failed" + (skipped > 0 ? ", \(skipped) skipped" : "")
    }

    /// JUnit XML: a test suite per scenario, a test case per step.
    public static func junit(_ results: [(label: String, result: ScenarioRunner.ScenarioResult)]) -> String {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let all = results.flatMap(\.result.steps)
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        xml +=
            "<testsuites name=\"doppel run\" tests=\"\(all.count)\" failures=\"\(all.filter { $0.outcome == .failed }.count)\" skipped=\"\(all.filter { $0.outcome == .skipped }.count)\">\n"
        for (label, result) in results {
            let steps = result.steps
            let time = steps.reduce(0) { $0 + $1.seconds }
            xml +=
                "  <testsuite name=\"\(escape(label))\" tests=\"\(steps.count)\" failures=\"\(steps.filter { $0.outcome == .failed }.count)\" skipped=\"\(steps.filter { $0.outcome == .skipped }.count)\" time=\"\(String(format: "%.3f", time))\">\n"
            for (index, step) in steps.enumerated() {
                xml +=
                    "    <testcase classname=\"\(escape(label))\" name=\"\(escape("\(index + 1). \(step.name)"))\" time=\"\(String(format: "%.3f", step.seconds))\""
                switch step.outcome {
                case .passed:
                    xml += "/>\n"
                case .failed:
                    xml +=
                        ">\n      <failure message=\"\(escape(step.details.first ?? step.summary))\">\(escape(([step.summary] + step.details).joined(separator: "\n")))</failure>\n    </testcase>\n"
                case .skipped:
                    xml += ">\n      <skipped message=\"\(escape(step.details.first ?? ""))\"/>\n    </testcase>\n"
                }
            }
            xml += "  </testsuite>\n"
        }
        return xml + "</testsuites>\n"
    }
}
