import Foundation

/// Answers requests exactly as a contract says.
///
/// `respond(to:)` runs the request pipeline, one stage type per step:
/// 1. **Route** (`EndpointRouter`): method and path to an endpoint, path
///    parameters captured; misses become 404 with near misses, or 405.
/// 2. **Authenticate** (`Authenticator`): the endpoint's scheme, issued
///    tokens checked against the session's clock; failures get the
///    contract's documented 401.
/// 3. **Rate-limit** (`RateLimiter`): covered endpoints count the request per
///    key; over the limit gets the documented 429 with `Retry-After`.
/// 4. **Validate** (`RequestValidator`): query, headers and body to typed JSON,
///    checked against schemas; failures get `on_invalid` or a 422.
/// 5. **Select** and **apply effects** (`ResponseSelector`): the first
///    response whose `when` holds (the next of a sequence), and its effects,
///    in one atomic step on the session's state.
/// 6. **Render** (`ResponseRenderer`): templates filled, body encoded or
///    streamed, delay and fault attached for the transport.
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
    let rateLimiter: RateLimiter
    let validator: RequestValidator
    let selector: ResponseSelector
    let renderer = ResponseRenderer()
    let clock: @Sendable () -> Double
    /// The delay of responses that declare none.
    public let defaultDelay: Delay?

    /// The header that names a request's session.
    public static let sessionHeader = "doppel-session"

    /// - Parameters:
    ///   - journalCapacity: the most journal entries kept.
    ///   - sessionLimit: the most sessions held at once; a new one evicts the least recently used.
    ///   - sessionIdleLimit: seconds after which an unused session is evicted; nil keeps them.
    ///   - stateLimit: the most state all sessions may hold together; past it the least recently used are evicted.
    ///   - defaultDelay: the delay of responses that declare none.
    ///   - clock: real time in seconds since 1970; sessions move their own
    ///     virtual clocks relative to it.
    public init(contract: Contract, journalCapacity: Int = 10_000, sessionLimit: Int = 10_000, sessionIdleLimit: Double? = 3600,
                stateLimit: Int = StateBudget.defaultLimit, defaultDelay: Delay? = nil,
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.contract = contract
        self.sessions = SessionStore(initial: contract.state.initial, limit: sessionLimit, idleLimit: sessionIdleLimit,
                                     stateLimit: stateLimit, clock: clock)
        self.journal = Journal(capacity: journalCapacity)
        // An evicted session's counts go with it, so the tally stays bounded by the session limit.
        sessions.onEviction { [journal] id in journal.forget(session: id) }
        self.router = EndpointRouter(endpoints: contract.endpoints)
        self.authenticator = Authenticator(schemes: contract.authSchemes)
        self.rateLimiter = RateLimiter(limits: contract.rateLimits)
        self.validator = RequestValidator(schemas: contract.schemas)
        self.selector = ResponseSelector(state: contract.state)
        self.defaultDelay = defaultDelay
        self.clock = clock
    }

    /// Real time, as the engine's clock reads it.
    public var realNow: Double { clock() }

    /// Answers one request and records it in the journal.
    public func respond(to request: RecordedRequest) -> MockResponse {
        let started = ContinuousClock.now
        let sessionID = request.header(Self.sessionHeader) ?? SessionStore.defaultID
        var now = clock()
        var response: MockResponse
        let valid = SessionStore.isValid(id: sessionID)
        if valid {
            let session = sessions.session(sessionID)
            now = session.now(real: now)
            response = answer(request, session: session, now: now)
        } else {
            response = Problem.invalidSession(sessionID).response()
        }
        if request.method == "HEAD" {
            response.body = []
            response.stream = nil
        }
        let elapsed = ContinuousClock.now - started
        let micros = Int(elapsed.components.seconds) * 1_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000)
        // An invalid id is never kept: it may be any size, and each distinct one would be a new key.
        journal.record(time: now, session: valid ? sessionID : Journal.invalidSession, method: request.method, path: request.path, query: request.query,
                       status: response.status, endpointID: response.endpointID, responseName: response.responseName, durationMicros: micros)
        return response
    }

    private func answer(_ request: RecordedRequest, session: Session, now: Double) -> MockResponse {
        let queryItems = request.queryItems
        // Query values are strings until validation reads them by their schema.
        var context = EvaluationContext(roots: baseRoots(request, query: Self.object(queryItems), sessionID: session.id, now: now), now: now)

        // 1. Route. `match` conditions see the request without state; the body
        // is parsed for them only when some endpoint has one.
        var matchContext: EvaluationContext?
        let route = router.route(method: request.method, path: request.path) { endpoint, parameters in
            if matchContext == nil {
                var base = context
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

        // Count the call, and find the active scenario's override for it.
        let override = session.transact { data -> Override? in
            let call = (data.endpointCalls[endpoint.id] ?? 0) + 1
            data.endpointCalls[endpoint.id] = call
            return data.scenario?.overrides.first { $0.endpointID == endpoint.id && $0.applies(toCall: call) }
        }

        // 2. Authenticate.
        var forced: ResponseDefinition?
        let state = endpoint.auth.flatMap { contract.authSchemes[$0]?.issued } == nil ? JSONObject() : session.snapshot
        switch authenticator.authenticate(request, queryItems: queryItems, scheme: endpoint.auth, state: state, now: now) {
        case .accepted(let auth): context.roots["auth"] = auth
        case .rejected(let failure): forced = failure
        }

        // 3. Rate-limit.
        var rateHeaders: [(name: String, value: String)] = []
        if forced == nil {
            do throws(EvaluationError) {
                if let decision = try rateLimiter.check(endpointID: endpoint.id, context: context, session: session, now: now) {
                    rateHeaders = decision.headers
                    if let limit = decision.refusedBy {
                        forced = limit.response
                        context.roots["retry_after"] = .int(decision.retryAfter)
                        rateHeaders.append((name: "Retry-After", value: String(decision.retryAfter)))
                    }
                }
            } catch {
                return Problem.evaluationFailed(error, endpointID: endpoint.id, response: "rate limit key").response(endpointID: endpoint.id)
            }
        }

        // 4. Validate.
        if forced == nil {
            switch validator.validate(request, queryItems: queryItems, for: endpoint) {
            case .valid(let parts):
                context.roots["query"] = parts.query
                if let headers = parts.headers { context.roots["headers"] = headers }
                context.roots["body"] = parts.body
            case .invalid(let issues, let parts):
                guard let onInvalid = endpoint.onInvalid else {
                    return Problem.validationFailed(issues).response(endpointID: endpoint.id).adding(rateHeaders)
                }
                context.roots["query"] = parts.query
                if let headers = parts.headers { context.roots["headers"] = headers }
                context.roots["body"] = parts.body
                context.roots["errors"] = .array(issues.map(\.json))
                forced = onInvalid
            case .rejected(let problem):
                return problem.response(endpointID: endpoint.id).adding(rateHeaders)
            }
        }

        // A scenario's forced response stands in for the contract's choice
        // (but not for the auth, rate-limit and validation answers above).
        if forced == nil, let response = override?.response { forced = response }

        // 5. Select and apply effects, atomically.
        let selection: ResponseSelector.Selection
        do {
            selection = try selector.select(
                from: endpoint.responses, forced: forced, endpointBindings: forced == nil ? endpoint.bindings : [],
                context: context, session: session, sequenceScope: endpoint.id)
        } catch {
            switch error {
            case .noResponseMatched:
                return Problem.noResponseMatched(endpointID: endpoint.id).response(endpointID: endpoint.id)
            case .expressionFailed(let response, let message, let exceedsBudget):
                let failure = EvaluationError(message, exceedsBudget: exceedsBudget)
                return Problem.evaluationFailed(failure, endpointID: endpoint.id, response: response).response(endpointID: endpoint.id)
            }
        }

        // 6. Render.
        do {
            var definition = selection.response
            if let fault = override?.fault { definition.fault = fault }
            var response = try renderer.render(definition, in: selection.context, endpointID: endpoint.id).adding(rateHeaders)
            response.delay = (override?.delay ?? definition.delay ?? defaultDelay)?.sample() ?? 0
            return response
        } catch {
            // Effects are already committed; the message says which template failed.
            return Problem.evaluationFailed(error, endpointID: endpoint.id, response: selection.response.name).response(endpointID: endpoint.id)
        }
    }

    private func baseRoots(_ request: RecordedRequest, query: JSON, sessionID: String, now: Double) -> [String: JSON] {
        var headers = JSONObject()
        for header in request.headers { headers[header.name] = .string(header.value) }
        return [
            "request": .object(JSONObject([("method", .string(request.method)), ("path", .string(request.path)),
                                           ("query_string", request.query.map { .string($0) } ?? .null)])),
            "path": .object(JSONObject()),
            "query": query,
            "headers": .object(headers),
            "body": .null,
            "auth": .null,
            "session": .string(sessionID),
            "client": .object(JSONObject([("address", request.remoteAddress.map { .string($0) } ?? .null)])),
            "data": contract.data,
            "clock": .object(JSONObject([("now", .string(UTCCalendar.format(epoch: now))), ("epoch", now.rounded() == now && abs(now) < 9e15 ? .int(Int(now)) : .double(now))])),
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

extension MockResponse {
    /// The response with more headers.
    func adding(_ extra: [(name: String, value: String)]) -> MockResponse {
        guard !extra.isEmpty else { return self }
        var copy = self
        copy.headers += extra
        return copy
    }
}
