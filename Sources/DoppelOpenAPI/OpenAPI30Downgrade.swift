import DoppelCore

/// Rewrites an OpenAPI 3.1 document, as `OpenAPIExporter` builds it, into
/// OpenAPI 3.0.3 for tools that read only 3.0.
///
/// OpenAPIKit converts 3.0 to 3.1 but not back, so this is done here, on the
/// document's JSON before OpenAPIKit30 reads and validates it. Only schemas
/// differ between what the exporter writes in the two versions; they are
/// found where the exporter puts them (components, parameters, request and
/// response content, response headers), never by searching examples, whose
/// values may hold any key.
///
/// JSON Schema 2020-12 says more than 3.0's schema dialect. Where 3.0 has an
/// exact equivalent it is used (type lists with `null` as `nullable`, `const`
/// as a one-value `enum`, numeric `exclusiveMinimum` as `minimum` plus
/// `exclusiveMinimum: true`, `$ref` with siblings as `allOf`); `prefixItems`
/// has none and becomes `items` that admit any of the tuple's members, the
/// one place where the 3.0 document is looser than the contract.
public enum OpenAPI30Downgrade {
    /// The `openapi` version the downgraded document declares.
    public static let version = "3.0.3"

    /// An OpenAPI 3.1 document (as the exporter builds it) rewritten as 3.0.
    public static func document(_ document: JSON) -> JSON {
        guard var root = document.objectValue else { return document }
        root["openapi"] = .string(version)
        if var paths = root["paths"]?.objectValue {
            for (path, item) in paths.pairs {
                guard var item = item.objectValue else { continue }
                for (key, value) in item.pairs {
                    if key == "parameters" {
                        item[key] = parameters(value)
                    } else if var operation = value.objectValue {
                        if let list = operation["parameters"] { operation["parameters"] = parameters(list) }
                        if let body = operation["requestBody"] { operation["requestBody"] = content(in: body) }
                        if var responses = operation["responses"]?.objectValue {
                            for (status, response) in responses.pairs { responses[status] = self.response(response) }
                            operation["responses"] = .object(responses)
                        }
                        item[key] = .object(operation)
                    }
                }
                paths[path] = .object(item)
            }
            root["paths"] = .object(paths)
        }
        if var components = root["components"]?.objectValue {
            if var schemas = components["schemas"]?.objectValue {
                for (name, value) in schemas.pairs { schemas[name] = schema(value) }
                components["schemas"] = .object(schemas)
            }
            root["components"] = .object(components)
        }
        return .object(root)
    }

    static func parameters(_ list: JSON) -> JSON {
        guard let items = list.arrayValue else { return list }
        return .array(items.map { withSchema($0) })
    }

    /// A parameter, header or media type: its `schema` converted.
    static func withSchema(_ value: JSON) -> JSON {
        guard var object = value.objectValue, let schema = object["schema"] else { return value }
        object["schema"] = self.schema(schema)
        return .object(object)
    }

    /// A request body or response: each media type's schema converted.
    static func content(in value: JSON) -> JSON {
        guard var object = value.objectValue, var content = object["content"]?.objectValue else { return value }
        for (type, media) in content.pairs { content[type] = withSchema(media) }
        object["content"] = .object(content)
        return .object(object)
    }

    static func response(_ value: JSON) -> JSON {
        guard var object = content(in: value).objectValue else { return value }
        if var headers = object["headers"]?.objectValue {
            for (name, header) in headers.pairs { headers[name] = withSchema(header) }
            object["headers"] = .object(headers)
        }
        return .object(object)
    }

    // MARK: Schemas

    /// A JSON Schema 2020-12 schema as an OpenAPI 3.0 schema object.
    package static func schema(_ value: JSON) -> JSON {
        switch value {
        case .bool(true): return .object(JSONObject())
        case .bool(false): return ["not": .object(JSONObject())]
        case .object(let source): return .object(schema(source))
        default: return value
        }
    }

    static func schema(_ source: JSONObject) -> JSONObject {
        var out = JSONObject()
        var nullable = false
        var otherTypes: [String] = []
        for (key, value) in source.pairs {
            switch key {
            case "$ref":
                break
            case "type":
                var types = value.arrayValue?.compactMap(\.stringValue) ?? value.stringValue.map { [$0] } ?? []
                if let null = types.firstIndex(of: "null") {
                    nullable = true
                    types.remove(at: null)
                }
                if types.count == 1 {
                    out["type"] = .string(types[0])
                } else if types.count > 1 {
                    otherTypes = types
                } else if source["enum"] == nil, source["const"] == nil {
                    // Only null: 3.0 says it as a nullable schema admitting null alone.
                    out["enum"] = [.null]
                }
            case "const":
                out["enum"] = .array([value])
                if value == .null { nullable = true }
            case "enum":
                out["enum"] = value
            case "exclusiveMinimum", "exclusiveMaximum":
                let inclusive = key == "exclusiveMinimum" ? "minimum" : "maximum"
                guard let bound = value.numberValue else {
                    out[key] = value
                    break
                }
                // The tighter of the two bounds wins.
                if let other = source[inclusive]?.numberValue, key == "exclusiveMinimum" ? other > bound : other < bound {
                    break
                }
                out[inclusive] = value
                out[key] = true
            case "minimum", "maximum":
                let exclusive = key == "minimum" ? "exclusiveMinimum" : "exclusiveMaximum"
                if let other = source[exclusive]?.numberValue, let bound = value.numberValue,
                    key == "minimum" ? other >= bound : other <= bound
                {
                    break
                }
                out[key] = value
            case "properties":
                guard let properties = value.objectValue else {
                    out[key] = value
                    break
                }
                out[key] = .object(JSONObject(properties.pairs.map { ($0.key, schema($0.value)) }))
            case "items", "not":
                out[key] = schema(value)
            case "additionalProperties":
                out[key] = value.objectValue.map { .object(schema($0)) } ?? value
            case "allOf", "anyOf", "oneOf":
                out[key] = .array((value.arrayValue ?? []).map(schema))
            case "prefixItems":
                break
            case "contentEncoding":
                if value == "base64", source["format"] == nil { out["format"] = "byte" }
            case "examples":
                if let first = value.arrayValue?.first { out["example"] = first }
            default:
                out[key] = value
            }
        }
        return completed(out, source: source, otherTypes: otherTypes, nullable: nullable)
    }

    /// What 3.0 says in other words, once the keywords are read: a tuple
    /// as its members' union, several types as branches, null as
    /// `nullable`, a `$ref` with siblings inside `allOf`.
    static func completed(_ read: JSONObject, source: JSONObject, otherTypes: [String], nullable: Bool) -> JSONObject {
        var out = read
        if let prefix = source["prefixItems"]?.arrayValue, !prefix.isEmpty {
            // 3.0 has no tuples: any member of the tuple, or what follows it.
            var members = prefix.map(schema)
            if let items = source["items"], items != .bool(false) { members.append(schema(items)) }
            out["items"] = members.count == 1 ? members[0] : ["anyOf": .array(members)]
            if source["items"] == .bool(false), out["maxItems"] == nil { out["maxItems"] = .int(prefix.count) }
        }
        if out["type"] == "array", out["items"] == nil { out["items"] = .object(JSONObject()) }
        if !otherTypes.isEmpty {
            // Several types: one branch per type, beside the other keywords.
            let branches: JSON = .array(otherTypes.map { ["type": .string($0)] })
            if out["anyOf"] == nil {
                out["anyOf"] = branches
            } else {
                out["allOf"] = .array((out["allOf"]?.arrayValue ?? []) + [["anyOf": branches]])
            }
        }
        if nullable { out["nullable"] = true }
        if let reference = source["$ref"] {
            // 3.0 ignores a `$ref`'s siblings; `allOf` keeps them.
            let target: JSON = ["$ref": reference]
            if out.isEmpty { return target.objectValue! }
            out["allOf"] = .array([target] + (out["allOf"]?.arrayValue ?? []))
        }
        return out
    }
}
