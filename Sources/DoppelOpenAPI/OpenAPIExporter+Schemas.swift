import DoppelCore

/// The export's security schemes and schemas.
extension OpenAPIExporter {
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
        writeBounds(of: schema, applies: applies, into: &object)
        let objects = applies(["object"])
        let arrays = applies(["array"])
        writeContainers(of: schema, objects: objects, arrays: arrays, into: &object)
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
            writeAdvanced(advanced, into: &object)
        }
        if let value = schema.defaultValue { object["default"] = value }
        return .object(object)
    }

    /// Numbers' bounds and strings' lengths, pattern and format, where the schema's types take them.
    static func writeBounds(of schema: Schema, applies: ([String]) -> Bool, into object: inout JSONObject) {
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
    }

    /// Objects' members and arrays' items, where the schema's types take them.
    static func writeContainers(of schema: Schema, objects: Bool, arrays: Bool, into object: inout JSONObject) {
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
    }

    /// The rarer keywords (pattern properties, dependencies, conditions, contains, unevaluated).
    static func writeAdvanced(_ advanced: Schema.Advanced, into object: inout JSONObject) {
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
