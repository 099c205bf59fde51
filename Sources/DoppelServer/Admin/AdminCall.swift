import DoppelCore

/// One admin call, declared once: its method and path under `/__doppel`,
/// what it reaches and whether it changes it, and its answer. The API
/// dispatches by it, the server tells the event stream what a call changed
/// by it, and a shared state store reads by it what to lock, read or make
/// every replica see.
package struct AdminCall: Sendable {
    /// What a call reads or changes.
    package enum Reach: Sendable, Equatable {
        /// Nothing of sessions or the journal: the server, the contract, the scenarios on file.
        case server
        /// The list of sessions.
        case sessionList
        /// The one session the call names (`?session=` or its body's `"session"`, else `default`).
        case session
        /// As `.session`, or every session when the call names none (`POST /reset`).
        case sessionOrEvery
        /// The journal, every session's answers.
        case journal
    }

    /// `GET`, `PUT`, `POST` or `DELETE`; a `HEAD` is answered as the `GET`.
    package let method: String
    /// The path below `AdminAPI.prefix`, `/state`.
    package let path: String
    /// What it reads or changes.
    package let reach: Reach
    /// Whether it changes what it reaches: the event stream is told, a store writes it back.
    package let changes: Bool
    /// Whether it changes what answers a session's requests besides its
    /// state (its scenario, forced answers, a reset): a shared store makes
    /// every replica see the change before the call is answered.
    package let changesOverrides: Bool
    let answer: @Sendable (AdminAPI, RecordedRequest) -> MockResponse

    init(
        _ method: String, _ path: String, _ reach: Reach, changes: Bool = false, changesOverrides: Bool = false,
        answer: @escaping @Sendable (AdminAPI, RecordedRequest) -> MockResponse
    ) {
        self.method = method
        self.path = path
        self.reach = reach
        self.changes = changes
        self.changesOverrides = changesOverrides
        self.answer = answer
    }

    /// Every call.
    package static let all: [AdminCall] = [
        AdminCall("GET", "/health", .server) { api, _ in api.health() },
        AdminCall("GET", "/contract", .server) { api, _ in api.contractDescription() },
        AdminCall("GET", "/routes", .server) { api, _ in api.routes() },
        AdminCall("GET", "/sessions", .sessionList) { api, _ in api.sessions() },
        AdminCall("GET", "/state", .session) { $0.state($1) },
        AdminCall("PUT", "/state", .session, changes: true) { $0.replaceState($1) },
        AdminCall("POST", "/reset", .sessionOrEvery, changes: true, changesOverrides: true) { $0.reset($1) },
        AdminCall("GET", "/clock", .session) { $0.clock($1) },
        AdminCall("POST", "/clock", .session, changes: true) { $0.clock($1) },
        AdminCall("GET", "/scenarios", .server) { api, _ in api.scenarios() },
        AdminCall("GET", "/scenario", .session) { $0.scenario($1) },
        AdminCall("PUT", "/scenario", .session, changes: true, changesOverrides: true) { $0.scenario($1) },
        AdminCall("DELETE", "/scenario", .session, changes: true, changesOverrides: true) { $0.scenario($1) },
        AdminCall("GET", "/journal", .journal) { $0.journal($1) },
        AdminCall("DELETE", "/journal", .journal, changes: true) { api, _ in
            api.engine.journal.clear()
            return api.json(200, ["cleared": true])
        },
        AdminCall("POST", "/verify", .journal) { $0.verify($1) },
        AdminCall("GET", "/coverage", .journal) { $0.coverage($1) },
        AdminCall("DELETE", "/sequences", .session, changes: true) { $0.resetSequences($1) },
        AdminCall("GET", "/next", .session) { $0.next($1) },
        AdminCall("POST", "/next", .session, changes: true, changesOverrides: true) { $0.next($1) },
        AdminCall("DELETE", "/next", .session, changes: true, changesOverrides: true) { $0.next($1) },
        // Answered by the server's event stream; the API alone cannot hold one open.
        AdminCall("GET", "/events", .server) { _, _ in Problem.eventStreamNeedsServer().response() },
    ]

    /// The call a request makes; nil for a path or method the API does not answer.
    package static func of(_ request: RecordedRequest) -> AdminCall? {
        guard request.path.hasPrefix(AdminAPI.prefix) else { return nil }
        let path = request.path.dropFirst(AdminAPI.prefix.count)
        let method = request.method == "HEAD" ? "GET" : request.method
        return all.first { $0.method == method && $0.path == path }
    }
}
