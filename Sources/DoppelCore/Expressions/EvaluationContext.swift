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
