import Foundation

/// Answers requests exactly as a contract says.
///
/// `decide(_:)` runs the request pipeline, one stage type per step, and
/// returns a `Decision` (what to send, its delay, and how to deliver it):
/// 1. **Route** (`EndpointRouter`): method and path to an endpoint, path
///    parameters captured; misses become 404 with near misses, or 405.
/// 2. **Validate** (`RequestValidator`): query, headers and body to typed
///    JSON, checked against schemas. It reads only the request, so it runs
///    before the session is touched; its verdict is applied in order below.
///
/// Then one transaction on the session (`Session.transact`), so that all a
/// request reads and changes there is one atomic step, kept only if the
/// step completes; it reads the session's clock too, so a clock moved by a
/// concurrent admin call is seen whole or not at all:
/// 3. **Authenticate** (`Authenticator`): the endpoint's scheme, issued
///    tokens checked in this transaction's state against the session's
///    clock; failures get the contract's documented 401. (The credentials
///    are read from the request, `Authenticator.present`, before the lock.)
/// 4. **Rate-limit** (`RateLimiter`): authenticated requests to covered
///    endpoints are counted per key; over the limit gets the documented 429
///    with `Retry-After`. Then the validation verdict: `on_invalid`, or a
///    422/415/400 problem.
/// 5. **Select** and **apply effects** (`ResponseSelector`): the response
///    the request's `Prefer` header names (`code=`, `example=`), else the
///    active scenario's override for this call, else the first response
///    whose `when` holds (the next of a sequence), and its effects.
/// 6. **Render** (`ResponseRenderer`): templates filled, body encoded or
///    streamed, delay and fault attached for the transport. A template that
///    fails abandons the transaction, effects included.
///
/// After the transport has delivered the decision:
/// 7. **Journal** (`complete(_:status:durationMicros:)`): one entry per
///    request, with the status sent. `respond(to:)` decides and journals at
///    once, for callers that deliver nothing over time.
///
/// ```swift
/// let engine = MockEngine(contract: try ContractLoader.load(file: "contracts/tales.yaml"))
/// let response = engine.respond(to: RecordedRequest(method: "GET", target: "/api/v1/free-stories"))
/// ```
public final class MockEngine: Sendable {
    /// The contract answered.
    public let contract: Contract
    /// The sessions and their state.
    public let sessions: SessionStore
    /// Every request answered, for `verify` and `coverage`.
    public let journal: Journal
    let router: EndpointRouter
    let authenticator: Authenticator
    let rateLimiter: RateLimiter
    let validator: RequestValidator
    let selector: ResponseSelector
    let renderer = ResponseRenderer()
    let clock: @Sendable () -> Double
    /// The delay of responses that declare none.
    package let defaultDelay: Delay?
    /// Whether a request no endpoint takes (404 or 405) is forwarded to the
    /// upstream (`doppel serve --proxy`) rather than answered.
    package let forwardsUnmatched: Bool

    /// The header that names a request's session.
    public static let sessionHeader = "doppel-session"

    /// - Parameters:
    ///   - journalCapacity: the most journal entries kept.
    ///   - sessionLimit: the most sessions held at once; a new one evicts the least recently used.
    ///   - sessionIdleLimit: seconds after which an unused session is evicted; nil keeps them.
    ///   - stateLimit: the most state all sessions may hold together, in
    ///     bytes of JSON (nil: 512 MiB); past it the least recently used are evicted.
    ///   - defaultDelay: the delay of responses that declare none.
    ///   - clock: real time in seconds since 1970; sessions move their own
    ///     virtual clocks relative to it.
    public convenience init(
        contract: Contract, journalCapacity: Int = Journal.defaultCapacity, sessionLimit: Int = SessionStore.defaultLimit,
        sessionIdleLimit: Double? = SessionStore.defaultIdleLimit,
        stateLimit: Int? = nil, defaultDelay: Delay? = nil, forwardsUnmatched: Bool = false,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        let sessions = SessionStore(
            initial: contract.state.initial, limit: sessionLimit, idleLimit: sessionIdleLimit,
            stateLimit: stateLimit ?? StateBudget.defaultLimit, clock: clock)
        let journal = Journal(capacity: journalCapacity)
        // An evicted session's counts go with it, so the tally stays bounded by the session limit.
        sessions.onEviction { [journal] id in journal.forget(session: id) }
        self.init(
            contract: contract, sessions: sessions, journal: journal, defaultDelay: defaultDelay, forwardsUnmatched: forwardsUnmatched, clock: clock)
    }

    /// An engine for a reloaded contract that carries on from `previous`:
    /// the same sessions (their state kept as `SessionStore.redeclare`
    /// says), journal, clock and default delay.
    public convenience init(contract: Contract, carryingOn previous: MockEngine) {
        self.init(
            contract: contract, sessions: previous.sessions, journal: previous.journal, defaultDelay: previous.defaultDelay,
            forwardsUnmatched: previous.forwardsUnmatched, clock: previous.clock)
        sessions.redeclare(from: previous.contract.state, to: contract.state)
    }

    /// An engine with `engine`'s contract, stages and settings around other
    /// sessions and another journal: what a shared store answers an admin
    /// call with, around the session and journal it loaded.
    package init(stages engine: MockEngine, sessions: SessionStore, journal: Journal) {
        self.contract = engine.contract
        self.sessions = sessions
        self.journal = journal
        self.router = engine.router
        self.authenticator = engine.authenticator
        self.rateLimiter = engine.rateLimiter
        self.validator = engine.validator
        self.selector = engine.selector
        self.defaultDelay = engine.defaultDelay
        self.forwardsUnmatched = engine.forwardsUnmatched
        self.clock = engine.clock
    }

    /// The stages built for `contract`, around sessions and a journal.
    private init(
        contract: Contract, sessions: SessionStore, journal: Journal, defaultDelay: Delay?, forwardsUnmatched: Bool,
        clock: @escaping @Sendable () -> Double
    ) {
        self.contract = contract
        self.sessions = sessions
        self.journal = journal
        self.router = EndpointRouter(endpoints: contract.endpoints)
        self.authenticator = Authenticator(schemes: contract.authSchemes)
        self.rateLimiter = RateLimiter(limits: contract.rateLimits)
        self.validator = RequestValidator(schemas: contract.schemas)
        self.selector = ResponseSelector(state: contract.state)
        self.defaultDelay = defaultDelay
        self.forwardsUnmatched = forwardsUnmatched
        self.clock = clock
    }

    /// Real time, as the engine's clock reads it.
    package var realNow: Double { clock() }

    /// Decides one request's answer: what to send and how to deliver it.
    /// The session's state moves now; the journal entry is written when the
    /// transport calls `complete(_:status:durationMicros:)` once the answer is
    /// delivered (after its delay, stream or fault, or with the upstream's status).
    ///
    /// `refusing`: a problem the transport found before the engine could
    /// read the request (a body over the size limit, an unusable target).
    /// The answer is then the contract's fallback for the problem, else the
    /// problem itself, journaled as any answer is.
    public func decide(_ request: RecordedRequest, refusing problem: Problem? = nil) -> Decision {
        let id = request.sessionID
        return decide(request, refusing: problem, in: SessionStore.isValid(id: id) ? sessions.session(id) : nil)
    }

    /// As `decide(_:refusing:)`, in `session`: the request's session, held
    /// by the engine's store or, for a shared store, its copy of the row;
    /// nil for a session id no store may hold (answered with a problem).
    package func decide(_ request: RecordedRequest, refusing problem: Problem? = nil, in session: Session?) -> Decision {
        // The session holds the request's id (read from its headers once, by the caller).
        let sessionID = session?.id ?? request.sessionID
        var now = clock()
        var answer: Answer
        if let session, let problem {
            answer = Answer(.whole(problem.response()))
            if contract.fallback(for: problem) != nil {
                let context = EvaluationContext(roots: baseRoots(sessionID: session.id), now: now, request: request)
                (answer, now) = fallback(for: problem, context: context, session: session)
            } else {
                now = session.now(real: now)
            }
        } else if let problem {
            answer = Answer(.whole(problem.response()))
        } else if let session {
            (answer, now) = self.answer(request, session: session, real: now)
        } else {
            answer = Answer(.whole(Problem.invalidSession(sessionID).response()))
        }
        let valid = session != nil
        // A HEAD's answer is the GET's: each transport sends its head alone
        // (RFC 9110 section 9.3.2), its `Content-Length` the GET's body's.
        let response = answer.delivery.response
        let entry = Decision.Entry(
            time: now, session: valid ? sessionID : Journal.invalidSession, method: request.method, path: request.path,
            query: request.query, endpointID: response?.endpointID ?? answer.forwarded?.endpointID,
            responseName: response?.responseName, reason: response?.reason ?? answer.forwarded?.reason,
            changes: response?.changes ?? answer.forwarded?.changes ?? [])
        return Decision(answer.delivery, delay: answer.delay, effects: answer.effects, entry: entry)
    }

    /// A decision for an answer a door made without the engine (the GraphQL
    /// door's refusal of a request it cannot read or run), journaled under
    /// `endpointID` with `reason`, at the session's time.
    package func decision(journaling response: MockResponse, of request: RecordedRequest, endpointID: String, reason: String) -> Decision {
        let id = request.sessionID
        let valid = SessionStore.isValid(id: id)
        let entry = Decision.Entry(
            time: valid ? sessions.session(id).now(real: clock()) : clock(), session: valid ? id : Journal.invalidSession,
            method: request.method, path: request.path, query: request.query, endpointID: endpointID, responseName: nil,
            reason: Reason(reason), changes: [])
        return Decision(.whole(response), entry: entry)
    }

    /// What stages 1 to 6 make of a request: its delivery, delay and
    /// effects; the decision but for its journal entry.
    struct Answer {
        var delivery: Decision.Delivery
        var delay: Double = 0
        var effects: Decision.Effects?
        /// What the journal keeps of a forwarded request, which has no response to carry it.
        var forwarded: (endpointID: String?, reason: Reason?, changes: [String])?

        init(_ delivery: Decision.Delivery) {
            self.delivery = delivery
        }

        static func forwarding(endpointID: String?, reason: Reason? = nil) -> Answer {
            var answer = Answer(.forward)
            answer.forwarded = (endpointID, reason, [])
            return answer
        }

        /// The state paths the request changed, for the journal.
        mutating func record(changes: [String]) {
            if forwarded != nil { forwarded!.changes = changes } else { delivery.changeResponse { $0.changes = changes } }
        }
    }

    /// Stage 7: writes a decided request's journal entry, once its answer is
    /// delivered. `status` is the status sent when it is not the decision's
    /// own (an upstream's, for a forwarded request, which is marked proxied).
    /// Returns the entry's sequence number; nil for an answer not journaled.
    @discardableResult
    public func complete(_ decision: Decision, status: Int? = nil, durationMicros: Int) -> Int? {
        guard let entry = decision.entry else { return nil }
        // An invalid id is never kept: it may be any size, and each distinct one would be a new key.
        return journal.record(
            time: entry.time, session: entry.session, method: entry.method, path: entry.path, query: entry.query,
            status: status ?? decision.response?.status ?? Problem.noUpstream.status, endpointID: entry.endpointID,
            responseName: entry.responseName, durationMicros: durationMicros, proxied: decision.forwards,
            reason: entry.reason, changes: entry.changes)
    }

    /// Decides and journals at once, for callers that deliver nothing over
    /// time (tests, scenarios and verification against the engine, and
    /// embedders reading only what would be sent): the response as a
    /// client reads it in full (`Decision.responseInFull`), without its delay.
    public func respond(to request: RecordedRequest) -> MockResponse {
        let decision = decide(request)
        let response = decision.responseInFull
        complete(decision, status: response.status, durationMicros: 0)
        return response
    }

    /// Stage 1: the endpoint for a request. `match` conditions see the
    /// request without state (at the session's time, `now`); the body is
    /// parsed for them only when some endpoint has one.
    private func route(_ request: RecordedRequest, context: EvaluationContext, now: () -> Double) -> EndpointRouter.Route {
        var matchContext: EvaluationContext?
        return router.route(method: request.method, path: request.path) { endpoint, parameters in
            if matchContext == nil {
                var base = context
                base.now = now()
                if let contentType = request.header("content-type"), MediaTypes.isJSON(contentType) {
                    base.roots[.body] = (try? JSONReader.parse(request.body)) ?? .null
                }
                matchContext = base
            }
            matchContext!.roots[.path] = Self.object(parameters)
            return endpoint.match.filter { !((try? $0.expression.test(in: matchContext!)) ?? false) }.map(\.expression.source)
        }
    }

    /// Whether answering `request` may read or change its session, by what
    /// `use` found in the contract: what a shared store asks before it
    /// loads the session. An invalid session id never reaches one.
    package func needsSession(_ request: RecordedRequest, use: SessionUse) -> Bool {
        guard SessionStore.isValid(id: request.sessionID) else { return false }
        if use.routingReadsSession { return true }
        let real = clock()
        let context = EvaluationContext(roots: baseRoots(sessionID: request.sessionID), now: real, request: request)
        switch route(request, context: context, now: { real }) {
        case .matched(let endpoint, _): return !use.sessionless.contains(endpoint.id)
        case .notFound, .methodNotAllowed: return !forwardsUnmatched && use.hasFallbacks
        }
    }

    /// Stages 1 to 6 for a request in a valid session; also returns the
    /// instant on the session's clock the request was answered at.
    private func answer(_ request: RecordedRequest, session: Session, real: Double) -> (Answer, now: Double) {
        let queryItems = request.queryItems
        // Query values are strings until validation reads them by their
        // schema. `now` is real time until the transaction reads the session's clock.
        var context = EvaluationContext(roots: baseRoots(sessionID: session.id), now: real, request: request)

        // 1. Route.
        let route = route(request, context: context, now: { session.now(real: real) })
        let endpoint: Endpoint
        let pathParameters: [String: String]
        switch route {
        case .matched(let found, let parameters):
            endpoint = found
            pathParameters = parameters
            if !parameters.isEmpty { context.roots[.path] = Self.object(parameters) }
        case .methodNotAllowed where forwardsUnmatched, .notFound where forwardsUnmatched:
            return (.forwarding(endpointID: nil), session.now(real: real))
        case .methodNotAllowed(let allowed):
            return fallback(
                for: Problem.methodNotAllowed(method: request.method, path: request.path, allowed: allowed), context: context, session: session)
        case .notFound(let nearMisses):
            // A path that lacks the contract's base_path, and would match with it, says so.
            var hint: String?
            let base = contract.basePath
            if !base.isEmpty, !request.path.hasPrefix(base + "/"), request.path != base,
                case .matched = router.route(method: request.method, path: base + request.path, conditions: { _, _ in [] })
            {
                hint = "The contract's base_path is \(base): did you mean \(request.method) \(base + request.path)?"
            }
            return fallback(
                for: Problem.noMatchingEndpoint(method: request.method, path: request.path, nearMisses: nearMisses, hint: hint),
                context: context, session: session)
        }

        // 2. Validate: reads only the request, so it runs outside the
        // session's lock; its verdict is applied in order inside it.
        let validation = validator.validate(request, queryItems: queryItems, pathParameters: pathParameters, for: endpoint)
        // The credentials are read from the request here too; only their check against state waits for the lock.
        let credentials = authenticator.present(request, queryItems: queryItems, endpoint: endpoint)

        // 3–6. Decide and render, in one transaction on the session, which
        // reads its clock too: a template that fails while rendering
        // abandons the effects the response applied, as a failed `when` does.
        var now = real
        do throws(Failure) {
            let answer = try session.transact { (data: inout SessionData) throws(Failure) -> Answer in
                now = data.clock.now(real: real)
                context.now = now
                var answer: Answer
                switch try verdict(
                    request, credentials: credentials, endpoint: endpoint, validation: validation, context: &context, data: &data, now: now)
                {
                case .forward:
                    answer = .forwarding(
                        endpointID: endpoint.id, reason: Reason("the endpoint is proxied (`proxy: true`) and nothing forces a response"))
                case .problem(let problem, let rateHeaders):
                    answer = Answer(.whole(problem.response(endpointID: endpoint.id).adding(rateHeaders)))
                case .respond(let chosen, let override, let rateHeaders, let why):
                    // The socket's rules see what the upgrade saw, the state read anew by each.
                    // A WebSocket opens with a 101; a gRPC stream with rules, with its OK (200).
                    let opens = endpoint.socket != nil ? 101 : contract.grpc?.streams[endpoint.id] != nil ? 200 : nil
                    let opening = opens.map { status in
                        (
                            status,
                            { (roots: Roots) in
                                SocketOpening(endpointID: endpoint.id, session: session.id, path: request.path, roots: roots, request: request)
                            }
                        )
                    }
                    answer = try render(
                        chosen, in: &context, override: override, adding: rateHeaders, endpointID: endpoint.id, why: why, opening: opening)
                }
                answer.record(changes: data.changedPaths)
                return answer
            }
            return (answer, now)
        } catch {
            return (Answer(.whole(error.problem(endpointID: endpoint.id).response(endpointID: endpoint.id))), now)
        }
    }

    /// Stage 6, at the end of the request's transaction: a chosen response
    /// rendered, with `extra` headers it does not set itself, `why` it was
    /// chosen, its (or the override's) delay and fault, its pushes and
    /// callbacks, and for the status `opening` opens with (a WebSocket's
    /// `101`, a gRPC stream with rules' `200`) the socket or stream it makes
    /// of what the request saw. A template that fails throws, so the transaction keeps
    /// none of the request's changes. The context lets go of the state it
    /// read, so the next write to the session's state does not copy it.
    private func render(
        _ chosen: ResponseDefinition, in context: inout EvaluationContext, override: Override?,
        adding extra: [(name: String, value: String)], endpointID: String?, why: Reason,
        opening: (status: Int, make: (Roots) -> SocketOpening)? = nil
    ) throws(Failure) -> Answer {
        defer { context.roots[.state] = nil }
        do {
            var definition = chosen
            if let fault = override?.fault { definition.fault = fault }
            var answer = Answer(try renderer.render(definition, in: context, endpointID: endpointID))
            answer.delivery.changeResponse { response in
                response.add(extra)
                response.reason = why
            }
            answer.delay = (override?.delay ?? definition.delay ?? defaultDelay)?.sample() ?? 0
            var socket: SocketOpening?
            if let opening, definition.status == opening.status {
                var roots = context.roots
                roots[.state] = nil
                socket = opening.make(roots)
            }
            if socket != nil || !definition.pushes.isEmpty || !definition.callbacks.isEmpty {
                answer.effects = Decision.Effects(
                    socket: socket, pushes: try Self.render(definition.pushes, in: context),
                    callbacks: try Self.render(definition.callbacks, in: context))
            }
            return answer
        } catch {
            throw .rendering(error, response: chosen.name)
        }
    }

    /// Doppel's own answer to a request no endpoint takes, or the contract's
    /// fallback for it: selected and rendered as any response is (in a
    /// transaction, for its effects and sequences), seeing `problem`, with
    /// the problem's headers (`Allow`) it does not set itself.
    /// `base.now` is real time; the session's clock is read in the transaction.
    private func fallback(for problem: Problem, context base: EvaluationContext, session: Session) -> (Answer, now: Double) {
        guard let definition = contract.fallback(for: problem) else { return (Answer(.whole(problem.response())), session.now(real: base.now)) }
        var context = base
        context.roots[.problem] = problem.json
        do throws(Failure) {
            let answer = try session.transact { (data: inout SessionData) throws(Failure) -> Answer in
                context.now = data.clock.now(real: base.now)
                let chosen: ResponseDefinition
                var why = Reason("the contract's fallback for \(problem.type.split(separator: ":").last ?? ""): \(problem.detail)")
                do throws(ResponseSelector.Failure) {
                    chosen = try selector.select(
                        from: [definition], forced: definition, endpointBindings: [], context: &context, data: &data,
                        sequenceScope: "fallbacks", why: &why)
                } catch {
                    throw .selection(error)
                }
                var answer = try render(chosen, in: &context, override: nil, adding: problem.headers, endpointID: nil, why: why)
                answer.record(changes: data.changedPaths)
                return answer
            }
            return (answer, context.now)
        } catch {
            return (Answer(.whole(error.problem(endpointID: "fallbacks").response())), context.now)
        }
    }

}

extension MockResponse {
    /// Adds `extra` headers, but not those the response sets itself (a
    /// contract's 429 that writes its own `Retry-After` sends that one alone).
    mutating func add(_ extra: [(name: String, value: String)]) {
        for header in extra where !headers.contains(where: { $0.name.caseInsensitiveEquals(header.name) }) {
            headers.append(header)
        }
    }

    /// As `add(_:)`, on a copy.
    func adding(_ extra: [(name: String, value: String)]) -> MockResponse {
        guard !extra.isEmpty else { return self }
        var copy = self
        copy.add(extra)
        return copy
    }
}
