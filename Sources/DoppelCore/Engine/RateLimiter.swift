/// Stage 4: counts requests against the contract's rate limits, per key,
/// on the session's clock.
package struct RateLimiter: Sendable {
    let limits: [RateLimit]

    package init(limits: [RateLimit]) {
        self.limits = limits
    }

    /// What the limits decided for one request.
    package struct Decision: Sendable {
        /// The limit that refused the request, if any.
        package var refusedBy: RateLimit?
        /// Whole seconds until the refusing limit frees a slot.
        package var retryAfter: Int
        /// `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` of the tightest limit.
        package var headers: [(name: String, value: String)]
        /// The tightest limit as expressions see it, `rate_limit`:
        /// `{name, limit, remaining, reset}` (the refusing one when refused).
        package var value: JSON
    }

    /// Checks and counts a request to `endpointID` in `data`, which the
    /// caller holds for the whole request; nil when no limit covers it.
    ///
    /// Counting happens only when every covering limit has room, so
    /// concurrent requests never overrun a limit and a refused request uses
    /// up nothing; a request whose transaction later fails keeps nothing.
    package func check(endpointID: String, context: EvaluationContext, data: inout SessionData, now: Double) throws(EvaluationError) -> Decision? {
        let covering = limits.filter { $0.covers(endpointID) }
        guard !covering.isEmpty else { return nil }
        var keys: [String] = []
        for limit in covering {
            keys.append(limit.name + "|" + (try limit.key.evaluate(in: context)).interpolationText)
        }
        var windows: [RateWindow] = []
        for (limit, key) in zip(covering, keys) {
            var window = data.rateWindows[key] ?? RateWindow()
            Self.expire(&window, limit, now)
            if Self.used(window, limit) >= limit.limit {
                let retry = Self.secondsUntilFree(window, limit, now)
                return Decision(
                    refusedBy: limit, retryAfter: retry, headers: Self.headers(limit, remaining: 0, reset: retry),
                    value: Self.value(limit, remaining: 0, reset: retry))
            }
            windows.append(window)
        }
        var tightest: (limit: RateLimit, remaining: Int, reset: Int)?
        for (index, limit) in covering.enumerated() {
            var window = windows[index]
            if limit.algorithm == .fixed {
                if window.count == 0 { window.start = now }
                window.count += 1
            } else {
                window.hits.append(now)
            }
            data.setRateWindow(window, for: keys[index])
            let remaining = limit.limit - Self.used(window, limit)
            if tightest == nil || remaining < tightest!.remaining {
                tightest = (limit, remaining, Self.secondsUntilReset(window, limit, now))
            }
        }
        let (limit, remaining, reset) = tightest!
        return Decision(
            refusedBy: nil, retryAfter: 0, headers: Self.headers(limit, remaining: remaining, reset: reset),
            value: Self.value(limit, remaining: remaining, reset: reset))
    }

    /// Drops what has left the window.
    static func expire(_ window: inout RateWindow, _ limit: RateLimit, _ now: Double) {
        switch limit.algorithm {
        case .fixed:
            if window.count > 0, now >= window.start + limit.window { window = RateWindow() }
        case .sliding:
            window.hits.removeAll { $0 <= now - limit.window }
        }
    }

    static func used(_ window: RateWindow, _ limit: RateLimit) -> Int {
        limit.algorithm == .fixed ? window.count : window.hits.count
    }

    /// Seconds until a refused key may try again (at least 1).
    static func secondsUntilFree(_ window: RateWindow, _ limit: RateLimit, _ now: Double) -> Int {
        let freeAt = limit.algorithm == .fixed ? window.start + limit.window : (window.hits.first ?? now) + limit.window
        return max(1, Int((freeAt - now).rounded(.up)))
    }

    /// Seconds until the window's count is back to zero.
    static func secondsUntilReset(_ window: RateWindow, _ limit: RateLimit, _ now: Double) -> Int {
        let resetAt = limit.algorithm == .fixed ? window.start + limit.window : (window.hits.last ?? now) + limit.window
        return max(0, Int((resetAt - now).rounded(.up)))
    }

    static func value(_ limit: RateLimit, remaining: Int, reset: Int) -> JSON {
        .object(
            JSONObject([
                ("name", .string(limit.name)), ("limit", .int(limit.limit)), ("remaining", .int(max(0, remaining))), ("reset", .int(reset)),
            ]))
    }

    static func headers(_ limit: RateLimit, remaining: Int, reset: Int) -> [(name: String, value: String)] {
        [
            (name: "RateLimit-Limit", value: String(limit.limit)), (name: "RateLimit-Remaining", value: String(max(0, remaining))),
            (name: "RateLimit-Reset", value: String(reset)),
        ]
    }
}
