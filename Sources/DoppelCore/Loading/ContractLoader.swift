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
        "mcp", "graphql", "grpc",
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
        let grpc = grpcEndpoints(top["grpc"])
        let sections = mcp.isEmpty && graphql.entries.isEmpty && grpc.entries.isEmpty && top["grpc"] == nil
        var endpoints =
            entries.map { readEndpoints($0, basePath: basePath, defaultAuth: defaultAuth) }
            ?? (top["endpoints"] == nil && !sections ? [] : readEndpoints(top["endpoints"], basePath: basePath, defaultAuth: defaultAuth))
        endpoints += sectionEndpoints(
            [("mcp", mcp), ("graphql", graphql.entries), ("grpc", grpc.entries)], top: top, taken: endpoints, basePath: basePath,
            defaultAuth: defaultAuth)
        let rateLimits = readRateLimits(
            top["rate_limits"], endpointIDs: Set(endpoints.map(\.id)),
            uncounted: Set(graphql.definition.map { $0.resolvers + [GraphQLDefinition.socketEndpointID] } ?? []))
        checkReachability(endpoints)
        checkSocketNames(endpoints, streams: grpc.definition?.streams ?? [:])
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
        contract.grpc = grpc.definition
        return contract
    }

    /// The endpoints the contract's sections (`mcp:`, `graphql:`, `grpc:`) were rewritten into, read as the user's are.
    private mutating func sectionEndpoints(
        _ sections: [(String, [(name: String, node: SourceNode)])], top: MappingReader, taken users: [Endpoint], basePath: String,
        defaultAuth: [String]
    ) -> [Endpoint] {
        var endpoints: [Endpoint] = []
        for (section, made) in sections where !made.isEmpty {
            // A section's endpoints are found by their ids (forced answers, verify, the door's own calls): one of the user's must not take one.
            let taken = Set(made.map(\.name))
            for endpoint in users where taken.contains(endpoint.id) {
                diagnostics.error(
                    "endpoint id '\(endpoint.id)' is taken by the contract's '\(section):' section, which makes an endpoint of that id; rename this one",
                    at: endpoint.location)
            }
            let maker = NodeMaker(at: top[section]!)
            endpoints += readEndpoints(maker.mapping(made.map { ($0.name, $0.node) }), basePath: basePath, defaultAuth: defaultAuth)
        }
        return endpoints
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
}
