import DoppelCore

/// The control plane under `/__doppel/`: health, contract, session state,
/// scenarios, clock, journal, verification and coverage.
///
/// Works on `RecordedRequest`/`MockResponse` like the engine, so it is
/// testable without a socket. Admin calls are not journaled. With a token
/// set, every call must carry it (`Doppel-Admin-Token: T` or
/// `Authorization: Bearer T`).
package struct AdminAPI: Sendable {
    /// The path prefix of every admin call.
    package static let prefix = "/__doppel"

    let slot: EngineSlot
    /// The engine answering now.
    package var engine: MockEngine { slot.current }
    let token: String?
    /// Host names besides IP addresses and `localhost` the admin API answers to (`--allow-host`).
    var allowedHosts: [String] = []
    let catalog: Locked<ScenarioCatalog>
    let startedAt: ContinuousClock.Instant
    /// The request log, for its dropped-line count.
    let log: RequestLog?
    /// The event streams, for health's count of them (set by the server).
    var events: EventHub?
    /// The open WebSockets, for health.
    var sockets: SocketHub?

    package init(engine: MockEngine, token: String? = nil, catalog: ScenarioCatalog = ScenarioCatalog(), log: RequestLog? = nil) {
        self.init(slot: EngineSlot(engine), token: token, catalog: catalog, log: log)
    }

    package init(slot: EngineSlot, token: String? = nil, catalog: ScenarioCatalog = ScenarioCatalog(), log: RequestLog? = nil) {
        self.slot = slot
        self.token = token
        self.log = log
        self.catalog = Locked(catalog)
        self.startedAt = .now
    }

    /// The same API (token, catalogue, log) answering with `engine`: a
    /// shared store's engine around the rows one call reads.
    package func rebased(on engine: MockEngine) -> AdminAPI {
        var api = AdminAPI(slot: EngineSlot(engine), token: token, catalog: catalog.withLock { $0 }, log: log)
        api.events = events
        api.allowedHosts = allowedHosts
        return api
    }

    /// The one session a call names (`?session=` or its body's `"session"`,
    /// else `default`); nil when its body or the id is refused, which the
    /// call itself then answers.
    package func namedSession(_ request: RecordedRequest) -> String? {
        guard case .success(let body) = bodyObject(request, example: "{}"), case .success(let id) = sessionID(request, body: body) else { return nil }
        return id
    }

    /// Whether a call names no session at all (`POST /reset` then resets every one).
    package func namesNoSession(_ request: RecordedRequest) -> Bool {
        guard parameter("session", of: request) == nil else { return false }
        guard case .success(let body) = bodyObject(request, example: "{}") else { return false }
        return body["session"] == nil
    }

    /// Whether a path belongs to the admin API.
    package static func handles(_ path: String) -> Bool {
        path == prefix || path.hasPrefix(prefix + "/")
    }

    /// Every call, for the 404 that lists them: `AdminCall.all`, and the dashboard's pages.
    package static let calls = AdminCall.all.map { "\($0.method) \($0.path)" } + ["GET /ui/"]

    /// What every admin call meets first: a refusal (a call from a web page
    /// on another site or for another host, a body that is not JSON, no
    /// token where one is set) or a dashboard file; nil when the call may go on.
    package func gate(_ request: RecordedRequest) -> MockResponse? {
        if let refusal = browserRefusal(request) { return refusal.response() }
        // The dashboard's files hold no data: the page asks for the token and sends it with each call.
        if let page = Dashboard.respond(to: request, tokenRequired: token != nil) { return page }
        if let token, !Self.carries(token, request) {
            return Problem.adminUnauthorized().response()
        }
        return nil
    }

    /// The answer to an admin call (`AdminCall`), after the gate.
    package func respond(to request: RecordedRequest) -> MockResponse {
        if let refused = gate(request) { return refused }
        guard let call = AdminCall.of(request) else {
            return Problem.unknownAdminCall(
                method: request.method, path: request.path,
                known: Self.calls.map { call in
                    call.replacingOccurrences(of: " /", with: " \(Self.prefix)/")
                }
            ).response()
        }
        guard request.method == "HEAD" else { return call.answer(self, request) }
        // A HEAD is answered as its GET; the transport sends the head alone.
        var asked = request
        asked.method = "GET"
        return call.answer(self, asked)
    }

    /// The header that carries the admin token (else `Authorization: Bearer`).
    package static let tokenHeader = "doppel-admin-token"

    static func carries(_ token: String, _ request: RecordedRequest) -> Bool {
        // Both headers are always compared, each in constant time, so the
        // response time says nothing about how much of a guess was right.
        let byHeader = constantTimeEquals(request.header(tokenHeader), token)
        let byBearer = constantTimeEquals(Authenticator.bearerToken(request.header("authorization")), token)
        return byHeader || byBearer
    }

    /// Compares every byte of the expected token, whatever the candidate, so timing leaks neither content nor length.
    static func constantTimeEquals(_ candidate: String?, _ expected: String) -> Bool {
        let given = Array((candidate ?? "").utf8)
        let wanted = Array(expected.utf8)
        var difference = UInt8(given.count == wanted.count ? 0 : 1) | UInt8(candidate == nil ? 1 : 0)
        for index in wanted.indices {
            difference |= wanted[index] ^ (index < given.count ? given[index] : ~wanted[index])
        }
        return difference == 0
    }

    // MARK: Helpers shared by the calls

    func parameter(_ name: String, of request: RecordedRequest) -> String? {
        request.queryItems.last { $0.0 == name }?.1
    }

    /// The request body as a JSON object (empty when there is no body).
    func bodyObject(_ request: RecordedRequest, example: String) -> Result<JSONObject, Problem> {
        if request.body.isEmpty { return .success(JSONObject()) }
        guard let body = try? JSONReader.parse(request.body), let object = body.objectValue else {
            return .failure(.malformedJSON("expected an object like \(example)"))
        }
        return .success(object)
    }

    /// The body object and the session a call names, or the problem with either.
    func bodyAndSession(_ request: RecordedRequest, example: String) -> Result<(body: JSONObject, session: String), Problem> {
        bodyObject(request, example: example).flatMap { body in sessionID(request, body: body).map { (body, $0) } }
    }

    /// The session a call names with `?session=` or `"session"` in its body; `default` otherwise.
    func sessionID(_ request: RecordedRequest, body: JSONObject? = nil) -> Result<String, Problem> {
        let id = parameter("session", of: request) ?? body?["session"]?.stringValue ?? SessionStore.defaultID
        return SessionStore.isValid(id: id) ? .success(id) : .failure(.invalidSession(id))
    }

    func json(_ status: Int, _ value: JSON) -> MockResponse {
        Self.json(status, value)
    }

    /// A JSON answer.
    package static func json(_ status: Int, _ value: JSON) -> MockResponse {
        MockResponse(status: status, headers: [(name: "Content-Type", value: "application/json")], body: JSONWriter.encode(value))
    }
}
