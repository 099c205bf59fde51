import Foundation
import OrderedCollections

extension SchemaValidator {
    /// Turns string parameters (query or headers) into typed JSON by an object
    /// schema: `"10"` becomes `10` for an integer property, repeated names
    /// become a list for an array property. Issues are for values that cannot
    /// be read as their declared type.
    /// `repeatedAsList`: a name sent more than once gives a list of its
    /// values (form bodies), rather than its last value (query, headers).
    package func coerceParameters(
        _ parameters: [(String, String)], by schema: Schema?, caseInsensitive: Bool = false,
        repeatedAsList: Bool = false
    ) -> (JSON, [ValidationIssue]) {
        let resolved = schema.map(resolve)
        var issues: [ValidationIssue] = []
        var parameters = parameters
        // Object parameters first: their members come from several query
        // items (or one), which are taken out of the list.
        var objects: [String: JSON] = [:]
        if let resolved, !caseInsensitive, resolved.properties.contains(where: { resolve($0.1).typeSet.contains(.object) }) {
            objects = objectParameters(&parameters, of: resolved, issues: &issues)
        }
        // Values by name, names in the order they first came (searched
        // without hashing while there are few, as most queries have).
        var grouped = OrderedDictionary<String, [String]>()
        for (name, value) in parameters {
            grouped[caseInsensitive ? name.lowercased() : name, default: []].append(value)
        }
        var object = JSONObject()
        object.reserveCapacity(grouped.count + objects.count)
        for (name, value) in objects { object[name] = value }
        for (key, values) in grouped {
            let propertySchema = resolved.flatMap { parameterSchema(key, of: $0, caseInsensitive: caseInsensitive) }
            // Pointers are written only for an issue: a valid request builds none.
            func pointer(_ index: Int? = nil) -> String { "/" + Self.escape(key) + (index.map { "/\($0)" } ?? "") }
            if let propertySchema, propertySchema.typeSet.contains(.array) {
                let itemSchema = propertySchema.items.map(resolve)
                // `ids=1&ids=2`, `ids=1,2`, `ids=1|2` (pipeDelimited), `ids=1 2` (spaceDelimited).
                let separator: Character =
                    switch propertySchema.style {
                    case "pipeDelimited": "|"
                    case "spaceDelimited": " "
                    default: ","
                    }
                let items = values.flatMap { $0.split(separator: separator, omittingEmptySubsequences: false).map(String.init) }
                object[key] = .array(items.enumerated().map { i, v in coerce(v, itemSchema, pointer(i), &issues) })
            } else if repeatedAsList, values.count > 1 {
                object[key] = .array(values.enumerated().map { i, v in coerce(v, propertySchema, pointer(i), &issues) })
            } else {
                object[key] = coerce(values[values.count - 1], propertySchema, pointer(), &issues)
            }
        }
        return (.object(object), issues)
    }

    /// The members of the object parameters of `schema`, each read as its
    /// style says (OpenAPI's, for query and cookie parameters), the items
    /// they came from taken out of `parameters`:
    /// - `form`, exploded (the default): each member is an item of its own
    ///   (`color=red&size=2`), for the member names no other parameter has;
    /// - `form`, not exploded: one item, names and values by commas (`point=x,1,y,2`);
    /// - `deepObject`: `filter[color]=red&filter[size]=2`.
    /// A parameter none of whose members came is left out (its `required` says whether it may be).
    private func objectParameters(_ parameters: inout [(String, String)], of schema: Schema, issues: inout [ValidationIssue]) -> [String: JSON] {
        var objects: [String: JSON] = [:]
        let topLevel = Set(schema.properties.map(\.0))
        for (name, raw) in schema.properties {
            let property = resolve(raw)
            guard property.typeSet.contains(.object), !property.typeSet.contains(.string) else { continue }
            let style = property.style ?? "form"
            var members: [(String, String)] = []
            switch (style, property.explode ?? (style == "form")) {
            case ("deepObject", _):
                let prefix = name + "["
                parameters.removeAll { item in
                    guard item.0.hasPrefix(prefix), item.0.hasSuffix("]") else { return false }
                    members.append((String(item.0.dropFirst(prefix.count).dropLast()), item.1))
                    return true
                }
            case ("form", true):
                let names = Set(property.properties.map(\.0)).subtracting(topLevel)
                parameters.removeAll { item in
                    guard names.contains(item.0) else { return false }
                    members.append(item)
                    return true
                }
            case ("form", false):
                guard let index = parameters.lastIndex(where: { $0.0 == name }) else { continue }
                let parts = parameters[index].1.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                parameters.removeAll { $0.0 == name }
                var position = 0
                while position + 1 < parts.count {
                    members.append((parts[position], parts[position + 1]))
                    position += 2
                }
                if parts.count % 2 == 1 {
                    issues.append(
                        ValidationIssue(
                            pointer: "/" + Self.escape(name),
                            message: "expected names and values in pairs (name,value,...), got '\(parts.joined(separator: ","))'"))
                }
            default:
                continue
            }
            guard !members.isEmpty else { continue }
            var object = JSONObject()
            for (member, value) in members {
                let memberSchema = parameterSchema(member, of: property, caseInsensitive: false)
                object[member] = coerce(value, memberSchema, "/" + Self.escape(name) + "/" + Self.escape(member), &issues)
            }
            objects[name] = .object(object)
        }
        return objects
    }

    /// The schema a parameter is read by: its property's (found as
    /// `property` finds it), references followed.
    private func parameterSchema(_ name: String, of resolved: Schema, caseInsensitive: Bool) -> Schema? {
        property(name, of: resolved, caseInsensitive: caseInsensitive, depth: 0).map(resolve)
    }

    /// Whether `coerceParameters` reads a parameter of this name as a number
    /// (one value, not a list); otherwise it stays text, or is a list or a
    /// boolean.
    package func readsAsNumber(_ name: String, by schema: Schema?) -> Bool {
        guard let schema, let types = parameterSchema(name, of: resolve(schema), caseInsensitive: false)?.types else { return false }
        return !types.contains("string") && !types.contains("array") && (types.contains("integer") || types.contains("number"))
    }

    /// Digits, with a sign before them at most.
    static func isIntegerText(_ text: String) -> Bool {
        let digits = text.utf8.first == UInt8(ascii: "-") || text.utf8.first == UInt8(ascii: "+") ? text.utf8.dropFirst() : text.utf8[...]
        return !digits.isEmpty && digits.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    static func looksLikeJSONNumber(_ text: String) -> Bool {
        guard let first = text.utf8.first, first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return text.utf8.allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E")
                || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-")
        }
    }

    private func coerce(_ text: String, _ schema: Schema?, _ pointer: @autoclosure () -> String, _ issues: inout [ValidationIssue]) -> JSON {
        guard let schema, let types = schema.types else { return .string(text) }
        let set = schema.typeSet
        if set.contains(.string) { return .string(text) }
        if set.contains(.integer), let i = Int(text) { return .int(i) }
        // An integer beyond Int's 64 bits, as a JSON body's is read: a whole double.
        if set.contains(.integer), text.utf8.count < 400, Self.isIntegerText(text), let d = Double(text), d.isFinite { return .double(d) }
        // A number as JSON writes one: `Double` also reads `nan`, `inf`,
        // `infinity` and hexadecimal, and `1e400` as infinity.
        if set.contains(.number), let d = Double(text), d.isFinite, Self.looksLikeJSONNumber(text) { return Int(text).map { .int($0) } ?? .double(d) }
        if set.contains(.boolean), text == "true" || text == "false" { return .bool(text == "true") }
        if set.contains(.null), text == "null" || text.isEmpty { return .null }
        issues.append(ValidationIssue(pointer: pointer(), message: "expected \(types.joined(separator: " or ")), got '\(text)'"))
        return .string(text)
    }

    /// The schema of a named property: the schema's own, else the first
    /// `allOf`/`oneOf`/`anyOf` branch's that declares it (a form field of a
    /// polymorphic body is read by the type its branches give it).
    func property(_ name: String, of schema: Schema, caseInsensitive: Bool, depth: Int) -> Schema? {
        let own = caseInsensitive ? schema.properties.first { $0.0.lowercased() == name }?.1 : schema.property(name)
        if let own { return own }
        guard depth < 8 else { return nil }
        for branch in schema.allOf + schema.oneOf + schema.anyOf {
            if let found = property(name, of: resolve(branch), caseInsensitive: caseInsensitive, depth: depth + 1) { return found }
        }
        return nil
    }

    /// Follows `$ref`s to the schema they name.
    package func resolve(_ schema: Schema) -> Schema {
        var current = schema
        var hops = 0
        while let ref = current.ref, current.types == nil, current.properties.isEmpty, let target = registry[ref], hops < 32 {
            current = target
            hops += 1
        }
        return current
    }

    /// Fills `default`s of missing top-level properties into an object.
    package func applyingDefaults(to value: JSON, schema: Schema?) -> JSON {
        guard let schema = schema.map(resolve), case .object(var object) = value else { return value }
        for (name, property) in schema.properties where object[name] == nil {
            if let d = resolve(property).defaultValue ?? property.defaultValue { object[name] = d }
        }
        return .object(object)
    }
}
