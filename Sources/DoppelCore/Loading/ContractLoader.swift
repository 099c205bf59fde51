import Foundation

/// Loads a contract file into a validated `Contract`, or every problem in it.
///
/// The stages, each feeding the next:
/// 1. **Read**: the file's text (`ContractLoader.load(file:)`).
/// 2. **Parse**: YAML into `SourceNode`s that remember their line and column.
/// 3. **Declarations**: `schemas`, `data` and `state`, which later stages check names against.
/// 4. **Responses and auth**: shared responses, then auth schemes that refer to them.
/// 5. **Endpoints**: routes, request checks, ordered responses with compiled
///    expressions, templates and effects.
/// 6. **Cross-checks**: unreachable endpoints, examples and static bodies
///    against their schemas.
///
/// Problems never stop the load early: every stage records diagnostics and
/// goes on, so `doppel lint` reports them all at once.
public struct ContractLoader: Sendable {
    static let infoKeys: Set<String> = ["title", "version", "description"]
    static let stateKeys: Set<String> = ["variables", "counters", "collections"]
    static let collectionSpecKeys: Set<String> = ["key", "items"]
    static let authKeys: Set<String> = ["default", "schemes"]
    static let authSchemeKeys: Set<String> = [
        "type", "header", "query", "cookie", "tokens", "keys", "users", "issued", "failure", "expired", "format", "pattern", "description",
    ]
    var diagnostics = DiagnosticCollector()
    let file: String
    let directory: URL
    var schemas: [String: Schema] = [:]
    var schemaNodes: [String: SourceNode] = [:]
    /// One schema per name referred to, shared by every reference: an
    /// OpenAPI document refers to its schemas thousands of times.
    var referenceSchemas: [String: Schema] = [:]
    var stateNames: Set<String> = []
    var kindsOfState: [String: StateDeclaration.Kind] = [:]
    var dataNames: Set<String> = []
    var namedResponses: [String: ResponseDefinition] = [:]
    var authSchemes: [String: AuthScheme] = [:]
    /// The path parameters of the endpoint being read (nil outside one), so
    /// that `path.name` is checked against its template.
    var pathNames: [String]?
    /// Whether the endpoint being read reads a query parameter as a number (nil outside one).
    var numericQuery: (@Sendable (String) -> Bool)?
    /// Request examples and static bodies to check against schemas once all schemas are known.
    var pendingExamples: [(value: JSON, schema: Schema, location: SourceLocation, what: String)] = []
    /// The tree is someone else's document (an OpenAPI file from a vendor):
    /// its own mistakes, which its authors must fix and its users cannot
    /// (an example that breaks its schema, a `required` name no property
    /// defines, a pattern Doppel cannot read), are warnings, and it is served
    /// as written. Doppel's own contract files keep them as errors.
    var isVendorDocument = false
    /// The realm of a basic scheme's challenge: the API's title.
    var realm = "Untitled API"
    /// Body files read, shared by the copies that read endpoints in parallel.
    let bodyFiles = Locked<Set<String>>([])

    static let topLevelKeys: Set<String> = [
        "doppel", "document_mistakes", "info", "base_path", "auth", "schemas", "state", "data", "responses", "fallbacks", "rate_limits", "endpoints",
        "mcp", "graphql",
    ]
    /// Names every expression may start from.
    static let requestRoots: Set<String> = [
        "request", "path", "query", "headers", "body", "auth", "session", "state", "data", "clock", "client", "rate_limit",
    ]

    init(file: String) {
        self.file = file
        self.directory = URL(fileURLWithPath: file).deletingLastPathComponent().standardizedFileURL
    }

    /// A loader for a file that refers to a loaded contract (a scenario):
    /// names, responses and schemas are checked against the contract's.
    init(file: String, referringTo contract: Contract) {
        self.init(file: file)
        stateNames = Set(contract.state.kinds.keys)
        kindsOfState = contract.state.kinds
        dataNames = Set(contract.data.objectValue?.keys ?? [])
        namedResponses = contract.responses
        schemas = contract.schemas
    }

    /// Loads and validates a contract file.
    public static func load(file: String) throws(ContractError) -> Contract {
        switch SourceReader.readTree(file: file, what: "contract") {
        case .success(let root): return try load(root, file: file)
        case .failure(let error): throw error
        }
    }

    /// Loads and validates contract text; `file` names it in diagnostics and anchors relative body files.
    public static func load(text: String, file: String) throws(ContractError) -> Contract {
        switch SourceReader.read(text, file: file) {
        case .success(let root): return try load(root, file: file)
        case .failure(let error): throw error
        }
    }

    /// Loads a contract from the tree of its file as read.
    private static func load(_ root: SourceNode?, file: String) throws(ContractError) -> Contract {
        guard let root else {
            throw ContractError(diagnostics: [Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "the contract is empty")])
        }
        if root["openapi"] != nil || root["swagger"] != nil, root["doppel"] == nil {
            throw ContractError(diagnostics: [
                Diagnostic(
                    at: root.location,
                    "this is an OpenAPI\(root["swagger"] != nil ? " (Swagger 2.0)" : "") document, not a Doppel contract; the doppel command serves it as it is (DoppelOpenAPI's ContractDocument loads it from Swift)"
                )
            ])
        }
        return try load(root: root, file: file)
    }

    /// Loads a contract from a tree already read (another front end's, such
    /// as an OpenAPI document converted); `warnings` are reported with the
    /// contract's own diagnostics.
    ///
    /// `endpoints`, when given, makes the endpoints instead of the tree's
    /// `endpoints` key, one at a time as they are read (see `EndpointEntries`).
    ///
    /// `isVendorDocument` makes the document's own mistakes warnings (see
    /// `ContractLoader.isVendorDocument`).
    package static func load(
        root: SourceNode, file: String, warnings: [Diagnostic] = [], endpoints: EndpointEntries? = nil,
        isVendorDocument: Bool = false
    ) throws(ContractError) -> Contract {
        var loader = ContractLoader(file: file)
        loader.isVendorDocument = isVendorDocument
        loader.diagnostics.append(contentsOf: warnings)
        guard var contract = loader.build(root, endpoints: endpoints), !loader.diagnostics.hasErrors else {
            throw ContractError(diagnostics: loader.diagnostics.diagnostics)
        }
        contract.warnings = loader.diagnostics.diagnostics.sorted { $0.location < $1.location }
        return contract
    }

    /// Every diagnostic for a contract file, errors and warnings; empty when clean.
    public static func lint(file: String) -> [Diagnostic] {
        ContractError.diagnostics { () throws(ContractError) in try load(file: file).warnings }
    }

    /// A mistake of the document itself: an error in a contract, a warning
    /// (saying what is served instead) in a vendor's document.
    mutating func documentMistake(_ message: String, at location: SourceLocation, servedAs consequence: String) {
        if isVendorDocument {
            diagnostics.warning("\(message); \(consequence)", at: location)
        } else {
            diagnostics.error(message, at: location)
        }
    }

    /// The contract of a tree; `endpoints`, when given, instead of its `endpoints` key.
    mutating func build(_ root: SourceNode, endpoints entries: EndpointEntries? = nil) -> Contract? {
        guard let top = MappingReader(root, allowed: Self.topLevelKeys, context: "the contract", diagnostics: &diagnostics) else { return nil }
        if let version = top.required("doppel", diagnostics: &diagnostics) {
            if version.json != .int(1) {
                diagnostics.error(
                    "unsupported contract format version \(version.scalarText ?? "?"); this Doppel reads 'doppel: 1'", at: version.location)
            }
        }
        // `document_mistakes: warn`: a vendor's document imported as it is
        // (`doppel import` writes it): its own mistakes stay warnings, as
        // when the document is served.
        if let node = top["document_mistakes"] {
            switch node.scalarText {
            case "warn": isVendorDocument = true
            case "error": break
            default: diagnostics.error("document_mistakes must be 'error' or 'warn'", at: node.location)
            }
        }
        let info = readInfo(top["info"])
        realm = info.title
        var basePath = ""
        if let node = top["base_path"], let text = top.string("base_path", diagnostics: &diagnostics) {
            if !text.isEmpty && !text.hasPrefix("/") {
                diagnostics.error("base_path must start with '/'", at: node.location)
            }
            basePath = text.hasSuffix("/") ? String(text.dropLast()) : text
        }

        readSchemas(top["schemas"])
        let data = top["data"].map(\.json) ?? .object(JSONObject())
        if let node = top["data"], data.objectValue == nil {
            diagnostics.error("data must be a mapping of table names", at: node.location)
        }
        dataNames = Set(data.objectValue?.keys ?? [])
        let state = readState(top["state"])

        for entry in top.entries("responses", diagnostics: &diagnostics) {
            if let response = readResponse(
                entry.value, name: entry.name, scope: Self.requestRoots.union(["errors", "retry_after", "problem"]), endpointLets: [])
            {
                namedResponses[entry.name] = response
            }
        }
        let fallbacks = readFallbacks(top["fallbacks"])
        let defaultAuth = readAuth(top["auth"])
        let mcp = mcpEndpoints(top["mcp"], info: info)
        let graphql = graphqlEndpoints(top["graphql"])
        let sections = mcp.isEmpty && graphql.entries.isEmpty
        var endpoints =
            entries.map { readEndpoints($0, basePath: basePath, defaultAuth: defaultAuth) }
            ?? (top["endpoints"] == nil && !sections ? [] : readEndpoints(top["endpoints"], basePath: basePath, defaultAuth: defaultAuth))
        for (section, made) in [("mcp", mcp), ("graphql", graphql.entries)] where !made.isEmpty {
            // A section's endpoints are found by their ids (forced answers, verify, the door's own calls): one of the user's must not take one.
            let taken = Set(made.map(\.name))
            for endpoint in endpoints where taken.contains(endpoint.id) {
                diagnostics.error(
                    "endpoint id '\(endpoint.id)' is taken by the contract's '\(section):' section, which makes an endpoint of that id; rename this one",
                    at: endpoint.location)
            }
            let maker = NodeMaker(at: top[section]!)
            endpoints += readEndpoints(maker.mapping(made.map { ($0.name, $0.node) }), basePath: basePath, defaultAuth: defaultAuth)
        }
        let rateLimits = readRateLimits(
            top["rate_limits"], endpointIDs: Set(endpoints.map(\.id)),
            uncounted: Set(graphql.definition.map { $0.resolvers + [GraphQLDefinition.socketEndpointID] } ?? []))
        checkReachability(endpoints)
        checkSocketNames(endpoints)
        checkExamples()

        var contract = Contract(
            file: file, info: info, basePath: basePath, schemas: schemas, authSchemes: authSchemes,
            defaultAuth: defaultAuth, state: state, data: data, responses: namedResponses, endpoints: endpoints,
            rateLimits: rateLimits, fallbacks: fallbacks, bodyFiles: bodyFiles.withLock { $0.sorted() }
        )
        var definition = graphql.definition
        let served = basePath + (definition?.path ?? "")
        definition?.path = served
        contract.graphql = definition
        return contract
    }

    /// `fallbacks:`: for each of Doppel's own answers, the response to give
    /// instead, a shared one by name or one written here. Its templates see
    /// `problem` (Doppel's problem: `status`, `title`, `detail`, ...), and
    /// `errors` for `validation_failed`; written here without a `status`, it
    /// keeps Doppel's.
    mutating func readFallbacks(_ node: SourceNode?) -> [Fallback: ResponseDefinition] {
        guard let node else { return [:] }
        let kinds = Set(Fallback.allCases.map(\.rawValue))
        guard let reader = MappingReader(node, allowed: kinds, context: "fallbacks", diagnostics: &diagnostics) else { return [:] }
        var fallbacks: [Fallback: ResponseDefinition] = [:]
        for kind in Fallback.allCases {
            guard let entry = reader[kind.rawValue] else { continue }
            let scope = Self.requestRoots.union(kind == .validationFailed ? ["problem", "errors"] : ["problem"])
            guard var response = readResponseReference(entry, name: "fallbacks.\(kind.rawValue)", scope: scope, endpointLets: []) else { continue }
            if entry.mappingPairs != nil, entry["status"] == nil, entry["ref"] == nil, entry["sequence"] == nil {
                response.status = kind.status
            }
            fallbacks[kind] = response
        }
        return fallbacks
    }

    mutating func readInfo(_ node: SourceNode?) -> Contract.Info {
        var info = Contract.Info(title: "Untitled API", version: "0", description: nil)
        guard let node, let reader = MappingReader(node, allowed: Self.infoKeys, context: "info", diagnostics: &diagnostics) else {
            return info
        }
        info.title = reader.string("title", diagnostics: &diagnostics) ?? info.title
        info.version = reader["version"].map(\.json.interpolationText) ?? info.version
        info.description = reader.string("description", diagnostics: &diagnostics)
        return info
    }

    mutating func readState(_ node: SourceNode?) -> StateDeclaration {
        guard let node, let reader = MappingReader(node, allowed: Self.stateKeys, context: "state", diagnostics: &diagnostics) else {
            return .empty
        }
        var initial = JSONObject()
        var kinds: [String: StateDeclaration.Kind] = [:]
        var keys: [String: String] = [:]
        func declare(
            _ name: String, _ kind: StateDeclaration.Kind, _ value: JSON, at location: SourceLocation, diagnostics: inout DiagnosticCollector
        ) {
            if let existing = kinds[name] {
                diagnostics.error("state name '\(name)' is already declared as a \(existing.rawValue)", at: location)
                return
            }
            kinds[name] = kind
            initial[name] = value
        }
        for entry in reader.entries("variables", diagnostics: &diagnostics) {
            declare(entry.name, .variable, entry.value.json, at: entry.keyNode.location, diagnostics: &diagnostics)
        }
        for entry in reader.entries("counters", diagnostics: &diagnostics) {
            guard case .int(let start) = entry.value.json else {
                diagnostics.error("counter '\(entry.name)' must start at an integer", at: entry.value.location)
                continue
            }
            declare(entry.name, .counter, .int(start), at: entry.keyNode.location, diagnostics: &diagnostics)
        }
        for entry in reader.entries("collections", diagnostics: &diagnostics) {
            var key = "id"
            var itemsNode: SourceNode? = entry.value
            if entry.value.mappingPairs != nil {
                guard
                    let spec = MappingReader(
                        entry.value, allowed: Self.collectionSpecKeys, context: "collection '\(entry.name)'", diagnostics: &diagnostics)
                else { continue }
                key = spec.string("key", diagnostics: &diagnostics) ?? "id"
                itemsNode = spec["items"]
            }
            var records = JSONObject()
            if let itemsNode, !(itemsNode.json.isNull) {
                guard let items = itemsNode.sequenceItems else {
                    diagnostics.error(
                        "collection '\(entry.name)' must be a list of records, or a mapping with 'key' and 'items'", at: itemsNode.location)
                    continue
                }
                for item in items {
                    guard let id = item.json[key], !id.isNull else {
                        diagnostics.error("a record of collection '\(entry.name)' has no '\(key)'", at: item.location)
                        continue
                    }
                    if records[id.interpolationText] != nil {
                        diagnostics.error("collection '\(entry.name)' has two records with \(key) \(id.interpolationText)", at: item.location)
                    }
                    records[id.interpolationText] = item.json
                }
            }
            keys[entry.name] = key
            declare(entry.name, .collection, .object(records), at: entry.keyNode.location, diagnostics: &diagnostics)
        }
        stateNames = Set(kinds.keys)
        kindsOfState = kinds
        return StateDeclaration(initial: initial, kinds: kinds, collectionKeys: keys)
    }

    /// Reads `auth`; returns the default schemes' names (any one admits a request).
    mutating func readAuth(_ node: SourceNode?) -> [String] {
        guard let node, let reader = MappingReader(node, allowed: Self.authKeys, context: "auth", diagnostics: &diagnostics) else { return [] }
        for entry in reader.entries("schemes", diagnostics: &diagnostics) {
            let context = "auth scheme '\(entry.name)'"
            guard let spec = MappingReader(entry.value, allowed: Self.authSchemeKeys, context: context, diagnostics: &diagnostics) else { continue }
            guard entry.name != "none" else {
                diagnostics.error("'none' is reserved for public endpoints; name the scheme otherwise", at: entry.keyNode.location)
                continue
            }
            let kind: AuthScheme.Kind
            switch spec.string("type", diagnostics: &diagnostics) {
            case "bearer":
                kind = .bearer
            case "basic":
                kind = .basic
            case "api_key":
                let header = spec.string("header", diagnostics: &diagnostics)
                let query = spec.string("query", diagnostics: &diagnostics)
                let cookie = spec.string("cookie", diagnostics: &diagnostics)
                guard header != nil || query != nil || cookie != nil else {
                    diagnostics.error("\(context) needs 'header', 'query' and/or 'cookie': where the key is sent", at: entry.value.location)
                    continue
                }
                kind = .apiKey(header: header?.lowercased(), query: query, cookie: cookie)
            case let other?:
                diagnostics.error(
                    "unknown auth type '\(other)' in \(context)\(Suggestion.hint(for: other, in: ["bearer", "basic", "api_key"]))",
                    at: spec["type"]!.location)
                continue
            case nil:
                diagnostics.error("\(context) needs 'type': bearer, basic or api_key", at: entry.value.location)
                continue
            }
            var accepted: Set<String>?
            for listKey in ["tokens", "keys", "users"] {
                guard let listNode = spec[listKey] else { continue }
                guard let items = listNode.sequenceItems?.compactMap(\.scalarText) else {
                    diagnostics.error("'\(listKey)' of \(context) must be a list of strings", at: listNode.location)
                    continue
                }
                if listKey == "users", kind == .basic {
                    for item in listNode.sequenceItems ?? [] where !(item.scalarText?.contains(":") ?? false) {
                        diagnostics.error("a user of \(context) is written 'name:password'", at: item.location)
                    }
                }
                accepted = (accepted ?? []).union(items)
            }
            // An undefined one is reported, and the scheme still declared, so
            // that endpoints naming it are not also wrong.
            let failure =
                spec["failure"].flatMap { readResponseReference($0, name: "\(entry.name).failure", scope: Self.requestRoots, endpointLets: []) }
                ?? Self.defaultUnauthorized(at: entry.value.location, challenge: Self.challenge(for: kind, realm: realm))
            var issued: String?
            if let issuedNode = spec["issued"], let collection = issuedNode.scalarText {
                if kindsOfState[collection] == .collection {
                    issued = collection
                } else {
                    diagnostics.error(
                        "'issued' of \(context) must name a state collection of issued tokens\(Suggestion.hint(for: collection, in: kindsOfState.filter { $0.value == .collection }.keys))",
                        at: issuedNode.location)
                }
            }
            var format: AuthScheme.TokenFormat?
            if let formatNode = spec["format"] {
                if let text = formatNode.scalarText, let known = AuthScheme.TokenFormat(rawValue: text), kind == .bearer {
                    format = known
                } else if kind != .bearer {
                    diagnostics.error("'format' of \(context) is for bearer tokens", at: formatNode.location)
                } else {
                    diagnostics.error(
                        "unknown token format '\(formatNode.scalarText ?? "")' in \(context)\(Suggestion.hint(for: formatNode.scalarText ?? "", in: ["jwt"])); Doppel knows jwt",
                        at: formatNode.location)
                }
            }
            var pattern: Schema.Pattern?
            if let patternNode = spec["pattern"] {
                if kind == .basic {
                    diagnostics.error("'pattern' of \(context) is for bearer tokens and API keys", at: patternNode.location)
                } else if let source = patternNode.scalarText {
                    do {
                        pattern = try Schema.Pattern(source)
                    } catch {
                        diagnostics.error("unusable 'pattern' in \(context): \(error.message)", at: patternNode.location)
                    }
                }
            }
            let expired = spec["expired"].flatMap {
                readResponseReference($0, name: "\(entry.name).expired", scope: Self.requestRoots, endpointLets: [])
            }
            if expired != nil, issued == nil, format != .jwt, let node = spec["expired"] {
                diagnostics.error("'expired' of \(context) needs 'issued' or 'format: jwt': only issued tokens and JWTs expire", at: node.location)
            }
            var scheme = AuthScheme(name: entry.name, kind: kind, accepted: accepted, issued: issued, failure: failure, expired: expired)
            scheme.format = format
            scheme.pattern = pattern
            authSchemes[entry.name] = scheme
        }
        guard let defaultNode = reader["default"] else { return [] }
        return readSchemeNames(defaultNode, context: "auth default")
    }

    /// `auth:` of an endpoint or the contract's default: a scheme's name, a
    /// list of names (any one admits a request), or `none`.
    mutating func readSchemeNames(_ node: SourceNode, context: String) -> [String] {
        let items = node.sequenceItems ?? [node]
        var names: [String] = []
        for item in items {
            guard let name = item.scalarText, item.mappingPairs == nil else {
                diagnostics.error("\(context) must be a scheme's name, a list of them, or none", at: item.location)
                continue
            }
            if name == "none" {
                if items.count > 1 {
                    diagnostics.error("'none' cannot be listed with schemes: an endpoint is public or it is not", at: item.location)
                }
                continue
            }
            guard authSchemes[name] != nil else {
                let hint = Suggestion.hint(for: name, in: Array(authSchemes.keys) + ["none"])
                diagnostics.error(
                    context == "auth default" ? "auth default '\(name)' is not a declared scheme\(hint)" : "undefined auth scheme '\(name)'\(hint)",
                    at: item.location)
                continue
            }
            if !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// RFC 7617's challenge: a realm (the API's title as a quoted string, in
    /// printable ASCII as a header value must be) and the charset credentials are read in.
    package static func basicChallenge(realm: String) -> String {
        var quoted = realm.filter { $0.asciiValue.map { $0 >= 0x20 && $0 != 0x7F } ?? false }
            .replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        if quoted.isEmpty { quoted = "API" }
        return "Basic realm=\"\(quoted)\", charset=\"UTF-8\""
    }

    /// The challenge of a scheme's built-in 401 (RFC 9110 §11.6.1: a 401
    /// names a scheme the client can answer): Basic with its realm, Bearer,
    /// and for an API key, which has no registered scheme, `ApiKey` with
    /// where the key goes (`ApiKey header="x-api-key"`), never a Bearer
    /// challenge a client would answer with the wrong credentials.
    static func challenge(for kind: AuthScheme.Kind, realm: String) -> String {
        switch kind {
        case .basic: return basicChallenge(realm: realm)
        case .apiKey(let header, let query, let cookie):
            func quoted(_ text: String) -> String {
                "\""
                    + text.filter { $0.asciiValue.map { $0 >= 0x20 && $0 != 0x7F } ?? false }
                    .replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
            }
            let places = [("header", header), ("query", query), ("cookie", cookie)].compactMap { name, value in value.map { "\(name)=\(quoted($0))" }
            }
            return "ApiKey " + places.joined(separator: ", ")
        default: return "Bearer"
        }
    }

    /// The built-in 401 for a scheme that declares no `failure`.
    static func defaultUnauthorized(at location: SourceLocation, challenge: String = "Bearer") -> ResponseDefinition {
        let body: JSON = [
            "type": "urn:doppel:problem:unauthorized", "title": "Unauthorized", "status": 401,
            "detail": "missing or invalid credentials",
        ]
        return ResponseDefinition(
            name: "unauthorized", when: nil, status: 401, headers: [("WWW-Authenticate", .constant(.string(challenge)))],
            body: .json(.constant(body), encoded: JSONWriter.encode(body), contentType: "application/problem+json"),
            bindings: [], effects: [], location: location)
    }
}
