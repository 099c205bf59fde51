import ArgumentParser
import DoppelCore

struct Lint: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check contracts and report every problem as path:line:column: error: message.",
        discussion: "Exits 1 when any contract has an error, 0 when all are clean."
    )

    @Argument(help: "Contract files to check.")
    var contracts: [String]

    func validate() throws {
        if contracts.isEmpty { throw ValidationError("name at least one contract file") }
    }

    func run() throws {
        var errors = 0
        for file in contracts {
            let diagnostics = ContractLoader.lint(file: file)
            printDiagnostics(diagnostics)
            let count = diagnostics.filter { $0.severity == .error }.count
            errors += count
            print(count == 0 ? "\(file): ok" : "\(file): \(count) error\(count == 1 ? "" : "s")")
        }
        if errors > 0 { throw ExitCode(1) }
    }
}
