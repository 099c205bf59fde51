import DoppelCore
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

    /// Runs every check, calling `progress` as each ends.
    public func run(progress: @Sendable (Check) -> Void = { _ in }) async -> Report {
        var run = Run(verifier: self)
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
        let chosen = options.endpointIDs.isEmpty ? contract.endpoints : contract.endpoints.filter { options.endpointIDs.contains($0.id) }
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

        /// ` (unauthorized)`: the name of the response the contract chose, where it has one of its own.
        func describe(_ expected: MockResponse, of endpoint: Endpoint) -> String {
            // A named response says which; `get-item[0]` says nothing more than the status.
            guard let name = expected.responseName, !(name.hasPrefix(endpoint.id + "[") && name.hasSuffix("]")) else { return "" }
            return " (\(name))"
        }

        /// Whether a status is how the contract refuses a request: as invalid
        /// (its `on_invalid`, Doppel's 422 and malformed-body 400), or for
        /// its credentials.
        func isRefusal(_ status: Int, of endpoint: Endpoint, asInvalid: Bool) -> Bool {
            if asInvalid {
                var statuses: Set<Int> = [422]
                if let own = endpoint.onInvalid?.status { statuses.insert(own) }
                if let invalid = contract.fallbacks[.validationFailed]?.status { statuses.insert(invalid) }
                if let malformed = contract.fallbacks[.malformedBody]?.status { statuses.insert(malformed) }
                if endpoint.body != nil { statuses.insert(400) }
                return statuses.contains(status)
            }
            return contract.unauthorizedStatuses(of: endpoint).contains(status)
        }

        /// What differs between an answer and the contract's responses of its
        /// status (and the oracle's own answer, when it gave that status).
        /// `actual` is the answer's body read as JSON (nil when it is not JSON),
        /// read once by the caller for every check of the answer.
        func problems(_ answer: ScenarioRunner.HTTPAnswer, actual: JSON?, status: Int, of endpoint: Endpoint, oracle: MockResponse?) -> [String] {
            let contentType = answer.headers.first { $0.key.lowercased() == "content-type" }?.value
            let candidates = contract.documentedResponses(of: endpoint).filter { $0.status == status }
            var best: [String]?
            for candidate in candidates {
                var found = BodyShape.problems([UInt8](answer.body), contentType: contentType, against: candidate, registry: contract.schemas)
                for (name, _) in candidate.headers where name.lowercased() != "content-type" {
                    if !answer.headers.keys.contains(where: { $0.lowercased() == name.lowercased() }) { found.append("header \(name): missing") }
                }
                // A templated body without a schema (a list from `data`, a record
                // read back) is held to the shape of the contract's own rendering
                // of the same request: its types, members and every item.
                if found.isEmpty, candidate.schema == nil, case .json(let template, _, _) = candidate.body, !template.expressions.isEmpty,
                    let oracle, oracle.responseName == candidate.name, oracle.status == status,
                    let rendered = try? JSONReader.parse(oracle.body), let actual
                {
                    BodyShape.shape(of: actual, against: rendered, at: "", into: &found, rendering: true)
                }
                if found.isEmpty { return [] }
                if best == nil || found.count < best!.count { best = found }
            }
            if let oracle {
                // Doppel's own answer (a problem, a rendered body): the same shape.
                let expectedJSON = try? JSONReader.parse(oracle.body)
                if let expectedJSON, let actual {
                    var found: [String] = []
                    BodyShape.shape(of: actual, against: expectedJSON, at: "", into: &found)
                    if found.isEmpty { return [] }
                    if best == nil || found.count < best!.count { best = found }
                } else if expectedJSON == nil, candidates.isEmpty {
                    return []
                } else if expectedJSON != nil {
                    best = best ?? ["the body is not JSON"]
                }
            }
            return best ?? []
        }

        /// The relations between an answer's own values that its response
        /// states (`converted_amount` from `amount` and the answer's `rate`).
        func relations(
            _ answer: ScenarioRunner.HTTPAnswer, actual: JSON?, request: RecordedRequest, of endpoint: Endpoint, oracle: MockResponse
        ) -> [String] {
            let documented = endpoint.documentedResponses
            guard
                let response = (oracle.status == answer.status ? documented.first { $0.name == oracle.responseName } : nil)
                    ?? documented.first(where: { $0.status == answer.status }),
                let value = actual
            else { return [] }
            return self.oracle.relationProblems(of: response, for: endpoint, request: request, answer: value)
        }

        // MARK: Requests

        /// The endpoint's sample request for one side: its credentials, and
        /// the ids that side's earlier answers gave.
        func request(for endpoint: Endpoint, side: Side, oracle: Bool, credentials: Bool = true, lastPathValue: String? = nil) -> RecordedRequest {
            let sample = samples.request(for: endpoint, from: self.oracle)
            // Path values: the sample's, or an id the run created under a collection.
            var values = endpoint.path.match(EndpointRouter.segments(of: sample.path)) ?? [:]
            let template = endpoint.path.template
            for name in endpoint.path.parameterNames {
                for (collection, id) in side.ids
                where template.hasPrefix(collection + "/{" + name + "}") || template.hasPrefix(collection + "/{" + name + "...}") {
                    values[name] = id
                }
            }
            if let lastPathValue, let last = endpoint.path.parameterNames.last { values[last] = lastPathValue }
            var path = template
            for name in endpoint.path.parameterNames {
                let value = ScenarioRunner.encode(values[name] ?? "1")
                path = path.replacingOccurrences(of: "{\(name)...}", with: value).replacingOccurrences(of: "{\(name)}", with: value)
            }
            var headers = sample.headers.filter { $0.name.lowercased() != "authorization" && $0.name.lowercased() != "doppel-session" }
            var query = sample.query.map { [$0] } ?? []
            if credentials, !endpoint.auth.isEmpty {
                let schemes = endpoint.auth.compactMap { contract.authSchemes[$0] }
                if oracle {
                    if let scheme = schemes.first { add(sampleCredential(for: scheme, token: side.token), to: &headers, query: &query) }
                } else if let token = side.freshToken ?? options.token ?? side.token, schemes.contains(where: { $0.kind == .bearer }) {
                    headers.append((name: "Authorization", value: "Bearer \(token)"))
                } else if !options.headers.contains(where: { isCredential($0.name, in: schemes) }), let scheme = schemes.first {
                    add(sampleCredential(for: scheme, token: side.token), to: &headers, query: &query)
                }
            }
            if !oracle {
                let schemes = endpoint.auth.compactMap { contract.authSchemes[$0] }
                for header in options.headers + side.freshHeaders where credentials || !isCredential(header.name, in: schemes) {
                    headers.removeAll { $0.name.lowercased() == header.name.lowercased() }
                    headers.append(header)
                }
                if let session = side.session ?? options.session, !headers.contains(where: { $0.name.lowercased() == MockEngine.sessionHeader }) {
                    headers.append((name: "Doppel-Session", value: session))
                }
            } else {
                headers.append((name: "Doppel-Session", value: side.session ?? "doppel-verify"))
            }
            // The template has the base path already.
            return RecordedRequest(
                method: sample.method, path: path,
                query: query.isEmpty ? nil : query.joined(separator: "&"), headers: headers,
                body: Self.withCreatedIDs(sample.body, side.ids))
        }

        /// A JSON body whose members name records the run created (`child_id`
        /// for a record POSTed to `/children`) carries those records' ids.
        static func withCreatedIDs(_ body: [UInt8], _ ids: [String: String]) -> [UInt8] {
            guard !ids.isEmpty, case .object(var object)? = try? JSONReader.parse(body) else { return body }
            var changed = false
            for (key, value) in object.pairs where value.stringValue != nil || value.intValue != nil {
                guard let stem = idStem(of: key) else { continue }
                let names: Set = [stem, plural(stem)]
                guard let id = ids.first(where: { names.contains(($0.key.split(separator: "/").last.map(String.init) ?? "").lowercased()) })?.value
                else { continue }
                object[key] = value.intValue != nil ? (Int(id).map(JSON.int) ?? .string(id)) : .string(id)
                changed = true
            }
            return changed ? JSONWriter.encode(.object(object)) : body
        }

        /// The record a member names by its id, lowercased: `child_id` and
        /// `childId` name `child`; any other member names none.
        static func idStem(of key: String) -> String? {
            let stem = key.hasSuffix("_id") ? key.dropLast(3) : key.hasSuffix("Id") ? key.dropLast(2) : ""
            return stem.isEmpty ? nil : stem.lowercased()
        }

        /// The English plural of a resource's name: `child` → `children`, `story` → `stories`.
        static func plural(_ word: String) -> String {
            let irregular = ["child": "children", "person": "people", "man": "men", "woman": "women", "mouse": "mice"]
            if let known = irregular[word.lowercased()] { return known }
            if word.hasSuffix("y"), let before = word.dropLast().last, !"aeiou".contains(before) { return word.dropLast() + "ies" }
            if ["s", "x", "z", "ch", "sh"].contains(where: word.hasSuffix) { return word + "es" }
            return word + "s"
        }

        /// A credential the contract takes: the first it lists, else one of the right shape.
        func sampleCredential(for scheme: AuthScheme, token: String?) -> Credential {
            let listed = scheme.accepted?.sorted().first
            switch scheme.kind {
            case .bearer:
                return .header(
                    "Authorization", "Bearer " + (token ?? listed ?? "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJzYW1wbGUtdXNlciJ9.c2FtcGxl"))
            case .basic:
                return .header("Authorization", "Basic " + Data((listed ?? "user:password").utf8).base64EncodedString())
            case .apiKey(let header, let query, let cookie):
                let key = listed ?? "doppel-verify-key"
                if let header { return .header(header, key) }
                if let query { return .query(query, key) }
                return .header("Cookie", "\(cookie ?? "key")=\(key)")
            }
        }

        enum Credential {
            case header(String, String)
            case query(String, String)
        }

        func add(_ credential: Credential, to headers: inout [(name: String, value: String)], query: inout [String]) {
            switch credential {
            case .header(let name, let value): headers.append((name: name, value: value))
            case .query(let name, let value): query.append(ScenarioRunner.encode(name) + "=" + ScenarioRunner.encode(value))
            }
        }

        /// Whether a header carries one of these schemes' credentials.
        func isCredential(_ name: String, in schemes: [AuthScheme]) -> Bool {
            let lowered = name.lowercased()
            if lowered == "authorization" || lowered == "cookie" { return true }
            return schemes.contains { if case .apiKey(let header?, _, _) = $0.kind { header.lowercased() == lowered } else { false } }
        }

        /// Invalid variants of the valid request, by what makes them invalid.
        func invalidInputs(of endpoint: Endpoint) -> [(String, (inout RecordedRequest) -> Void)] {
            var inputs: [(String, (inout RecordedRequest) -> Void)] = []
            if let spec = endpoint.body, let schema = spec.schema.map(resolved),
                spec.contentTypes.isEmpty || spec.contentTypes.contains(where: MediaTypes.isJSON)
            {
                if let name = schema.required.first {
                    inputs.append(("required body member '\(name)' left out", { request in Self.editBody(&request) { $0[name] = nil } }))
                }
                if let (name, property) = schema.properties.first(where: { wrongValue(for: resolved($0.1)) != nil }),
                    let wrong = wrongValue(for: resolved(property))
                {
                    inputs.append(("body member '\(name)' of the wrong type", { request in Self.editBody(&request) { $0[name] = wrong } }))
                }
                if let (name, property) = schema.properties.first(where: { outOfRange(for: resolved($0.1)) != nil }),
                    let outside = outOfRange(for: resolved(property))
                {
                    inputs.append(("body member '\(name)' out of range", { request in Self.editBody(&request) { $0[name] = outside } }))
                }
                inputs.append(
                    (
                        "malformed JSON",
                        { request in
                            request.body = Array("{\"unfinished\": ".utf8)
                            request.headers.removeAll { $0.name == "content-type" }
                            request.headers.append((name: "content-type", value: "application/json"))
                        }
                    ))
            }
            if let spec = endpoint.body, let itemSchema = spec.itemSchema, let wrong = wrongValue(for: resolved(itemSchema)) {
                inputs.append(
                    (
                        "an item of the wrong type",
                        { request in
                            guard let type = request.header("content-type"), let media = SequentialMedia(type),
                                let items = try? media.read(request.body), !items.isEmpty
                            else { return }
                            let sent = items + [wrong]
                            request.body = sent.enumerated().flatMap {
                                media.write($1, last: $0 == sent.count - 1, limit: Expression.maximumBuild) ?? []
                            }
                        }
                    ))
            }
            if let spec = endpoint.queryString, spec.schema != nil {
                let type = spec.contentTypes.first ?? "application/x-www-form-urlencoded"
                if MediaTypes.isJSON(type) {
                    inputs.append(
                        (
                            "a query string that is not JSON",
                            { request in
                                request = RecordedRequest(
                                    method: request.method, path: request.path, query: "%7Bunfinished", headers: request.headers, body: request.body)
                            }
                        ))
                } else if spec.required {
                    inputs.append(
                        (
                            "the required query string left out",
                            { request in
                                request = RecordedRequest(
                                    method: request.method, path: request.path, query: nil, headers: request.headers, body: request.body)
                            }
                        ))
                }
            }
            if let query = endpoint.query ?? endpoint.queryString?.schema.map(resolved), let name = query.required.first,
                endpoint.queryString.map({ ($0.contentTypes.first ?? "application/x-www-form-urlencoded") == "application/x-www-form-urlencoded" })
                    ?? true
            {
                inputs.append(
                    (
                        "required query parameter '\(name)' left out",
                        { request in
                            let kept = (request.query ?? "").split(separator: "&").filter { !$0.hasPrefix(ScenarioRunner.encode(name) + "=") }
                            request = RecordedRequest(
                                method: request.method, path: request.path, query: kept.isEmpty ? nil : kept.joined(separator: "&"),
                                headers: request.headers, body: request.body)
                        }
                    ))
            }
            if endpoint.queryString == nil, let query = endpoint.query {
                inputs += Self.badValues(query.properties.map { ($0.0, resolved($0.1)) }, called: "query parameter", set: Self.setQuery)
            }
            if let headers = endpoint.headers,
                let name = headers.required.first(where: { !["accept", "content-type", "authorization"].contains($0.lowercased()) })
            {
                inputs.append(("required header '\(name)' left out", { request in request.headers.removeAll { $0.name == name.lowercased() } }))
            }
            if let headers = endpoint.headers {
                // As for the query, never at a credential's header.
                let schemes = endpoint.auth.compactMap { contract.authSchemes[$0] }
                inputs += Self.badValues(
                    headers.properties.map { ($0.0, resolved($0.1)) }
                        .filter { !["accept", "content-type", "content-length"].contains($0.0.lowercased()) && !isCredential($0.0, in: schemes) },
                    called: "header", set: Self.setHeader)
            }
            return inputs
        }

        /// Each kind of bad value once, at the first parameter (of a query
        /// or of headers) that can take it: past its bounds, of the wrong
        /// type, outside its enum.
        static func badValues(
            _ properties: [(String, Schema)], called kind: String,
            set: @escaping @Sendable (inout RecordedRequest, String, String) -> Void
        ) -> [(String, (inout RecordedRequest) -> Void)] {
            var inputs: [(String, (inout RecordedRequest) -> Void)] = []
            if let (name, value) = properties.lazy.compactMap({ name, schema in queryOutOfRange(schema).map { (name, $0) } }).first {
                inputs.append(("\(kind) '\(name)' out of range (\(value))", { set(&$0, name, value) }))
            }
            if let (name, _) = properties.first(where: { _, schema in
                schema.enumValues == nil && (schema.types ?? []).count == 1 && ["integer", "number", "boolean"].contains(schema.types![0])
            }) {
                inputs.append(("\(kind) '\(name)' of the wrong type", { set(&$0, name, "not-a-number") }))
            }
            if let (name, _) = properties.first(where: { _, schema in schema.enumValues?.allSatisfy({ $0.stringValue != nil }) ?? false }) {
                inputs.append(("\(kind) '\(name)' not one of its values", { set(&$0, name, "doppel-verify-not-listed") }))
            }
            return inputs
        }

        /// A query parameter's value just past its bounds, as sent.
        static func queryOutOfRange(_ schema: Schema) -> String? {
            let integer = schema.types == ["integer"]
            func text(_ number: Double) -> String {
                integer && number.rounded() == number && abs(number) < 9e15 ? String(Int(number)) : String(number)
            }
            if let maximum = schema.maximum { return text(integer ? maximum.rounded(.down) + 1 : maximum + 1) }
            if let minimum = schema.minimum { return text(integer ? minimum.rounded(.up) - 1 : minimum - 1) }
            if let maxLength = schema.maxLength, maxLength < 2_000 { return String(repeating: "x", count: maxLength + 1) }
            return nil
        }

        /// The request with one query parameter set to `value` (added, or in place of its values).
        static func setQuery(_ request: inout RecordedRequest, _ name: String, _ value: String) {
            let key = ScenarioRunner.encode(name)
            var pairs = (request.query ?? "").split(separator: "&").map(String.init).filter { $0 != key && !$0.hasPrefix(key + "=") }
            pairs.append(key + "=" + ScenarioRunner.encode(value))
            request = RecordedRequest(
                method: request.method, path: request.path, query: pairs.joined(separator: "&"), headers: request.headers, body: request.body)
        }

        /// The request with one header set to `value` (added, or in place of its values).
        static func setHeader(_ request: inout RecordedRequest, _ name: String, _ value: String) {
            request.headers.removeAll { $0.name.lowercased() == name.lowercased() }
            request.headers.append((name: name.lowercased(), value: value))
        }

        static func editBody(_ request: inout RecordedRequest, _ edit: (inout JSONObject) -> Void) {
            guard case .object(var object)? = try? JSONReader.parse(request.body) else { return }
            edit(&object)
            request.body = JSONWriter.encode(.object(object))
        }

        func resolved(_ schema: Schema) -> Schema {
            var current = schema
            for _ in 0..<16 {
                guard let ref = current.ref, current.types == nil, current.properties.isEmpty, let target = contract.schemas[ref] else { break }
                current = target
            }
            return current
        }

        /// A value of another type than the schema's one type.
        func wrongValue(for schema: Schema) -> JSON? {
            guard let types = schema.types, types.count == 1, !schema.nullable else { return nil }
            switch types[0] {
            case "string": return .int(12345)
            case "integer", "number": return .string("not a number")
            case "boolean": return .string("not a boolean")
            case "array": return .string("not an array")
            case "object": return .string("not an object")
            default: return nil
            }
        }

        /// A value just past the schema's bounds.
        func outOfRange(for schema: Schema) -> JSON? {
            if let minimum = schema.minimum { return .double(minimum - 1) }
            if let maximum = schema.maximum { return .double(maximum + 1) }
            if let maxLength = schema.maxLength, maxLength < 10_000 { return .string(String(repeating: "x", count: maxLength + 1)) }
            if let minLength = schema.minLength, minLength > 0 { return .string("") }
            if let values = schema.enumValues, values.allSatisfy({ $0.stringValue != nil }) { return .string("doppel-verify-not-listed") }
            return nil
        }

        /// A value for the last path parameter no record has, where a 404 is documented.
        mutating func unknownID(for endpoint: Endpoint) -> String? {
            guard let last = endpoint.path.parameterNames.last, contract.statuses(of: endpoint).contains(404) else { return nil }
            let schema = endpoint.pathParameters?.property(last).map(resolved)
            let bits = random.next()
            if schema?.format == "uuid" {
                let hex = String(format: "%016llx%016llx", bits, random.next())
                let h = Array(hex)
                return String(h[0..<8]) + "-" + String(h[8..<12]) + "-4" + String(h[13..<16]) + "-8" + String(h[17..<20]) + "-" + String(h[20..<32])
            }
            if let types = schema?.types, types.contains("integer") || types.contains("number") {
                return String(900_000_000 + Int(bits % 99_999_999))
            }
            return "doppel-verify-unknown-" + String(bits % 0xFFFF_FFFF, radix: 16)
        }

        // MARK: Sending

        func oracleAnswer(_ request: RecordedRequest) -> MockResponse {
            oracle.respond(to: request)
        }

        /// Remembers what an answer issued: a token, the id of a record a POST created.
        func remember(_ response: MockResponse, of endpoint: Endpoint, on side: inout Side) {
            remember(status: response.status, body: response.body, of: endpoint, on: &side)
        }

        func remember(_ answer: ScenarioRunner.HTTPAnswer, of endpoint: Endpoint, on side: inout Side) {
            remember(status: answer.status, body: [UInt8](answer.body), of: endpoint, on: &side)
        }

        func remember(status: Int, body: [UInt8], of endpoint: Endpoint, on side: inout Side) {
            guard (200...299).contains(status), let object = (try? JSONReader.parse(body))?.objectValue else { return }
            let places = [object] + ["data", "session", "result"].compactMap { object[$0]?.objectValue }
            for place in places {
                if let token = ["access_token", "accessToken", "token", "id_token", "idToken"].lazy.compactMap({ place[$0]?.stringValue }).first {
                    side.token = token
                    break
                }
            }
            if endpoint.method == "POST", endpoint.path.parameterNames.isEmpty {
                let id = ["id", "uuid"].lazy.compactMap { key in object[key].flatMap { $0.stringValue ?? ($0.intValue.map(String.init)) } }.first
                if let id { side.ids[endpoint.path.template] = id }
            }
        }

        /// Sends one request to the target within the budget and the rate;
        /// nil, with the check updated, when it could not.
        mutating func send(_ request: RecordedRequest, for check: inout Check) async -> ScenarioRunner.HTTPAnswer? {
            if let stopped {
                check.summary = stopped
                return nil
            }
            guard sent < options.maxRequests else {
                stopped = "not sent: --max-requests (\(options.maxRequests)) reached"
                check.summary = stopped!
                return nil
            }
            if let rate = options.rate, rate > 0, let lastSent {
                let wait = 1 / rate - Date().timeIntervalSince(lastSent)
                if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
            }
            sent += 1
            lastSent = Date()
            check.sentAt = lastSent
            let outgoing = outgoingRequest(request)
            let started = Date()
            do {
                let answer: ScenarioRunner.HTTPAnswer
                if contract.endpoint(id: check.endpointID)?.socket != nil {
                    answer = try await upgrade(outgoing)
                } else {
                    answer = try await ScenarioRunner(baseURL: verifier.baseURL, isDoppel: false).send(outgoing)
                }
                check.seconds = Date().timeIntervalSince(started)
                return answer
            } catch {
                check.seconds = Date().timeIntervalSince(started)
                let reason = ScenarioRunner.describe(error, for: outgoing)
                check.outcome = .failed
                check.summary = reason
                check.details = [curl(request)]
                if reason.hasPrefix("could not connect") { stopped = "not sent: the target could not be reached (\(reason))" }
                return nil
            }
        }

        /// A WebSocket endpoint's request, sent as an upgrade: its answer
        /// (101, or the refusal), the socket closed at once when it opened.
        func upgrade(_ outgoing: ScenarioRunner.OutgoingRequest) async throws -> ScenarioRunner.HTTPAnswer {
            guard var components = URLComponents(string: outgoing.url) else {
                throw WebSocketClient.Failure(description: "not a URL: \(outgoing.url)")
            }
            components.scheme = components.scheme == "https" ? "wss" : "ws"
            let handshakeHeaders: Set<String> = ["upgrade", "connection", "sec-websocket-version", "sec-websocket-key", "host"]
            let socket = try await WebSocketClient.connect(
                to: components.url!, headers: outgoing.headers.filter { !handshakeHeaders.contains($0.name.lowercased()) },
                timeout: outgoing.timeout)
            await socket.close()
            var headers: [String: String] = [:]
            for (name, value) in socket.handshake.headers { headers[name] = value }
            return ScenarioRunner.HTTPAnswer(status: socket.handshake.status, headers: headers, body: Data(socket.handshake.body))
        }

        func url(_ request: RecordedRequest) -> String {
            verifier.baseURL.absoluteString.trimmingTrailingSlash + request.path + (request.query.map { "?" + $0 } ?? "")
        }

        func outgoingRequest(_ request: RecordedRequest) -> ScenarioRunner.OutgoingRequest {
            var outgoing = ScenarioRunner.OutgoingRequest(method: request.method, url: url(request), timeout: options.timeout)
            outgoing.headers = request.headers
            if !request.body.isEmpty { outgoing.body = request.body }
            return outgoing
        }

        /// The request as a curl command line, its secrets as `***`.
        func curl(_ request: RecordedRequest) -> String {
            func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            var target = verifier.baseURL.absoluteString.trimmingTrailingSlash + request.path
            if let query = request.query {
                target +=
                    "?"
                    + query.split(separator: "&").map { pair -> String in
                        let name = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                        return Redaction.isSecretName(name) ? name + "=***" : String(pair)
                    }.joined(separator: "&")
            }
            var words = ["curl", "-X", request.method, quoted(target)]
            for (name, value) in request.headers where name.lowercased() != "doppel-session" || options.session != nil {
                let shown =
                    Redaction.isSecretName(name) ? (value.split(separator: " ").first.map { $0.contains(":") ? "***" : "\($0) ***" } ?? "***") : value
                words += ["-H", quoted("\(name): \(shown)")]
            }
            if !request.body.isEmpty { words += ["--data-raw", quoted(String(decoding: request.body.prefix(2_000), as: UTF8.self))] }
            return words.joined(separator: " ")
        }

        func bodyLines(_ answer: ScenarioRunner.HTTPAnswer) -> [String] {
            guard !answer.body.isEmpty else { return ["  body: (empty)"] }
            let text = answer.bodyText
            return ["  body: " + (text.count > 500 ? String(text.prefix(500)) + "…" : text)]
        }
    }
}
