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
        for endpoint in contract.endpoints {
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
        operation["responses"] = .object(responses)
        return operation
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

    // MARK: Responses

    /// Every response the endpoint can give, by status in the order the
    /// contract lists them.
    static func responses(_ endpoint: Endpoint, in contract: Contract, engine: MockEngine) -> JSONObject {
        // What the contract answers a sample request, first among its status's
        // examples: a mock of the export (which serves the first) answers it alike.
        var lead: (status: Int, type: String, name: String, value: JSON)?
        let session = "export-" + String(endpoint.id.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" }.prefix(100))
        let decision = engine.decide(engine.sampleRequest(for: endpoint, session: session))
        engine.complete(decision, durationMicros: 0)
        if case .whole(let response) = decision.delivery, (200...299).contains(response.status), !response.body.isEmpty,
            response.endpointID == endpoint.id,
            let type = response.header("content-type").map(MediaTypes.essence)
        {
            let body = response.body
            let value: JSON? = MediaTypes.isJSON(type) ? try? JSONReader.parse(body) : String(bytes: body, encoding: .utf8).map { .string($0) }
            if let value { lead = (response.status, type, exampleName(response.responseName ?? "sample"), value) }
        }
        var byStatus: [(status: Int, responses: [ResponseDefinition])] = []
        func add(_ response: ResponseDefinition) {
            if let index = byStatus.firstIndex(where: { $0.status == response.status }) {
                byStatus[index].responses.append(response)
            } else {
                byStatus.append((response.status, [response]))
            }
        }
        contract.documentedResponses(of: endpoint).forEach(add)
        let validates =
            endpoint.query != nil || endpoint.queryString != nil || endpoint.headers != nil || endpoint.body?.schema != nil
            || endpoint.body?.itemSchema != nil
        var builtIn: [Int: String] = [:]
        // The contract's fallbacks where they answer for this endpoint.
        if endpoint.body != nil, let malformed = contract.fallbacks[.malformedBody] { add(malformed) }
        if validates, endpoint.onInvalid == nil {
            if let invalid = contract.fallbacks[.validationFailed] {
                add(invalid)
            } else if !byStatus.contains(where: { $0.status == 422 }) {
                byStatus.append((422, []))
                builtIn[422] = "The request does not match the contract (a problem listing every failing field)"
            }
        }
        if endpoint.socket != nil {
            // A WebSocket endpoint's own refusals: a request that is not an upgrade, one that is malformed.
            for (status, text) in [
                (426, "Not a WebSocket upgrade (Upgrade: websocket, Sec-WebSocket-Version: 13 needed)"),
                (400, "A malformed WebSocket upgrade (Sec-WebSocket-Key must be 16 bytes in base64)"),
            ]
            where !byStatus.contains(where: { $0.status == status }) {
                byStatus.append((status, []))
                builtIn[status] = text
            }
        }

        var responses = JSONObject()
        for (status, definitions) in byStatus {
            var response = JSONObject()
            response["description"] = .string(definitions.lazy.compactMap(\.description).first ?? builtIn[status] ?? reasonPhrase(status))
            var headers = JSONObject()
            for definition in definitions {
                for (name, value) in definition.headers where name.lowercased() != "content-type" && headers[name] == nil {
                    // A constant value is the header's example, so an import of the export sends it too.
                    var header = JSONObject([("schema", stringSchema)])
                    if case .constant(let constant) = value, let text = constant.parameterText {
                        header["example"] = .string(text)
                    }
                    headers[name] = .object(header)
                }
            }
            if status == 429 {
                for name in ["Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"] where headers[name] == nil {
                    headers[name] = ["schema": stringSchema]
                }
            }
            if !headers.isEmpty { response["headers"] = .object(headers) }
            if definitions.isEmpty, builtIn[status] != nil {
                response["content"] = .object(JSONObject([("application/problem+json", .object(JSONObject([("schema", problemSchema)])))]))
            } else if let content = content(
                of: definitions, endpoint: endpoint, engine: engine, lead: lead?.status == status ? (lead!.type, lead!.name, lead!.value) : nil)
            {
                response["content"] = .object(content)
            }
            responses[String(status)] = .object(response)
        }
        return responses
    }

    /// The content of one status: a schema and examples per media type. A
    /// body with templates is shown as it renders for a sample request in a
    /// fresh session (`MockEngine.sampleBody`), so a mock of the export
    /// answers with the contract's bodies.
    static func content(
        of definitions: [ResponseDefinition], endpoint: Endpoint, engine: MockEngine,
        lead: (type: String, name: String, value: JSON)? = nil
    ) -> JSONObject? {
        // Per media type: the first declared schema, else the first body's shape.
        var schemas: [(type: String, schema: JSON, declared: Bool)] = []
        var examples: [String: JSONObject] = [:]
        // Media types described item by item: their `itemSchema`, examples as sent.
        var itemTypes: Set<String> = []
        for definition in definitions {
            for leaf in definition.sequence.map(\.responses) ?? [definition] {
                guard var type = leaf.body.contentType ?? leaf.stream?.contentType else { continue }
                if let itemSchema = leaf.itemSchema {
                    type = MediaTypes.essence(type)
                    if !schemas.contains(where: { $0.type == type }) { schemas.append((type, schemaJSON(itemSchema), true)) }
                    itemTypes.insert(type)
                    if let text = engine.sampleBody(of: leaf, for: endpoint)?.stringValue {
                        examples[type, default: JSONObject()][exampleName(leaf.name)] = ["serializedValue": .string(text)]
                    }
                    continue
                }
                let schema = leaf.schema.map(schemaJSON) ?? inferredSchema(leaf.body)
                if let index = schemas.firstIndex(where: { $0.type == type }) {
                    if leaf.schema != nil, !schemas[index].declared {
                        schemas[index] = (type, schema, true)
                    } else if leaf.schema != nil, schemas[index].schema != schema {
                        // Variants of one status with schemas of their own: a body keeps one of them.
                        let variants = schemas[index].schema["anyOf"]?.arrayValue ?? [schemas[index].schema]
                        if !variants.contains(schema) { schemas[index].schema = .object(JSONObject([("anyOf", .array(variants + [schema]))])) }
                    }
                } else {
                    schemas.append((type, schema, leaf.schema != nil))
                }
                if let example = example(of: leaf.body) ?? engine.sampleBody(of: leaf, for: endpoint) {
                    examples[type, default: JSONObject()][exampleName(leaf.name)] = ["value": example]
                }
            }
        }
        guard !schemas.isEmpty else { return nil }
        var content = JSONObject()
        for (type, schema, _) in schemas {
            var media = JSONObject([(itemTypes.contains(type) ? "itemSchema" : "schema", schema)])
            if let lead, MediaTypes.essence(type) == lead.type {
                // The sample request's answer first, under its response's name.
                var ordered: [(String, JSON)] = [(lead.name, .object(JSONObject([("value", lead.value)])))]
                for pair in examples[type]?.pairs ?? JSONObject().pairs where pair.key != lead.name { ordered.append((pair.key, pair.value)) }
                examples[type] = JSONObject(ordered)
            }
            if let named = examples[type] { media["examples"] = .object(named) }
            content[type] = .object(media)
        }
        return content
    }

    /// Whether the contract says what only OpenAPI 3.2 can: a body
    /// described item by item, the query as one value.
    static func needsThreeTwo(_ contract: Contract) -> Bool {
        contract.endpoints.contains { endpoint in
            endpoint.queryString != nil || endpoint.body?.itemSchema != nil
                || (endpoint.responses + endpoint.documented).contains { response in
                    (response.sequence.map(\.responses) ?? [response]).contains { $0.itemSchema != nil }
                }
        }
    }

    /// `tales[0]` is not a valid component key everywhere; `tales-0` is.
    static func exampleName(_ name: String) -> String {
        let mapped = String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." ? $0 : "-" })
        return String(mapped.drop { $0 == "-" }.reversed().drop { $0 == "-" }.reversed())
    }

    /// A body's value when nothing in it is computed.
    static func example(of body: ResponseBody) -> JSON? {
        switch body {
        case .json(let template, _, _): template.constantValue
        case .text(let template, _): template.constantValue
        case .empty, .bytes: nil
        }
    }

    /// What a body without a declared schema shows of its shape: constant
    /// parts typed, objects with their members, placeholders as any value.
    static func inferredSchema(_ body: ResponseBody) -> JSON {
        switch body {
        case .json(let template, _, _): inferredSchema(template)
        case .text: .object(JSONObject([("type", "string")]))
        case .bytes: .object(JSONObject([("type", "string"), ("contentEncoding", "base64")]))
        case .empty: .object(JSONObject())
        }
    }

    static func inferredSchema(_ template: ValueTemplate) -> JSON {
        switch template {
        case .constant(let value): inferredSchema(value)
        case .expression: .object(JSONObject())
        case .interpolated: .object(JSONObject([("type", "string")]))
        case .array(let items):
            .object(JSONObject([("type", "array"), ("items", items.first.map(inferredSchema) ?? .object(JSONObject()))]))
        case .object(let template):
            .object(
                JSONObject([
                    ("type", "object"),
                    ("properties", .object(JSONObject(template.pairs.map { ($0.0, inferredSchema($0.1)) }))),
                    ("required", .array(template.pairs.map { .string($0.0) })),
                ]))
        }
    }

    static func inferredSchema(_ value: JSON) -> JSON {
        switch value {
        case .null: return .object(JSONObject([("type", "null")]))
        case .bool: return .object(JSONObject([("type", "boolean")]))
        case .int: return .object(JSONObject([("type", "integer")]))
        case .double: return .object(JSONObject([("type", "number")]))
        case .string: return .object(JSONObject([("type", "string")]))
        case .array(let items):
            return .object(JSONObject([("type", "array"), ("items", items.first.map(inferredSchema) ?? .object(JSONObject()))]))
        case .object(let object):
            return .object(
                JSONObject([
                    ("type", "object"),
                    ("properties", .object(JSONObject(object.pairs.map { ($0.key, inferredSchema($0.value)) }))),
                    ("required", .array(object.keys.map { .string($0) })),
                ]))
        }
    }

    /// Doppel's own problem bodies (RFC 9457).
    static let problemSchema: JSON = .object(
        JSONObject([
            ("type", "object"),
            (
                "properties",
                .object(
                    JSONObject([
                        ("type", .object(JSONObject([("type", "string")]))),
                        ("title", .object(JSONObject([("type", "string")]))),
                        ("status", .object(JSONObject([("type", "integer")]))),
                        ("detail", .object(JSONObject([("type", "string")]))),
                    ]))
            ),
            ("required", ["type", "title", "status", "detail"]),
        ]))

    // MARK: Security

    /// An auth scheme as OpenAPI security schemes: one, or one per place an
    /// API key may be sent (header, query, cookie; any satisfies), the first
    /// under the scheme's name and the others suffixed with their place.
    static func securitySchemes(_ scheme: AuthScheme) -> [(name: String, scheme: JSON)] {
        switch scheme.kind {
        case .bearer:
            var object = JSONObject([("type", "http"), ("scheme", "bearer")])
            if scheme.format == .jwt { object["bearerFormat"] = "JWT" }
            return [(scheme.name, .object(object))]
        case .basic:
            return [(scheme.name, .object(JSONObject([("type", "http"), ("scheme", "basic")])))]
        case .apiKey(let header, let query, let cookie):
            var schemes: [(name: String, scheme: JSON)] = []
            for (place, name) in [("header", header), ("query", query), ("cookie", cookie)] {
                guard let name else { continue }
                schemes.append(
                    (
                        schemes.isEmpty ? scheme.name : "\(scheme.name)-\(place)",
                        .object(JSONObject([("type", "apiKey"), ("in", .string(place)), ("name", .string(name))]))
                    ))
            }
            return schemes
        }
    }

    // MARK: Schemas

    /// A contract schema as OpenAPI 3.1 (JSON Schema 2020-12) means it.
    package static func schemaJSON(_ schema: Schema) -> JSON {
        if schema === Schema.never { return false }
        var object = JSONObject()
        // JSON Schema 2020-12 keeps keywords beside `$ref`. A nullable
        // reference with no type of its own admits null as a second branch.
        if let ref = schema.ref {
            let target: JSON = .string("#/components/schemas/\(ref)")
            if schema.nullable, schema.types == nil, schema.enumValues == nil {
                object["anyOf"] = [["$ref": target], ["type": "null"]]
            } else {
                object["$ref"] = target
            }
        }
        if var types = schema.types {
            if schema.nullable, !types.contains("null") { types.append("null") }
            object["type"] = types.count == 1 ? .string(types[0]) : .array(types.map { .string($0) })
        }
        // A keyword only ever applies to values of its type: beside a `type`
        // that rules those out it says nothing, and is left out (`maxLength`
        // beside `type: object`, `null` in the `enum` of `type: string`).
        // The schema means the same, and tools that insist keywords match
        // the type (OpenAPIKit among them) read it.
        let applies = { (kinds: [String]) -> Bool in schema.types.map { types in kinds.contains { types.contains($0) } } ?? true }
        let admitted = schema.types.map { Schema.TypeSet(schema.nullable ? $0 + ["null"] : $0) }
        if let values = schema.enumValues {
            let kept = admitted.map { set in values.filter { set.admits($0) } } ?? values
            object["enum"] = .array(schema.nullable && !kept.contains(.null) ? kept + [.null] : kept)
        }
        if let value = schema.constValue { object["const"] = value }
        if applies(["integer", "number"]) {
            // A bound past 2^53 as written, not as the nearest double.
            let exact = schema.advanced?.exactBounds ?? [:]
            if let value = schema.minimum { object["minimum"] = exact["minimum"].map(JSON.int) ?? number(value) }
            if let value = schema.maximum { object["maximum"] = exact["maximum"].map(JSON.int) ?? number(value) }
            if let value = schema.exclusiveMinimum { object["exclusiveMinimum"] = exact["exclusiveMinimum"].map(JSON.int) ?? number(value) }
            if let value = schema.exclusiveMaximum { object["exclusiveMaximum"] = exact["exclusiveMaximum"].map(JSON.int) ?? number(value) }
            if let value = schema.multipleOf { object["multipleOf"] = number(value) }
        }
        if applies(["string"]) {
            if let value = schema.minLength { object["minLength"] = .int(value) }
            if let value = schema.maxLength { object["maxLength"] = .int(value) }
            if let pattern = schema.pattern { object["pattern"] = .string(pattern.source) }
            if let format = schema.format { object["format"] = .string(format) }
        }
        let objects = applies(["object"])
        let arrays = applies(["array"])
        if objects {
            if !schema.properties.isEmpty {
                object["properties"] = .object(JSONObject(schema.properties.map { ($0.0, schemaJSON($0.1)) }))
            }
            if !schema.required.isEmpty { object["required"] = .array(schema.required.map { .string($0) }) }
            if let additional = schema.additionalProperties {
                let written = additional.map(schemaJSON) ?? .bool(false)
                object["additionalProperties"] = written == .object(JSONObject()) ? .bool(true) : written
            }
            if let value = schema.minProperties { object["minProperties"] = .int(value) }
            if let value = schema.maxProperties { object["maxProperties"] = .int(value) }
        }
        if arrays {
            if !schema.prefixItems.isEmpty { object["prefixItems"] = .array(schema.prefixItems.map(schemaJSON)) }
            if let items = schema.items { object["items"] = schemaJSON(items) }
            if let value = schema.minItems { object["minItems"] = .int(value) }
            if let value = schema.maxItems { object["maxItems"] = .int(value) }
            if schema.uniqueItems { object["uniqueItems"] = true }
        }
        if !schema.allOf.isEmpty { object["allOf"] = .array(schema.allOf.map(schemaJSON)) }
        if !schema.anyOf.isEmpty {
            let branches: JSON = .array(schema.anyOf.map(schemaJSON))
            if let nullableReference = object["anyOf"] {
                object["allOf"] = .array((object["allOf"]?.arrayValue ?? []) + [["anyOf": nullableReference], ["anyOf": branches]])
                object["anyOf"] = nil
            } else {
                object["anyOf"] = branches
            }
        }
        if !schema.oneOf.isEmpty { object["oneOf"] = .array(schema.oneOf.map(schemaJSON)) }
        if let discriminator = schema.discriminator {
            var spec = JSONObject([("propertyName", .string(discriminator.propertyName))])
            if !discriminator.mapping.isEmpty {
                spec["mapping"] = .object(JSONObject(discriminator.mapping.map { ($0.0, .string("#/components/schemas/\($0.1)")) }))
            }
            object["discriminator"] = .object(spec)
        }
        if let not = schema.not { object["not"] = schemaJSON(not) }
        if let advanced = schema.advanced.map({ Self.applicable($0, objects: objects, arrays: arrays) }) {
            if !advanced.patternProperties.isEmpty {
                object["patternProperties"] = .object(JSONObject(advanced.patternProperties.map { ($0.0.source, schemaJSON($0.1)) }))
            }
            if let names = advanced.propertyNames { object["propertyNames"] = schemaJSON(names) }
            if !advanced.dependentRequired.isEmpty {
                object["dependentRequired"] = .object(JSONObject(advanced.dependentRequired.map { ($0.0, .array($0.1.map { .string($0) })) }))
            }
            if !advanced.dependentSchemas.isEmpty {
                object["dependentSchemas"] = .object(JSONObject(advanced.dependentSchemas.map { ($0.0, schemaJSON($0.1)) }))
            }
            if let condition = advanced.ifSchema { object["if"] = schemaJSON(condition) }
            if let then = advanced.thenSchema { object["then"] = schemaJSON(then) }
            if let otherwise = advanced.elseSchema { object["else"] = schemaJSON(otherwise) }
            if let contains = advanced.contains { object["contains"] = schemaJSON(contains) }
            if let value = advanced.minContains { object["minContains"] = .int(value) }
            if let value = advanced.maxContains { object["maxContains"] = .int(value) }
            if let unevaluated = advanced.unevaluatedProperties { object["unevaluatedProperties"] = schemaJSON(unevaluated) }
            if let unevaluated = advanced.unevaluatedItems { object["unevaluatedItems"] = schemaJSON(unevaluated) }
        }
        if let value = schema.defaultValue { object["default"] = value }
        return .object(object)
    }

    /// The rarer keywords that can apply beside the schema's `type`.
    static func applicable(_ advanced: Schema.Advanced, objects: Bool, arrays: Bool) -> Schema.Advanced {
        var kept = advanced
        if !objects {
            kept.patternProperties = []
            kept.propertyNames = nil
            kept.dependentRequired = []
            kept.dependentSchemas = []
            kept.unevaluatedProperties = nil
        }
        if !arrays {
            kept.contains = nil
            kept.minContains = nil
            kept.maxContains = nil
            kept.unevaluatedItems = nil
        }
        return kept
    }

    /// Whole numbers as integers: `minimum: 1`, not `1.0`, and
    /// `9007199254740993000`, not `9.007199254740993e+18` (an integer
    /// schema's bound must be an integer literal). A bound read as
    /// 2^63 (a document's `maximum: 9223372036854775807`, the largest
    /// 64-bit integer, as the nearest double) is written as that integer,
    /// which reads back as the same double.
    static func number(_ value: Double) -> JSON {
        guard value == value.rounded(), value.isFinite else { return .double(value) }
        if value == 9_223_372_036_854_775_808.0 { return .int(Int.max) }
        return abs(value) < 9_223_372_036_854_775_808.0 ? .int(Int(value)) : .double(value)
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 402: "Payment Required"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 410: "Gone"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status \(status)"
        }
    }
}
