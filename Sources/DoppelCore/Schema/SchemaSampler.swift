/// Makes a value that keeps a schema, for a response that documents a schema
/// but no example. The same schema always gives the same value.
///
/// What it picks, in order: the schema's `const`, `default`, first `example`
/// or `examples` item, first `enum` value; otherwise a value of its first
/// non-null type: objects with every property (recursion stops at optional
/// members and after `maximumDepth` levels), arrays with `minItems` items
/// (at least one), strings of the `format` (a fixed UUID, date, date-time,
/// address), made from its `pattern` when it has one, or filled to
/// `minLength`; numbers at their lower bound. `allOf` is merged into one
/// schema first (properties and `required` of every branch, so a property
/// one branch requires and another defines is there); `oneOf` and `anyOf`
/// take the first branch whose sample the whole schema accepts.
package struct SchemaSampler: Sendable {
    package let registry: [String: Schema]

    /// How deep a sample may nest before optional members are left out and lists left empty.
    package static let maximumDepth = 8
    /// The most a sample may hold, counting each value and each character of
    /// its strings: a schema of many members that each refer to many others,
    /// or a `minLength` of a billion, gives up (an optional member is left
    /// out; a required one leaves its parent without a sample) rather than
    /// filling memory while the contract loads.
    package static let maximumSize = 100_000

    /// The state of one sample: the named schemas being expanded, and the size so far.
    private struct Run {
        var visiting: [String] = []
        var size = 0
        /// Optional members with a fixed value (`const`, `default`, `enum`,
        /// `example`) are kept at any depth: a `oneOf` branch's sample made
        /// without them may fit every branch (`{}`).
        var keepFixedMembers = false
    }

    package init(registry: [String: Schema]) {
        self.registry = registry
    }

    /// A value that keeps `schema`; nil when none can be made within the
    /// bounds (a required member that recurses without end, or a value
    /// larger than `maximumSize`).
    package func sample(_ schema: Schema) -> JSON? {
        var run = Run()
        return sample(schema, depth: 0, run: &run)
    }

    /// nil when no value can be made within the depth (a required member that recurses forever).
    private func sample(_ schema: Schema, depth: Int, run: inout Run) -> JSON? {
        run.size += 1
        guard run.size <= Self.maximumSize else { return nil }
        if let constant = schema.constValue { return constant }
        if let value = schema.defaultValue { return value }
        if let example = schema.example { return example }
        if let first = schema.enumValues?.first { return first }
        if let ref = schema.ref, let target = registry[ref] {
            guard depth < Self.maximumDepth, run.visiting.filter({ $0 == ref }).count < 2 else { return nil }
            run.visiting.append(ref)
            defer { run.visiting.removeLast() }
            if schema.types == nil, schema.properties.isEmpty, schema.allOf.isEmpty { return sample(target, depth: depth + 1, run: &run) }
            return merge(sample(target, depth: depth + 1, run: &run), own(schema, depth: depth, run: &run))
        }
        if !schema.allOf.isEmpty {
            let flat = flattened(schema, hops: 0)
            if flat.allOf.isEmpty { return sample(flat, depth: depth, run: &run) }
            var merged: JSON? = own(schema, depth: depth, run: &run)
            for branch in schema.allOf {
                merged = merge(merged, sample(branch, depth: depth + 1, run: &run))
            }
            return merged
        }
        let branches = schema.oneOf.isEmpty ? schema.anyOf : schema.oneOf
        if !branches.isEmpty {
            // The first branch whose sample the whole schema takes (a `oneOf`
            // sample another branch also accepts is refused); else the first's.
            let validator = SchemaValidator(registry: registry)
            var first: JSON?
            for (index, branch) in branches.enumerated() {
                guard let candidate = sample(branch, depth: depth + 1, run: &run) else { continue }
                if index == 0 { first = candidate }
                if validator.validate(candidate, against: schema).isEmpty { return candidate }
                // Again with the members that tell branches apart (a `type: {enum: [bank]}`).
                guard !run.keepFixedMembers else { continue }
                run.keepFixedMembers = true
                let fuller = sample(branch, depth: depth + 1, run: &run)
                run.keepFixedMembers = false
                if let fuller, validator.validate(fuller, against: schema).isEmpty { return fuller }
            }
            return first
        }
        return own(schema, depth: depth, run: &run)
    }

    /// Whether a schema (or the one it refers to) names its value: `const`, `default`, `enum` or `example`.
    private func hasFixedValue(_ schema: Schema) -> Bool {
        let target = schema.ref.flatMap { registry[$0] } ?? schema
        return [schema, target].contains { $0.constValue != nil || $0.defaultValue != nil || $0.enumValues != nil || $0.example != nil }
    }

    /// A value of the schema's own type, ignoring combinators.
    private func own(_ schema: Schema, depth: Int, run: inout Run) -> JSON? {
        let type =
            schema.types?.first { $0 != "null" }
            ?? (schema.properties.isEmpty ? (schema.items != nil ? "array" : schema.types == nil ? nil : "null") : "object")
        switch type {
        case "object":
            var object = JSONObject()
            for (name, property) in schema.properties {
                let required = schema.required.contains(name)
                guard required || depth < Self.maximumDepth / 2 || (run.keepFixedMembers && hasFixedValue(property)) else { continue }
                if let value = sample(property, depth: depth + 1, run: &run) {
                    object[name] = value
                } else if required {
                    return nil
                }
            }
            if schema.advanced != nil { conditioned(&object, schema, depth: depth, run: &run) }
            return .object(object)
        case "array":
            // `contains`: the first items after `prefixItems` are samples of it, `minContains` of them (1 when not given).
            let contains = schema.advanced?.contains
            let containing = contains == nil ? 0 : schema.advanced?.minContains ?? 1
            let count = max(schema.minItems ?? 1, schema.prefixItems.count + containing)
            // Each item counts at least once against the size, so a huge `minItems` gives up here.
            guard count <= Self.maximumSize - run.size else { return nil }
            run.size += count
            var items: [JSON] = []
            for index in 0..<count {
                let containsItem = index >= schema.prefixItems.count && index < schema.prefixItems.count + containing
                let itemSchema = index < schema.prefixItems.count ? schema.prefixItems[index] : containsItem ? contains : schema.items
                guard let itemSchema else {
                    items.append(.null)
                    continue
                }
                guard let value = sample(itemSchema, depth: depth + 1, run: &run) else {
                    if (schema.minItems ?? 0) > index || containsItem { return nil }
                    break
                }
                items.append(value)
            }
            if schema.uniqueItems, Set(items).count != items.count { items = Array(items.prefix(1)) }
            return .array(items)
        case "string":
            // The longest text a sample starts from is a UUID, 36 characters.
            let length = max(schema.minLength ?? 0, 36)
            guard length <= Self.maximumSize - run.size else { return nil }
            run.size += length
            return .string(string(schema))
        case "integer", "number":
            // Bounds past Int's range (`minimum: 1e300`) give a number written as a double; none past Double's.
            let value = number(schema, integer: type == "integer")
            guard value.isFinite else { return nil }
            return value.rounded() == value && abs(value) < 1e15 ? .int(Int(value)) : .double(value)
        case "boolean":
            return .bool(true)
        case "null":
            return .null
        default:
            return schema.nullable ? .null : .object(JSONObject())
        }
    }

    /// What an object's members bring in made to hold: the `then` (or
    /// `else`) its `if` picks and the `dependentSchemas` of members present
    /// (each member they describe sampled from its own schema and theirs
    /// together, each they require added), and `dependentRequired`.
    private func conditioned(_ object: inout JSONObject, _ schema: Schema, depth: Int, run: inout Run) {
        guard let advanced = schema.advanced else { return }
        var parts: [Schema] = []
        if let condition = advanced.ifSchema {
            let holds = SchemaValidator(registry: registry).validate(.object(object), against: condition).isEmpty
            if let branch = holds ? advanced.thenSchema : advanced.elseSchema { parts.append(branch) }
        }
        for (name, dependent) in advanced.dependentSchemas where object[name] != nil { parts.append(dependent) }
        func own(_ name: String) -> Schema? { schema.properties.first { $0.0 == name }?.1 }
        for var part in parts {
            if let ref = part.ref, part.properties.isEmpty, part.required.isEmpty, let target = registry[ref] { part = target }
            for (name, property) in part.properties where object[name] != nil || part.required.contains(name) {
                let combined = own(name).map { Schema(allOf: [$0, property]) } ?? property
                if let value = sample(combined, depth: depth + 1, run: &run) { object[name] = value }
            }
            for name in part.required where object[name] == nil {
                object[name] = own(name).flatMap { sample($0, depth: depth + 1, run: &run) } ?? .string("string")
            }
        }
        for (name, needed) in advanced.dependentRequired where object[name] != nil {
            for other in needed where object[other] == nil {
                object[other] = own(other).flatMap { sample($0, depth: depth + 1, run: &run) } ?? .string("string")
            }
        }
    }

    /// `allOf` and the schema's own keywords as one schema: every branch's
    /// properties (the first definition of a name wins) and `required`, and
    /// of every other keyword the first given; nil-able only when every part
    /// is. Branches that refer to a named schema are followed, `maximumDepth`
    /// hops at most; past that, or when a branch has combinators of its own
    /// left, the schema is returned as it was (its `allOf` kept).
    private func flattened(_ schema: Schema, hops: Int) -> Schema {
        guard !schema.allOf.isEmpty else { return schema }
        guard hops < Self.maximumDepth else { return schema }
        var parts: [Schema] = [schema]
        for branch in schema.allOf {
            var part = branch
            if let ref = part.ref, part.types == nil, part.properties.isEmpty, part.allOf.isEmpty, let target = registry[ref] { part = target }
            part = flattened(part, hops: hops + 1)
            guard part.allOf.isEmpty, part.ref == nil else { return schema }
            parts.append(part)
        }
        var properties: [(String, Schema)] = []
        var required: [String] = []
        for part in parts {
            for property in part.properties where !properties.contains(where: { $0.0 == property.0 }) { properties.append(property) }
            for name in part.required where !required.contains(name) { required.append(name) }
        }
        func first<T>(_ keyPath: KeyPath<Schema, T?>) -> T? { parts.lazy.compactMap { $0[keyPath: keyPath] }.first }
        let types = first(\.types) ?? (properties.isEmpty ? nil : ["object"])
        return Schema(
            types: types, nullable: parts.allSatisfy(\.nullable), enumValues: first(\.enumValues), constValue: first(\.constValue),
            minimum: first(\.minimum), maximum: first(\.maximum), exclusiveMinimum: first(\.exclusiveMinimum),
            exclusiveMaximum: first(\.exclusiveMaximum),
            minLength: first(\.minLength), maxLength: first(\.maxLength), pattern: first(\.pattern), format: first(\.format),
            properties: properties, required: required, additionalProperties: parts.lazy.compactMap(\.additionalProperties).first,
            items: first(\.items), prefixItems: parts.first { !$0.prefixItems.isEmpty }?.prefixItems ?? [], minItems: first(\.minItems),
            maxItems: first(\.maxItems), uniqueItems: parts.contains(where: \.uniqueItems), minProperties: first(\.minProperties),
            maxProperties: first(\.maxProperties), multipleOf: first(\.multipleOf),
            anyOf: parts.first { !$0.anyOf.isEmpty }?.anyOf ?? [], oneOf: parts.first { !$0.oneOf.isEmpty }?.oneOf ?? [],
            discriminator: first(\.discriminator), not: first(\.not), defaultValue: first(\.defaultValue), example: first(\.example))
    }

    private func string(_ schema: Schema) -> String {
        var text: String
        switch schema.format {
        case "uuid": text = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
        case "date-time": text = "2026-01-01T00:00:00Z"
        case "date": text = "2026-01-01"
        case "email": text = "user@example.com"
        case "uri", "iri": text = "https://example.com/"
        case "time": text = "12:00:00Z"
        case "duration": text = "P1D"
        case "ipv4": text = "192.0.2.1"
        case "ipv6": text = "2001:db8::1"
        case "hostname": text = "example.com"
        case "idn-email": text = "user@example.com"
        case "json-pointer": text = "/items/0"
        case "relative-json-pointer": text = "0"
        case "uri-reference", "iri-reference": text = "/items/1"
        case "uri-template": text = "/items/{id}"
        case "byte": text = "c3RyaW5n"
        default: text = "string"
        }
        // Lengths in code points, as the validator counts them.
        if let min = schema.minLength, text.unicodeScalars.count < min { text += String(repeating: "x", count: min - text.unicodeScalars.count) }
        if let max = schema.maxLength, text.unicodeScalars.count > max { text = String(String.UnicodeScalarView(text.unicodeScalars.prefix(max))) }
        if let pattern = schema.pattern, !pattern.matches(text),
            let made = pattern.example(minLength: schema.minLength ?? 0, maxLength: schema.maxLength)
        {
            return made
        }
        return text
    }

    private func number(_ schema: Schema, integer: Bool) -> Double {
        var value = 0.0
        if let min = schema.minimum { value = min }
        if let min = schema.exclusiveMinimum, value <= min { value = integer ? (min + 1).rounded(.down) : min + 1 }
        if let max = schema.maximum, value > max { value = max }
        if let max = schema.exclusiveMaximum, value >= max { value = integer ? (max - 1).rounded(.up) : max - 1 }
        if integer { value = value.rounded(.up) }
        if let factor = schema.multipleOf, factor > 0 { value = (value / factor).rounded(.up) * factor }
        return value
    }

    /// Members of two objects together (the first's win); otherwise the first value.
    private func merge(_ a: JSON?, _ b: JSON?) -> JSON? {
        guard case .object(var left)? = a else { return a ?? b }
        guard case .object(let right)? = b else { return a }
        for pair in right.pairs where left[pair.key] == nil { left[pair.key] = pair.value }
        return .object(left)
    }
}
