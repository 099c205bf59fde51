extension ContractLoader {
    static let requestBodyKeys: Set<String> = ["schema", "item_schema", "content_type", "required", "example", "description"]
    static let endpointKeys: Set<String> = [
        "request", "summary", "description", "auth", "match", "let", "path", "query", "querystring", "headers", "cookies", "body", "on_invalid",
        "on_unauthorized", "responses", "documented", "proxy", "websocket", "negotiate",
    ]
    static let queryStringKeys: Set<String> = ["schema", "content_type", "required", "example", "description"]
    /// The methods a contract's endpoints may use: HTTP's, and QUERY (a safe
    /// method with a body, which OpenAPI 3.2 describes). A vendor's
    /// document may name any other (OpenAPI 3.2's `additionalOperations`).
    static let methods: Set<String> = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "QUERY"]

    /// Whether a method is an HTTP token (RFC 9110 §9.1) of letters, digits and `-`, `_`, `.`.
    static func isMethodToken(_ method: String) -> Bool {
        !method.isEmpty && method.count <= 32
            && method.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0))
            }
    }

    mutating func readEndpoints(_ node: SourceNode?, basePath: String, defaultAuth: [String]) -> [Endpoint] {
        guard let node else {
            diagnostics.error("the contract needs 'endpoints'", at: SourceLocation(file: file, line: 1, column: 1))
            return []
        }
        let entries = MappingReader.entries(of: node, context: "endpoints", diagnostics: &diagnostics)
        let written = EndpointEntries(count: entries.count) { range, read in
            for entry in entries[range] { read(entry.name, entry.value) }
            return []
        }
        return readEndpoints(written, basePath: basePath, defaultAuth: defaultAuth)
    }

    /// Endpoints made one at a time (those written in the contract, or
    /// another front end's, whose trees are dropped once read), each read as
    /// soon as it is made. Endpoints are read independently of each other, so a
    /// large contract's are read in slices on every core, each by a copy of
    /// this loader whose diagnostics and pending examples are then gathered
    /// in order.
    mutating func readEndpoints(_ source: EndpointEntries, basePath: String, defaultAuth: [String]) -> [Endpoint] {
        var template = self
        template.diagnostics = DiagnosticCollector()
        template.pendingExamples = []
        let blank = template
        let slices = Parallel.mapSlices(Array(0..<source.count), minimumPerSlice: 100) { slice in
            var loader = blank
            var endpoints: [Endpoint] = []
            let made = source.make(slice.startIndex..<slice.endIndex) { name, node in
                if let endpoint = loader.readEndpoint(name, node, basePath: basePath, defaultAuth: defaultAuth) {
                    endpoints.append(endpoint)
                }
            }
            return (endpoints: endpoints, diagnostics: made + loader.diagnostics.diagnostics, pendingExamples: loader.pendingExamples)
        }
        var endpoints: [Endpoint] = []
        endpoints.reserveCapacity(source.count)
        for slice in slices {
            endpoints += slice.endpoints
            diagnostics.append(contentsOf: slice.diagnostics)
            pendingExamples += slice.pendingExamples
        }
        return endpoints
    }

    private mutating func readEndpoint(_ id: String, _ node: SourceNode, basePath: String, defaultAuth: [String]) -> Endpoint? {
        let context = "endpoint '\(id)'"
        guard let reader = MappingReader(node, allowed: Self.endpointKeys, context: context, diagnostics: &diagnostics) else { return nil }
        guard let requestNode = reader.required("request", diagnostics: &diagnostics), let request = requestNode.scalarText else { return nil }
        let parts = request.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2 else {
            diagnostics.error("'request' must be 'METHOD /path', like 'POST /children'", at: requestNode.location)
            return nil
        }
        let method = parts[0].uppercased()
        if !Self.methods.contains(method), !(isVendorDocument && Self.isMethodToken(method)) {
            diagnostics.error("unknown method '\(parts[0])'\(Suggestion.hint(for: method, in: Self.methods))", at: requestNode.contentLocation)
        }
        let path: PathTemplate
        do {
            path = try PathTemplate(basePath + String(parts[1]))
        } catch {
            diagnostics.error("bad path: \(error.message)", at: requestNode.contentLocation.advanced(by: parts[0].count + 1))
            return nil
        }
        let full = basePath + String(parts[1])
        if full == "/__doppel" || full.hasPrefix("/__doppel/") {
            // In a vendor's document (the admin API's own, say) a mistake of the document, served as written.
            let message = "path \(full) is under /__doppel/, which the admin API answers; this endpoint could never be reached"
            let at = requestNode.contentLocation.advanced(by: parts[0].count + 1)
            if isVendorDocument { diagnostics.warning(message, at: at) } else { diagnostics.error(message, at: at) }
        }

        let auth = reader["auth"].map { readSchemeNames($0, context: "auth of \(context)") } ?? defaultAuth
        pathNames = path.parameterNames
        defer { pathNames = nil }

        var match: [Condition] = []
        if let matchNode = reader["match"] {
            for item in matchNode.sequenceItems ?? [matchNode] {
                // Routing runs before authentication and without the session's state.
                if let expression = compileExpression(item, roots: Self.requestRoots.subtracting(["state", "auth"])) {
                    match.append(Condition(expression: expression, location: item.location))
                }
            }
        }

        let pathParameters = reader["path"].flatMap { readSchema($0, context: "path of \(context)") }
        if let pathParameters, let pathNode = reader["path"] {
            for (name, _) in pathParameters.properties where !path.parameterNames.contains(name) {
                diagnostics.error(
                    "path parameter '\(name)' of \(context) is not in its path \(path.template)\(Suggestion.hint(for: name, in: path.parameterNames))",
                    at: pathNode.location)
            }
        }
        let query = reader["query"].flatMap { readSchema($0, context: "query of \(context)") }
        let validator = SchemaValidator(registry: schemas)
        numericQuery = { validator.readsAsNumber($0, by: query) }
        defer { numericQuery = nil }
        let queryString = reader["querystring"].flatMap { readQueryString($0, context: context) }
        if queryString != nil, let node = reader["query"] {
            diagnostics.error(
                "\(context) has 'query' and 'querystring'; 'querystring' is the whole query, so give one or the other", at: node.location)
        }
        let headers = reader["headers"].flatMap { readSchema($0, context: "headers of \(context)") }
        let cookies = reader["cookies"].flatMap { readSchema($0, context: "cookies of \(context)") }
        let body = reader["body"].flatMap { readBodySpec($0, context: context) }

        let endpointBindings = readBindings(reader["let"], roots: Self.requestRoots, context: context)
        let letNames = endpointBindings.map(\.0)
        var onInvalid: ResponseDefinition?
        if let invalidNode = reader["on_invalid"] {
            onInvalid = readResponseReference(invalidNode, name: "\(id).on_invalid", scope: Self.requestRoots.union(["errors"]), endpointLets: [])
        }
        var onUnauthorized: ResponseDefinition?
        if let node = reader["on_unauthorized"] {
            if auth.isEmpty {
                diagnostics.warning("'on_unauthorized' of public \(context) is never sent", at: node.location)
            }
            onUnauthorized = readResponseReference(node, name: "\(id).on_unauthorized", scope: Self.requestRoots, endpointLets: [])
        }
        var responses: [ResponseDefinition] = []
        // A proxied endpoint forwards what no override or `Prefer` answers, so it may have no responses of its own.
        let proxy = reader.bool("proxy", diagnostics: &diagnostics) ?? false
        // A WebSocket endpoint's upgrade is answered 101 unless its responses say otherwise.
        var socket: SocketDefinition?
        if let socketNode = reader["websocket"] {
            socket = readSocket(socketNode, endpointID: id, endpointLets: letNames)
            if method != "GET" {
                diagnostics.error(
                    "a WebSocket upgrade is a GET request (RFC 6455 section 4.1); write 'GET \(parts[1])'", at: requestNode.contentLocation)
            }
            if proxy { diagnostics.error("a WebSocket endpoint cannot be proxied", at: reader["proxy"]!.location) }
            if reader["responses"] == nil {
                responses = [
                    ResponseDefinition(
                        name: "\(id).upgrade", when: nil, status: 101, headers: [], body: .empty, bindings: [], effects: [],
                        location: socketNode.location)
                ]
            }
        }
        if let responsesNode = proxy || socket != nil ? reader["responses"] : reader.required("responses", diagnostics: &diagnostics) {
            guard let items = responsesNode.sequenceItems, !items.isEmpty else {
                diagnostics.error("'responses' of \(context) must be a non-empty list", at: responsesNode.location)
                return nil
            }
            for (index, item) in items.enumerated() {
                if let response = readResponse(item, name: "\(id)[\(index)]", scope: Self.requestRoots, endpointLets: letNames) {
                    responses.append(response)
                }
                if item["when"] == nil, index < items.count - 1 {
                    diagnostics.warning("response \(id)[\(index)] has no 'when', so the responses after it are never chosen", at: item.location)
                }
            }
        }
        var documented: [ResponseDefinition] = []
        if let documentedNode = reader["documented"] {
            for (index, item) in (documentedNode.sequenceItems ?? [documentedNode]).enumerated() {
                if let response = readResponseReference(item, name: "\(id).documented[\(index)]", scope: Self.requestRoots, endpointLets: letNames) {
                    documented.append(response)
                }
            }
        }
        for response in responses + documented {
            for case let flat in [response] + (response.sequence?.responses ?? []) where flat.status == 101 && socket == nil {
                diagnostics.error("status 101 switches to a WebSocket, which \(context) is not: give it 'websocket:'", at: flat.location)
            }
        }
        if socket != nil, !responses.contains(where: { $0.status == 101 || $0.sequence?.responses.contains { $0.status == 101 } == true }) {
            diagnostics.warning("no response of WebSocket \(context) has status 101, so no socket ever opens", at: node.location)
        }
        return Endpoint(
            id: id, method: method, path: path, summary: reader.string("summary", diagnostics: &diagnostics), auth: auth,
            match: match, bindings: endpointBindings, pathParameters: pathParameters, query: query, headers: headers, cookies: cookies,
            body: body, onInvalid: onInvalid, onUnauthorized: onUnauthorized, responses: responses, documented: documented,
            location: node.location, proxy: proxy, socket: socket, queryString: queryString,
            negotiates: reader.bool("negotiate", diagnostics: &diagnostics) ?? true)
    }

    /// `querystring:`: the whole query string as one value, read as its
    /// `content_type` (form fields by default, JSON, or text) says.
    private mutating func readQueryString(_ node: SourceNode, context: String) -> BodySpec? {
        guard let reader = MappingReader(node, allowed: Self.queryStringKeys, context: "querystring of \(context)", diagnostics: &diagnostics) else {
            return nil
        }
        let schema = reader["schema"].flatMap { readSchema($0, context: "querystring schema of \(context)") }
        let type = reader.string("content_type", diagnostics: &diagnostics) ?? "application/x-www-form-urlencoded"
        if let example = reader["example"], let schema {
            pendingExamples.append((example.json, schema, example.location, "the example querystring of \(context)"))
        }
        return BodySpec(
            schema: schema, contentTypes: [MediaTypes.essence(type)], required: reader.bool("required", diagnostics: &diagnostics) ?? false,
            example: reader["example"]?.json)
    }

    private mutating func readBodySpec(_ node: SourceNode, context: String) -> BodySpec? {
        guard let reader = MappingReader(node, allowed: Self.requestBodyKeys, context: "body of \(context)", diagnostics: &diagnostics) else {
            return nil
        }
        let schema = reader["schema"].flatMap { readSchema($0, context: "body schema of \(context)") }
        var types = ["application/json"]
        if let typeNode = reader["content_type"] {
            types = typeNode.sequenceItems?.compactMap(\.scalarText) ?? typeNode.scalarText.map { [$0] } ?? types
        }
        if let example = reader["example"], let schema {
            pendingExamples.append((example.json, schema, example.location, "the example body of \(context)"))
        }
        let itemSchema = reader["item_schema"].flatMap { readSchema($0, context: "item_schema of the body of \(context)") }
        if let node = reader["item_schema"], !types.contains(where: { SequentialMedia($0) != nil }) {
            diagnostics.error(
                "'item_schema' of the body of \(context) describes the items of a sequential content_type (application/jsonl, application/x-ndjson, application/json-seq, text/event-stream, multipart/mixed), and none is accepted",
                at: node.location)
        }
        return BodySpec(
            schema: schema, contentTypes: types.map { $0.lowercased() },
            required: reader.bool("required", diagnostics: &diagnostics) ?? (schema != nil || itemSchema != nil),
            example: reader["example"]?.json, itemSchema: itemSchema)
    }

    /// Flags endpoints that can never be reached because an earlier one with
    /// the same method and path has no `match` condition.
    mutating func checkReachability(_ endpoints: [Endpoint]) {
        // The first endpoint without a `match` for each method and path:
        // one lookup per endpoint, not a scan of all those before it.
        var unconditional: [String: Int] = [:]
        for index in endpoints.indices {
            let key = endpoints[index].method + " " + endpoints[index].path.template
            if let earlier = unconditional[key] {
                diagnostics.error(
                    "endpoint '\(endpoints[index].id)' is unreachable: '\(endpoints[earlier].id)' has the same request (\(endpoints[index].signature)) and no 'match' condition",
                    at: endpoints[index].location)
            } else if endpoints[index].match.isEmpty {
                unconditional[key] = index
            }
        }
    }
}

/// Endpoints for the loader to read one at a time: those written in a
/// contract, or another front end's (an OpenAPI document's operations),
/// whose trees are made as they are read and dropped once read instead of
/// a tree of all of them being built first; making and reading share one
/// pass on every core.
package struct EndpointEntries: Sendable {
    /// How many entries `make` can make; their names are unique.
    package let count: Int
    /// Makes the entries at `range` in order, handing each (its endpoint id
    /// and its tree in the contract format) to `read`; returns the problems
    /// found making them.
    package let make: @Sendable (_ range: Range<Int>, _ read: (_ id: String, _ node: SourceNode) -> Void) -> [Diagnostic]

    package init(count: Int, make: @escaping @Sendable (_ range: Range<Int>, _ read: (_ id: String, _ node: SourceNode) -> Void) -> [Diagnostic]) {
        self.count = count
        self.make = make
    }
}
