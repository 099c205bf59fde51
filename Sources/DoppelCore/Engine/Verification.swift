/// Did an endpoint answer with a status as often as expected? Counted from
/// the journal's tally, which survives the journal's bound. The admin API's
/// `POST /__doppel/verify` and `DoppelTesting`'s `verify` both answer with it.
public struct Verification: Sendable, Equatable, CustomStringConvertible {
    /// What was counted: an endpoint, and optionally one status and one session.
    public struct Criteria: Sendable, Equatable {
        /// The endpoint id.
        public var endpoint: String
        /// The status; nil counts every status.
        public var status: Int?
        /// The session; nil counts every session.
        public var session: String?

        /// Requests to `endpoint`, of `status` and `session` when given.
        public init(endpoint: String, status: Int? = nil, session: String? = nil) {
            self.endpoint = endpoint
            self.status = status
            self.session = session
        }
    }

    /// How often: exactly, or between a minimum and an optional maximum.
    public enum Expectation: Sendable, Equatable {
        case exactly(Int)
        case between(min: Int, max: Int?)

        /// At least once.
        public static let atLeastOnce = Expectation.between(min: 1, max: nil)

        func admits(_ count: Int) -> Bool {
            switch self {
            case .exactly(let n): count == n
            case .between(let low, let high): count >= low && (high.map { count <= $0 } ?? true)
            }
        }

        var text: String {
            switch self {
            case .exactly(let n): "exactly \(n)"
            case .between(let low, nil): "at least \(low)"
            case .between(let low, let high?): low == 0 ? "at most \(high)" : "between \(low) and \(high)"
            }
        }
    }

    /// Requests to the same endpoint that did not meet the criteria: another
    /// status, or another session. They say where the requests went.
    public struct NearMatch: Sendable, Equatable {
        /// The endpoint id.
        public let endpoint: String
        /// The status it got.
        public let status: Int
        /// The session.
        public let session: String
        /// How many requests.
        public let count: Int
    }

    /// What was counted.
    public let criteria: Criteria
    /// How many were expected.
    public let expected: Expectation
    /// How many requests met the criteria.
    public let actual: Int
    /// Requests that almost matched (another status or session), the most frequent first, at most `shownNearMatches`.
    public let nearMatches: [NearMatch]

    /// Whether the count is as expected.
    public var passed: Bool { expected.admits(actual) }

    /// Counts the journal's requests that meet `criteria`.
    public init(_ criteria: Criteria, expected: Expectation = .atLeastOnce, in journal: Journal) {
        let tally = journal.tally
        self.criteria = criteria
        self.expected = expected
        actual = tally.count {
            $0.endpointID == criteria.endpoint && (criteria.status == nil || $0.status == criteria.status)
                && (criteria.session == nil || $0.session == criteria.session)
        }
        var near: [Journal.Tally.Key: Int] = [:]
        for (key, count) in tally.counts where key.endpointID == criteria.endpoint {
            let statusMatches = criteria.status == nil || key.status == criteria.status
            let sessionMatches = criteria.session == nil || key.session == criteria.session
            if statusMatches && sessionMatches { continue }
            near[key, default: 0] += count
        }
        // The criteria's own session first: on a server shared by many tests, its answers say the most.
        func rank(_ key: Journal.Tally.Key) -> Int { key.session == criteria.session ? 0 : 1 }
        nearMatches = near.sorted { (rank($0.key), $0.key.session, $0.key.status) < (rank($1.key), $1.key.session, $1.key.status) }.map {
            key, count in
            NearMatch(endpoint: criteria.endpoint, status: key.status, session: key.session, count: count)
        }
    }

    /// The most near matches `description` lists; `json` has them all.
    public static let shownNearMatches = 10

    /// One line for a pass; for a failure, what was expected, what came, and the near matches.
    public var description: String {
        var subject = "'\(criteria.endpoint)'"
        if let status = criteria.status { subject += " with \(status)" }
        if let session = criteria.session { subject += " in session '\(session)'" }
        let times = { (n: Int) in n == 1 ? "1 time" : "\(n) times" }
        if passed { return "\(subject) answered \(times(actual)), \(expected.text) expected" }
        var lines = ["\(subject) answered \(times(actual)); expected \(expected.text)"]
        if nearMatches.isEmpty {
            lines.append("no other answers from '\(criteria.endpoint)'")
        } else {
            lines.append("near matches:")
            lines += nearMatches.prefix(Self.shownNearMatches).map { "  \($0.status) in session '\($0.session)': \(times($0.count))" }
            if nearMatches.count > Self.shownNearMatches { lines.append("  and \(nearMatches.count - Self.shownNearMatches) more") }
        }
        return lines.joined(separator: "\n")
    }

    /// The verification as JSON, as the admin API answers it.
    public var json: JSON {
        var expectedJSON = JSONObject()
        switch expected {
        case .exactly(let n): expectedJSON["count"] = .int(n)
        case .between(let low, let high):
            expectedJSON["min"] = .int(low)
            if let high { expectedJSON["max"] = .int(high) }
        }
        var criteriaJSON = JSONObject([("endpoint", .string(criteria.endpoint))])
        if let status = criteria.status { criteriaJSON["status"] = .int(status) }
        if let session = criteria.session { criteriaJSON["session"] = .string(session) }
        return .object(
            JSONObject([
                ("pass", .bool(passed)), ("criteria", .object(criteriaJSON)), ("expected", .object(expectedJSON)), ("actual", .int(actual)),
                (
                    "near_matches",
                    .array(
                        nearMatches.map { near in
                            .object(
                                JSONObject([
                                    ("endpoint", .string(near.endpoint)), ("status", .int(near.status)), ("session", .string(near.session)),
                                    ("count", .int(near.count)),
                                ]))
                        })
                ),
            ]))
    }
}

/// Each documented endpoint × status of a contract, reached or not, counted
/// from the journal's tally (for one session, or all).
public struct Coverage: Sendable, Equatable {
    /// One documented status of an endpoint, and how often it was sent.
    public struct Status: Sendable, Equatable {
        /// The status.
        public let status: Int
        /// How many times it was sent.
        public let count: Int
        /// Whether it was sent at least once.
        public var reached: Bool { count > 0 }
    }

    /// One endpoint's documented statuses.
    public struct EndpointCoverage: Sendable, Equatable {
        /// The endpoint id.
        public let id: String
        /// `METHOD /path`.
        public let request: String
        /// Every status the endpoint documents, in contract order.
        public let statuses: [Status]
    }

    /// The session counted; nil for all sessions.
    public let session: String?
    /// Every endpoint, in contract order.
    public let endpoints: [EndpointCoverage]

    /// How many endpoint × status pairs the contract documents.
    public var total: Int { endpoints.reduce(0) { $0 + $1.statuses.count } }
    /// How many of them were sent at least once.
    public var reached: Int { endpoints.reduce(0) { $0 + $1.statuses.filter(\.reached).count } }
    /// `endpoint-id status` for every pair not reached.
    public var unreached: [String] {
        endpoints.flatMap { endpoint in endpoint.statuses.filter { !$0.reached }.map { "\(endpoint.id) \($0.status)" } }
    }

    /// Coverage of `contract` by the requests `journal` counted, in `session` or all sessions.
    public init(of contract: Contract, in journal: Journal, session: String? = nil) {
        let tally = journal.tally
        self.session = session
        func statuses(_ id: String, _ statuses: [Int]) -> [Status] {
            statuses.map { status in
                Status(status: status, count: tally.count { $0.endpointID == id && $0.status == status && (session == nil || $0.session == session) })
            }
        }
        endpoints = contract.endpoints.flatMap { endpoint in
            // A WebSocket's rules are covered as its upgrade is: each one run at least once (status 101, the socket's).
            let rules =
                endpoint.socket.map { socket in
                    socket.rules.map {
                        EndpointCoverage(
                            id: "\(endpoint.id).\($0.name)", request: "\(endpoint.signature) rule \($0.name)",
                            statuses: statuses("\(endpoint.id).\($0.name)", [101]))
                    }
                } ?? []
            return [EndpointCoverage(id: endpoint.id, request: endpoint.signature, statuses: statuses(endpoint.id, contract.statuses(of: endpoint)))]
                + rules
        }
    }

    /// The coverage as JSON, as the admin API answers it.
    public var json: JSON {
        .object(
            JSONObject([
                ("session", session.map { .string($0) } ?? .null), ("reached", .int(reached)), ("total", .int(total)),
                ("unreached", .array(unreached.map { .string($0) })),
                (
                    "endpoints",
                    .array(
                        endpoints.map { endpoint in
                            .object(
                                JSONObject([
                                    ("id", .string(endpoint.id)), ("request", .string(endpoint.request)),
                                    (
                                        "statuses",
                                        .array(
                                            endpoint.statuses.map { status in
                                                .object(
                                                    JSONObject([
                                                        ("status", .int(status.status)), ("reached", .bool(status.reached)),
                                                        ("count", .int(status.count)),
                                                    ]))
                                            })
                                    ),
                                ]))
                        })
                ),
            ]))
    }
}
