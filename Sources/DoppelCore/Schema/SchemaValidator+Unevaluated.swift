import Foundation
import OrderedCollections

/// What subschemas evaluated, for the unevaluated keywords, and equality by code points.
extension SchemaValidator {
    /// What the keywords of a schema and of its passing subschemas looked
    /// at, for `unevaluatedProperties` and `unevaluatedItems` (JSON Schema
    /// 2020-12 §11: the annotations of `properties`, `patternProperties`,
    /// `additionalProperties`, `prefixItems`, `items`, `contains` and of the
    /// `unevaluated*` keywords themselves, through `$ref`, `allOf`, the
    /// passing branches of `anyOf` and `oneOf`, `if`/`then`/`else` and
    /// `dependentSchemas`; never through `not`).
    struct Evaluated {
        var keys: Set<String> = []
        var allKeys = false
        /// Items `0..<items` were looked at (`prefixItems`).
        var items = 0
        var allItems = false
        var indexes: Set<Int> = []
    }

    /// Checks the members and items nothing else looked at against `unevaluatedProperties` and `unevaluatedItems`.
    @inline(never)
    func validateUnevaluated(_ value: JSON, _ schema: Schema, depth: Int, run: inout Run) {
        guard let advanced = schema.advanced, advanced.needsEvaluation, !run.done else { return }
        var seen = Evaluated()
        collect(value, schema, own: false, depth: depth, run: &run, into: &seen)
        if run.exhausted { return }
        switch value {
        case .object(let object):
            guard let unevaluated = advanced.unevaluatedProperties, !seen.allKeys else { return }
            for pair in object.pairs where !seen.keys.contains(pair.key) {
                if run.done { return }
                if unevaluated === Schema.never {
                    run.add("is not an allowed property (unevaluatedProperties)", child: pair.key)
                    continue
                }
                run.path.append(.key(pair.key))
                validate(pair.value, unevaluated, depth: depth + 1, run: &run)
                run.path.removeLast()
            }
        case .array(let items):
            guard let unevaluated = advanced.unevaluatedItems, !seen.allItems else { return }
            for (i, item) in items.enumerated() where i >= seen.items && !seen.indexes.contains(i) {
                if run.done { return }
                run.path.append(.index(i))
                if unevaluated === Schema.never {
                    run.add("is not an allowed item (unevaluatedItems)")
                } else {
                    validate(item, unevaluated, depth: depth + 1, run: &run)
                }
                run.path.removeLast()
            }
        default:
            return
        }
    }

    /// Adds what `schema` looks at in `value` to `seen`; `own` false leaves
    /// out the schema's own `unevaluated*` (they are what is being decided).
    func collect(_ value: JSON, _ schema: Schema, own: Bool = true, depth: Int, run: inout Run, into seen: inout Evaluated) {
        run.checks += 1
        guard depth < Self.maximumDepth, run.checks <= Self.maximumChecks else {
            if !run.exhausted {
                run.add("validation stopped after \(Self.maximumChecks) schema checks; the value is too complex for its schema")
                run.exhausted = true
            }
            return
        }
        if run.exhausted { return }
        if let advanced = schema.advanced, !advanced.dynamicScope.isEmpty, run.scope.last?.first?.schema != advanced.dynamicScope.first?.schema {
            run.scope.append(advanced.dynamicScope)
            collect(value, schema, own: own, depth: depth, run: &run, into: &seen)
            run.scope.removeLast()
            return
        }
        if var ref = schema.ref {
            if let anchor = schema.advanced?.dynamicAnchor { ref = dynamicTarget(anchor, run: run) ?? ref }
            if let target = registry[ref] { collect(value, target, depth: depth + 1, run: &run, into: &seen) }
        }
        let advanced = schema.advanced
        switch value {
        case .object(let object):
            if schema.additionalProperties != nil || (own && advanced?.unevaluatedProperties != nil) {
                seen.allKeys = true
            }
            if !seen.allKeys {
                for pair in object.pairs {
                    if schema.property(pair.key) != nil || advanced?.patternProperties.contains(where: { $0.0.matches(pair.key) }) == true {
                        seen.keys.insert(pair.key)
                    }
                }
            }
            for (name, dependent) in advanced?.dependentSchemas ?? [] where object[name] != nil {
                collect(value, dependent, depth: depth + 1, run: &run, into: &seen)
            }
        case .array(let items):
            seen.items = max(seen.items, min(items.count, schema.prefixItems.count))
            if schema.items != nil || (own && advanced?.unevaluatedItems != nil) { seen.allItems = true }
            if let contains = advanced?.contains, !seen.allItems {
                for (i, item) in items.enumerated() where passes(item, contains, depth: depth + 1, run: &run) {
                    seen.indexes.insert(i)
                }
            }
        default:
            break
        }
        for branch in schema.allOf { collect(value, branch, depth: depth + 1, run: &run, into: &seen) }
        for branch in schema.anyOf + schema.oneOf where passes(value, branch, depth: depth + 1, run: &run) {
            collect(value, branch, depth: depth + 1, run: &run, into: &seen)
        }
        if let condition = advanced?.ifSchema {
            if passes(value, condition, depth: depth + 1, run: &run) {
                collect(value, condition, depth: depth + 1, run: &run, into: &seen)
                if let then = advanced?.thenSchema { collect(value, then, depth: depth + 1, run: &run, into: &seen) }
            } else if let otherwise = advanced?.elseSchema {
                collect(value, otherwise, depth: depth + 1, run: &run, into: &seen)
            }
        }
    }

    /// Whether two values are equal as JSON Schema means it: numbers by
    /// value (`1` is `1.0`), strings code point by code point. Swift's
    /// string `==` takes canonically equivalent texts as one ("é" and
    /// "e\u{301}"), which a server comparing bytes would not.
    static func schemaEquals(_ a: JSON, _ b: JSON) -> Bool {
        a.looselyEquals(b) && sameCodePoints(a, b)
    }

    static func sameCodePoints(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): x.utf8.elementsEqual(y.utf8)
        case (.array(let x), .array(let y)): zip(x, y).allSatisfy { sameCodePoints($0, $1) }
        case (.object(let x), .object(let y)):
            x.pairs.allSatisfy { pair in y.pairs.contains { $0.key.utf8.elementsEqual(pair.key.utf8) && sameCodePoints(pair.value, $0.value) } }
        default: true
        }
    }

    /// Whether `==` on this value could take a different text for it: it
    /// holds text beyond ASCII (or is a container; few enums list those).
    static func mayDifferInCodePoints(_ value: JSON) -> Bool {
        switch value {
        case .string(let s): s.utf8.contains { $0 >= 0x80 }
        case .array, .object: true
        default: false
        }
    }
}
