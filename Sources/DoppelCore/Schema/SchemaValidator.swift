import Foundation

/// Validates JSON values against compiled schemas, collecting every failure.
public struct SchemaValidator: Sendable {
    /// Named schemas that `$ref` points at.
    public let registry: [String: Schema]

    public init(registry: [String: Schema]) {
        self.registry = registry
    }

    /// Every way `value` fails `schema`; empty when it is valid.
    public func validate(_ value: JSON, against schema: Schema, at pointer: String = "") -> [ValidationIssue] {
        var issues: [ValidationIssue] = []
        validate(value, schema, pointer, depth: 0, into: &issues)
        return issues
    }

    private func validate(_ value: JSON, _ schema: Schema, _ pointer: String, depth: Int, into issues: inout [ValidationIssue]) {
        guard depth < 64 else {
            issues.append(ValidationIssue(pointer: pointer, message: "schema nesting too deep (a $ref cycle?)"))
            return
        }
        if let ref = schema.ref {
            guard let target = registry[ref] else {
                issues.append(ValidationIssue(pointer: pointer, message: "unknown schema '\(ref)'"))
                return
            }
            validate(value, target, pointer, depth: depth + 1, into: &issues)
        }
        if value.isNull, schema.nullable { return }
        if let types = schema.types, !types.contains(where: { Self.value(value, hasType: $0) }) {
            issues.append(ValidationIssue(pointer: pointer, message: "expected \(types.joined(separator: " or ")), got \(value.typeName)"))
            return
        }
        if let constant = schema.constValue, !value.looselyEquals(constant) {
            issues.append(ValidationIssue(pointer: pointer, message: "must be \(JSONWriter.encodeString(constant))"))
        }
        if let options = schema.enumValues, !options.contains(where: { $0.looselyEquals(value) }) {
            let list = options.map { JSONWriter.encodeString($0) }.joined(separator: ", ")
            issues.append(ValidationIssue(pointer: pointer, message: "must be one of \(list), got \(JSONWriter.encodeString(value))"))
        }
        switch value {
        case .int, .double:
            validateNumber(value.numberValue!, schema, pointer, into: &issues)
        case .string(let s):
            validateString(s, schema, pointer, into: &issues)
        case .array(let items):
            if let min = schema.minItems, items.count < min {
                issues.append(ValidationIssue(pointer: pointer, message: "must have at least \(min) item\(min == 1 ? "" : "s"), has \(items.count)"))
            }
            if let max = schema.maxItems, items.count > max {
                issues.append(ValidationIssue(pointer: pointer, message: "must have at most \(max) item\(max == 1 ? "" : "s"), has \(items.count)"))
            }
            if schema.uniqueItems, Set(items).count != items.count {
                issues.append(ValidationIssue(pointer: pointer, message: "items must be unique"))
            }
            if let itemSchema = schema.items {
                for (i, item) in items.enumerated() {
                    validate(item, itemSchema, pointer + "/\(i)", depth: depth + 1, into: &issues)
                }
            }
        case .object(let object):
            for name in schema.required where object[name] == nil {
                issues.append(ValidationIssue(pointer: pointer + "/" + Self.escape(name), message: "is required"))
            }
            for pair in object.pairs {
                let childPointer = pointer + "/" + Self.escape(pair.key)
                if let propertySchema = schema.property(pair.key) {
                    validate(pair.value, propertySchema, childPointer, depth: depth + 1, into: &issues)
                } else if let additional = schema.additionalProperties {
                    if let additional {
                        validate(pair.value, additional, childPointer, depth: depth + 1, into: &issues)
                    } else {
                        issues.append(ValidationIssue(pointer: childPointer, message: "is not an allowed property"))
                    }
                }
            }
        default:
            break
        }
        for sub in schema.allOf {
            validate(value, sub, pointer, depth: depth + 1, into: &issues)
        }
        if !schema.anyOf.isEmpty {
            let passing = schema.anyOf.filter { validate(value, against: $0, at: pointer).isEmpty }
            if passing.isEmpty {
                issues.append(ValidationIssue(pointer: pointer, message: "matches none of the \(schema.anyOf.count) allowed shapes (anyOf)"))
            }
        }
        if !schema.oneOf.isEmpty {
            let passing = schema.oneOf.filter { validate(value, against: $0, at: pointer).isEmpty }.count
            if passing != 1 {
                issues.append(ValidationIssue(pointer: pointer, message: "must match exactly one allowed shape (oneOf), matches \(passing)"))
            }
        }
        if let negated = schema.not, validate(value, against: negated, at: pointer).isEmpty {
            issues.append(ValidationIssue(pointer: pointer, message: "must not match the 'not' schema"))
        }
    }

    private func validateNumber(_ n: Double, _ schema: Schema, _ pointer: String, into issues: inout [ValidationIssue]) {
        func text(_ d: Double) -> String { d.rounded() == d && abs(d) < 9e15 ? String(Int(d)) : String(d) }
        if let min = schema.minimum, n < min {
            issues.append(ValidationIssue(pointer: pointer, message: "must be at least \(text(min)), got \(text(n))"))
        }
        if let max = schema.maximum, n > max {
            issues.append(ValidationIssue(pointer: pointer, message: "must be at most \(text(max)), got \(text(n))"))
        }
        if let min = schema.exclusiveMinimum, n <= min {
            issues.append(ValidationIssue(pointer: pointer, message: "must be greater than \(text(min)), got \(text(n))"))
        }
        if let max = schema.exclusiveMaximum, n >= max {
            issues.append(ValidationIssue(pointer: pointer, message: "must be less than \(text(max)), got \(text(n))"))
        }
    }

    private func validateString(_ s: String, _ schema: Schema, _ pointer: String, into issues: inout [ValidationIssue]) {
        if let min = schema.minLength, s.count < min {
            issues.append(ValidationIssue(pointer: pointer, message: "must be at least \(min) character\(min == 1 ? "" : "s") long"))
        }
        if let max = schema.maxLength, s.count > max {
            issues.append(ValidationIssue(pointer: pointer, message: "must be at most \(max) character\(max == 1 ? "" : "s") long"))
        }
        if let pattern = schema.pattern, !pattern.matches(s) {
            issues.append(ValidationIssue(pointer: pointer, message: "must match the pattern \(pattern.source)"))
        }
        if let format = schema.format, !Self.string(s, hasFormat: format) {
            issues.append(ValidationIssue(pointer: pointer, message: "must be a valid \(format)"))
        }
    }

    static func value(_ value: JSON, hasType type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object),
             ("integer", .int), ("number", .int), ("number", .double):
            return true
        case ("integer", .double(let d)):
            return d.rounded() == d
        default:
            return false
        }
    }

    static func string(_ s: String, hasFormat format: String) -> Bool {
        switch format {
        case "uuid":
            return isUUID(s)
        case "date-time":
            return s.count > 10 && UTCCalendar.parse(s) != nil
        case "date":
            return s.count == 10 && UTCCalendar.parse(s) != nil
        case "email":
            let parts = s.split(separator: "@", omittingEmptySubsequences: false)
            return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".") && !parts[1].hasPrefix(".")
                && !parts[1].hasSuffix(".") && !s.contains(" ")
        case "uri":
            guard let colon = s.firstIndex(of: ":"), colon != s.startIndex else { return false }
            return s[..<colon].allSatisfy { $0.isLetter || $0.isNumber || "+-.".contains($0) } && !s.contains(" ")
        default:
            return true
        }
    }

    /// `8-4-4-4-12` hexadecimal digits, checked byte by byte (Foundation's
    /// UUID parser is slow on Linux, and this runs for every uuid field).
    static func isUUID(_ s: String) -> Bool {
        let bytes = s.utf8
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                let isHex = (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 70) || (byte >= 97 && byte <= 102)
                guard isHex else { return false }
            }
        }
        return true
    }

    /// Escapes a key for use in a JSON pointer (RFC 6901).
    static func escape(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}

extension SchemaValidator {
    /// Turns string parameters (query or headers) into typed JSON by an object
    /// schema: `"10"` becomes `10` for an integer property, repeated names
    /// become a list for an array property. Issues are for values that cannot
    /// be read as their declared type.
    public func coerceParameters(_ parameters: [(String, String)], by schema: Schema?, caseInsensitive: Bool = false) -> (JSON, [ValidationIssue]) {
        var grouped: [String: [String]] = [:]
        var order: [String] = []
        for (name, value) in parameters {
            let key = caseInsensitive ? name.lowercased() : name
            if grouped[key] == nil { order.append(key) }
            grouped[key, default: []].append(value)
        }
        var object = JSONObject()
        var issues: [ValidationIssue] = []
        let resolved = schema.map(resolve)
        for key in order {
            let values = grouped[key]!
            let propertySchema = resolved.flatMap { s in
                caseInsensitive ? s.properties.first { $0.0.lowercased() == key }?.1 : s.property(key)
            }.map(resolve)
            let pointer = "/" + Self.escape(key)
            if let propertySchema, propertySchema.types?.contains("array") == true {
                let itemSchema = propertySchema.items.map(resolve)
                let items = values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
                object[key] = .array(items.enumerated().map { i, v in coerce(v, itemSchema, pointer + "/\(i)", &issues) })
            } else {
                object[key] = coerce(values[values.count - 1], propertySchema, pointer, &issues)
            }
        }
        return (.object(object), issues)
    }

    private func coerce(_ text: String, _ schema: Schema?, _ pointer: String, _ issues: inout [ValidationIssue]) -> JSON {
        guard let types = schema?.types else { return .string(text) }
        if types.contains("string") { return .string(text) }
        if types.contains("integer"), let i = Int(text) { return .int(i) }
        if types.contains("number"), let d = Double(text) { return Int(text).map { .int($0) } ?? .double(d) }
        if types.contains("boolean"), text == "true" || text == "false" { return .bool(text == "true") }
        if types.contains("null"), text == "null" || text.isEmpty { return .null }
        issues.append(ValidationIssue(pointer: pointer, message: "expected \(types.joined(separator: " or ")), got '\(text)'"))
        return .string(text)
    }

    /// Follows `$ref`s to the schema they name.
    public func resolve(_ schema: Schema) -> Schema {
        var current = schema
        var hops = 0
        while let ref = current.ref, current.types == nil, current.properties.isEmpty, let target = registry[ref], hops < 32 {
            current = target
            hops += 1
        }
        return current
    }

    /// Fills `default`s of missing top-level properties into an object.
    public func applyingDefaults(to value: JSON, schema: Schema?) -> JSON {
        guard let schema = schema.map(resolve), case .object(var object) = value else { return value }
        for (name, property) in schema.properties where object[name] == nil {
            if let d = resolve(property).defaultValue ?? property.defaultValue { object[name] = d }
        }
        return .object(object)
    }
}
