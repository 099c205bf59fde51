import DoppelCore

/// Describes a contract as an OpenAPI 3.1 document: every endpoint with its
/// parameters, request body and security, and every status it can answer
/// (its responses, `documented`, `on_invalid`, its auth scheme's failures,
/// the rate limits that cover it, and Doppel's 422 when it validates input
/// and has no `on_invalid`).
///
/// The document is built as a `JSON` value in the shape OpenAPI 3.1 gives
/// it; `OpenAPIDocumentWriter` has OpenAPIKit read it back, validate it and
/// write it. Nothing is invented: a response's schema is the one the
/// contract gives, else what its body's constant parts show (a placeholder
/// is any value), and only constant bodies become examples.
public enum OpenAPIExporter {
    /// The OpenAPI 3.1 document for `contract`, as JSON.
    public static func document(for contract: Contract) -> JSON {
        // Sample bodies render `uuid()` from a fixed sequence: the same contract exports the same document.
        UUIDBits.fixed { build(for: contract) }
    }

    private static func build(for contract: Contract) -> JSON {
        var document = JSONObject()
        // 3.2 where a response is described item by item (`itemSchema`), which 3.1 has no word for.
        document["openapi"] = needsThreeTwo(contract) ? "3.2.0" : "3.1.0"
        var info = JSONObject([("title", .string(contract.info.title)), ("version", .string(contract.info.version))])
        if let description = contract.info.description { info["description"] = .string(description) }
        document["info"] = .object(info)
        document["servers"] = [.object(JSONObject([("url", .string(contract.basePath.isEmpty ? "/" : contract.basePath))]))]

        var paths = JSONObject()
        // Renders each response for a sample request, for bodies with templates
        // (`MockEngine.sampleBody`), and answers each endpoint's sample request
        // in a session of its own, at a fixed instant, for its first example.
        let engine = MockEngine(contract: contract, clock: { MockEngine.sampleInstant })
        // Endpoints of one method and path (told apart by `match`) are one
        // operation in OpenAPI: their variants merged (`merged`).
        var variants: [(path: String, method: String, endpoints: [Endpoint])] = []
        // A GraphQL section's endpoints are the calls its door makes, not what a client sends: its path is written as GraphQL over HTTP.
        let graphQLIDs = Set(contract.graphql.map { ["graphql", GraphQLDefinition.socketEndpointID] + $0.resolvers } ?? [])
        for endpoint in contract.endpoints where !graphQLIDs.contains(endpoint.id) {
            // OpenAPI has no parameter for the rest of a path: `{name...}` is
            // written `{name}` (a client must then encode its slashes).
            let path = relativePath(endpoint.path.template, basePath: contract.basePath).replacingOccurrences(of: "...}", with: "}")
            let method = endpoint.method.lowercased()
            if let index = variants.firstIndex(where: { $0.path == path && $0.method == method }) {
                variants[index].endpoints.append(endpoint)
            } else {
                variants.append((path, method, [endpoint]))
            }
        }
        for (path, method, endpoints) in variants {
            var item = paths[path]?.objectValue ?? JSONObject()
            let operations = endpoints.map { (endpoint: $0, operation: operation($0, in: contract, engine: engine)) }
            item[method] = .object(operations.count == 1 ? operations[0].operation : merged(operations))
            paths[path] = .object(item)
        }
        if let graphql = contract.graphql, let operation = contract.endpoint(id: "graphql") {
            let path = relativePath(graphql.path, basePath: contract.basePath)
            paths[path] = .object(graphQLPathItem(operation, in: contract, engine: engine))
        }
        document["paths"] = .object(paths)

        var components = JSONObject()
        if !contract.schemas.isEmpty {
            var schemas = JSONObject()
            for name in contract.schemas.keys.sorted() { schemas[name] = schemaJSON(contract.schemas[name]!) }
            components["schemas"] = .object(schemas)
        }
        var schemes = JSONObject()
        for name in contract.authSchemes.keys.sorted() {
            for (key, scheme) in securitySchemes(contract.authSchemes[name]!) { schemes[key] = scheme }
        }
        if !schemes.isEmpty { components["securitySchemes"] = .object(schemes) }
        if !components.isEmpty { document["components"] = .object(components) }
        return .object(document)
    }

    /// `/api/v1/children/{id}` below `/api/v1` is `/children/{id}`.
    package static func relativePath(_ template: String, basePath: String) -> String {
        guard !basePath.isEmpty, template.hasPrefix(basePath) else { return template }
        let rest = String(template.dropFirst(basePath.count))
        return rest.isEmpty ? "/" : rest
    }

    // MARK: Operations

    /// The body of a GraphQL-over-HTTP POST.
    static let graphQLRequestSchema: JSON = [
        "type": "object", "required": ["query"],
        "properties": ["query": ["type": "string"], "operationName": ["type": ["string", "null"]], "variables": ["type": ["object", "null"]]],
    ]

    /// A GraphQL response: data, errors and extensions.
    static let graphQLAnswerSchema: JSON = [
        "type": "object",
        "properties": [
            "data": ["type": ["object", "null"]],
            "errors": [
                "type": "array",
                "items": [
                    "type": "object", "required": ["message"],
                    "properties": [
                        "message": ["type": "string"],
                        "locations": [
                            "type": "array",
                            "items": ["type": "object", "properties": ["line": ["type": "integer"], "column": ["type": "integer"]]],
                        ],
                        "path": ["type": "array", "items": ["type": ["string", "integer"]]], "extensions": ["type": "object"],
                    ],
                ],
            ],
            "extensions": ["type": "object"],
        ],
    ]

    /// A GraphQL answer's content, in both forms a client may accept, with `example`.
    static func graphQLContent(_ example: JSON) -> JSON {
        .object(
            JSONObject([
                ("application/graphql-response+json", ["schema": graphQLAnswerSchema, "example": example]),
                ("application/json", ["schema": graphQLAnswerSchema, "example": example]),
            ]))
    }

    /// A contract's GraphQL API as OpenAPI says it: POST (and GET for
    /// queries) of the GraphQL-over-HTTP request, answered with a GraphQL
    /// response; the operation's auth failures and rate limits as the
    /// contract's `graphql` endpoint documents them. The schema itself is
    /// served by introspection, which OpenAPI has no word for.
    static func graphQLPathItem(_ operation: Endpoint, in contract: Contract, engine: MockEngine) -> JSONObject {
        let request = graphQLRequestSchema
        let content = graphQLContent
        var responses = JSONObject([
            (
                "200",
                .object(
                    JSONObject([
                        (
                            "description",
                            "The operation ran: its data, and errors for the fields that failed (also request errors, for Accept: application/json)"
                        ),
                        ("content", content(["data": ["__typename": "Query"]])),
                    ]))
            ),
            (
                "400",
                .object(
                    JSONObject([
                        ("description", "A request error (the document cannot be parsed or validated): errors and no data"),
                        ("content", content(["errors": [["message": "Syntax Error: Unexpected <EOF>.", "locations": [["line": 1, "column": 2]]]]])),
                    ]))
            ),
        ])
        for (status, refusal) in [
            ("406", "Accept names neither application/graphql-response+json nor application/json"),
            ("413", "The query is over 100,000 bytes, or the body over the server's limit"),
            ("415", "A POST not sent as application/json"),
        ] {
            responses[status] = .object(
                JSONObject([("description", .string(refusal)), ("content", content(["errors": [["message": .string(refusal)]]]))]))
        }
        for (status, response) in self.responses(operation, in: contract, engine: engine).pairs where !status.hasPrefix("2") {
            responses[status] = response
        }
        let security: JSON = .array(
            operation.auth.compactMap { contract.authSchemes[$0] }.flatMap(securitySchemes).map { .object(JSONObject([($0.name, .array([]))])) })
        let post = JSONObject([
            ("operationId", "graphql"), ("summary", "A GraphQL operation (GraphQL over HTTP)"), ("security", security),
            (
                "requestBody",
                [
                    "required": true,
                    "content": ["application/json": ["schema": request, "example": ["query": "{ __typename }"]]],
                ]
            ),
            ("responses", .object(responses)),
        ])
        var getResponses = responses
        getResponses["415"] = nil
        getResponses["405"] = .object(
            JSONObject([("description", "A mutation sent with GET"), ("content", content(["errors": [["message": "a mutation is sent with POST"]]]))])
        )
        let get = JSONObject([
            ("operationId", "graphql-get"), ("summary", "A GraphQL query sent with GET"), ("security", security),
            (
                "parameters",
                [
                    ["name": "query", "in": "query", "required": true, "schema": ["type": "string"], "example": "{ __typename }"],
                    ["name": "operationName", "in": "query", "schema": ["type": "string"]],
                    ["name": "variables", "in": "query", "schema": ["type": "string"], "description": "the variables as JSON"],
                ]
            ),
            ("responses", .object(getResponses)),
        ])
        return JSONObject([("get", .object(get)), ("post", .object(post))])
    }

    static func operation(_ endpoint: Endpoint, in contract: Contract, engine: MockEngine) -> JSONObject {
        var operation = JSONObject()
        operation["operationId"] = .string(endpoint.id)
        if let summary = endpoint.summary { operation["summary"] = .string(summary) }
        let parameters = self.parameters(endpoint, in: contract)
        if !parameters.isEmpty { operation["parameters"] = .array(parameters) }
        if let body = endpoint.body { operation["requestBody"] = requestBody(body) }
        // Any one of the endpoint's schemes admits a request: one requirement each.
        operation["security"] = .array(
            endpoint.auth.compactMap { contract.authSchemes[$0] }.flatMap(securitySchemes).map {
                .object(JSONObject([($0.name, .array([]))]))
            })
        operation["responses"] = .object(responses(endpoint, in: contract, engine: engine))
        if let callbacks = callbacks(of: endpoint) { operation["callbacks"] = .object(callbacks) }
        return operation
    }

    /// The endpoint's responses' callbacks as OpenAPI `callbacks`: each one
    /// whose URL a runtime expression can say (a fixed URL, or parts taken
    /// from the request's body, query, headers or path); its body as the
    /// request body's example when it is fixed. Others are left out: their
    /// URLs need values OpenAPI cannot name (a `let`, the state).
    static func callbacks(of endpoint: Endpoint) -> JSONObject? {
        var seen: Set<String> = []
        var callbacks = JSONObject()
        for callback in endpoint.documentedResponses.flatMap(\.callbacks) where seen.insert(callback.name).inserted {
            guard let url = runtimeExpression(callback.url) else { continue }
            var body = JSONObject()
            if let template = callback.body {
                let type = callback.contentType ?? (template.constantValue?.stringValue != nil ? "text/plain" : "application/json")
                var media = JSONObject()
                if let value = template.constantValue { media["example"] = value }
                body["content"] = .object(JSONObject([(type, .object(media))]))
            }
            var operation = JSONObject([("responses", .object(JSONObject([("2XX", .object(JSONObject([("description", "The receiver took it")])))])))]
            )
            if body["content"] != nil { operation["requestBody"] = .object(body) }
            callbacks[callback.name] = .object(JSONObject([(url, .object(JSONObject([(callback.method.lowercased(), .object(operation))])))]))
        }
        return callbacks.isEmpty ? nil : callbacks
    }

    /// A callback URL template as an OpenAPI runtime expression, or nil.
    static func runtimeExpression(_ template: ValueTemplate) -> String? {
        func expression(_ source: String) -> String? {
            let text = source.trimmingCharacters(in: .whitespaces)
            if text == "request.method" { return "{$method}" }
            if text == "body" { return "{$request.body}" }
            if text.hasPrefix("body") {
                var pointer = ""
                var rest = Substring(text.dropFirst(4))
                while !rest.isEmpty {
                    if rest.hasPrefix(".") {
                        let name = rest.dropFirst().prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                        guard !name.isEmpty else { return nil }
                        pointer += "/" + name
                        rest = rest.dropFirst(1 + name.count)
                    } else if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                        var key = rest[rest.index(after: rest.startIndex)..<close]
                        if key.hasPrefix("'"), key.hasSuffix("'"), key.count >= 2 {
                            key = key.dropFirst().dropLast()
                        } else if Int(key) == nil {
                            return nil
                        }
                        guard !key.contains("\\"), !key.contains("'") else { return nil }
                        pointer += "/" + key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
                        rest = rest[rest.index(after: close)...]
                    } else {
                        return nil
                    }
                }
                return "{$request.body#\(pointer)}"
            }
            for (root, kind) in [("query", "query"), ("headers", "header"), ("path", "path")] {
                if text.hasPrefix(root + "."), case let name = text.dropFirst(root.count + 1),
                    name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }), !name.isEmpty
                {
                    return "{$request.\(kind).\(name)}"
                }
                if text.hasPrefix(root + "['"), text.hasSuffix("']"), case let name = text.dropFirst(root.count + 2).dropLast(2), !name.contains("'"),
                    !name.isEmpty
                {
                    return "{$request.\(kind).\(name)}"
                }
            }
            return nil
        }
        switch template {
        case .constant(let value):
            return value.stringValue.map { $0.replacingOccurrences(of: "{", with: "%7B").replacingOccurrences(of: "}", with: "%7D") }
        case .expression(let single):
            return expression(single.source)
        case .interpolated(let segments):
            var url = ""
            for segment in segments {
                switch segment {
                case .text(let text): url += text.replacingOccurrences(of: "{", with: "%7B").replacingOccurrences(of: "}", with: "%7D")
                case .expression(let part):
                    guard let converted = expression(part.source) else { return nil }
                    url += converted
                }
            }
            return url
        default:
            return nil
        }
    }

    /// One operation for endpoints that share a method and path: the first's
    /// id and summary, a description naming each variant and what tells it
    /// apart, the parameters of all (required where every variant requires
    /// them), any of their security requirements, and each status's content
    /// with every variant's schema (`anyOf`) and examples (the first
    /// variant's first; a later variant's named after its endpoint where a
    /// name is taken). A mock of the export serves the first variant's
    /// answer; `Prefer: example=NAME` picks another's.
    static func merged(_ variants: [(endpoint: Endpoint, operation: JSONObject)]) -> JSONObject {
        var operation = variants[0].operation
        let lines = variants.map { variant in
            let condition = variant.endpoint.match.map { "`\($0.expression.source)`" }.joined(separator: " and ")
            return "- `\(variant.endpoint.id)`" + (condition.isEmpty ? "" : " (when \(condition))")
                + (variant.endpoint.summary.map { ": \($0)" } ?? "")
        }
        let note = "Variants, told apart by the request (the first that applies answers):\n" + lines.joined(separator: "\n")
        operation["description"] = .string([operation["description"]?.stringValue, note].compactMap { $0 }.joined(separator: "\n\n"))

        // Parameters: each once, required where every variant requires it.
        func parameterList(_ operation: JSONObject) -> [JSONObject] { (operation["parameters"]?.arrayValue ?? []).compactMap(\.objectValue) }
        func same(_ a: JSONObject, _ b: JSONObject) -> Bool { a["name"] == b["name"] && a["in"] == b["in"] }
        var parameters: [JSONObject] = []
        for variant in variants {
            for parameter in parameterList(variant.operation) where !parameters.contains(where: { same($0, parameter) }) {
                var kept = parameter
                let everywhere = variants.allSatisfy { other in
                    parameterList(other.operation).contains { same($0, parameter) && $0["required"] == true }
                }
                kept["required"] = everywhere ? true : nil
                parameters.append(kept)
            }
        }
        if !parameters.isEmpty { operation["parameters"] = .array(parameters.map { .object($0) }) }
        if operation["requestBody"] == nil, let body = variants.lazy.compactMap({ $0.operation["requestBody"] }).first {
            operation["requestBody"] = body
        }

        var security: [JSON] = []
        for variant in variants {
            for requirement in variant.operation["security"]?.arrayValue ?? [] where !security.contains(requirement) { security.append(requirement) }
        }
        // A public variant makes the operation public for some requests: `{}` says so.
        if variants.contains(where: { $0.operation["security"]?.arrayValue?.isEmpty ?? true }), !security.isEmpty, !security.contains([:]) {
            security.append([:])
        }
        operation["security"] = .array(security)

        operation["responses"] = .object(mergedResponses(variants))
        return operation
    }

    /// Each status's response over the variants: headers of all, each
    /// media type's schemas as `anyOf`, and every variant's examples (a
    /// later variant's named after its endpoint where a name is taken).
    static func mergedResponses(_ variants: [(endpoint: Endpoint, operation: JSONObject)]) -> JSONObject {
        var responses = variants[0].operation["responses"]?.objectValue ?? JSONObject()
        for variant in variants.dropFirst() {
            for (status, response) in variant.operation["responses"]?.objectValue?.pairs ?? JSONObject().pairs {
                guard var into = responses[status]?.objectValue, let response = response.objectValue else {
                    responses[status] = response
                    continue
                }
                var headers = into["headers"]?.objectValue ?? JSONObject()
                for (name, header) in response["headers"]?.objectValue?.pairs ?? JSONObject().pairs where headers[name] == nil {
                    headers[name] = header
                }
                if !headers.isEmpty { into["headers"] = .object(headers) }
                var content = into["content"]?.objectValue ?? JSONObject()
                for (type, media) in response["content"]?.objectValue?.pairs ?? JSONObject().pairs {
                    guard var existing = content[type]?.objectValue, let media = media.objectValue else {
                        content[type] = media
                        continue
                    }
                    if let schema = media["schema"], let first = existing["schema"], schema != first {
                        let known = first["anyOf"]?.arrayValue ?? [first]
                        if !known.contains(schema) { existing["schema"] = .object(JSONObject([("anyOf", .array(known + [schema]))])) }
                    }
                    var examples = existing["examples"]?.objectValue ?? JSONObject()
                    // A shared response both variants give is shown once.
                    for (name, example) in media["examples"]?.objectValue?.pairs ?? JSONObject().pairs where !examples.values.contains(example) {
                        var key = examples[name] == nil ? name : exampleName("\(variant.endpoint.id)-\(name)")
                        var suffix = 2
                        while examples[key] != nil {
                            key = exampleName("\(variant.endpoint.id)-\(name)-\(suffix)")
                            suffix += 1
                        }
                        examples[key] = example
                    }
                    if !examples.isEmpty { existing["examples"] = .object(examples) }
                    content[type] = .object(existing)
                }
                if !content.isEmpty { into["content"] = .object(content) }
                responses[status] = .object(into)
            }
        }
        return responses
    }

    static let stringSchema: JSON = ["type": "string"]

    /// Headers that OpenAPI describes elsewhere and tells tools to ignore as parameters.
    static let reservedHeaders: Set<String> = ["accept", "content-type", "authorization"]

    static func parameters(_ endpoint: Endpoint, in contract: Contract) -> [JSON] {
        var parameters: [JSON] = []
        for name in endpoint.path.parameterNames {
            let schema = endpoint.pathParameters?.property(name).map(schemaJSON) ?? stringSchema
            parameters.append(
                .object(
                    JSONObject([
                        ("name", .string(name)), ("in", "path"), ("required", true), ("schema", schema),
                    ])))
        }
        let schemeHeaders: Set<String> = Set(
            endpoint.auth.compactMap { contract.authSchemes[$0] }.compactMap { scheme in
                if case .apiKey(let header?, _, _) = scheme.kind { return header.lowercased() }
                return nil
            })
        for (location, schema) in [("query", endpoint.query), ("header", endpoint.headers), ("cookie", endpoint.cookies)] {
            guard let schema else { continue }
            for (name, property) in schema.properties {
                if location == "header", reservedHeaders.contains(name.lowercased()) || schemeHeaders.contains(name.lowercased()) { continue }
                var parameter = JSONObject([("name", .string(name)), ("in", .string(location))])
                if schema.required.contains(name) { parameter["required"] = true }
                parameter["schema"] = schemaJSON(property)
                parameters.append(.object(parameter))
            }
        }
        if let spec = endpoint.queryString {
            // OpenAPI 3.2: the whole query as one parameter (its name is not kept in the contract).
            var parameter = JSONObject([("name", "querystring"), ("in", "querystring")])
            if spec.required { parameter["required"] = true }
            let type = spec.contentTypes.first ?? "application/x-www-form-urlencoded"
            parameter["content"] = .object(
                JSONObject([(type, .object(JSONObject([("schema", spec.schema.map(schemaJSON) ?? .object(JSONObject()))])))]))
            parameters.append(.object(parameter))
        }
        return parameters
    }

    static func requestBody(_ body: BodySpec) -> JSON {
        var content = JSONObject()
        for type in body.contentTypes.isEmpty ? ["application/json"] : body.contentTypes {
            if let itemSchema = body.itemSchema, body.schema == nil, SequentialMedia(type) != nil {
                content[type] = .object(JSONObject([("itemSchema", schemaJSON(itemSchema))]))
                continue
            }
            content[type] = .object(JSONObject([("schema", body.schema.map(schemaJSON) ?? .object(JSONObject()))]))
        }
        return .object(JSONObject([("required", .bool(body.required)), ("content", .object(content))]))
    }

}
