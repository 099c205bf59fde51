import Foundation

/// Turns `doppel verify`'s checks into the lines it prints and into JUnit XML.
public enum VerifyReport {
    /// A line per check, and under a failed one its request and what differed.
    public static func lines(for check: ProviderVerifier.Check) -> [String] {
        let mark =
            switch check.outcome {
            case .passed: "ok  "
            case .failed: "FAIL"
            case .notReached: "skip"
            }
        return ["\(mark) \(check.endpointID): \(check.name): \(check.summary)"] + check.details.map { "       " + $0 }
    }

    /// The documented statuses, by endpoint, that no check reached or that failed.
    public static func coverageLines(_ report: ProviderVerifier.Report) -> [String] {
        let rows = report.coverage
        guard !rows.isEmpty else { return [] }
        let verified = rows.filter { $0.state == "verified" }.count
        var lines = ["Documented statuses verified: \(verified) of \(rows.count)"]
        var byEndpoint: [(String, [String])] = []
        for row in rows where row.state != "verified" {
            let entry = "\(row.status) \(row.state)"
            if let index = byEndpoint.firstIndex(where: { $0.0 == row.endpointID }) {
                byEndpoint[index].1.append(entry)
            } else {
                byEndpoint.append((row.endpointID, [entry]))
            }
        }
        for (endpoint, entries) in byEndpoint { lines.append("  \(endpoint): \(entries.joined(separator: ", "))") }
        if rows.contains(where: { $0.state == "not reached" }) {
            lines.append(
                "  (a status no request or sequence reached, such as one the contract only documents or one after the clock moves, is for a scenario: doppel run --target)"
            )
        }
        return lines
    }

    /// JUnit XML: one test suite, a test case per check.
    public static func junit(_ report: ProviderVerifier.Report) -> String {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let checks = report.checks
        let time = checks.reduce(0) { $0 + $1.seconds }
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        xml += "<testsuites name=\"doppel verify\" tests=\"\(checks.count)\" failures=\"\(report.failed)\" skipped=\"\(report.notReached)\">\n"
        xml +=
            "  <testsuite name=\"doppel verify\" tests=\"\(checks.count)\" failures=\"\(report.failed)\" skipped=\"\(report.notReached)\" time=\"\(String(format: "%.3f", time))\">\n"
        for check in checks {
            xml +=
                "    <testcase classname=\"\(escape(check.endpointID))\" name=\"\(escape(check.name))\" time=\"\(String(format: "%.3f", check.seconds))\""
            switch check.outcome {
            case .passed:
                xml += "/>\n"
            case .failed:
                xml +=
                    ">\n      <failure message=\"\(escape(check.summary))\">\(escape(([check.summary] + check.details).joined(separator: "\n")))</failure>\n    </testcase>\n"
            case .notReached:
                xml += ">\n      <skipped message=\"\(escape(check.summary))\"/>\n    </testcase>\n"
            }
        }
        return xml + "  </testsuite>\n</testsuites>\n"
    }
}
