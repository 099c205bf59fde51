import NIOCore

/// The token bucket that bounds how fast a client may send an open
/// WebSocket or gRPC stream its messages: `rate` a second on average, a
/// burst of as many.
struct MessageRate {
    private var tokens: Double
    private var refilled = NIODeadline.now()

    init(rate: Double) {
        tokens = rate
    }

    /// Takes a token for one message; false when none is left.
    mutating func take(rate: Double) -> Bool {
        let now = NIODeadline.now()
        tokens = min(rate, tokens + Double((now - refilled).nanoseconds) / 1e9 * rate)
        refilled = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
