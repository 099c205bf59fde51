import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import DoppelRunner
import Foundation

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run scenarios' steps and check every response.",
        discussion: """
            By default each scenario runs against an in-process server for its contract, in a session of its own, \
            starting from its given state and overrides. With --target the steps go to that URL instead; a Doppel \
            server there gets the given state through its admin API, a real provider cannot (the output says so). \
            Prints a line per step and ends with 'N passed, N failed'; exits 1 when any step fails.
            """
    )

    @Argument(help: "Scenario files, or folders to search for them.")
    var scenarios: [String]

    @Option(help: "Send the steps to this base URL instead of an in-process server.")
    var target: String?

    @Option(help: "Write a JUnit XML report to this file.")
    var junit: String?

    @Option(name: .customLong("admin-token"), help: "The admin token of a --target Doppel server that requires one.")
    var adminToken: String?

    @Option(
        name: .customLong("session-prefix"),
        help:
            "Run the n-th scenario in session PREFIXn (default: doppel-run- and 8 random hex digits, new each run, so runs sharing a server never share sessions)."
    )
    var sessionPrefix: String?

    func validate() throws {
        if scenarios.isEmpty { throw ValidationError("name at least one scenario file or folder") }
        if let sessionPrefix, !ScenarioSuite.isValid(sessionPrefix: sessionPrefix) {
            throw ValidationError("--session-prefix must be at most 100 letters, digits or . _ : - (a session id is at most 128)")
        }
        if let target {
            guard let url = URL(string: target), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
                throw ValidationError("--target must be an http(s) URL like http://127.0.0.1:8000")
            }
        }
    }

    func run() async throws {
        let files = ScenarioSuite.files(scenarios)
        guard !files.isEmpty else {
            FileHandle.standardError.write(Data("no scenario files found in \(scenarios.joined(separator: ", "))\n".utf8))
            throw ExitCode(1)
        }
        var loaded: [(label: String, scenario: Scenario)] = []
        var problems: [Diagnostic] = []
        let here = FileManager.default.currentDirectoryPath + "/"
        for file in files {
            let kind = ScenarioLoader.kind(of: file)
            if kind == .contract || kind == .openAPI {
                problems.append(
                    Diagnostic(
                        at: SourceLocation(file: file, line: 1, column: 1),
                        "\(file) is \(kind == .contract ? "a contract" : "an OpenAPI document"), not a scenario: serve it with `doppel serve \(file)`; `doppel run` takes scenario files, which name their contract under `contract:`"
                    ))
                continue
            }
            do {
                let label = file.hasPrefix(here) ? String(file.dropFirst(here.count)) : file
                loaded.append(
                    (
                        label,
                        try ScenarioLoader.load(
                            file: file, loadContract: { (file: String) throws(ContractError) in try ContractDocument.load(file: file) })
                    ))
            } catch {
                problems += error.diagnostics
            }
        }
        if !problems.isEmpty {
            printDiagnostics(problems)
            throw ExitCode(1)
        }
        let targetURL = target.flatMap(URL.init(string:))
        if let targetURL { print("Running \(loaded.count) scenario\(loaded.count == 1 ? "" : "s") against \(targetURL.absoluteString)") }
        let results = try await ScenarioSuite.run(
            loaded, target: targetURL, adminToken: adminToken,
            sessionPrefix: sessionPrefix ?? ScenarioSuite.uniqueSessionPrefix()
        ) { label, result in
            for line in ScenarioReport.lines(for: result, label: label) { print(line) }
        }
        if let junit {
            try ScenarioReport.junit(results).write(toFile: junit, atomically: true, encoding: .utf8)
        }
        print(ScenarioReport.summary(results.map(\.result)))
        if results.contains(where: { !$0.result.passed }) { throw ExitCode(1) }
    }
}
