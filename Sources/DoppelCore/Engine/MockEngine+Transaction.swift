import Foundation

/// Stages 3 to 5 in the session's transaction: what a request's transaction decides, and why one is abandoned.
extension MockEngine {
    /// What a request's transaction decided.
    enum Verdict {
        /// A `proxy: true` endpoint's request that no override or `Prefer` answers: the upstream's to answer.
        case forward
        /// A problem of Doppel's own (a validation failure without `on_invalid`, an unreadable body).
        case problem(Problem, rateHeaders: [(name: String, value: String)])
        /// A response chosen (and its effects applied) for the transaction to render, and why it was.
        case respond(ResponseDefinition, override: Override?, rateHeaders: [(name: String, value: String)], why: Reason)
    }

    /// Why a request's transaction was abandoned; nothing of it is kept.
    enum Failure: Error {
        case rateLimitKey(EvaluationError)
        case selection(ResponseSelector.Failure)
        /// A template of the chosen response failed (`response` names it).
        case rendering(EvaluationError, response: String)

        func problem(endpointID: String) -> Problem {
            switch self {
            case .rateLimitKey(let error):
                return Problem.evaluationFailed(error, endpointID: endpointID, response: "rate limit key")
            case .selection(.noResponseMatched):
                return Problem.noResponseMatched(endpointID: endpointID)
            case .rendering(let error, let response):
                return Problem.evaluationFailed(error, endpointID: endpointID, response: response)
            case .selection(.expressionFailed(let response, let message, let exceedsBudget)):
                return Problem.evaluationFailed(EvaluationError(message, exceedsBudget: exceedsBudget), endpointID: endpointID, response: response)
            }
        }
    }

    /// Stages 3 to 5, inside the session's transaction, so that everything a
    /// request reads and changes in its session is one atomic step: the call
    /// count and its scenario override, issued tokens, rate windows,
    /// sequence positions, selection and effects. A token revoked by a
    /// concurrent request is already gone here; a request that fails on the
    /// way (a broken expression) leaves no count, window or effect behind.
    ///
    /// Order, first answer wins: authentication (the scheme's documented
    /// failure), the rate limit (its 429; only authenticated requests are
    /// counted, valid or not, as a gateway in front of the API would), the
    /// validation verdict (`on_invalid`, or a 422/415/400 problem), then the
    /// request's `Prefer`, then the active scenario's override, then the
    /// contract's own choice.
    func verdict(
        _ request: RecordedRequest, credentials: Authenticator.Presented, endpoint: Endpoint, validation: RequestValidator.Outcome,
        context: inout EvaluationContext, data: inout SessionData, now: Double
    ) throws(Failure) -> Verdict {
        let call = data.countCall(to: endpoint.id)
        // A forced answer waits until a call gets as far as the contract's choice (not one refused before it).
        let forcedNext = data.forced.first { $0.endpointID == endpoint.id }
        let override = forcedNext ?? data.scenario?.overrides.first { $0.endpointID == endpoint.id && $0.applies(toCall: call) }
        // A proxied endpoint is mocked only where a scenario or the client asks for a response.
        if endpoint.proxy, override == nil, request.header("prefer") == nil { return .forward }
        let answering = Answering(request: request, endpoint: endpoint, override: override)

        // 3. Authenticate, against this transaction's state.
        switch authenticator.authenticate(credentials, endpoint: endpoint, state: data.state, now: now) {
        case .accepted(let auth): context.roots[.auth] = auth
        case .rejected(let failure, let why): return try respond(failure, answering, rateHeaders: [], why: why, context: &context, data: &data)
        }

        // 4. Rate-limit, then the validation verdict.
        let (rateHeaders, limited) = try rateLimit(answering, context: &context, data: &data, now: now)
        if let limited { return limited }
        if let refused = try validated(validation, answering, rateHeaders: rateHeaders, context: &context, data: &data) { return refused }

        // A WebSocket endpoint takes only an upgrade (after the checks every request has).
        if let socket = endpoint.socket, let problem = Self.handshakeProblem(request, socket: socket) {
            return .problem(problem, rateHeaders: rateHeaders)
        }

        // 5. The request's own `Prefer`, else a scenario's forced response,
        // stands in for the contract's choice.
        if let preference = Preference(header: request.header("prefer")) {
            let documented = contract.documentedResponses(of: endpoint)
            guard let preferred = preference.response(in: documented) else {
                return .problem(Problem.unknownPreference(preference, endpointID: endpoint.id, documented: documented), rateHeaders: rateHeaders)
            }
            return try respond(
                preferred, answering, rateHeaders: rateHeaders, why: "the request's `Prefer: \(preference.description)`", bindingEndpoint: true,
                context: &context, data: &data)
        }
        if let override, let response = override.response {
            if forcedNext != nil { data.takeForced(endpointID: endpoint.id) }
            let why =
                forcedNext != nil
                ? "forced as this call's answer through the admin API (POST /__doppel/next)"
                : "scenario '\(data.scenario?.name ?? "")' overrides \(override.call.map { "call \($0)" } ?? "every call")"
            return try respond(
                response, answering, rateHeaders: rateHeaders, why: why, bindingEndpoint: true, context: &context, data: &data)
        }
        var why: String?
        if let override, forcedNext == nil {
            why = "scenario '\(data.scenario?.name ?? "")' sets its \(override.fault != nil ? "fault" : "delay")"
        }
        return try respond(nil, answering, rateHeaders: rateHeaders, why: why, context: &context, data: &data)
    }

    /// What every step of one request's verdict answers about.
    struct Answering {
        let request: RecordedRequest
        let endpoint: Endpoint
        /// The forced answer or scenario override this call takes, if any.
        let override: Override?
    }

    /// The response to answer with: `forced` (an auth failure's, a rate
    /// limit's, `on_invalid`, a preference or an override) or the
    /// contract's choice, with its effects applied, negotiated by `Accept`.
    private func respond(
        _ forced: ResponseDefinition?, _ answering: Answering, rateHeaders: [(name: String, value: String)], why given: String? = nil,
        bindingEndpoint: Bool = false, context: inout EvaluationContext, data: inout SessionData
    ) throws(Failure) -> Verdict {
        let (request, endpoint, override) = (answering.request, answering.endpoint, answering.override)
        do {
            var why = Reason(given)
            var bindings = forced == nil || bindingEndpoint ? endpoint.bindings : []
            if bindingEndpoint {
                // A forced, preferred or scenario-given answer renders as the contract's own would (its `let`s
                // bound), unless they cannot be bound in this request, which
                // changes nothing (bindings are evaluated before any effect).
                var trial = context
                trial.roots[.state] = .object(data.state)
                for (name, template) in bindings {
                    guard let value = try? template.render(in: trial) else {
                        bindings = []
                        break
                    }
                    trial.roots[bound: name] = value
                }
            }
            let chosen = try selector.select(
                from: endpoint.responses, forced: forced, endpointBindings: bindings,
                context: &context, data: &data, sequenceScope: endpoint.id, why: &why)
            guard endpoint.negotiates else { return .respond(chosen, override: override, rateHeaders: rateHeaders, why: why) }
            switch Negotiation.negotiate(chosen, of: endpoint, accept: request.header("accept")) {
            case .keep: return .respond(chosen, override: override, rateHeaders: rateHeaders, why: why)
            case .use(let other):
                why.after = "its `\(other.body.contentType ?? "")` form, by Accept"
                return .respond(other, override: override, rateHeaders: rateHeaders, why: why)
            case .refuse(let available):
                return .problem(.notAcceptable(request.header("accept") ?? "", available: available), rateHeaders: rateHeaders)
            }
        } catch {
            throw .selection(error)
        }
    }

    /// Stage 4: the rate limit's headers, and its 429 when a limit refuses
    /// the request (only authenticated requests get here, valid or not, as
    /// a gateway in front of the API counts them).
    private func rateLimit(
        _ answering: Answering, context: inout EvaluationContext, data: inout SessionData, now: Double
    ) throws(Failure) -> ([(name: String, value: String)], Verdict?) {
        let limited: RateLimiter.Decision?
        do {
            limited = try rateLimiter.check(endpointID: answering.endpoint.id, context: context, data: &data, now: now)
        } catch {
            throw .rateLimitKey(error)
        }
        guard let limited else { return ([], nil) }
        context.roots[.rateLimit] = limited.value
        var rateHeaders = limited.headers
        guard let limit = limited.refusedBy else { return (rateHeaders, nil) }
        context.roots[.retryAfter] = .int(limited.retryAfter)
        rateHeaders.append((name: "Retry-After", value: String(limited.retryAfter)))
        let window = limit.window.truncatingRemainder(dividingBy: 1) == 0 ? "\(Int(limit.window)) s" : "\(limit.window) s"
        let refused = try respond(
            limit.response, answering, rateHeaders: rateHeaders,
            why: "rate limit '\(limit.name)' reached: \(limit.limit) requests per \(window); free again in \(limited.retryAfter) s",
            context: &context, data: &data)
        return (rateHeaders, refused)
    }

    /// The validation verdict: nil for a valid request (its parts in the
    /// context), else its `on_invalid` or fallback answer, or Doppel's problem.
    private func validated(
        _ validation: RequestValidator.Outcome, _ answering: Answering, rateHeaders: [(name: String, value: String)],
        context: inout EvaluationContext, data: inout SessionData
    ) throws(Failure) -> Verdict? {
        let endpoint = answering.endpoint
        switch validation {
        case .valid(let parts):
            context.use(parts)
            return nil
        case .invalid(let issues, let parts):
            let problem = Problem.validationFailed(issues)
            guard let onInvalid = endpoint.onInvalid ?? contract.fallbacks[.validationFailed] else {
                return .problem(problem, rateHeaders: rateHeaders)
            }
            context.use(parts)
            context.roots[.errors] = .array(issues.map(\.json))
            context.roots[.problem] = problem.json
            return try respond(
                onInvalid, answering, rateHeaders: rateHeaders, why: "the request is invalid: \(problem.detail)", context: &context, data: &data)
        case .rejected(let problem):
            // A body that cannot be read (malformed JSON or multipart, 400) gets
            // the endpoint's own 400 where it documents one, else the contract's fallback.
            let documented = problem.status == 400 ? endpoint.onInvalid.flatMap { $0.status == 400 ? $0 : nil } : nil
            guard let fallback = documented ?? contract.fallback(for: problem) else { return .problem(problem, rateHeaders: rateHeaders) }
            context.roots[.problem] = problem.json
            if documented != nil {
                context.roots[.errors] = .array([.object(JSONObject([("pointer", "/body"), ("message", .string(problem.detail))]))])
            }
            return try respond(
                fallback, answering, rateHeaders: rateHeaders, why: "the request cannot be read: \(problem.detail)", context: &context, data: &data)
        }
    }

    /// The roots every request starts with; `request`, `headers`, `client`
    /// and `query` are derived from the request where they are read
    /// (`EvaluationContext.request`).
    func baseRoots(sessionID: String) -> Roots {
        var roots = Roots()
        roots[.path] = .object(JSONObject())
        roots[.body] = .null
        roots[.auth] = .null
        roots[.session] = .string(sessionID)
        roots[.data] = contract.data
        return roots
    }

    /// Path parameters as the `path` root, in name order.
    static func object(_ pairs: [String: String]) -> JSON {
        .object(JSONObject(pairs.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))
    }
}
