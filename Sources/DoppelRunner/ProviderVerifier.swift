import DoppelCore
import DoppelProtobuf
import DoppelServer
import Foundation

/// `doppel verify`: checks a running provider (a real backend, or any
/// server) against a contract, with requests built from the contract itself.
///
/// For each endpoint it sends, in order:
/// - a **valid request** (path, query and body from the schemas' examples,
///   defaults and generated values; credentials from `--token`/`--header`,
///   else a token an earlier answer of the run issued, else the contract's
///   own sample credentials; path ids from records the run created, where a
///   POST to the collection answered with an `id`), which must get a
///   documented status whose body and headers the contract describes;
/// - on a protected endpoint, the same **without credentials**;
/// - **invalid input**: a required body member left out, a member of the
///   wrong type, a value out of its range, malformed JSON, a required query
///   parameter left out;
/// - an **unknown id** where a 404 is documented.
///
/// What each check must get comes from the contract as Doppel serves it:
/// the same requests go to an in-process engine for the contract first (the
/// oracle), whose status the target must give, with a body of the same
/// shape. The valid request is the exception: a provider's data is its
/// own, so any documented status passes there. A check the contract cannot
/// make (no valid request can be built, the contract accepts the invalid
/// input) is "not reached", with the reason; so is everything past
/// `maxRequests` or after the target could not be reached.
public struct ProviderVerifier: Sendable {
    /// How `verify` runs.
    public struct Options: Sendable {
        /// Only these endpoints (all when empty).
        public var endpointIDs: [String] = []
        /// A bearer token for protected endpoints.
        public var token: String?
        /// Headers sent with every request (credentials of other schemes).
        public var headers: [(name: String, value: String)] = []
        /// A `Doppel-Session` for servers that isolate by it.
        public var session: String?
        /// Seeds generated values (unknown ids), so a run can be repeated.
        public var seed: UInt64 = 1
        /// The most requests sent to the target.
        public var maxRequests = 1_000
        /// Requests per second at most; nil sends them one after another.
        public var rate: Double?
        /// Seconds one request may take.
        public var timeout: Double = 10
        /// Whether sequences are sent at all (see `ProviderVerifier+Walks`): they
        /// write to the provider (records, counters, purchases) many times over.
        public var sequences = true
        /// Random sequences sent after the planned ones.
        public var walks = 3
        /// Steps in each random sequence.
        public var walkLength = 8
        /// A shell command run before each sequence that prints a fresh bearer token (a new account).
        public var tokenCommand: String?
        /// A shell command run before each sequence that prints headers (`Name: value`, one a line) of a fresh session.
        public var sessionCommand: String?
        /// A scenario whose steps run against the target before each
        /// sequence, in the sequence's session (sign up, sign in): a value it
        /// captures as `token` is the sequence's bearer token, one captured as
        /// `headers` (an object) its headers. It runs on the contract's engine
        /// too, in the same session; its given state and overrides are not imposed.
        public var setup: Scenario?

        /// The defaults: every endpoint, no credentials of one's own, seed 1, 1,000 requests, 10 s each.
        public init() {}
    }

    /// How a check ended.
    public enum Outcome: String, Sendable {
        case passed, failed
        case notReached = "not reached"
    }

    /// One request sent and what it had to get.
    public struct Check: Sendable {
        /// The endpoint checked.
        public let endpointID: String
        /// What was sent: `valid request`, `no credentials`, `malformed JSON`, ...
        public let name: String
        /// Passed, failed, or not reached.
        public var outcome: Outcome
        /// What had to come back, and what did (or why the check was not made).
        public var summary: String
        /// The request as a curl line (secrets redacted) and what differed.
        public var details: [String] = []
        /// The status the target gave.
        public var status: Int?
        /// The statuses the check stood for (for coverage).
        var statuses: [Int] = []
        /// How long the request took.
        public var seconds: Double = 0
        /// When the request was sent to the target; nil when it was not.
        public var sentAt: Date?
    }

    /// One endpoint × documented status, and whether a check reached it.
    public struct Coverage: Sendable {
        /// The endpoint.
        public let endpointID: String
        /// One status it documents.
        public let status: Int
        /// `verified`, `failed` or `not reached`.
        public let state: String
    }

    /// Everything one run found.
    public struct Report: Sendable {
        /// Every check, in the order made.
        public let checks: [Check]
        /// Every endpoint × documented status.
        public let coverage: [Coverage]
        /// Why the run stopped early, if it did.
        public let stopped: String?

        /// How many checks passed.
        public var passed: Int { checks.filter { $0.outcome == .passed }.count }
        /// How many checks failed.
        public var failed: Int { checks.filter { $0.outcome == .failed }.count }
        /// How many checks could not be made.
        public var notReached: Int { checks.filter { $0.outcome == .notReached }.count }
        /// `N passed, N failed` (and `, N not reached` when any were).
        public var summary: String { "\(passed) passed, \(failed) failed" + (notReached > 0 ? ", \(notReached) not reached" : "") }
    }

    let contract: Contract
    let baseURL: URL
    let options: Options

    /// A verifier of the provider at `target` (the contract's paths, base path included, go below it).
    public init(contract: Contract, target: URL, options: Options = Options()) {
        self.contract = contract
        self.baseURL = target
        self.options = options
    }

    /// The endpoint ids the contract does not have, of those asked for.
    public func unknownEndpoints() -> [String] {
        let known = Set(contract.endpoints.map(\.id))
        return options.endpointIDs.filter { !known.contains($0) }
    }

    /// The endpoints of the contract's `graphql:` section (its operation's and its resolvers').
    var graphQLEndpointIDs: Set<String> {
        contract.graphql.map { Set(["graphql", GraphQLDefinition.socketEndpointID] + $0.resolvers) } ?? []
    }

    /// Runs every check, calling `progress` as each ends.
    public func run(progress: @Sendable (Check) -> Void = { _ in }) async -> Report {
        var run = Run(verifier: self)
        for check in await run.graphQLChecks() {
            progress(check)
            run.checks.append(check)
        }
        for endpoint in orderedEndpoints() {
            for check in await run.checks(of: endpoint) {
                progress(check)
                run.checks.append(check)
            }
        }
        for check in await run.walkChecks() {
            progress(check)
            run.checks.append(check)
        }
        return Report(checks: run.checks, coverage: coverage(of: run.checks), stopped: run.stopped)
    }

    /// Creating endpoints first (a POST to a collection, sign-in), then reads
    /// of one record, then changes to it, deletions last.
    func orderedEndpoints() -> [Endpoint] {
        // A GraphQL section's endpoints are the calls its door makes, not requests a provider takes: not verified this way.
        let graphQL = graphQLEndpointIDs
        let chosen = (options.endpointIDs.isEmpty ? contract.endpoints : contract.endpoints.filter { options.endpointIDs.contains($0.id) })
            .filter { !graphQL.contains($0.id) }
        func rank(_ endpoint: Endpoint) -> Int {
            let hasID = !endpoint.path.parameterNames.isEmpty
            switch (hasID, endpoint.method) {
            case (_, "DELETE"): return 4
            case (false, _): return endpoint.auth.isEmpty ? 0 : 1
            case (true, "GET"), (true, "HEAD"): return 2
            default: return 3
            }
        }
        // A collection whose records other endpoints' bodies name (`child_id`
        // for `POST /children`) is created first, so they can name one.
        let named = Set(chosen.flatMap { Run.namedCollections(of: $0, contract: contract) })
        func first(_ endpoint: Endpoint) -> Int {
            guard endpoint.method == "POST", endpoint.path.parameterNames.isEmpty,
                let last = endpoint.path.template.split(separator: "/").last
            else { return 1 }
            return named.contains(last.lowercased()) ? 0 : 1
        }
        return chosen.enumerated().sorted { (rank($0.element), first($0.element), $0.offset) < (rank($1.element), first($1.element), $1.offset) }.map(
            \.element)
    }

    func coverage(of checks: [Check]) -> [Coverage] {
        var rows: [Coverage] = []
        for endpoint in orderedEndpoints() {
            let mine = checks.filter { $0.endpointID == endpoint.id }
            for status in contract.statuses(of: endpoint) where status < 1000 {
                let state: String
                if mine.contains(where: { $0.outcome == .failed && ($0.status == status || $0.statuses.contains(status)) }) {
                    state = "failed"
                } else if mine.contains(where: { $0.outcome == .passed && $0.status == status }) {
                    state = "verified"
                } else {
                    state = "not reached"
                }
                rows.append(Coverage(endpointID: endpoint.id, status: status, state: state))
            }
        }
        return rows
    }

    // MARK: One run

    /// Sample requests by endpoint id (they are the same every time: built from the contract and its seed).
    final class SampleRequests: @unchecked Sendable {
        private let lock = NSLock()
        private var built: [String: RecordedRequest] = [:]

        func request(for endpoint: Endpoint, from engine: MockEngine) -> RecordedRequest {
            lock.lock()
            if let known = built[endpoint.id] {
                lock.unlock()
                return known
            }
            lock.unlock()
            let sample = engine.sampleRequest(for: endpoint)
            lock.lock()
            built[endpoint.id] = sample
            lock.unlock()
            return sample
        }
    }

    /// The state of a run: what the target and the oracle issued (a token,
    /// ids), the requests spent, and whether the target can be reached.
    struct Run {
        let verifier: ProviderVerifier
        let oracle: MockEngine
        /// The contract's engine on a clock 40 days and a minute on: a
        /// value a sequence gets there too is the state's, not the time's.
        let laterOracle: MockEngine
        /// Sequences started, each in a session of its own.
        var walksStarted = 0
        /// Each endpoint's sample request, built once: planning asks for it thousands of times.
        let samples = SampleRequests()
        /// Names this run's sessions apart from earlier runs' on the same target.
        let runID = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        var checks: [Check] = []
        var target = Side()
        var mirror = Side()
        var sent = 0
        var lastSent: Date?
        var stopped: String?
        var random: SplitMix64
        /// The contract's gRPC catalogue (its `.proto` read), when it has a `grpc:` section that reads.
        let grpc: GRPCCatalog?
        /// Each gRPC method's sample message as a request body, by endpoint id (made once).
        let grpcSamples: [String: [UInt8]]

        /// What one side of the run was given.
        struct Side {
            var token: String?
            var ids: [String: String] = [:]
            /// A walk's own start: its `Doppel-Session`, and the token and
            /// headers `--token-command` and `--session-command` gave it.
            var session: String?
            var freshToken: String?
            var freshHeaders: [(name: String, value: String)] = []
        }

        init(verifier: ProviderVerifier) {
            self.verifier = verifier
            self.oracle = MockEngine(contract: verifier.contract, journalCapacity: 100)
            self.laterOracle = MockEngine(
                contract: verifier.contract, journalCapacity: 10, clock: { Date().timeIntervalSince1970 + 40 * 86_400 + 61 })
            self.random = SplitMix64(seed: verifier.options.seed)
            let grpc = verifier.contract.grpc.flatMap { GRPCCatalog.load($0).catalog }
            self.grpc = grpc
            self.grpcSamples = Self.grpcSamples(grpc)
        }

        var contract: Contract { verifier.contract }
        var options: Options { verifier.options }

        mutating func checks(of endpoint: Endpoint) async -> [Check] {
            var checks: [Check] = []
            checks.append(await valid(endpoint))
            if !endpoint.auth.isEmpty { checks.append(await expect(endpoint, "no credentials", credentials: false)) }
            for (name, change) in invalidInputs(of: endpoint) {
                checks.append(await expect(endpoint, name, change: change))
            }
            if let unknown = unknownID(for: endpoint) {
                checks.append(await expect(endpoint, "unknown id", pathValue: unknown, only404: true))
            }
            if let last = endpoint.path.parameterNames.last, let schema = endpoint.pathParameters?.property(last).map(resolved),
                let types = schema.types, types.count == 1, ["integer", "number"].contains(types[0])
            {
                checks.append(await expect(endpoint, "path parameter '\(last)' of the wrong type", change: { _ in }, pathValue: "not-a-number"))
            }
            if let last = endpoint.path.parameterNames.last, let schema = endpoint.pathParameters?.property(last).map(resolved),
                let outside = Self.queryOutOfRange(schema)
            {
                checks.append(await expect(endpoint, "path parameter '\(last)' out of range (\(outside))", change: { _ in }, pathValue: outside))
            }
            let run = self
            let (branches, refusals) = await PlanningQueue.run { (run.branches(of: endpoint), run.refusals(of: endpoint)) }
            for (name, change) in branches {
                let check = await valid(endpoint, name: name, change: change)
                // A value the contract itself refuses in this request is no branch of it.
                if check.outcome == .notReached, check.summary.hasPrefix("Doppel could not build") { continue }
                checks.append(check)
            }
            for (name, change) in refusals {
                checks.append(await expect(endpoint, name, change: change))
            }
            return checks
        }

        // MARK: Checks

        /// The valid request: any documented status, its body and headers as documented.
        mutating func valid(_ endpoint: Endpoint, name: String = "valid request", change: ((inout RecordedRequest) -> Void)? = nil) async -> Check {
            var check = Check(endpointID: endpoint.id, name: name, outcome: .notReached, summary: "")
            var sample = request(for: endpoint, side: mirror, oracle: true)
            change?(&sample)
            let expected = oracleAnswer(sample)
            if isRefusal(expected.status, of: endpoint, asInvalid: true) {
                check.summary =
                    "Doppel could not build a request the contract accepts (it answers \(expected.status)): give the body or its parameters an example"
                check.details = [curl(sample), "  the contract's answer: " + String(decoding: expected.body.prefix(500), as: UTF8.self)]
                return check
            }
            if isRefusal(expected.status, of: endpoint, asInvalid: false) {
                check.summary = "the contract refuses the credentials Doppel can make (\(expected.status)): give --token or --header"
                return check
            }
            remember(expected, of: endpoint, on: &mirror)
            var outgoing = request(for: endpoint, side: target, oracle: false)
            change?(&outgoing)
            guard let answer = await send(outgoing, for: &check) else { return check }
            check.status = answer.status
            // A WebSocket's close codes are not HTTP statuses; verify checks its upgrade.
            let documented = contract.statuses(of: endpoint).filter { $0 < 1000 }
            if isRefusal(answer.status, of: endpoint, asInvalid: false), options.token == nil, options.headers.isEmpty, target.token == nil {
                check.summary = "the target refused the contract's sample credentials (\(answer.status)): give --token or --header"
                check.details = [curl(outgoing)]
                return check
            }
            // A documented refusal of a request the contract takes is still a refusal.
            if isRefusal(answer.status, of: endpoint, asInvalid: true), !isRefusal(expected.status, of: endpoint, asInvalid: true),
                !(200...299).contains(answer.status)
            {
                check.outcome = .failed
                check.statuses = [answer.status]
                check.summary = "the target refused a request the contract accepts: got \(answer.status), the contract answers \(expected.status)"
                check.details = [curl(outgoing)] + bodyLines(answer)
                return check
            }
            // A documented 5xx says the provider may fail, not that this request may fail it: where the contract answers, the provider must too.
            if answer.status >= 500, expected.status < 500 {
                check.outcome = .failed
                check.statuses = [answer.status]
                check.summary = "the target failed (\(answer.status)) where the contract answers \(expected.status)"
                check.details = [curl(outgoing)] + bodyLines(answer)
                return check
            }
            guard documented.contains(answer.status) else {
                check.outcome = .failed
                check.statuses = documented
                check.summary = "expected a documented status (\(documented.map(String.init).joined(separator: ", "))), got \(answer.status)"
                check.details = [curl(outgoing)] + bodyLines(answer)
                return check
            }
            let actual = try? JSONReader.parse([UInt8](answer.body))
            let problems =
                self.problems(answer, actual: actual, status: answer.status, of: endpoint, oracle: expected.status == answer.status ? expected : nil)
                + relations(answer, actual: actual, request: outgoing, of: endpoint, oracle: expected)
            if problems.isEmpty {
                check.outcome = .passed
                check.summary = "\(answer.status) as documented"
                remember(answer, of: endpoint, on: &target)
            } else {
                check.outcome = .failed
                check.summary = "\(answer.status), but not as documented"
                check.details = [curl(outgoing)] + problems.map { "  " + $0 } + bodyLines(answer)
            }
            return check
        }

        /// A request whose answer the oracle decides: the target must give
        /// the same status, with a body of the same shape.
        mutating func expect(
            _ endpoint: Endpoint, _ name: String, credentials: Bool = true, change: ((inout RecordedRequest) -> Void)? = nil,
            pathValue: String? = nil, only404: Bool = false
        ) async -> Check {
            var check = Check(endpointID: endpoint.id, name: name, outcome: .notReached, summary: "")
            var mirrored = request(for: endpoint, side: mirror, oracle: true, credentials: credentials, lastPathValue: pathValue)
            change?(&mirrored)
            let expected = oracleAnswer(mirrored)
            if only404, expected.status != 404 {
                check.summary = "the contract does not answer 404 for an unknown id (it answers \(expected.status))"
                return check
            }
            if change != nil, (200...299).contains(expected.status) {
                check.summary = "the contract accepts this input (\(expected.status))"
                return check
            }
            var outgoing = request(for: endpoint, side: target, oracle: false, credentials: credentials, lastPathValue: pathValue)
            change?(&outgoing)
            guard let answer = await send(outgoing, for: &check) else { return check }
            check.status = answer.status
            check.statuses = [expected.status]
            guard answer.status == expected.status else {
                check.outcome = .failed
                check.summary = "expected \(expected.status)\(describe(expected, of: endpoint)), got \(answer.status)"
                check.details = [curl(outgoing)] + bodyLines(answer)
                return check
            }
            let problems = self.problems(
                answer, actual: try? JSONReader.parse([UInt8](answer.body)), status: answer.status, of: endpoint, oracle: expected)
            if problems.isEmpty {
                check.outcome = .passed
                check.summary = "\(answer.status) as documented"
            } else {
                check.outcome = .failed
                check.summary = "\(answer.status), but its body is not the documented one"
                check.details = [curl(outgoing)] + problems.map { "  " + $0 } + bodyLines(answer)
            }
            return check
        }
    }
}
