/// The values an expression can see: named roots (`body`, `query`, `state`,
/// `data`, `clock`, `let` bindings, ...) and the session's clock.
public struct EvaluationContext: Sendable {
    /// Root names and their values.
    public var roots: [String: JSON]
    /// The session clock's current instant, in seconds since 1970 (UTC).
    public var now: Double

    public init(roots: [String: JSON] = [:], now: Double) {
        self.roots = roots
        self.now = now
    }
}

extension EvaluationContext {
    /// Makes validated request parts (typed query, headers and body) visible to expressions.
    mutating func use(_ parts: RequestValidator.ValidatedRequest) {
        roots["query"] = parts.query
        if let headers = parts.headers { roots["headers"] = headers }
        roots["body"] = parts.body
    }
}
