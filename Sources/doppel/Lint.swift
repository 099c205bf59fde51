import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import DoppelRunner
import Foundation

struct Lint: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check contracts, OpenAPI documents and scenarios; report every problem as path:line:column: error: message.",
        discussion:
            "A file with a top-level 'contract' key is checked as a scenario (against its contract). In a folder, hidden files and folders (.build, .git) and node_modules, Pods, Carthage, DerivedData and vendor are not searched, and YAML files that are neither contracts, scenarios nor OpenAPI documents are skipped. Exits 1 when any file has an error, 0 when all are clean. An OpenAPI document's own mistakes (an example that breaks its schema, a required property no branch defines) are warnings: the document is served as written; --strict counts them as errors."
    )

    @Argument(help: "Contract or scenario files to check, or folders to check every YAML file below.")
    var contracts: [String]

    @Flag(help: "Count warnings as errors: exit 1 when any file has a warning.")
    var strict = false

    func validate() throws {
        if contracts.isEmpty { throw ValidationError("name at least one contract file") }
    }

    func run() throws {
        prepareHeapForOneShotCommand()
        var errors = 0
        let files = ScenarioSuite.files(contracts)
        guard !files.isEmpty else {
            FileHandle.standardError.write(Data("no YAML files found in \(contracts.joined(separator: ", "))\n".utf8))
            throw ExitCode(1)
        }
        let here = FileManager.default.currentDirectoryPath + "/"
        let named = Set(contracts)
        for found in files {
            let file = found.hasPrefix(here) ? String(found.dropFirst(here.count)) : found
            // Found in a folder, a YAML file of another tool's (a CI workflow, a generator's config) is passed over.
            if !named.contains(found), ScenarioLoader.kind(of: found) == .other {
                say("\(file): skipped (not a contract, scenario or OpenAPI document)")
                continue
            }
            let diagnostics =
                ScenarioLoader.isScenario(file: file)
                ? ScenarioLoader.lint(file: file, loadContract: { (file: String) throws(ContractError) in try ContractDocument.load(file: file) })
                : ContractDocument.lint(file: file)
            printDiagnostics(diagnostics)
            let count = diagnostics.filter { $0.severity == .error }.count
            let warnings = diagnostics.count - count
            errors += count + (strict ? warnings : 0)
            let warned = warnings == 0 ? "" : "\(warnings) warning\(warnings == 1 ? "" : "s")"
            if count > 0 {
                say("\(file): \(count) error\(count == 1 ? "" : "s")" + (warned.isEmpty ? "" : ", " + warned))
            } else {
                say(warned.isEmpty ? "\(file): ok" : "\(file): ok, \(warned)\(strict ? " (errors with --strict)" : "")")
            }
        }
        if errors > 0 { throw ExitCode(1) }
    }

    /// A file's summary line, written at once (not through `print`'s
    /// buffer), so it follows that file's problems on standard error in the
    /// order they happened when both streams go to one terminal or pipe.
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
