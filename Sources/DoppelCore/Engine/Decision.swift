/// The engine's decision for one request (`MockEngine.decide(_:)`): what to
/// send, when, and how, and what else the answer does once it is out. The
/// transport delivers it and then completes its journal entry
/// (`MockEngine.complete(_:status:durationMicros:)`), in one place for every
/// kind of answer.
public struct Decision: Sendable {
    /// How the answer reaches the client, with what it sends.
    public enum Delivery: Sendable {
        /// The response whole: head and body.
        case whole(MockResponse)
        /// The response's head now, then its body in parts, each after its pause.
        case stream(MockResponse, [StreamPart])
        /// A deliberate failure of the connection instead of (or in the middle
        /// of) the response; the response is what the fault breaks.
        case fault(MockResponse, Fault)
        /// The upstream's answer (`doppel serve --proxy`): the engine sends nothing of its own.
        case forward
    }

    /// What an answer does besides itself, once it is delivered: few answers
    /// have any, so it is one optional reference.
    package final class Effects: Sendable {
        /// An upgrade answered `101` at a WebSocket endpoint: what the socket's rules see.
        package let socket: SocketOpening?
        /// Messages for the session's open sockets (the chosen response's `push`).
        package let pushes: [RenderedPush]
        /// Requests for the server to make (the chosen response's `callbacks`).
        package let callbacks: [RenderedCallback]

        package init(socket: SocketOpening? = nil, pushes: [RenderedPush] = [], callbacks: [RenderedCallback] = []) {
            self.socket = socket
            self.pushes = pushes
            self.callbacks = callbacks
        }
    }

    /// The journal entry's facts, kept until the answer is delivered: all
    /// of them but the status sent and the time it took.
    package struct Entry: Sendable {
        package let time: Double
        package let session: String
        package let method: String
        package let path: String
        package let query: String?
        /// The endpoint that answered or forwarded.
        package let endpointID: String?
        /// The contract response chosen; nil for a forwarded request.
        package let responseName: String?
        package let reason: Reason?
        package let changes: [String]
    }

    /// How the answer reaches the client, once `delay` has passed.
    public var delivery: Delivery
    /// Seconds to wait before the answer's first byte.
    public var delay: Double
    /// Pushes, callbacks and a socket to open, for the server to act on; nil for most answers.
    package var effects: Effects?
    /// Nil for an answer that is not journaled (the admin API's).
    package let entry: Entry?

    package init(_ delivery: Delivery, delay: Double = 0, effects: Effects? = nil, entry: Entry?) {
        self.delivery = delivery
        self.delay = delay
        self.effects = effects
        self.entry = entry
    }

    /// An answer delivered whole and not journaled (the admin API's).
    public init(unjournaled response: MockResponse) {
        self.init(.whole(response), entry: nil)
    }

    /// What the engine sends (for a stream, its head; for a fault, what
    /// the fault breaks); nil for a forwarded request, which the upstream answers.
    public var response: MockResponse? { delivery.response }

    /// Whether the upstream answers.
    public var forwards: Bool {
        if case .forward = delivery { return true }
        return false
    }

    /// The response as a client reads it in full: a stream's parts joined
    /// into its body, a forwarded request's answer (there being no upstream
    /// here) Doppel's 502 saying so.
    public var responseInFull: MockResponse {
        switch delivery {
        case .whole(let response), .fault(let response, _): return response
        case .stream(var response, let parts):
            response.body = parts.flatMap(\.bytes)
            return response
        case .forward: return Problem.noUpstream.response(endpointID: entry?.endpointID)
        }
    }
}

extension Decision.Delivery {
    /// What it sends of the engine's own; nil for `.forward`.
    public var response: MockResponse? {
        switch self {
        case .whole(let response), .stream(let response, _), .fault(let response, _): return response
        case .forward: return nil
        }
    }

    /// Changes the response it sends (nothing for `.forward`).
    mutating func changeResponse(_ change: (inout MockResponse) -> Void) {
        // `self` lets go of the response first, so the change copies none of its arrays.
        switch self {
        case .whole(var response):
            self = .forward
            change(&response)
            self = .whole(response)
        case .stream(var response, let parts):
            self = .forward
            change(&response)
            self = .stream(response, parts)
        case .fault(var response, let fault):
            self = .forward
            change(&response)
            self = .fault(response, fault)
        case .forward:
            break
        }
    }
}
