import DoppelCore
import Foundation

/// Comparing schemas: what a change to a request's or a response's schema breaks.
extension ContractDiff.Differ {
    // MARK: Schemas

    /// The schema a `$ref` names, and its name.
    func resolve(_ schema: JSON, in schemas: [String: JSON]) -> (JSON, String?) {
        var current = schema
        var name: String?
        for _ in 0..<16 {
            guard let ref = current["$ref"]?.stringValue, ref.hasPrefix("#/components/schemas/") else { break }
            name = String(ref.dropFirst("#/components/schemas/".count))
            guard let target = schemas[name!] else { break }
            // Keywords beside the reference stay with it.
            var merged = target.objectValue ?? JSONObject()
            for (key, value) in current.objectValue?.pairs ?? JSONObject().pairs where key != "$ref" { merged[key] = value }
            current = .object(merged)
        }
        return (current, name)
    }

    /// The most `allOf` branches merged into one schema, however deep:
    /// a document's nesting is followed to any depth, and a branch that
    /// names itself again (a cycle) ends at this budget, not in a loop.
    static let maximumMergedBranches = 10_000

    /// `allOf` branches merged, at any depth: their properties and `required`, for comparing.
    func flattened(_ schema: JSON, in schemas: [String: JSON]) -> JSON {
        var budget = Self.maximumMergedBranches
        return flattened(schema, in: schemas, budget: &budget)
    }

    func flattened(_ schema: JSON, in schemas: [String: JSON], budget: inout Int) -> JSON {
        guard budget > 0, let branches = schema["allOf"]?.arrayValue, var object = schema.objectValue else { return schema }
        object["allOf"] = nil
        var properties = object["properties"]?.objectValue ?? JSONObject()
        var required = object["required"]?.arrayValue ?? []
        for branch in branches {
            budget -= 1
            guard budget > 0 else { break }
            let part = flattened(resolve(branch, in: schemas).0, in: schemas, budget: &budget)
            for (name, value) in part["properties"]?.objectValue?.pairs ?? JSONObject().pairs where properties[name] == nil {
                properties[name] = value
            }
            for name in part["required"]?.arrayValue ?? [] where !required.contains(name) { required.append(name) }
            if object["type"] == nil, let type = part["type"] { object["type"] = type }
        }
        if !properties.isEmpty { object["properties"] = .object(properties) }
        if !required.isEmpty { object["required"] = .array(required) }
        return .object(object)
    }

    static func types(_ schema: JSON) -> Set<String>? {
        var set: Set<String>?
        if let one = schema["type"]?.stringValue { set = [one] }
        if let many = schema["type"]?.arrayValue { set = Set(many.compactMap(\.stringValue)) }
        if schema["enum"]?.arrayValue?.contains(.null) == true { set?.insert("null") }
        return set
    }

    /// Whether every value of `narrow`'s types is one of `wide`'s (an integer is a number).
    static func admits(_ wide: Set<String>, _ narrow: Set<String>) -> Bool {
        narrow.allSatisfy { wide.contains($0) || ($0 == "integer" && wide.contains("number")) }
    }

    /// Compares one schema's versions. A request's must accept all the old
    /// accepted; a response's must send nothing the old could not.
    var maximumChanges: Int { ContractDiff.maximumChanges }

    mutating func compareSchema(_ a: JSON, _ b: JSON, request: Bool, _ signature: String, _ place: String, _ pointer: String) {
        let (oldResolved, oldName) = resolve(a, in: oldSchemas)
        let (newResolved, newName) = resolve(b, in: newSchemas)
        // A named pair is compared once per endpoint and place, and not
        // again inside itself (a recursive schema ends): a change to a
        // shared schema is reported at every endpoint that uses it.
        var entered: String?
        if let oldName, let newName {
            let key = "\(request)|\(signature)|\(place)|\(oldName)|\(newName)"
            guard !comparing.contains(key), comparisons < 100_000 else { return }
            comparing.insert(key)
            comparisons += 1
            entered = key
        }
        defer { if let entered { comparing.remove(entered) } }
        guard changes.count < maximumChanges else { return }
        let old = flattened(oldResolved, in: oldSchemas)
        let new = flattened(newResolved, in: newSchemas)
        // Equal text is an equal schema only where no reference inside may have changed (`items: Item`).
        if old == new, oldName == nil, newName == nil, !Self.hasReference(old) { return }
        let where_ = pointer.isEmpty ? place : "\(place) \(pointer)"

        compareTypes(old, new, request: request, signature, where_)
        compareEnums(old, new, request: request, signature, where_)
        if request { compareBounds(old, new, signature, where_) }
        compareMembers(old, new, request: request, signature, place, pointer)
        if let oldItems = old["items"], let newItems = new["items"] {
            compareSchema(oldItems, newItems, request: request, signature, place, pointer + "/[]")
        }
        for keyword in ["oneOf", "anyOf"] {
            compareVariants(keyword, old[keyword]?.arrayValue, new[keyword]?.arrayValue, request: request, signature, place, pointer)
        }
    }

    /// The types a value may have: a request's may widen, a response's may narrow.
    mutating func compareTypes(_ old: JSON, _ new: JSON, request: Bool, _ signature: String, _ where_: String) {
        if let oldTypes = Self.types(old), let newTypes = Self.types(new), oldTypes != newTypes {
            if request {
                if Self.admits(newTypes, oldTypes) {
                    add("request-type-widened", false, signature, where_, "\(Self.list(oldTypes)) became \(Self.list(newTypes))")
                } else {
                    add(
                        "request-type-narrowed", true, signature, where_,
                        "\(Self.list(oldTypes)) became \(Self.list(newTypes)): values clients send may be refused")
                }
            } else if Self.admits(oldTypes, newTypes) {
                add("response-type-narrowed", false, signature, where_, "\(Self.list(oldTypes)) became \(Self.list(newTypes))")
            } else if newTypes.subtracting(oldTypes) == ["null"] {
                add("response-field-nullable", true, signature, where_, "the value may now be null")
            } else {
                add("response-type-changed", true, signature, where_, "\(Self.list(oldTypes)) became \(Self.list(newTypes))")
            }
        }
    }

    /// An enum's values: a request's may gain some, a response's may lose some.
    mutating func compareEnums(_ old: JSON, _ new: JSON, request: Bool, _ signature: String, _ where_: String) {
        if let oldValues = old["enum"]?.arrayValue, let newValues = new["enum"]?.arrayValue {
            // Sets, so 60,000 values compare in linear time.
            let oldSet = Set(oldValues)
            let newSet = Set(newValues)
            let removed = oldValues.filter { !newSet.contains($0) }
            let added = newValues.filter { !oldSet.contains($0) }
            if request {
                if !removed.isEmpty { add("request-enum-narrowed", true, signature, where_, "no longer accepts \(Self.values(removed))") }
                if !added.isEmpty { add("request-enum-widened", false, signature, where_, "also accepts \(Self.values(added))") }
            } else {
                if !added.isEmpty {
                    add(
                        "response-enum-widened", true, signature, where_,
                        "may now be \(Self.values(added)), which a client's exhaustive switch does not know")
                }
                if !removed.isEmpty { add("response-enum-narrowed", false, signature, where_, "is no longer \(Self.values(removed))") }
            }
        } else if request, old["enum"] == nil, let newValues = new["enum"]?.arrayValue {
            add("request-enum-narrowed", true, signature, where_, "now only \(Self.values(newValues))")
        }
    }

    /// An object's members, each compared as a schema: removed, added, now required or optional.
    mutating func compareMembers(_ old: JSON, _ new: JSON, request: Bool, _ signature: String, _ place: String, _ pointer: String) {
        let oldProperties = old["properties"]?.objectValue ?? JSONObject()
        let newProperties = new["properties"]?.objectValue ?? JSONObject()
        let oldRequired = Set(old["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        let newRequired = Set(new["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        for (name, schema) in oldProperties.pairs {
            let member = pointer + "/" + SchemaValidator.escape(name)
            guard let after = newProperties[name] else {
                if request {
                    add(
                        "request-field-removed", new["additionalProperties"] == .bool(false), signature, "\(place) \(member)",
                        new["additionalProperties"] == .bool(false) ? "the field is gone and others are refused" : "the field is no longer read")
                } else {
                    add("response-field-removed", true, signature, "\(place) \(member)", "the field is gone")
                }
                continue
            }
            if request, newRequired.contains(name), !oldRequired.contains(name) {
                add("request-field-now-required", true, signature, "\(place) \(member)", "the field is now required")
            }
            if !request, oldRequired.contains(name), !newRequired.contains(name) {
                add("response-field-now-optional", true, signature, "\(place) \(member)", "the field may now be absent")
            }
            compareSchema(schema, after, request: request, signature, place, member)
        }
        for (name, _) in newProperties.pairs where oldProperties[name] == nil {
            let member = pointer + "/" + SchemaValidator.escape(name)
            if request {
                if newRequired.contains(name) {
                    add("request-field-added-required", true, signature, "\(place) \(member)", "a new required field")
                } else {
                    add("request-field-added", false, signature, "\(place) \(member)", "a new optional field")
                }
            } else {
                add("response-field-added", false, signature, "\(place) \(member)", "a new field")
            }
        }
    }

    /// A `oneOf` or `anyOf`'s branches: matched by the schema they name
    /// (`$ref`), the rest by position. A request that loses a branch
    /// refuses values clients send; an answer that gains one may send
    /// what clients cannot read. Matched branches are compared as schemas.
    mutating func compareVariants(
        _ keyword: String, _ old: [JSON]?, _ new: [JSON]?, request: Bool, _ signature: String, _ place: String, _ pointer: String
    ) {
        guard old != nil || new != nil else { return }
        let oldBranches = old ?? []
        let newBranches = new ?? []
        let at = "\(place) \(pointer)/\(keyword)"
        if old == nil || new == nil {
            // A schema that became a choice, or a choice that became one schema.
            add(
                request ? "request-variants-changed" : "response-variants-changed", true, signature, at,
                old == nil ? "the value is now one of \(newBranches.count) schemas" : "the value is no longer one of \(oldBranches.count) schemas"
            )
            return
        }
        func name(_ branch: JSON) -> String? { branch["$ref"]?.stringValue }
        var unmatched = Array(newBranches.indices)
        var pairs: [(Int, Int)] = []
        var removed: [Int] = []
        for (index, branch) in oldBranches.enumerated() {
            if let ref = name(branch), let found = unmatched.firstIndex(where: { name(newBranches[$0]) == ref }) {
                pairs.append((index, unmatched.remove(at: found)))
            } else {
                removed.append(index)
            }
        }
        // Branches without a matching name pair up in order (an inline branch edited in place).
        var stillRemoved: [Int] = []
        for index in removed {
            if name(oldBranches[index]) == nil, let found = unmatched.firstIndex(where: { name(newBranches[$0]) == nil }) {
                pairs.append((index, unmatched.remove(at: found)))
            } else {
                stillRemoved.append(index)
            }
        }
        func label(_ branch: JSON, _ index: Int) -> String {
            name(branch).map { String($0.split(separator: "/").last ?? "") } ?? "branch \(index + 1)"
        }
        for index in stillRemoved {
            add(
                request ? "request-variant-removed" : "response-variant-removed", request, signature, at,
                request ? "\(label(oldBranches[index], index)) is no longer accepted" : "\(label(oldBranches[index], index)) is no longer sent")
        }
        for index in unmatched {
            add(
                request ? "request-variant-added" : "response-variant-added", !request, signature, at,
                request
                    ? "\(label(newBranches[index], index)) is also accepted"
                    : "\(label(newBranches[index], index)) may now be sent, which clients do not know")
        }
        for (a, b) in pairs.sorted(by: { $0.0 < $1.0 }) {
            compareSchema(oldBranches[a], newBranches[b], request: request, signature, place, "\(pointer)/\(keyword)/\(a)")
        }
    }

    /// A request's bounds: tighter ones refuse what clients sent.
    mutating func compareBounds(_ old: JSON, _ new: JSON, _ signature: String, _ place: String) {
        func number(_ schema: JSON, _ key: String) -> Double? { schema[key]?.numberValue }
        let lower = ["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"]
        let upper = ["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"]
        for key in lower + upper {
            let before = number(old, key)
            let after = number(new, key)
            guard before != after else { continue }
            let tighter: Bool
            switch (before, after) {
            case (nil, _?): tighter = true
            case (_?, nil): tighter = false
            case (let b?, let a?): tighter = lower.contains(key) ? a > b : a < b
            default: continue
            }
            let text = "\(key) \(before.map(Self.format) ?? "none") became \(after.map(Self.format) ?? "none")"
            add(tighter ? "request-range-narrowed" : "request-range-widened", tighter, signature, place, text)
        }
        if let pattern = new["pattern"], pattern != old["pattern"] {
            add("request-pattern-changed", true, signature, place, "the pattern became \(pattern.stringValue ?? "")")
        }
        if let format = new["format"], format != old["format"] {
            add("request-format-changed", true, signature, place, "the format became \(format.stringValue ?? "")")
        }
    }

    /// Whether a schema refers to a named one anywhere inside.
    static func hasReference(_ schema: JSON) -> Bool {
        switch schema {
        case .object(let members): members.pairs.contains { $0.key == "$ref" || hasReference($0.value) }
        case .array(let items): items.contains(where: hasReference)
        default: false
        }
    }

    static func list(_ types: Set<String>) -> String { types.sorted().joined(separator: " or ") }

    static func values(_ values: [JSON]) -> String {
        values.prefix(5).map { String(decoding: JSONWriter.encode($0), as: UTF8.self) }.joined(separator: ", ") + (values.count > 5 ? ", …" : "")
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
