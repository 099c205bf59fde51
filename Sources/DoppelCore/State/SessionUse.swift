/// Which requests read or change their session, found from the contract
/// when it loads.
///
/// A store shared by replicas (`doppel serve --state-store`) runs a
/// database transaction for each request that does; a request to an
/// endpoint that does not (no auth checked against state or the clock, no
/// rate limit, no sequence, no effects, no `when`, template or binding
/// that reads `state`, `clock` or `now()`, no scenario override) gets the
/// same answer from any session, so a replica answers it from a blank one.
/// The analysis errs one way only: anything it cannot rule out counts as
/// reading the session.
package struct SessionUse: Sendable {
    /// Ids of the endpoints whose answers never depend on their session.
    package let sessionless: Set<String>
    /// Whether some endpoint's `match` reads the session, so that routing itself needs it.
    package let routingReadsSession: Bool
    /// Whether the contract has fallbacks (`fallbacks:`), whose answers go through the session.
    package let hasFallbacks: Bool

    /// - Parameter overridden: ids of endpoints some scenario the server
    ///   knows overrides (its catalogue, `--scenario`).
    package init(contract: Contract, overridden: Set<String>) {
        routingReadsSession = contract.endpoints.contains { endpoint in endpoint.match.contains { Self.reads($0.expression) } }
        hasFallbacks = !contract.fallbacks.isEmpty
        sessionless = Set(
            contract.endpoints.filter { endpoint in
                !overridden.contains(endpoint.id) && !Self.readsSession(endpoint, in: contract)
            }.map(\.id))
    }

    /// Whether answering `endpoint` may read or change its session.
    static func readsSession(_ endpoint: Endpoint, in contract: Contract) -> Bool {
        if contract.rateLimits.contains(where: { $0.covers(endpoint.id) }) { return true }
        for name in endpoint.auth {
            // Issued tokens are looked up in state; a JWT's expiry is checked against the session's clock.
            guard let scheme = contract.authSchemes[name] else { return true }
            if scheme.issued != nil || scheme.format != nil { return true }
            if reads(scheme.failure) || scheme.expired.map(reads) == true { return true }
        }
        if endpoint.bindings.contains(where: { reads($0.1) }) { return true }
        let responses = endpoint.responses + endpoint.documented + [endpoint.onInvalid, endpoint.onUnauthorized].compactMap { $0 }
        return responses.contains(where: reads)
    }

    /// Whether a response reads or changes the session when chosen or rendered.
    static func reads(_ response: ResponseDefinition) -> Bool {
        if !response.effects.isEmpty || response.sequence != nil || response.stream != nil { return true }
        if let when = response.when, reads(when) { return true }
        if response.headers.contains(where: { reads($0.1) }) || response.bindings.contains(where: { reads($0.1) }) { return true }
        switch response.body {
        case .empty, .bytes: return false
        case .json(let template, _, _), .text(let template, _): return reads(template)
        }
    }

    static func reads(_ template: ValueTemplate) -> Bool {
        template.expressions.contains(where: reads)
    }

    static func reads(_ expression: Expression) -> Bool {
        reads(expression.root)
    }

    /// `state` or `clock` named, `now()` or an unknown function called, anywhere in the expression.
    private static func reads(_ node: Expression.Node) -> Bool {
        switch node {
        case .literal: false
        case .name(let name, let slot, _): slot == .state || slot == .clock || name == "state" || name == "clock"
        case .member(let base, _, _): reads(base)
        case .index(let base, let index): reads(base) || reads(index)
        case .call(let call): call.function == nil || call.function == .now || call.arguments.contains(where: reads)
        case .not(let inner), .negate(let inner): reads(inner)
        case .binary(_, let left, let right), .and(let left, let right), .or(let left, let right), .coalesce(let left, let right):
            reads(left) || reads(right)
        case .array(let items): items.contains(where: reads)
        case .object(let members): members.contains { reads($0.1) }
        case .lambda(_, let body): reads(body)
        }
    }
}
