/// What a WebSocket endpoint does once its upgrade is answered `101`
/// (`websocket:` in the contract): the rules that answer a client's
/// messages, the messages sent when the socket opens and on an interval.
///
/// Every rule is kept as a `ResponseDefinition` (its `when`, `let`,
/// `effects`, `delay` and name), so selecting one, binding its values and
/// applying its effects to the session is the same step as for an HTTP
/// response (`ResponseSelector`), in one transaction on the session.
package struct SocketDefinition: Sendable {
    /// Run once each when the socket opens, after their `delay`.
    package var onConnect: [SocketRule]
    /// Run every `interval` while the socket is open (the first after one interval).
    package var every: [SocketRule]
    /// Tried in order for each message from the client: the first whose
    /// `schema` the message keeps and whose `when` holds answers it.
    package var onMessage: [SocketRule]
    /// The rule for a message no `on_message` rule takes; nil ignores it (journaled as unmatched).
    package var onUnmatched: SocketRule?
    /// Subprotocols the endpoint speaks (`Sec-WebSocket-Protocol`), in order of preference; empty for none.
    package var protocols: [String] = []
    /// A gRPC stream's rules for the end of the client's half (`on_end`): the first whose `when` holds runs.
    package var onEnd: [SocketRule] = []

    /// Every rule, for coverage and lookups by name.
    package var rules: [SocketRule] { onConnect + every + onMessage + (onUnmatched.map { [$0] } ?? []) + onEnd }
}

/// One rule of a socket: when it runs, what it changes, what it sends.
package struct SocketRule: Sendable {
    /// Name, `when`, `let`, `effects`, `delay` (the body is unused: `messages` are sent).
    package let definition: ResponseDefinition
    /// Messages sent to this socket, in order. A string is sent as it is,
    /// anything else as its JSON text (as a `text` body is rendered).
    package let messages: [ValueTemplate]
    /// Messages sent to the session's other sockets (and this one), as an HTTP response's `push`.
    package let pushes: [SocketPush]
    /// Closes the socket after the messages.
    package let close: SocketClose?
    /// Ends a gRPC stream after the messages, with this status.
    package var end: StreamEnd? = nil
    /// A message must keep this schema (read as JSON) for the rule to take it (`on_message` only).
    package let schema: Schema?
    /// Seconds between runs (`every` only).
    package let interval: Double?

    package var name: String { definition.name }
}

/// A message an HTTP response (or a socket rule) sends to the session's
/// open sockets: "story ready" after the POST that asked for the story.
package struct SocketPush: Sendable {
    /// The socket endpoint whose sockets get it; nil for every socket of the session.
    package let socket: String?
    /// The GraphQL subscription field (`Subscription.storyReady`) whose
    /// subscribers get it as the field's value; nil for a socket's message.
    package var subscription: String? = nil
    package let message: ValueTemplate
    /// Seconds to wait before sending it.
    package let delay: Delay?
    package let location: SourceLocation
}

extension SocketPush {
    /// Every push a contract makes: its endpoints' responses' and socket rules', and its named responses'.
    package static func all(in endpoints: [Endpoint], responses: some Sequence<ResponseDefinition>) -> [SocketPush] {
        endpoints.flatMap { $0.documentedResponses.flatMap(\.pushes) + ($0.socket?.rules.flatMap(\.pushes) ?? []) }
            + responses.flatMap(\.pushes)
    }
}

/// How a rule ends a gRPC stream (`end:`): its status, message and
/// `google.rpc.Status` details, as an error response's.
package struct StreamEnd: Sendable {
    /// The gRPC status code (0 for `OK`).
    package let code: Int
    package let message: ValueTemplate?
    /// A list of messages, each with its `@type`.
    package let details: ValueTemplate?

    package init(code: Int, message: ValueTemplate?, details: ValueTemplate?) {
        self.code = code
        self.message = message
        self.details = details
    }
}

/// A rendered `end:`: the stream's status, its message and details.
package struct RenderedEnd: Sendable {
    package let code: Int
    package let message: String
    /// The whole `google.rpc.Status` (code, message, details) when it has details; nil otherwise.
    package let status: JSON?
}

/// A close frame: its code and reason.
package struct SocketClose: Sendable, Equatable {
    /// 1000 (normal), 1001 (going away), 1008 (policy), 1011 (server error), or 3000–4999 for an API's own.
    package let code: Int
    package let reason: String

    package init(code: Int, reason: String) {
        self.code = code
        self.reason = reason
    }

    /// Whether an endpoint may send `code` in a close frame (RFC 6455
    /// section 7.4): not 1004–1006 or 1015, which mean "no code" or a
    /// transport's failure, nor an unassigned one.
    package static func isSendable(_ code: Int) -> Bool {
        [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014].contains(code) || (3000...4999).contains(code)
    }
}

/// What a socket rule did, for the transport to send and the journal to keep.
package struct SocketOutcome: Sendable {
    /// The rule that ran; nil when no rule took a message (and no `on_unmatched` is given).
    package var rule: String?
    /// Messages for this socket, as text.
    package var messages: [String] = []
    /// Messages for the session's sockets.
    package var pushes: [RenderedPush] = []
    package var close: SocketClose?
    /// How a gRPC stream ends after the messages.
    package var end: RenderedEnd?
    /// Seconds before the messages are sent.
    package var delay: Double = 0
    /// Why the rule was chosen (or why none was).
    package var reason: Reason?
    /// The state paths the rule changed.
    package var changes: [String] = []

    package init(rule: String?) {
        self.rule = rule
    }
}

/// A rendered `push`: its text and where and when it goes.
package struct RenderedPush: Sendable, Equatable {
    package let socket: String?
    /// The message; for a subscription, the field's value as JSON text.
    package let text: String
    package let delay: Double
    /// The GraphQL subscription field it feeds (`Subscription.storyReady`), if any.
    package var subscription: String? = nil

    package init(socket: String?, text: String, delay: Double, subscription: String? = nil) {
        self.socket = socket
        self.text = text
        self.delay = delay
        self.subscription = subscription
    }

    /// Whether a socket of `endpointID` takes it: a subscription's value
    /// goes to GraphQL sockets only, a message to the socket it names (or
    /// every other socket when it names none).
    package func isFor(endpointID: String) -> Bool {
        if subscription != nil { return endpointID == GraphQLDefinition.socketEndpointID }
        return socket == endpointID || (socket == nil && endpointID != GraphQLDefinition.socketEndpointID)
    }
}

/// What the engine keeps of an upgrade it answered `101`, for the socket's
/// rules to see: the upgrade request's roots (path, query, headers, `auth`,
/// the endpoint's `let`s), without the state, which each rule reads anew.
/// A class: every `MockResponse` has room for one, and a reference keeps
/// the answers that are not upgrades (nearly all) as small as they were.
package final class SocketOpening: Sendable {
    package let endpointID: String
    package let session: String
    package let path: String
    package let roots: Roots
    package let request: RecordedRequest

    package init(endpointID: String, session: String, path: String, roots: Roots, request: RecordedRequest) {
        self.endpointID = endpointID
        self.session = session
        self.path = path
        self.roots = roots
        self.request = request
    }
}
