import DoppelCore
import DoppelServer
import Foundation

/// Walks: sequences of requests sent to the provider and, in lockstep, to the
/// contract's own engine, each from a fresh start. Each answer must have the
/// engine's status, its body the shape of the engine's, and the values the
/// contract derives from state (`StateDerivation`) the engine's values.
///
/// The sequences are planned on the engine alone, which costs the provider
/// nothing: for each endpoint and documented status, the shortest sequence
/// that reaches it (the endpoint repeated, after a record is created, or
/// created and deleted), for each change of state a read that shows it, then
/// `walks` random sequences from the seed. A failing sequence is shrunk (a
/// step left out while the failure stays) and printed as a scenario file.
extension ProviderVerifier.Run {
    /// One planned sequence.
    struct Walk {
        /// What the sequence is for: `generate-story 402`.
        var purpose: String
        var steps: [Endpoint]
    }

    /// The outcome of sending one sequence.
    struct WalkResult {
        /// The step that differed (from 0), nil when none did.
        var failedAt: Int?
        /// What differed.
        var differences: [String] = []
        /// One line per step sent: request, the provider's status, the contract's.
        var transcript: [String] = []
        /// The requests sent to the provider and the contract's answers, for the scenario.
        var sent: [(request: RecordedRequest, expected: MockResponse, endpoint: Endpoint, target: ScenarioRunner.HTTPAnswer?)] = []
        /// Why the sequence could not be sent (the budget, a fresh start that failed).
        var notSent: String?
    }

    /// The most times an endpoint is repeated to reach a status.
    static let maximumRepeats = 12
    /// The most replays spent shrinking one failing sequence.
    static let maximumShrinkReplays = 12

    /// Endpoints a walk may use: plain HTTP, no sockets or proxies.
    var walkable: [Endpoint] {
        verifier.orderedEndpoints().filter { $0.socket == nil && !$0.proxy }
    }

    // MARK: Sending

    /// Plans the walks, sends each, shrinks and reports those that fail.
    mutating func walkChecks() async -> [ProviderVerifier.Check] {
        guard options.sequences else { return [] }
        var checks: [ProviderVerifier.Check] = []
        // Planning is a few thousand answers of the engine: on the planning
        // queue, so that it never holds one of the few threads all tasks
        // share (a server in the same process answers through them).
        let planned = await PlanningQueue.run { [self] in
            var run = self
            return (run.plannedWalks(), run.random)
        }
        random = planned.1
        if let stopped = planned.0.stopped {
            checks.append(ProviderVerifier.Check(endpointID: walkable.first?.id ?? "", name: "sequences", outcome: .notReached, summary: stopped))
        }
        for walk in planned.0.walks {
            let last = walk.steps.last!
            var check = ProviderVerifier.Check(
                endpointID: last.id, name: "sequence: \(walk.purpose) (\(walk.steps.count) step\(walk.steps.count == 1 ? "" : "s"))",
                outcome: .notReached, summary: "")
            var result = await send(walk.steps)
            if let notSent = result.notSent {
                check.summary = notSent
                checks.append(check)
                if stopped != nil { break }
                continue
            }
            check.sentAt = Date()
            guard let failedAt = result.failedAt else {
                check.outcome = .passed
                check.status = result.sent.last?.target?.status
                check.summary = "\(walk.steps.count) steps in lockstep with the contract"
                checks.append(check)
                continue
            }
            // Shrunk: the steps up to the failing one, then each left out while the failure stays.
            var steps = Array(walk.steps[...failedAt])
            var replays = 0
            var index = steps.count - 2
            while index >= 0, replays < Self.maximumShrinkReplays, stopped == nil {
                var shorter = steps
                shorter.remove(at: index)
                replays += 1
                let retried = await send(shorter)
                // The failure stays when the same last step still fails (an
                // earlier step failing instead is another failure).
                if retried.notSent == nil, retried.failedAt == shorter.count - 1 {
                    steps = shorter
                    result = retried
                    index = min(index, steps.count - 1) - 1
                } else {
                    index -= 1
                }
            }
            let failing = result.failedAt ?? failedAt
            check = ProviderVerifier.Check(endpointID: steps[failing].id, name: check.name, outcome: .failed, summary: "")
            check.status = result.sent[failing].target?.status
            check.statuses = [result.sent[failing].expected.status]
            check.sentAt = Date()
            check.summary = "step \(failing + 1) of \(failing + 1) (\(steps[failing].id)): " + (result.differences.first ?? "differs")
            check.details =
                ["  the sequence, from a fresh start:"] + result.transcript.map { "    " + $0 }
                + result.differences.dropFirst().map { "  " + $0 }
                + ["  a scenario that reproduces it (doppel run --target \(verifier.baseURL.absoluteString) FILE):"]
                + scenario(result).split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }
            checks.append(check)
        }
        return checks
    }

    /// Sends one sequence from a fresh start to the provider and the contract.
    mutating func send(_ steps: [Endpoint]) async -> WalkResult {
        var result = WalkResult()
        walksStarted += 1
        // A session no earlier run used: a Doppel target keeps the sessions of runs before.
        let session = "doppel-verify-\(options.seed)-\(runID)-\(walksStarted)"
        var target = Side(session: session)
        var mirror = Side(session: session)
        var shifted = Side(session: session)
        do {
            try await freshStart(&target)
        } catch {
            result.notSent = "not sent: \(error)"
            return result
        }
        if let setup = options.setup {
            // The setup runs on the contract's engines too, so their sessions start where the provider's does.
            do {
                mirror.token = try await setUp(setup, on: oracle, session: session) ?? mirror.token
                shifted.token = try await setUp(setup, on: laterOracle, session: session) ?? shifted.token
            } catch {
                // A setup the contract itself does not pass leaves nothing to compare with: every sequence stops here.
                stopped = "not sent: \(error)"
                result.notSent = stopped
                return result
            }
        }
        for (index, endpoint) in steps.enumerated() {
            guard stopped == nil, sent < options.maxRequests else {
                result.notSent = stopped ?? "not sent: --max-requests (\(options.maxRequests)) reached"
                if stopped == nil { stopped = result.notSent }
                return result
            }
            let mirrored = request(for: endpoint, side: mirror, oracle: true)
            let expected = oracleAnswer(mirrored)
            remember(expected, of: endpoint, on: &mirror)
            // The same sequence on a clock moved on: what differs there is time's, not state's.
            let shiftedRequest = request(for: endpoint, side: shifted, oracle: true)
            let later = laterOracle.respond(to: shiftedRequest)
            remember(later, of: endpoint, on: &shifted)

            let outgoing = request(for: endpoint, side: target, oracle: false)
            var check = ProviderVerifier.Check(endpointID: endpoint.id, name: "", outcome: .notReached, summary: "")
            let answer = await send(outgoing, for: &check)
            result.sent.append((outgoing, expected, endpoint, answer))
            guard let answer else {
                result.failedAt = index
                result.differences = [check.summary]
                result.transcript.append("\(index + 1). \(outgoing.method) \(outgoing.path) → no answer (the contract: \(expected.status))")
                return result
            }
            result.transcript.append(
                "\(index + 1). \(outgoing.method) \(outgoing.path)\(outgoing.query.map { "?" + $0 } ?? "") → \(answer.status) (the contract: \(expected.status))"
            )
            var differences: [String] = []
            if answer.status != expected.status {
                differences.append("expected \(expected.status)\(describe(expected, of: endpoint)), got \(answer.status)")
            } else {
                // The provider's body is read once for every check below.
                let actual = try? JSONReader.parse([UInt8](answer.body))
                differences += problems(answer, actual: actual, status: answer.status, of: endpoint, oracle: expected)
                differences += stateValues(actual, expected: expected, later: later, of: endpoint)
                differences += relations(answer, actual: actual, request: outgoing, of: endpoint, oracle: expected)
            }
            if !differences.isEmpty {
                result.failedAt = index
                result.differences = differences
                return result
            }
            remember(answer, of: endpoint, on: &target)
        }
        return result
    }

    /// The values the contract derives from state, the provider's against the contract's.
    func stateValues(_ actual: JSON?, expected: MockResponse, later: MockResponse, of endpoint: Endpoint) -> [String] {
        guard let response = endpoint.documentedResponses.first(where: { $0.name == expected.responseName }),
            let place = StateDerivation(endpoint: endpoint, response: response).places(of: response),
            let wanted = try? JSONReader.parse(expected.body), let actual
        else { return [] }
        // Only values the same on a later clock: a date, a generated id, are not state's.
        let stable = later.status == expected.status ? (try? JSONReader.parse(later.body)) : nil
        guard let stable else { return [] }
        var differences: [String] = []
        Self.compare(actual, expected: wanted, stable: stable, place: place, at: "", into: &differences)
        return differences
    }

    /// Compares the places derived from state whose value is exact (see `StateDerivation`).
    static func compare(
        _ actual: JSON, expected: JSON, stable: JSON, place: StateDerivation.Place, at pointer: String, into differences: inout [String]
    ) {
        guard differences.count < 20 else { return }
        switch place {
        case .free:
            return
        case .object(let members):
            guard let actualObject = actual.objectValue, let expectedObject = expected.objectValue, let stableObject = stable.objectValue else {
                return
            }
            for (key, member) in members {
                guard let wanted = expectedObject[key], let steady = stableObject[key] else { continue }
                let at = pointer + "/" + SchemaValidator.escape(key)
                guard let got = actualObject[key] else {
                    if case .free = member { continue }
                    differences.append("\(at): missing (the contract: \(JSONWriter.encodeString(wanted)))")
                    continue
                }
                compare(got, expected: wanted, stable: steady, place: member, at: at, into: &differences)
            }
        case .array(let items):
            guard let actualItems = actual.arrayValue, let expectedItems = expected.arrayValue, let stableItems = stable.arrayValue else { return }
            for (index, item) in items.enumerated() where index < actualItems.count && index < expectedItems.count && index < stableItems.count {
                compare(
                    actualItems[index], expected: expectedItems[index], stable: stableItems[index], place: item, at: pointer + "/\(index)",
                    into: &differences)
            }
        case .derived(let plain):
            compareValue(actual, expected: expected, stable: stable, plain: plain, at: pointer, into: &differences)
        }
    }

    /// A value from state: numbers and booleans always, text where the contract reads it as it is.
    static func compareValue(_ actual: JSON, expected: JSON, stable: JSON, plain: Bool, at pointer: String, into differences: inout [String]) {
        guard differences.count < 20, expected == stable else { return }
        switch expected {
        case .object(let object):
            guard let actualObject = actual.objectValue else { return }
            for (key, value) in object.pairs {
                guard let steady = stable.objectValue?[key] else { continue }
                let at = pointer + "/" + SchemaValidator.escape(key)
                guard let got = actualObject[key] else {
                    differences.append("\(at): missing (the contract: \(JSONWriter.encodeString(value)))")
                    continue
                }
                compareValue(got, expected: value, stable: steady, plain: plain, at: at, into: &differences)
            }
        case .array(let items):
            guard let actualItems = actual.arrayValue else { return }
            if actualItems.count != items.count {
                differences.append("\(pointer.isEmpty ? "/" : pointer): \(actualItems.count) items, the contract's state has \(items.count)")
                return
            }
            for (index, item) in items.enumerated() {
                compareValue(actualItems[index], expected: item, stable: item, plain: plain, at: pointer + "/\(index)", into: &differences)
            }
        case .string:
            guard plain, actual != expected else { return }
            differences.append(
                "\(pointer.isEmpty ? "/" : pointer): expected \(JSONWriter.encodeString(expected)) from the session's state, got \(JSONWriter.encodeString(actual))"
            )
        default:
            guard !Self.sameValue(actual, expected) else { return }
            differences.append(
                "\(pointer.isEmpty ? "/" : pointer): expected \(JSONWriter.encodeString(expected)) from the session's state, got \(JSONWriter.encodeString(actual))"
            )
        }
    }

    /// Equal, an integer and the same number written as a decimal included.
    static func sameValue(_ a: JSON, _ b: JSON) -> Bool {
        if a == b { return true }
        if let x = a.numberValue, let y = b.numberValue { return x == y }
        return false
    }

    /// A fresh start on the provider: a new `Doppel-Session` (a Doppel
    /// isolates by it), and what `--token-command` and `--session-command` print.
    func freshStart(_ side: inout Side) async throws(ProviderVerifier.CommandFailure) {
        if let command = options.tokenCommand {
            let token = try await ProviderVerifier.runCommand(command, timeout: options.timeout).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty, !token.contains("\n") else {
                throw .init(description: "--token-command printed \(token.isEmpty ? "nothing" : "more than one line"); it must print one token")
            }
            side.freshToken = token
        }
        if let command = options.sessionCommand {
            for line in try await ProviderVerifier.runCommand(command, timeout: options.timeout).split(whereSeparator: \.isNewline)
            where !line.trimmingCharacters(in: .whitespaces).isEmpty {
                guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                    throw .init(description: "--session-command printed '\(line.prefix(80))'; each line must be a header, 'Name: value'")
                }
                side.freshHeaders.append(
                    (
                        name: String(line[..<colon]).trimmingCharacters(in: .whitespaces),
                        value: String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
                    ))
            }
        }
        if let setup = options.setup {
            var runner = ScenarioRunner(baseURL: verifier.baseURL, isDoppel: false)
            runner.sendsSession = side.session != nil
            let result = await runner.run(setup, session: side.session ?? "default")
            if let failed = result.steps.firstIndex(where: { $0.outcome == .failed }) {
                let step = result.steps[failed]
                throw .init(
                    description:
                        "--setup \(setup.file): step \(failed + 1) (\(step.name)) failed: \(([step.summary] + step.details).joined(separator: "; "))")
            }
            if let token = result.captured["token"] {
                guard let text = token.stringValue, !text.isEmpty else {
                    throw .init(description: "--setup \(setup.file): its capture 'token' is \(JSONWriter.encodeString(token)), not a text")
                }
                side.freshToken = text
            }
            for (name, value) in result.captured["headers"]?.objectValue?.pairs ?? JSONObject().pairs {
                side.freshHeaders.append((name: name, value: value.stringValue ?? JSONWriter.encodeString(value)))
            }
        }
    }

    /// Runs a setup scenario on one of the contract's engines, in `session`;
    /// the token it captured. A step that fails there is named: the setup
    /// does not fit the contract.
    func setUp(_ setup: Scenario, on engine: MockEngine, session: String) async throws(ProviderVerifier.CommandFailure) -> String? {
        var runner = ScenarioRunner(baseURL: verifier.baseURL, isDoppel: false)
        runner.sendsSession = true
        runner.answer = { engine.respond(to: $0) }
        let result = await runner.run(setup, session: session)
        if let failed = result.steps.firstIndex(where: { $0.outcome == .failed }) {
            let step = result.steps[failed]
            throw .init(
                description: "--setup \(setup.file): step \(failed + 1) (\(step.name)) fails against the contract itself: "
                    + ([step.summary] + step.details).joined(separator: "; "))
        }
        return result.captured["token"]?.stringValue
    }
}

extension ProviderVerifier {
    /// A command of the user's that failed or printed what cannot be used.
    public struct CommandFailure: Error, CustomStringConvertible {
        /// What failed, with what the command said on stderr.
        public let description: String
    }

    /// Runs a shell command, its output read (64 KiB at most) within
    /// `timeout` seconds, on a thread of its own: waiting for a process
    /// must not hold one of the few threads every task shares.
    static func runCommand(_ command: String, timeout: Double) async throws(CommandFailure) -> String {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<String, CommandFailure>, Never>) in
            Thread {
                do throws(CommandFailure) {
                    continuation.resume(returning: .success(try runCommandWaiting(command, timeout: timeout)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }.start()
        }
        return try result.get()
    }

    private static func runCommandWaiting(_ command: String, timeout: Double) throws(CommandFailure) -> String {
        let process: ChildProcess
        do { process = try ChildProcess("/bin/sh", ["-c", command]) } catch {
            throw CommandFailure(description: "could not run '\(command)': \(error.description)")
        }
        // Both pipes are read to their end beside the wait, so that neither
        // can fill and stall the command; what is kept of each is bounded.
        let output = ChildProcess.Drained(process.output, keeping: 65_536)
        let errors = ChildProcess.Drained(process.errors, keeping: 2_000)
        let timedOut = Locked(false)
        let watchdog = DispatchWorkItem {
            timedOut.withLock { $0 = true }
            process.terminate()
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        let ending = process.waitUntilExit()
        watchdog.cancel()
        guard !timedOut.withLock({ $0 }) else { throw CommandFailure(description: "'\(command)' did not finish within \(Int(timeout))s") }
        // A child the command left running may hold the pipes open: what was read within a second is what counts.
        let text = String(decoding: output.value(within: 1), as: UTF8.self)
        guard ending == .exit(0) else {
            let said = String(decoding: errors.value(within: 1), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let how = if case .exit(let code) = ending { "exited with \(code)" } else { "was ended by a signal" }
            throw CommandFailure(description: "'\(command)' \(how)" + (said.isEmpty ? "" : ": \(said)"))
        }
        return text
    }
}

/// CPU-bound work (planning on the contract's engine) run on one queue for
/// the whole process, awaited without holding a thread of the shared pool:
/// verify runs in the same process as servers (a test suite's), and several
/// runs planning at once must not take every core from them.
enum PlanningQueue {
    private final class Box<T>: @unchecked Sendable {
        var value: T
        init(_ value: T) { self.value = value }
    }

    private static let queue = DispatchQueue(label: "doppel.verify.planning", qos: .utility)

    static func run<T>(_ work: @escaping () -> T) async -> T {
        let job = Box(work)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Box<T>, Never>) in
            queue.async { continuation.resume(returning: Box(job.value())) }
        }
        return result.value
    }
}
