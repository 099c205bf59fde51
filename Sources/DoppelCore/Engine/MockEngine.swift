import Foundation

/// Answers requests exactly as a contract says.
///
/// `respond(to:)` runs the request pipeline, one stage type per step:
/// 1. **Route** (`EndpointRouter`): method and path to an endpoint, path
///    parameters captured; misses become 404 with near misses, or 405.
/// 2. **Authenticate** (`Authenticator`): the endpoint's scheme; failures get
///    the contract's documented 401.
/// 3. **Validate** (`RequestValidator`): query, headers and body to typed JSON,
///    checked against schemas; failures get `on_invalid` or a 422.
/// 4. **Select** and 5. **Apply effects** (`ResponseSelector`): the first
///    response whose `when` holds, and its effects, in one atomic step on the
///    session's state.
/// 6. **Render** (`ResponseRenderer`): templates filled, body encoded.
/// 7. **Journal** (`Journal`): one entry per request.
///
/// ```swift
/// let engine = MockEngine(contract: try ContractLoader.load(file: "contracts/tales.yaml"))
/// let response = engine.respond(to: RecordedRequest(method: "GET", target: "/api/v1/free-stories"))
/// ```
public final class MockEngine: Sendable {
    public let contract: Contract
    public let sessions: SessionStore
    public let journal: Journal
    let router: EndpointRouter
    let authenticator: Authenticator
    let validator: RequestValidator
    let selector: ResponseSelector
    let renderer = ResponseRenderer()
    let clock: @Sendable () -> Double

    /// The header that names a request's session.
    public static let sessionHeader = "doppel-session"

    /// - Parameters:
    ///   - journalCapacity: the most journal entries kept.
    ///   - sessionLimit: the most sessions held at once.
    ///   - clock: the current instant in seconds since 1970; real time by default.
    public init(contract: Contract, journalCapacity: Int = 10_000, sessionLimit: Int = 10_000,
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.contract = contract
        self.sessions = SessionStore(initial: contract.state.initial, limit: sessionLimit)
        self.journal = Journal(capacity: journalCapacity)
        self.router = EndpointRouter(endpoints: contract.endpoints)
        self.authenticator = Authenticator(schemes: contract.authSchemes)
        self.validator = RequestValidator(schemas: contract.schemas)
        self.selector = ResponseSelector(state: contract.state)
        self.clock = clock
    }

    /// Answers one request and records it in the journal.
    public func respond(to request: RecordedRequest) -> MockResponse {
        let started = ContinuousClock.now
        let now = clock()
        let sessionID = request.header(Self.sessionHeader) ?? SessionStore.defaultID
        var response = answer(request, sessionID: sessionID, now: now)
        if request.method == "HEAD" { response.body = [] }
        let elapsed = ContinuousClock.now - started
        let micros = Int(elapsed.components.seconds) * 1_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000)
        journal.record(time: now, session: sessionID, method: request.method, path: request.path, query: request.query,
                       status: response.status, endpointID: response.endpointID, responseName: response.responseName, durationMicros: micros)
        return response
    }

    private func answer(_ request: RecordedRequest, sessionID: String, now: Double) -> MockResponse {
        guard SessionStore.isValid(id: sessionID) else { return Problem.invalidSession(sessionID).response() }
        let queryItems = request.queryItems
        var context = EvaluationContext(roots: baseRoots(request, sessionID: sessionID, now: now), now: now)

        // 1. Route. `match` conditions see the request without state; the body
        // is parsed for them only when some endpoint has one.
        var matchContext: EvaluationContext?
        let route = router.route(method: request.method, path: request.path) { endpoint, parameters in
            if matchContext == nil {
                var base = context
                base.roots["query"] = Self.object(queryItems)
                if let contentType = request.header("content-type"), MediaTypes.isJSON(contentType) {
                    base.roots["body"] = (try? JSONReader.parse(request.body)) ?? .null
                }
                matchContext = base
            }
            matchContext!.roots["path"] = Self.object(parameters)
            return endpoint.match.filter { !((try? $0.expression.test(in: matchContext!)) ?? false) }.map(\.expression.source)
        }
        let endpoint: Endpoint
        switch route {
        case .matched(let found, let parameters):
            endpoint = found
            context.roots["path"] = Self.object(parameters)
        case .methodNotAllowed(let allowed):
            return Problem.methodNotAllowed(method: request.method, path: request.path, allowed: allowed).response()
        case .notFound(let nearMisses):
            return Problem.noMatchingEndpoint(method: request.method, path: request.path, nearMisses: nearMisses).response()
        }
        guard let session = sessions.session(sessionID) else {
            return Problem.tooManySessions(limit: sessions.limit).response(endpointID: endpoint.id)
        }

        // 2. Authenticate.
        var forced: ResponseDefinition?
        switch authenticator.authenticate(request, queryItems: queryItems, scheme: endpoint.auth) {
        case .accepted(let auth): context.roots["auth"] = auth
        case .rejected(let scheme): forced = scheme.failure
        }

        // 3. Validate.
        if forced == nil {
            switch validator.validate(request, queryItems: queryItems, for: endpoint) {
            case .valid(let parts):
                context.roots["query"] = parts.query
                context.roots["headers"] = parts.headers
                context.roots["body"] = parts.body
            case .invalid(let issues, let parts):
                guard let onInvalid = endpoint.onInvalid else {
                    return Problem.validationFailed(issues).response(endpointID: endpoint.id)
                }
                context.roots["query"] = parts.query
                context.roots["headers"] = parts.headers
                context.roots["body"] = parts.body
                context.roots["errors"] = .array(issues.map(\.json))
                forced = onInvalid
            case .rejected(let problem):
                return problem.response(endpointID: endpoint.id)
            }
        } else {
            context.roots["query"] = Self.object(queryItems)
        }

        // 4–5. Select and apply effects, atomically.
        let selection: ResponseSelector.Selection
        do {
            selection = try selector.select(
                from: endpoint.responses, forced: forced, endpointBindings: forced == nil ? endpoint.bindings : [],
                context: context, session: session)
        } catch {
            switch error {
            case .noResponseMatched:
                return Problem.noResponseMatched(endpointID: endpoint.id).response(endpointID: endpoint.id)
            case .expressionFailed(let response, let message):
                return Problem.expressionFailed(endpointID: endpoint.id, response: response, message: message).response(endpointID: endpoint.id)
            }
        }

        // 6. Render.
        do {
            return try renderer.render(selection.response, in: selection.context, endpointID: endpoint.id)
        } catch {
            // Effects are already committed; the message says which template failed.
            return Problem.expressionFailed(endpointID: endpoint.id, response: selection.response.name, message: error.message)
                .response(endpointID: endpoint.id)
        }
    }

    private func baseRoots(_ request: RecordedRequest, sessionID: String, now: Double) -> [String: JSON] {
        var headers = JSONObject()
        for header in request.headers { headers[header.name] = .string(header.value) }
        return [
            "request": .object(JSONObject([("method", .string(request.method)), ("path", .string(request.path)),
                                           ("query_string", request.query.map { .string($0) } ?? .null)])),
            "path": .object(JSONObject()),
            "query": .object(JSONObject()),
            "headers": .object(headers),
            "body": .null,
            "auth": .null,
            "session": .string(sessionID),
            "data": contract.data,
            "clock": .object(JSONObject([("now", .string(UTCCalendar.format(epoch: now))), ("epoch", now.rounded() == now ? .int(Int(now)) : .double(now))])),
        ]
    }

    static func object(_ pairs: [String: String]) -> JSON {
        .object(JSONObject(pairs.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))
    }

    static func object(_ pairs: [(String, String)]) -> JSON {
        var object = JSONObject()
        for (name, value) in pairs { object[name] = .string(value) }
        return .object(object)
    }
}
