import DoppelCore

/// The export's responses: every status an endpoint can answer.
extension OpenAPIExporter {
    // MARK: Responses

    /// Every response the endpoint can give, by status in the order the
    /// contract lists them.
    static func responses(_ endpoint: Endpoint, in contract: Contract, engine: MockEngine) -> JSONObject {
        let lead = sampleAnswer(of: endpoint, engine: engine)
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
            let headers = responseHeaders(of: definitions, status: status)
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

    /// What the contract answers a sample request, first among its status's
    /// examples: a mock of the export (which serves the first) answers it alike.
    static func sampleAnswer(of endpoint: Endpoint, engine: MockEngine) -> (status: Int, type: String, name: String, value: JSON)? {
        let session = "export-" + String(endpoint.id.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" }.prefix(100))
        let decision = engine.decide(engine.sampleRequest(for: endpoint, session: session))
        engine.complete(decision, durationMicros: 0)
        if case .whole(let response) = decision.delivery, (200...299).contains(response.status), !response.body.isEmpty,
            response.endpointID == endpoint.id,
            let type = response.header("content-type").map(MediaTypes.essence)
        {
            let body = response.body
            let value: JSON? = MediaTypes.isJSON(type) ? try? JSONReader.parse(body) : String(bytes: body, encoding: .utf8).map { .string($0) }
            if let value { return (response.status, type, exampleName(response.responseName ?? "sample"), value) }
        }
        return nil
    }

    /// The headers a status's responses send, each with a string schema (a
    /// constant value as its example); a 429's rate-limit headers.
    static func responseHeaders(of definitions: [ResponseDefinition], status: Int) -> JSONObject {
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
        return headers
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
            .object(JSONObject([("type", "array"), ("items", itemSchema(items.map(inferredSchema)))]))
        case .object(let template):
            objectSchema(template.pairs.map { ($0.0, inferredSchema($0.1)) })
        }
    }

    /// The schema of a list's items: the one shape they share, or any of
    /// theirs (a list written with items of several shapes, as an MCP
    /// server's tools are).
    static func itemSchema(_ schemas: [JSON]) -> JSON {
        var distinct: [JSON] = []
        for schema in schemas.prefix(16) where !distinct.contains(schema) { distinct.append(schema) }
        switch distinct.count {
        case 0: return .object(JSONObject())
        case 1: return distinct[0]
        default: return .object(JSONObject([("anyOf", .array(distinct))]))
        }
    }

    /// An object's schema: its members, each required (OpenAPI 3.0 takes no empty `required`).
    static func objectSchema(_ members: [(String, JSON)]) -> JSON {
        var schema = JSONObject([("type", "object"), ("properties", .object(JSONObject(members)))])
        if !members.isEmpty { schema["required"] = .array(members.map { .string($0.0) }) }
        return .object(schema)
    }

    static func inferredSchema(_ value: JSON) -> JSON {
        switch value {
        case .null: return .object(JSONObject([("type", "null")]))
        case .bool: return .object(JSONObject([("type", "boolean")]))
        case .int: return .object(JSONObject([("type", "integer")]))
        case .double: return .object(JSONObject([("type", "number")]))
        case .string: return .object(JSONObject([("type", "string")]))
        case .array(let items):
            return .object(JSONObject([("type", "array"), ("items", itemSchema(items.map(inferredSchema)))]))
        case .object(let object):
            return objectSchema(object.pairs.map { ($0.key, inferredSchema($0.value)) })
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
}
