extension ContractLoader {
    static let rateLimitKeys: Set<String> = ["key", "limit", "window", "algorithm", "endpoints", "response", "description"]

    /// Reads `rate_limits`: a key, a limit per window, the endpoints covered, the documented 429.
    mutating func readRateLimits(_ node: SourceNode?, endpointIDs: Set<String>) -> [RateLimit] {
        guard let node else { return [] }
        var limits: [RateLimit] = []
        for entry in MappingReader.entries(of: node, context: "rate_limits", diagnostics: &diagnostics) {
            let context = "rate limit '\(entry.name)'"
            guard let spec = MappingReader(entry.value, allowed: Self.rateLimitKeys, context: context, diagnostics: &diagnostics) else { continue }
            guard let keyNode = spec.required("key", diagnostics: &diagnostics),
                  let key = compileExpression(keyNode, roots: Self.requestRoots.subtracting(["state"]))
            else { continue }
            guard let limit = spec.int("limit", diagnostics: &diagnostics), limit >= 0 else {
                diagnostics.error("\(context) needs 'limit': how many requests a window allows", at: spec["limit"]?.location ?? entry.value.location)
                continue
            }
            guard let windowNode = spec.required("window", diagnostics: &diagnostics) else { continue }
            guard let window = windowNode.scalarText.flatMap(Duration.parse), window.months == 0, window.seconds > 0 else {
                diagnostics.error("'window' of \(context) must be a duration like 1m, 30s or 1h", at: windowNode.location)
                continue
            }
            var algorithm = RateLimit.Algorithm.fixed
            if let algorithmNode = spec["algorithm"], let text = algorithmNode.scalarText {
                guard let parsed = RateLimit.Algorithm(rawValue: text) else {
                    diagnostics.error("'algorithm' of \(context) must be fixed or sliding", at: algorithmNode.location)
                    continue
                }
                algorithm = parsed
            }
            var endpoints: Set<String>?
            if let endpointsNode = spec["endpoints"] {
                let items = endpointsNode.sequenceItems ?? [endpointsNode]
                endpoints = []
                for item in items {
                    guard let id = item.scalarText, endpointIDs.contains(id) else {
                        let id = item.scalarText ?? "?"
                        diagnostics.error("\(context) covers unknown endpoint '\(id)'\(Suggestion.hint(for: id, in: endpointIDs))", at: item.location)
                        continue
                    }
                    endpoints?.insert(id)
                }
            }
            let response: ResponseDefinition
            if let responseNode = spec["response"] {
                guard let read = readResponseReference(responseNode, name: "\(entry.name).response", scope: Self.requestRoots.union(["retry_after"]), endpointLets: []) else { continue }
                response = read
            } else {
                response = Self.defaultTooManyRequests(at: entry.value.location)
            }
            limits.append(RateLimit(name: entry.name, key: key, limit: limit, window: window.seconds, algorithm: algorithm, endpoints: endpoints, response: response))
        }
        return limits
    }

    /// The built-in 429 for a rate limit that declares no `response`.
    static func defaultTooManyRequests(at location: SourceLocation) -> ResponseDefinition {
        let body: ValueTemplate = .object([
            ("type", .constant("urn:doppel:problem:rate-limited")), ("title", .constant("Too many requests")), ("status", .constant(429)),
            ("detail", .interpolated([.text("Rate limit exceeded; retry in "), .expression(try! Expression.parse("retry_after")), .text(" s.")])),
        ])
        return ResponseDefinition(
            name: "rate-limited", when: nil, status: 429, headers: [], body: .json(body, encoded: nil, contentType: "application/problem+json"),
            bindings: [], effects: [], location: location)
    }
}
