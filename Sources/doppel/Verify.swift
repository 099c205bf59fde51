import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import DoppelRunner
import Foundation

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a running provider against a contract, with requests built from the contract.",
        discussion: """
            For every endpoint: a valid request (it must get a documented status, with the documented body and \
            headers), the same without credentials on a protected endpoint, invalid input (a required member left \
            out, a wrong type, a value out of range, malformed JSON), and an unknown id where a 404 is documented \
            (each must get the status the contract gives it, with its body). Then sequences from a fresh start, \
            sent to the provider and to the contract's engine in lockstep: each reaches a status state decides \
            (a limit's 402, a deleted record's 404), reads a change back, or walks at random from --seed; each \
            answer must have the contract's status, shape and the values it derives from state. A failing sequence \
            is shrunk and printed as a scenario. Prints a line per check, the documented \
            statuses no check reached, and 'N passed, N failed'; exits 1 when any check fails. See docs/verify.md.
            """
    )

    @Argument(help: "The contract or OpenAPI document.")
    var contract: String

    @Option(help: "The provider's root URL, like https://staging.example.com: the contract's paths, its base path included, are appended.")
    var target: String

    @Option(name: .customLong("endpoint"), help: "Check only this endpoint (repeatable).")
    var endpoints: [String] = []

    @Option(help: "A bearer token for protected endpoints.")
    var token: String?

    @Option(name: .customLong("header"), help: "A header sent with every request, as 'Name: value' (repeatable; credentials of other schemes).")
    var headers: [String] = []

    @Option(help: "Send every request in this Doppel-Session (for a server that isolates sessions by it).")
    var session: String?

    @Option(help: "Seed for generated values, so a run can be repeated.")
    var seed: UInt64 = 1

    @Option(name: .customLong("max-requests"), help: "Send at most this many requests to the target.")
    var maxRequests = 1_000

    @Option(help: "Send at most this many requests a second (a shared staging backend is not hammered).")
    var rate: Double?

    @Option(help: "Seconds one request may take.")
    var timeout: Double = 10

    @Flag(
        inversion: .prefixedNo,
        help: "Send sequences of requests in lockstep with the contract after the single checks (they write to the provider many times over).")
    var sequences = true

    @Option(help: "Random sequences sent after the planned ones, each from a fresh start (0: none).")
    var walks = 3

    @Option(name: .customLong("walk-length"), help: "Steps in each random sequence.")
    var walkLength = 8

    @Option(
        name: .customLong("token-command"),
        help: "A shell command run before each sequence that prints a fresh bearer token (a new account, so its limits start at zero).")
    var tokenCommand: String?

    @Option(
        name: .customLong("session-command"),
        help: "A shell command run before each sequence that prints the headers of a fresh session, one 'Name: value' a line.")
    var sessionCommand: String?

    @Option(
        help: ArgumentHelp(
            "A scenario file whose steps run against the target before each sequence, in its session (sign up, sign in): its capture 'token' is the sequence's bearer token, its capture 'headers' (an object) its headers.",
            valueName: "file"))
    var setup: String?

    @Option(help: "Write a JUnit XML report to this file.")
    var junit: String?

    func validate() throws {
        guard let url = URL(string: target), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw ValidationError("--target must be an http(s) URL like http://127.0.0.1:8000")
        }
        for header in headers where Self.header(header) == nil {
            throw ValidationError("--header '\(header)' is not 'Name: value'")
        }
        if maxRequests < 1 { throw ValidationError("--max-requests must be at least 1") }
        if let rate, !(rate > 0) { throw ValidationError("--rate must be more than 0") }
        if !(timeout > 0) || timeout > 3_600 { throw ValidationError("--timeout must be more than 0 and at most 3600 seconds") }
        if walks < 0 || walks > 1_000 { throw ValidationError("--walks must be 0 to 1000") }
        if walkLength < 2 || walkLength > 100 { throw ValidationError("--walk-length must be 2 to 100") }
        if let session, !SessionStore.isValid(id: session) {
            throw ValidationError("--session must be 1 to 128 of A-Z a-z 0-9 . _ : -")
        }
    }

    static func header(_ text: String) -> (name: String, value: String)? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let name = text[..<colon].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0)) }) else { return nil }
        return (name, text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }

    func run() async throws {
        let loaded: Contract
        do {
            loaded = try ContractDocument.load(file: contract)
        } catch {
            printDiagnostics(error.diagnostics)
            throw ExitCode(1)
        }
        var options = ProviderVerifier.Options()
        options.endpointIDs = endpoints
        options.token = token
        options.headers = headers.compactMap(Self.header)
        options.session = session
        options.seed = seed
        options.maxRequests = maxRequests
        options.rate = rate
        options.timeout = timeout
        options.sequences = sequences
        options.walks = walks
        options.walkLength = walkLength
        options.tokenCommand = tokenCommand
        options.sessionCommand = sessionCommand
        if let setup {
            do {
                options.setup = try ScenarioLoader.load(file: setup, contract: loaded)
            } catch {
                printDiagnostics(error.diagnostics)
                throw ExitCode(1)
            }
        }
        let verifier = ProviderVerifier(contract: loaded, target: URL(string: target)!, options: options)
        let unknown = verifier.unknownEndpoints()
        if !unknown.isEmpty {
            FileHandle.standardError.write(
                Data("doppel verify: \(contract) has no endpoint \(unknown.map { "'\($0)'" }.joined(separator: ", "))\n".utf8))
            throw ExitCode(1)
        }
        print("Verifying \(target) against \(contract)")
        let report = await verifier.run { check in
            for line in VerifyReport.lines(for: check) { print(line) }
        }
        for line in VerifyReport.coverageLines(report) { print(line) }
        if let stopped = report.stopped { print("stopped early: \(stopped)") }
        if let junit { try VerifyReport.junit(report).write(toFile: junit, atomically: true, encoding: .utf8) }
        print(report.summary)
        if report.failed > 0 { throw ExitCode(1) }
    }
}
