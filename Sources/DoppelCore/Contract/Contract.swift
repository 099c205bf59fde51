/// A loaded, validated contract: everything the engine needs to serve an API.
///
/// Built by `ContractLoader`; immutable and shared by every request.
public struct Contract: Sendable {
    /// The file the contract was read from.
    public let file: String
    /// The contract's `info`: title, version and description.
    public let info: Info
    /// Prefix of every endpoint's path, e.g. `/api/v1`; empty for none.
    package let basePath: String
    /// Named schemas, the targets of `$ref`.
    package let schemas: [String: Schema]
    package let authSchemes: [String: AuthScheme]
    /// The schemes applied to endpoints that do not name theirs (any one suffices).
    package let defaultAuth: [String]
    package let state: StateDeclaration
    /// Static lookup tables, visible to expressions as `data`.
    package let data: JSON
    /// Shared responses, referenced by name from endpoints and auth schemes.
    package let responses: [String: ResponseDefinition]
    /// Endpoints in the order they were written; routing tries them in this order.
    package let endpoints: [Endpoint]
    /// Rate limits, checked in this order.
    package let rateLimits: [RateLimit]
    /// The contract's own answers in place of Doppel's problems (`fallbacks:`).
    package var fallbacks: [Fallback: ResponseDefinition] = [:]
    /// The GraphQL API the contract describes (`graphql:`), if any.
    package var graphql: GraphQLDefinition?
    /// The gRPC services the contract answers (`grpc:`), if any.
    package var grpc: GRPCDefinition?
    /// The body files the contract reads (`file:`), as absolute paths.
    package var bodyFiles: [String] = []
    /// Whether it was read from an OpenAPI document, which says nothing of
    /// socket rules or pushes (`doppel diff` compares those only between contracts).
    package var isOpenAPIDocument = false
    /// What loading found worth saying that did not stop it (`lint` prints these).
    public var warnings: [Diagnostic] = []

    /// Title, version and description of the API.
    public struct Info: Sendable {
        /// The contract's title.
        public var title: String
        /// The contract's own version (not Doppel's format version).
        public var version: String
        public var description: String?
    }

    /// The contract's response in place of one of Doppel's problems, if it
    /// has one (most contracts have none, and their problems are not looked up).
    package func fallback(for problem: Problem) -> ResponseDefinition? {
        guard !fallbacks.isEmpty, let kind = Fallback(problem: problem) else { return nil }
        return fallbacks[kind]
    }

    /// The endpoint with an id.
    package func endpoint(id: String) -> Endpoint? {
        endpoints.first { $0.id == id }
    }

    /// Every response the contract documents for an endpoint, in order: its
    /// own (`documentedResponses`), its auth scheme's failures, and the
    /// responses of the rate limits that cover it.
    /// The documented response of `endpoint` with `status` and/or `name`
    /// (the first that has both), what an answer forced through the admin
    /// API (`POST /__doppel/next`) sends.
    package func forcibleResponse(endpointID: String, name: String?, status: Int?) -> ResponseDefinition? {
        guard let endpoint = endpoint(id: endpointID) else { return nil }
        return documentedResponses(of: endpoint).first { (status == nil || $0.status == status) && (name == nil || $0.name == name) }
    }

    package func documentedResponses(of endpoint: Endpoint) -> [ResponseDefinition] {
        var responses = endpoint.documentedResponses
        // An endpoint's own `on_unauthorized` is among its documented responses already.
        if endpoint.onUnauthorized == nil {
            for scheme in endpoint.auth.compactMap({ authSchemes[$0] }) {
                responses.append(scheme.failure)
                if let expired = scheme.expired { responses.append(expired) }
            }
        }
        responses += rateLimits.filter { $0.covers(endpoint.id) }.map(\.response)
        return responses
    }

    /// The statuses an endpoint refuses credentials with: its own
    /// `on_unauthorized`, and its schemes' `failure` and `expired`; empty
    /// for a public endpoint.
    package func unauthorizedStatuses(of endpoint: Endpoint) -> Set<Int> {
        guard !endpoint.auth.isEmpty else { return [] }
        var statuses = Set([endpoint.onUnauthorized?.status].compactMap { $0 })
        for scheme in endpoint.auth.compactMap({ authSchemes[$0] }) {
            statuses.insert(scheme.failure.status)
            if let expired = scheme.expired?.status { statuses.insert(expired) }
        }
        return statuses
    }

    /// The statuses an endpoint documents, in order, without repeats; a
    /// WebSocket endpoint's close codes (its rules') among them.
    package func statuses(of endpoint: Endpoint) -> [Int] {
        var seen: Set<Int> = []
        let closes = endpoint.socket?.rules.compactMap(\.close?.code) ?? []
        return (documentedResponses(of: endpoint).map(\.status) + closes).filter { seen.insert($0).inserted }
    }

    /// The ids a WebSocket endpoint's journal entries are counted under: a
    /// rule's `<endpoint>.<rule>`, messages no rule took `<endpoint>.on_unmatched`,
    /// pushes from HTTP responses `<endpoint>.push`.
    package func socketTargets(of endpoint: Endpoint) -> [String] {
        guard let socket = endpoint.socket else { return [] }
        var names = socket.rules.map(\.name)
        if socket.onUnmatched == nil { names.append("on_unmatched") }
        names.append("push")
        return names.map { "\(endpoint.id).\($0)" }
    }

    /// Whether `id` is an endpoint or one of its socket targets: what `verify` and the journal's filter take.
    package func isCountable(_ id: String) -> Bool {
        endpoint(id: id) != nil || endpoints.contains { $0.socket != nil && socketTargets(of: $0).contains(id) }
    }
}

/// How an endpoint checks credentials.
package struct AuthScheme: Sendable {
    package enum Kind: Sendable, Equatable {
        /// `Authorization: Bearer <token>`.
        case bearer
        /// A key in a header, a query parameter and/or a cookie (header names lowercased).
        case apiKey(header: String?, query: String?, cookie: String?)
        /// `Authorization: Basic <base64 of name:password>`.
        case basic
    }

    package let name: String
    package let kind: Kind
    /// Accepted credentials; nil accepts any well-formed one.
    package let accepted: Set<String>?
    /// A state collection of issued tokens: a token is accepted only when it
    /// is a key there and its record's `expires_at` is still ahead on the clock.
    package let issued: String?
    /// The documented response for a missing, malformed or unaccepted credential.
    package let failure: ResponseDefinition
    /// The response for an issued token past its expiry; nil uses `failure`.
    package let expired: ResponseDefinition?
    /// The shape a token must have (`format: jwt`); nil takes any.
    package var format: TokenFormat? = nil
    /// A pattern the credential must match (searched, as in schemas: anchor it with `^` and `$`).
    package var pattern: Schema.Pattern? = nil

    /// A token's shape.
    package enum TokenFormat: String, Sendable {
        /// A JSON Web Token: three base64url parts, the first two JSON
        /// objects; a numeric `exp` claim is its expiry.
        case jwt
    }
}

/// The state every session starts with: variables, counters and collections.
package struct StateDeclaration: Sendable {
    /// What kind of state a name holds.
    package enum Kind: String, Sendable {
        case variable, counter, collection
    }

    /// Initial values by name; collections are objects keyed by their key field.
    package let initial: JSONObject
    package let kinds: [String: Kind]
    /// The key field of each collection (default `id`).
    package let collectionKeys: [String: String]

    package init(initial: JSONObject, kinds: [String: Kind], collectionKeys: [String: String]) {
        self.initial = initial
        self.kinds = kinds
        self.collectionKeys = collectionKeys
    }

    package static let empty = StateDeclaration(initial: JSONObject(), kinds: [:], collectionKeys: [:])
}

/// One endpoint: a method and path, its checks, and its ordered responses.
/// A class, not a struct: the engine hands an endpoint from stage to stage
/// on every request, and copying a struct of this many references would
/// retain each of them, on memory shared by every event loop.
package final class Endpoint: Sendable {
    package let id: String
    package let method: String
    /// The full path template, base path included.
    package let path: PathTemplate
    package let summary: String?
    /// The auth schemes that may admit a request, any one sufficing; empty for a public endpoint.
    package let auth: [String]
    /// Conditions that must all hold for a request to be this endpoint's.
    package let match: [Condition]
    /// Endpoint-level `let` bindings, evaluated before a response is selected.
    package let bindings: [(String, ValueTemplate)]
    /// An object schema for the path parameters, read by type like query parameters.
    package let pathParameters: Schema?
    package let query: Schema?
    package let headers: Schema?
    package let cookies: Schema?
    package let body: BodySpec?
    /// The whole query string as one value (`querystring`, OpenAPI 3.2's
    /// `in: querystring`): read as its `contentTypes[0]` says and checked by
    /// its schema; expressions see it as `query`. Never with `query`.
    package let queryString: BodySpec?
    /// The response for a request that fails validation; nil gives the built-in 422.
    package let onInvalid: ResponseDefinition?
    /// The response for a request no scheme admits, instead of the scheme's own `failure`.
    package let onUnauthorized: ResponseDefinition?
    package let responses: [ResponseDefinition]
    /// Responses the API documents for this endpoint that no `when` chooses:
    /// scenarios force them, coverage counts them.
    package let documented: [ResponseDefinition]
    package let location: SourceLocation
    /// `proxy: true`: requests go to the server's upstream (`doppel serve
    /// --proxy`) unless a scenario override or `Prefer` picks a response.
    package let proxy: Bool
    /// `websocket:`: the request is a WebSocket upgrade, and this is what the socket does once open.
    package let socket: SocketDefinition?
    /// `negotiate: false`: the chosen response goes out in its own media
    /// type whatever `Accept` says, as for an API that picks the form from
    /// the request's body (a chat completion's `stream: true`).
    package let negotiates: Bool

    init(
        id: String, method: String, path: PathTemplate, summary: String?, auth: [String], match: [Condition],
        bindings: [(String, ValueTemplate)], pathParameters: Schema?, query: Schema?, headers: Schema?, cookies: Schema?,
        body: BodySpec?, onInvalid: ResponseDefinition?, onUnauthorized: ResponseDefinition?, responses: [ResponseDefinition],
        documented: [ResponseDefinition], location: SourceLocation, proxy: Bool = false, socket: SocketDefinition? = nil,
        queryString: BodySpec? = nil, negotiates: Bool = true
    ) {
        self.queryString = queryString
        self.negotiates = negotiates
        self.id = id
        self.method = method
        self.path = path
        self.summary = summary
        self.auth = auth
        self.match = match
        self.bindings = bindings
        self.pathParameters = pathParameters
        self.query = query
        self.headers = headers
        self.cookies = cookies
        self.body = body
        self.onInvalid = onInvalid
        self.onUnauthorized = onUnauthorized
        self.responses = responses
        self.documented = documented
        self.location = location
        self.proxy = proxy
        self.socket = socket
    }

    /// `POST /api/v1/stories/generate`.
    package var signature: String { "\(method) \(path.template)" }

    /// Every response the endpoint itself can give: its responses (sequences
    /// flattened), then `documented`, then `on_invalid`.
    package var documentedResponses: [ResponseDefinition] {
        func flatten(_ response: ResponseDefinition) -> [ResponseDefinition] {
            response.sequence.map { $0.responses.flatMap(flatten) } ?? [response]
        }
        return responses.flatMap(flatten) + documented + (onInvalid.map { [$0] } ?? []) + (onUnauthorized.map { [$0] } ?? [])
    }

    /// The first response the endpoint documents with a name, and a status when given.
    package func documentedResponse(named name: String, status: Int? = nil) -> ResponseDefinition? {
        documentedResponses.first { $0.name == name && (status == nil || $0.status == status) }
    }

    /// The first response the endpoint documents with a status.
    package func documentedResponse(status: Int) -> ResponseDefinition? {
        documentedResponses.first { $0.status == status }
    }
}

/// A named expression that must hold, with its text for messages.
package struct Condition: Sendable {
    package let expression: Expression
    package let location: SourceLocation
}

/// What an endpoint accepts as a request body.
package struct BodySpec: Sendable {
    package let schema: Schema?
    /// Accepted media types, e.g. `application/json`.
    package let contentTypes: [String]
    /// Whether a request must carry a body.
    package let required: Bool
    /// The contract's example body, if it gives one.
    package var example: JSON? = nil
    /// The schema each item keeps, for a body of a sequential media type
    /// (`item_schema`: JSON Lines, JSON text sequences, events, multipart/mixed).
    package var itemSchema: Schema? = nil
}
