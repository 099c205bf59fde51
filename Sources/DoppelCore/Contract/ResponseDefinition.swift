/// A response as the contract declares it (compare `MockResponse`, what is sent).
///
/// A value, with its fields behind one reference, copied when changed while
/// shared: the engine hands the chosen response from stage to stage on every
/// request, and copying fourteen fields retained each of their references.
package struct ResponseDefinition: Sendable {
    private final class Storage: @unchecked Sendable {
        // Changed only while uniquely referenced (`fields`), so never while shared between threads.
        let name: String
        let when: Expression?
        var status: Int
        let headers: [(String, ValueTemplate)]
        let body: ResponseBody
        let bindings: [(String, ValueTemplate)]
        let effects: [Effect]
        let location: SourceLocation
        var delay: Delay?
        var fault: Fault?
        var stream: StreamDefinition?
        var sequence: SequenceDefinition?
        var schema: Schema?
        var description: String?
        var pushes: [SocketPush] = []
        var callbacks: [CallbackDefinition] = []
        var itemSchema: Schema?

        init(
            name: String, when: Expression?, status: Int, headers: [(String, ValueTemplate)], body: ResponseBody,
            bindings: [(String, ValueTemplate)], effects: [Effect], location: SourceLocation, delay: Delay?, fault: Fault?,
            stream: StreamDefinition?, sequence: SequenceDefinition?, schema: Schema?, description: String?
        ) {
            self.name = name
            self.when = when
            self.status = status
            self.headers = headers
            self.body = body
            self.bindings = bindings
            self.effects = effects
            self.location = location
            self.delay = delay
            self.fault = fault
            self.stream = stream
            self.sequence = sequence
            self.schema = schema
            self.description = description
        }

        func copy() -> Storage {
            let copy = Storage(
                name: name, when: when, status: status, headers: headers, body: body, bindings: bindings, effects: effects,
                location: location, delay: delay, fault: fault, stream: stream, sequence: sequence, schema: schema, description: description)
            copy.pushes = pushes
            copy.callbacks = callbacks
            copy.itemSchema = itemSchema
            return copy
        }
    }

    private var storage: Storage

    package init(
        name: String, when: Expression?, status: Int, headers: [(String, ValueTemplate)], body: ResponseBody,
        bindings: [(String, ValueTemplate)], effects: [Effect], location: SourceLocation, delay: Delay? = nil, fault: Fault? = nil,
        stream: StreamDefinition? = nil, sequence: SequenceDefinition? = nil, schema: Schema? = nil, description: String? = nil
    ) {
        storage = Storage(
            name: name, when: when, status: status, headers: headers, body: body, bindings: bindings, effects: effects,
            location: location, delay: delay, fault: fault, stream: stream, sequence: sequence, schema: schema, description: description)
    }

    /// The storage, made this value's own before a change.
    private var fields: Storage {
        mutating get {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            return storage
        }
    }

    /// The response's `name`, the shared response's name, or `<endpoint>[<index>]`.
    package var name: String { storage.name }
    package var when: Expression? { storage.when }
    package var status: Int {
        get { storage.status }
        set { fields.status = newValue }
    }
    package var headers: [(String, ValueTemplate)] { storage.headers }
    package var body: ResponseBody { storage.body }
    /// Values computed after selection, visible to effects and templates by name.
    package var bindings: [(String, ValueTemplate)] { storage.bindings }
    package var effects: [Effect] { storage.effects }
    package var location: SourceLocation { storage.location }
    /// Time to wait before answering.
    package var delay: Delay? {
        get { storage.delay }
        set { fields.delay = newValue }
    }
    /// A deliberate failure instead of (or while) answering.
    package var fault: Fault? {
        get { storage.fault }
        set { fields.fault = newValue }
    }
    /// A body sent in parts over time.
    package var stream: StreamDefinition? {
        get { storage.stream }
        set { fields.stream = newValue }
    }
    /// A list to answer from in turn, instead of this response's own body.
    package var sequence: SequenceDefinition? {
        get { storage.sequence }
        set { fields.sequence = newValue }
    }
    /// The schema the body keeps, when the contract gives one.
    package var schema: Schema? {
        get { storage.schema }
        set { fields.schema = newValue }
    }
    /// The schema each item of a streamed body keeps (`item_schema`).
    package var itemSchema: Schema? {
        get { storage.itemSchema }
        set { fields.itemSchema = newValue }
    }
    /// Text for people.
    public var description: String? {
        get { storage.description }
        set { fields.description = newValue }
    }
    /// Messages for the session's open sockets when this response is chosen (`push`).
    package var pushes: [SocketPush] {
        get { storage.pushes }
        set { fields.pushes = newValue }
    }
    /// Requests Doppel makes when this response is chosen (`callbacks`).
    package var callbacks: [CallbackDefinition] {
        get { storage.callbacks }
        set { fields.callbacks = newValue }
    }
}

/// The body a response sends.
package enum ResponseBody: Sendable {
    case empty
    /// JSON, with its bytes encoded once when nothing in it needs rendering.
    case json(ValueTemplate, encoded: [UInt8]?, contentType: String)
    case text(ValueTemplate, contentType: String)
    case bytes([UInt8], contentType: String)

    package var contentType: String? {
        switch self {
        case .empty: nil
        case .json(_, _, let type), .text(_, let type), .bytes(_, let type): type
        }
    }
}

/// A change to session state: `state.stories_used += 1`, `delete state.children[path.id]`.
package struct Effect: Sendable, CustomStringConvertible {
    package enum Operation: String, Sendable {
        case assign = "="
        case add = "+="
        case subtract = "-="
        case delete
    }

    /// The state name the effect changes.
    package let name: String
    /// Member names and indexes below the state name.
    package let path: [PathStep]
    package let operation: Operation
    package let value: Expression?
    package let source: String
    package let location: SourceLocation

    package enum PathStep: Sendable {
        case member(String)
        case index(Expression)
    }

    package var description: String { source }
}

/// The answers Doppel gives on its own, which a contract's `fallbacks:` can
/// replace with its API's documented bodies.
package enum Fallback: String, CaseIterable, Sendable, Hashable {
    /// 404: no endpoint has the path.
    case notFound = "not_found"
    /// 405: the path exists, the method does not.
    case methodNotAllowed = "method_not_allowed"
    /// 400: a JSON or multipart body that cannot be read.
    case malformedBody = "malformed_body"
    /// 415: a body of a type the endpoint does not take.
    case unsupportedMediaType = "unsupported_media_type"
    /// 413: a body over the server's limit.
    case payloadTooLarge = "payload_too_large"
    /// 422: a request that breaks its schemas, at an endpoint without `on_invalid`.
    case validationFailed = "validation_failed"

    /// The status Doppel's own answer has, and a fallback without one.
    package var status: Int {
        switch self {
        case .notFound: 404
        case .methodNotAllowed: 405
        case .malformedBody: 400
        case .unsupportedMediaType: 415
        case .payloadTooLarge: 413
        case .validationFailed: 422
        }
    }

    /// The fallback that stands in for one of Doppel's problems, if any does.
    package init?(problem: Problem) {
        switch problem.type {
        case Problem.urn("no-matching-endpoint"): self = .notFound
        case Problem.urn("method-not-allowed"): self = .methodNotAllowed
        case Problem.urn("malformed-json"), Problem.urn("malformed-multipart"): self = .malformedBody
        case Problem.urn("unsupported-media-type"): self = .unsupportedMediaType
        case Problem.urn("payload-too-large"): self = .payloadTooLarge
        case Problem.urn("validation-failed"): self = .validationFailed
        default: return nil
        }
    }
}
