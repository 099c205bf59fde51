/// How long to wait before answering: a fixed time or a random one in a range.
public struct Delay: Sendable, Equatable {
    /// The shortest delay, in seconds.
    public var minimum: Double
    /// The longest delay, in seconds (equal to `minimum` for a fixed delay).
    public var maximum: Double

    /// A delay drawn uniformly between `minimum` and `maximum` seconds.
    public init(minimum: Double, maximum: Double) {
        self.minimum = minimum
        self.maximum = max(minimum, maximum)
    }

    /// A delay of exactly `seconds`.
    public static func fixed(_ seconds: Double) -> Delay { Delay(minimum: seconds, maximum: seconds) }

    /// A delay drawn from the range.
    public func sample() -> Double {
        minimum == maximum ? minimum : Double.random(in: minimum...maximum)
    }

    /// Parses `250ms`, or `100ms-300ms` / `100ms..300ms` for a range.
    public static func parse(_ text: String) -> Delay? {
        for separator in ["..", "-"] where text.contains(separator) {
            let parts = text.components(separatedBy: separator)
            guard parts.count == 2, let low = CalendarDuration.parse(parts[0]), let high = CalendarDuration.parse(parts[1]),
                low.months == 0, high.months == 0, high.seconds >= low.seconds
            else { return nil }
            return Delay(minimum: low.seconds, maximum: high.seconds)
        }
        guard let duration = CalendarDuration.parse(text), duration.months == 0 else { return nil }
        return .fixed(duration.seconds)
    }
}

/// A way to break a response on purpose, as networks and upstreams do.
public enum Fault: String, Sendable, CaseIterable {
    /// Reset the connection (TCP RST) before sending any byte.
    case connectionReset = "connection_reset"
    /// Close the connection without sending any byte.
    case emptyReply = "empty_reply"
    /// Send the headers and half of the body, then close the connection.
    case truncatedBody = "truncated_body"
    /// Send a complete response whose JSON body is cut short.
    case malformedJSON = "malformed_json"
    /// Send nothing and keep the connection open until the client gives up
    /// (or the server's hang limit passes).
    case noAnswer = "no_answer"
}

/// A body sent in parts over time: chunks, or Server-Sent Events.
package enum StreamDefinition: Sendable {
    /// Chunks of text, `interval` apart.
    case chunks([ValueTemplate], interval: Double, contentType: String)
    /// Server-Sent Events, each after its own delay.
    case events([EventDefinition])
    /// Items of a sequential media type (`items`: JSON Lines, JSON text
    /// sequences, events, multipart/mixed), each written as its framing
    /// says, `interval` apart.
    case items([ValueTemplate], interval: Double, media: SequentialMedia, contentType: String)
    /// Items of a sequential media type from one template whose value is
    /// the list (`items: "{{ map(…) }}"`), rendered per request: at most
    /// `maximumItems` of them.
    case itemsOf(ValueTemplate, interval: Double, media: SequentialMedia, contentType: String)

    /// The most items one `itemsOf` template may give.
    package static let maximumItems = 10_000

    package var contentType: String {
        switch self {
        case .chunks(_, _, let type), .items(_, _, _, let type), .itemsOf(_, _, _, let type): type
        case .events: "text/event-stream"
        }
    }
}

/// One Server-Sent Event.
package struct EventDefinition: Sendable {
    package let event: String?
    package let data: ValueTemplate
    package let id: String?
    package let retry: Int?
    /// Seconds to wait before sending this event.
    package let delay: Double
}

/// The n-th call answered by the n-th response of a list.
package struct SequenceDefinition: Sendable {
    /// What happens after the last response.
    package enum Exhausted: String, Sendable {
        /// Keep answering with the last response.
        case repeatLast = "repeat_last"
        /// Start again from the first.
        case cycle
    }

    package let responses: [ResponseDefinition]
    package let exhausted: Exhausted
    /// Counts separately per value of this expression (e.g. `auth.token`);
    /// nil counts once per session.
    package let key: Expression?
}

/// A limit on how many requests a key may make in a window of time.
package struct RateLimit: Sendable {
    package enum Algorithm: String, Sendable {
        /// Windows that start at a key's first request and last `window`.
        case fixed
        /// The last `window` of time, whenever the request comes.
        case sliding
    }

    package let name: String
    /// What is counted: `auth.token`, `session`, `headers['x-api-key']`, `client.address`.
    package let key: Expression
    package let limit: Int
    /// Window length in seconds.
    package let window: Double
    package let algorithm: Algorithm
    /// Endpoint ids covered; nil covers every endpoint.
    package let endpoints: Set<String>?
    /// The documented response for a limited request.
    package let response: ResponseDefinition

    package func covers(_ endpointID: String) -> Bool {
        endpoints?.contains(endpointID) ?? true
    }
}
