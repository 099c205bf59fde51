/// The engine's decision for one request (`MockEngine.decide(_:)`): what to
/// send, when, and how. The transport delivers it and then completes its
/// journal entry (`MockEngine.complete(_:status:durationMicros:)`), in one
/// place for every kind of answer.
public struct Decision: Sendable {
    /// How the answer reaches the client.
    public enum Delivery: Sendable, Equatable {
        /// The response whole: head and body.
        case whole
        /// The response's head now, then its body in parts, each after its pause.
        case stream([StreamPart])
        /// A deliberate failure of the connection instead of (or in the middle of) the response.
        case fault(Fault)
        /// The upstream's answer instead (`doppel serve --proxy`); `response`
        /// is what a transport without an upstream sends (502).
        case forward
    }

    /// The journal entry's facts from the request, kept until the answer is delivered.
    package struct Entry: Sendable {
        package let time: Double
        package let session: String
        package let method: String
        package let path: String
        package let query: String?
    }

    /// Status, headers and body (for a stream, its head; for a fault, what the fault breaks).
    public var response: MockResponse
    /// Seconds to wait before the answer's first byte.
    public var delay: Double
    /// How the answer reaches the client, once `delay` has passed.
    public var delivery: Delivery
    /// Nil for an answer that is not journaled (the admin API's).
    package let entry: Entry?

    init(_ response: MockResponse, entry: Entry?) {
        self.response = response
        self.delay = response.delay
        if response.forward {
            delivery = .forward
        } else if let fault = response.fault {
            delivery = .fault(fault)
        } else if let stream = response.stream {
            delivery = .stream(stream)
        } else {
            delivery = .whole
        }
        self.entry = entry
    }

    /// An answer delivered whole and not journaled (the admin API's).
    public init(unjournaled response: MockResponse) {
        self.init(response, entry: nil)
    }
}
