/// Makes a value that keeps a schema, for a response that documents a schema
/// but no example. The same schema always gives the same value.
///
/// What it picks, in order: the schema's `const`, `default`, first `example`
/// or `examples` item, first `enum` value; otherwise a value of its first
/// non-null type: objects with every property (recursion stops at optional
/// members and after `maximumDepth` levels), arrays with `minItems` items
/// (at least one), strings of the `format` (a fixed UUID, date, date-time,
/// address) or filled to `minLength`, numbers at their lower bound. `allOf`
/// merges the objects of its branches; `oneOf` and `anyOf` take the first.
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
            var merged: JSON? = own(schema, depth: depth, run: &run)
            for branch in schema.allOf {
                merged = merge(merged, sample(branch, depth: depth + 1, run: &run))
            }
            return merged
        }
        if let first = schema.oneOf.first ?? schema.anyOf.first {
            return sample(first, depth: depth + 1, run: &run)
        }
        return own(schema, depth: depth, run: &run)
    }

    /// A value of the schema's own type, ignoring combinators.
    private func own(_ schema: Schema, depth: Int, run: inout Run) -> JSON? {
        let type = schema.types?.first { $0 != "null" } ?? (schema.properties.isEmpty ? (schema.items != nil ? "array" : schema.types == nil ? nil : "null") : "object")
        switch type {
        case "object":
            var object = JSONObject()
            for (name, property) in schema.properties {
                let required = schema.required.contains(name)
                guard required || depth < Self.maximumDepth / 2 else { continue }
                if let value = sample(property, depth: depth + 1, run: &run) {
                    object[name] = value
                } else if required {
                    return nil
                }
            }
            return .object(object)
        case "array":
            let count = max(schema.minItems ?? 1, schema.prefixItems.count)
            // Each item counts at least once against the size, so a huge `minItems` gives up here.
            guard count <= Self.maximumSize - run.size else { return nil }
            run.size += count
            var items: [JSON] = []
            for index in 0..<count {
                let itemSchema = index < schema.prefixItems.count ? schema.prefixItems[index] : schema.items
                guard let itemSchema else { items.append(.null); continue }
                guard let value = sample(itemSchema, depth: depth + 1, run: &run) else {
                    if (schema.minItems ?? 0) > index { return nil }
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

    private func string(_ schema: Schema) -> String {
        var text: String
        switch schema.format {
        case "uuid": text = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
        case "date-time": text = "2026-01-01T00:00:00Z"
        case "date": text = "2026-01-01"
        case "email": text = "user@example.com"
        case "uri": text = "https://example.com/"
        default: text = "string"
        }
        if let min = schema.minLength, text.count < min { text += String(repeating: "x", count: min - text.count) }
        if let max = schema.maxLength, text.count > max { text = String(text.prefix(max)) }
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
