extension ContractLoader {
    static let rateLimitKeys: Set<String> = ["key", "limit", "window", "algorithm", "endpoints", "response", "description"]

    /// Reads `rate_limits`: a key, a limit per window, the endpoints covered
    /// (of every one: all but `uncounted`), the documented 429.
    mutating func readRateLimits(_ node: SourceNode?, endpointIDs: Set<String>, uncounted: Set<String> = []) -> [RateLimit] {
        guard let node else { return [] }
        var limits: [RateLimit] = []
        for entry in MappingReader.entries(of: node, context: "rate_limits", diagnostics: &diagnostics) {
            let context = "rate limit '\(entry.name)'"
            guard let spec = MappingReader(entry.value, allowed: Self.rateLimitKeys, context: context, diagnostics: &diagnostics) else { continue }
            // Each field is checked even when an earlier one is wrong, so
            // every problem is reported at once.
            let key = spec.required("key", diagnostics: &diagnostics).flatMap {
                compileExpression($0, roots: Self.requestRoots.subtracting(["state"]))
            }
            let limit = spec.int("limit", diagnostics: &diagnostics)
            if spec.has("limit"), let limit, limit < 0 {
                diagnostics.error("'limit' of \(context) cannot be negative", at: spec["limit"]!.location)
            } else if !spec.has("limit") {
                diagnostics.error("\(context) needs 'limit': how many requests a window allows", at: entry.value.location)
            }
            var window: CalendarDuration?
            if let windowNode = spec.required("window", diagnostics: &diagnostics) {
                window = windowNode.scalarText.flatMap(CalendarDuration.parse)
                if window == nil || window!.months != 0 || window!.seconds <= 0 {
                    diagnostics.error("'window' of \(context) must be a duration like 1m, 30s or 1h", at: windowNode.location)
                    window = nil
                }
            }
            var algorithm: RateLimit.Algorithm? = .fixed
            if let algorithmNode = spec["algorithm"], let text = algorithmNode.scalarText {
                algorithm = RateLimit.Algorithm(rawValue: text)
                if algorithm == nil { diagnostics.error("'algorithm' of \(context) must be fixed or sliding", at: algorithmNode.location) }
            }
            var endpoints: Set<String>?
            if let endpointsNode = spec["endpoints"] {
                endpoints = []
                for item in endpointsNode.sequenceItems ?? [endpointsNode] {
                    let id = item.scalarText ?? "?"
                    if endpointIDs.contains(id) {
                        endpoints?.insert(id)
                    } else {
                        diagnostics.error("\(context) covers unknown endpoint '\(id)'\(Suggestion.hint(for: id, in: endpointIDs))", at: item.location)
                    }
                }
            }
            var response: ResponseDefinition? = Self.defaultTooManyRequests(at: entry.value.location)
            if let responseNode = spec["response"] {
                response = readResponseReference(
                    responseNode, name: "\(entry.name).response", scope: Self.requestRoots.union(["retry_after"]), endpointLets: [])
            }
            guard let key, let limit, limit >= 0, let window, let algorithm, let response else { continue }
            // A limit of every endpoint covers the requests clients send: not the calls the GraphQL door makes of its resolvers.
            if endpoints == nil, !uncounted.isEmpty { endpoints = endpointIDs.subtracting(uncounted) }
            limits.append(
                RateLimit(
                    name: entry.name, key: key, limit: limit, window: window.seconds, algorithm: algorithm, endpoints: endpoints, response: response))
        }
        return limits
    }

    /// The built-in 429 for a rate limit that declares no `response`.
    static func defaultTooManyRequests(at location: SourceLocation) -> ResponseDefinition {
        let body: ValueTemplate = .object(
            ObjectTemplate([
                ("type", .constant("urn:doppel:problem:rate-limited")), ("title", .constant("Too many requests")), ("status", .constant(429)),
                (
                    "detail",
                    .interpolated([.text("Rate limit exceeded; retry in "), .expression(try! Expression.parse("retry_after")), .text(" s.")])
                ),
            ]))
        return ResponseDefinition(
            name: "rate-limited", when: nil, status: 429, headers: [], body: .json(body, encoded: nil, contentType: "application/problem+json"),
            bindings: [], effects: [], location: location)
    }
}
