import Foundation
import OrderedCollections

/// Validates JSON values against compiled schemas, collecting every failure.
///
/// Validation is bounded whatever the schema and value (see `docs/limits.md`):
/// recursion through `$ref`, `allOf`, `anyOf`, `oneOf` and `not` counts
/// against `maximumDepth`, every schema check against `maximumChecks`, and at
/// most `maximumIssues` issues are listed. Cycles that never descend into the
/// value are lint errors (`SchemaCycles`), so a loaded contract cannot loop.
package struct SchemaValidator: Sendable {
    /// Named schemas that `$ref` points at.
    package let registry: [String: Schema]

    /// Schema recursion (value levels plus `$ref` and combinator hops) deeper than this is refused:
    /// room for a body at the JSON reader's depth limit with several hops per level, and
    /// well within a thread's stack.
    package static let maximumDepth = 4_096
    /// The most schema checks one validation may make (anyOf inside recursive schemas can multiply them).
    package static let maximumChecks = 2_000_000
    /// The most issues listed; the rest are summarised in one last issue.
    package static let maximumIssues = 100
    /// The values of an `enum` a message names; a longer list is cut with a count.
    static let enumValuesShown = 20

    package init(registry: [String: Schema]) {
        self.registry = registry
    }

    /// Every way `value` fails `schema` (at most `maximumIssues`, then a summary); empty when it is valid.
    package func validate(_ value: JSON, against schema: Schema, at pointer: String = "") -> [ValidationIssue] {
        var run = Run(base: pointer)
        validate(value, schema, depth: 0, run: &run)
        if run.dropped > 0 {
            run.issues.append(
                ValidationIssue(
                    pointer: pointer,
                    message: "and \(run.dropped) more issue\(run.dropped == 1 ? "" : "s") not listed (at most \(Self.maximumIssues) are)"))
        }
        return run.issues
    }

    /// One step from a value to a member or item, for pointers.
    private enum Step {
        case key(String)
        case index(Int)
    }

    /// The work and findings of one validation.
    private struct Run {
        /// The pointer of the validated value; `path` leads from it to the value being checked.
        /// Pointers are only written out when an issue is recorded: a valid body builds none.
        let base: String
        var path: [Step] = []
        var issues: [ValidationIssue] = []
        var dropped = 0
        var checks = 0
        /// Set once a bound is hit: no further checks are made.
        var exhausted = false
        /// Only whether the value is valid matters (inside anyOf, oneOf, not): stop at the first issue.
        var firstOnly = false
        /// The dynamic scope: the `$dynamicAnchor`s of each schema resource
        /// entered on the way to the schema being checked, outermost first
        /// (empty unless the schemas use `$dynamicRef`).
        var scope: [[(anchor: String, schema: String)]] = []

        init(base: String) { self.base = base }

        var failed: Bool { !issues.isEmpty || dropped > 0 }

        /// The pointer of the value being checked, or of its member `child`.
        func pointer(child: String? = nil) -> String {
            var text = base
            for step in path {
                switch step {
                case .key(let key): text += "/" + SchemaValidator.escape(key)
                case .index(let index): text += "/\(index)"
                }
            }
            if let child { text += "/" + SchemaValidator.escape(child) }
            return text
        }

        /// Records an issue at the value being checked (or its member `child`).
        mutating func add(_ message: @autoclosure () -> String, child: String? = nil) {
            guard issues.count < SchemaValidator.maximumIssues else {
                dropped += 1
                return
            }
            issues.append(ValidationIssue(pointer: pointer(child: child), message: message()))
        }

        mutating func record(_ issue: @autoclosure () -> ValidationIssue) {
            if issues.count < SchemaValidator.maximumIssues { issues.append(issue()) } else { dropped += 1 }
        }

        /// True when validation should stop: a bound was hit, or the caller needs only the first issue.
        var done: Bool { exhausted || (firstOnly && failed) }
    }

    /// Whether `value` passes `schema`, with the outer run's budget.
    private func passes(_ value: JSON, _ schema: Schema, depth: Int, run: inout Run) -> Bool {
        var inner = Run(base: run.base)
        inner.path = run.path
        inner.checks = run.checks
        inner.firstOnly = true
        inner.scope = run.scope
        validate(value, schema, depth: depth, run: &inner)
        run.checks = inner.checks
        if inner.exhausted {
            run.exhausted = true
            for issue in inner.issues { run.record(issue) }
            return true
        }
        return !inner.failed
    }

    // `validate` recurses once or more per level of the value (through
    // `$ref`, combinators, items and members), so its stack frame is paid
    // hundreds of times for a deep body, on an event loop's thread. Each
    // part is a function of its own, never inlined, so that the frame on
    // the stack per level holds only what that level is doing (a debug
    // build gives a function one slot for every temporary of every branch).
    private func validate(_ value: JSON, _ schema: Schema, depth: Int, run: inout Run) {
        if run.done { return }
        run.checks += 1
        guard depth < Self.maximumDepth, run.checks <= Self.maximumChecks else {
            stop(depth: depth, run: &run)
            return
        }
        if let advanced = schema.advanced, !advanced.dynamicScope.isEmpty, run.scope.last?.first?.schema != advanced.dynamicScope.first?.schema {
            enter(advanced.dynamicScope, value, schema, depth: depth, run: &run)
            return
        }
        // `nullable` admits null whatever else the schema says, a `$ref` included.
        if value.isNull, schema.nullable { return }
        if var ref = schema.ref {
            if let anchor = schema.advanced?.dynamicAnchor { ref = dynamicTarget(anchor, run: run) ?? ref }
            guard let target = registry[ref] else {
                unknown(ref, run: &run)
                return
            }
            validate(value, target, depth: depth + 1, run: &run)
            if run.done { return }
        }
        if schema.types != nil, !schema.typeSet.admits(value) {
            wrongType(value, schema, run: &run)
            return
        }
        if schema.constValue != nil || schema.enumValues != nil {
            validateValue(value, schema, run: &run)
            if run.done { return }
        }
        switch value {
        case .int, .double:
            validateNumber(value, schema, into: &run)
        case .string(let s):
            validateString(s, schema, into: &run)
        case .array(let items):
            validateArray(items, schema, depth: depth, run: &run)
        case .object(let object):
            validateObject(value, object, schema, depth: depth, run: &run)
        default:
            break
        }
        if !schema.allOf.isEmpty || !schema.anyOf.isEmpty || !schema.oneOf.isEmpty || schema.not != nil || schema.advanced != nil {
            validateCombinations(value, schema, depth: depth, run: &run)
        }
    }

    /// Validates `schema`, the root of a schema resource with dynamic anchors, with the resource in the dynamic scope.
    @inline(never)
    private func enter(_ anchors: [(anchor: String, schema: String)], _ value: JSON, _ schema: Schema, depth: Int, run: inout Run) {
        run.scope.append(anchors)
        validate(value, schema, depth: depth, run: &run)
        run.scope.removeLast()
    }

    /// The schema a `$dynamicRef` to `anchor` uses: the one of the outermost
    /// resource in the dynamic scope with that `$dynamicAnchor`.
    @inline(never)
    private func dynamicTarget(_ anchor: String, run: Run) -> String? {
        for anchors in run.scope {
            if let found = anchors.first(where: { $0.anchor == anchor }) { return found.schema }
        }
        return nil
    }

    @inline(never)
    private func stop(depth: Int, run: inout Run) {
        if depth >= Self.maximumDepth {
            run.add("schema nesting deeper than \(Self.maximumDepth) levels")
        } else {
            run.add("validation stopped after \(Self.maximumChecks) schema checks; the value is too complex for its schema")
        }
        run.exhausted = true
    }

    @inline(never)
    private func unknown(_ ref: String, run: inout Run) {
        run.add("unknown schema '\(ref)'")
    }

    @inline(never)
    private func wrongType(_ value: JSON, _ schema: Schema, run: inout Run) {
        run.add("expected \((schema.types ?? []).joined(separator: " or ")), got \(value.typeName)")
    }

    /// `const` and `enum`.
    @inline(never)
    private func validateValue(_ value: JSON, _ schema: Schema, run: inout Run) {
        if let constant = schema.constValue, !Self.schemaEquals(value, constant) {
            run.add("must be \(JSONWriter.encodeString(constant))")
        }
        if let options = schema.enumValues, let keys = schema.enumKeys,
            !keys.contains(value.equalityKey) || (Self.mayDifferInCodePoints(value) && !options.contains { Self.schemaEquals(value, $0) })
        {
            // A long list is named by its first values: the message stays short.
            let shown = options.prefix(Self.enumValuesShown).map { JSONWriter.encodeString($0) }.joined(separator: ", ")
            let list = options.count > Self.enumValuesShown ? shown + " (and \(options.count - Self.enumValuesShown) more)" : shown
            run.add("must be one of \(list), got \(JSONWriter.encodeString(value).prefix(200))")
        }
    }

    @inline(never)
    private func validateArray(_ items: [JSON], _ schema: Schema, depth: Int, run: inout Run) {
        if let min = schema.minItems, items.count < min {
            run.add("must have at least \(min) item\(min == 1 ? "" : "s"), has \(items.count)")
        }
        if let max = schema.maxItems, items.count > max {
            run.add("must have at most \(max) item\(max == 1 ? "" : "s"), has \(items.count)")
        }
        if schema.uniqueItems, Set(items).count != items.count {
            run.add("items must be unique")
        }
        for (i, (item, itemSchema)) in zip(items, schema.prefixItems).enumerated() {
            run.path.append(.index(i))
            validate(item, itemSchema, depth: depth + 1, run: &run)
            run.path.removeLast()
            if run.done { return }
        }
        if let itemSchema = schema.items {
            for (i, item) in items.enumerated().dropFirst(schema.prefixItems.count) {
                run.path.append(.index(i))
                validate(item, itemSchema, depth: depth + 1, run: &run)
                run.path.removeLast()
                if run.done { return }
            }
        }
        if let advanced = schema.advanced, advanced.contains != nil {
            validateContains(items, advanced, depth: depth, run: &run)
        }
    }

    @inline(never)
    private func validateObject(_ value: JSON, _ object: JSONObject, _ schema: Schema, depth: Int, run: inout Run) {
        for name in schema.required where object[name] == nil {
            run.add("is required", child: name)
        }
        if let min = schema.minProperties, object.count < min {
            run.add("must have at least \(min) propert\(min == 1 ? "y" : "ies"), has \(object.count)")
        }
        if let max = schema.maxProperties, object.count > max {
            run.add("must have at most \(max) propert\(max == 1 ? "y" : "ies"), has \(object.count)")
        }
        if let advanced = schema.advanced {
            validateAdvancedMembers(value, object, schema, advanced, depth: depth, run: &run)
            return
        }
        for pair in object.pairs {
            if run.done { return }
            let memberSchema: Schema
            if let own = schema.property(pair.key) {
                memberSchema = own
            } else if case .some(let additional) = schema.additionalProperties {
                guard let additional, additional !== Schema.never else {
                    run.add("is not an allowed property", child: pair.key)
                    continue
                }
                memberSchema = additional
            } else {
                continue
            }
            run.path.append(.key(pair.key))
            validate(pair.value, memberSchema, depth: depth + 1, run: &run)
            run.path.removeLast()
        }
    }

    /// `if`/`then`/`else`, `allOf`, `anyOf`, `oneOf` (by a discriminator when there is one), `not`, and `unevaluated*`.
    @inline(never)
    private func validateCombinations(_ value: JSON, _ schema: Schema, depth: Int, run: inout Run) {
        if let advanced = schema.advanced, advanced.ifSchema != nil, !run.done {
            validateCondition(value, advanced, depth: depth, run: &run)
        }
        for sub in schema.allOf {
            if run.done { return }
            validate(value, sub, depth: depth + 1, run: &run)
        }
        if let discriminator = schema.discriminator, !(schema.oneOf.isEmpty && schema.anyOf.isEmpty) {
            // OpenAPI: the discriminator's value names the one branch to check,
            // even where the branches' shapes would overlap.
            validateDiscriminated(value, schema, discriminator, depth: depth, run: &run)
            validateUnevaluated(value, schema, depth: depth, run: &run)
            return
        }
        if !schema.anyOf.isEmpty, !run.done {
            var any = false
            for option in schema.anyOf where passes(value, option, depth: depth + 1, run: &run) {
                any = true
                break
            }
            if !any, !run.exhausted { run.add("matches none of the \(schema.anyOf.count) allowed shapes (anyOf)") }
        }
        if !schema.oneOf.isEmpty, !run.done {
            var passing = 0
            for option in schema.oneOf where passes(value, option, depth: depth + 1, run: &run) {
                passing += 1
                if run.exhausted { return }
            }
            if passing != 1 { run.add("must match exactly one allowed shape (oneOf), matches \(passing)") }
        }
        if let negated = schema.not, !run.done, passes(value, negated, depth: depth + 1, run: &run), !run.exhausted {
            run.add(schema === Schema.never ? "no value is allowed here (the schema is false)" : "must not match the 'not' schema")
        }
        validateUnevaluated(value, schema, depth: depth, run: &run)
    }

    /// `contains`, `minContains` and `maxContains` of an array.
    @inline(never)
    private func validateContains(_ items: [JSON], _ advanced: Schema.Advanced, depth: Int, run: inout Run) {
        guard let contains = advanced.contains else { return }
        var matching = 0
        for (i, item) in items.enumerated() {
            run.path.append(.index(i))
            if passes(item, contains, depth: depth + 1, run: &run) { matching += 1 }
            run.path.removeLast()
            if run.exhausted { return }
        }
        let least = advanced.minContains ?? 1
        if matching < least {
            run.add("must contain at least \(least) item\(least == 1 ? "" : "s") matching 'contains', has \(matching)")
        }
        if let most = advanced.maxContains, matching > most {
            run.add("must contain at most \(most) item\(most == 1 ? "" : "s") matching 'contains', has \(matching)")
        }
    }

    /// An object's members when the schema has the rarer keywords: each by
    /// its property's schema and every `patternProperties` pattern its name
    /// matches, else `additionalProperties`; then `propertyNames`,
    /// `dependentRequired` and `dependentSchemas`.
    @inline(never)
    private func validateAdvancedMembers(
        _ value: JSON, _ object: JSONObject, _ schema: Schema, _ advanced: Schema.Advanced, depth: Int, run: inout Run
    ) {
        for pair in object.pairs {
            if run.done { return }
            var memberSchema: Schema?
            var matched = false
            if let own = schema.property(pair.key) {
                memberSchema = own
                matched = true
            }
            // Every pattern that matches the name applies, beside the property's own schema.
            for (pattern, patternSchema) in advanced.patternProperties where pattern.matches(pair.key) {
                matched = true
                run.path.append(.key(pair.key))
                validate(pair.value, patternSchema, depth: depth + 1, run: &run)
                run.path.removeLast()
                if run.done { return }
            }
            if !matched, case .some(let additional) = schema.additionalProperties {
                guard let additional, additional !== Schema.never else {
                    run.add("is not an allowed property", child: pair.key)
                    continue
                }
                memberSchema = additional
            }
            guard let memberSchema else { continue }
            run.path.append(.key(pair.key))
            validate(pair.value, memberSchema, depth: depth + 1, run: &run)
            run.path.removeLast()
        }
        if let names = advanced.propertyNames {
            for pair in object.pairs {
                if run.done { return }
                run.path.append(.key(pair.key))
                if !passes(.string(pair.key), names, depth: depth + 1, run: &run), !run.exhausted {
                    run.add("is not an allowed property name (propertyNames)")
                }
                run.path.removeLast()
            }
        }
        for (name, needed) in advanced.dependentRequired where object[name] != nil {
            for other in needed where object[other] == nil {
                run.add("is required when '\(name)' is present", child: other)
            }
        }
        for (name, dependent) in advanced.dependentSchemas where object[name] != nil {
            if run.done { return }
            validate(value, dependent, depth: depth + 1, run: &run)
        }
    }

    /// `if`, `then`, `else`.
    @inline(never)
    private func validateCondition(_ value: JSON, _ advanced: Schema.Advanced, depth: Int, run: inout Run) {
        guard let condition = advanced.ifSchema else { return }
        if passes(value, condition, depth: depth + 1, run: &run) {
            if let then = advanced.thenSchema, !run.exhausted { validate(value, then, depth: depth + 1, run: &run) }
        } else if let otherwise = advanced.elseSchema, !run.exhausted {
            validate(value, otherwise, depth: depth + 1, run: &run)
        }
    }

    /// What the keywords of a schema and of its passing subschemas looked
    /// at, for `unevaluatedProperties` and `unevaluatedItems` (JSON Schema
    /// 2020-12 §11: the annotations of `properties`, `patternProperties`,
    /// `additionalProperties`, `prefixItems`, `items`, `contains` and of the
    /// `unevaluated*` keywords themselves, through `$ref`, `allOf`, the
    /// passing branches of `anyOf` and `oneOf`, `if`/`then`/`else` and
    /// `dependentSchemas`; never through `not`).
    private struct Evaluated {
        var keys: Set<String> = []
        var allKeys = false
        /// Items `0..<items` were looked at (`prefixItems`).
        var items = 0
        var allItems = false
        var indexes: Set<Int> = []
    }

    /// Checks the members and items nothing else looked at against `unevaluatedProperties` and `unevaluatedItems`.
    @inline(never)
    private func validateUnevaluated(_ value: JSON, _ schema: Schema, depth: Int, run: inout Run) {
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
    private func collect(_ value: JSON, _ schema: Schema, own: Bool = true, depth: Int, run: inout Run, into seen: inout Evaluated) {
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

    private static func sameCodePoints(_ a: JSON, _ b: JSON) -> Bool {
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

    /// Checks a polymorphic value against the branch its discriminator names.
    private func validateDiscriminated(_ value: JSON, _ schema: Schema, _ discriminator: Schema.Discriminator, depth: Int, run: inout Run) {
        guard case .object(let object) = value else { return }
        let property = discriminator.propertyName
        guard let named = object[property] else {
            run.add("is required (the discriminator)", child: property)
            return
        }
        guard case .string(let name) = named else {
            run.add("expected string, got \(named.typeName)", child: property)
            return
        }
        let target = discriminator.schemaName(for: name)
        let branches = schema.oneOf + schema.anyOf
        guard let branch = branches.first(where: { $0.ref == target }) ?? registry[target].flatMap({ _ in Schema(ref: target) }) else {
            let known = discriminator.mapping.map(\.0) + branches.compactMap(\.ref).filter { ref in !discriminator.mapping.contains { $0.1 == ref } }
            run.add("'\(name)' names none of the allowed shapes (\(known.joined(separator: ", ")))", child: property)
            return
        }
        validate(value, branch, depth: depth + 1, run: &run)
        if let negated = schema.not, !run.done, passes(value, negated, depth: depth + 1, run: &run), !run.exhausted {
            run.add("must not match the 'not' schema")
        }
    }

    private func validateNumber(_ value: JSON, _ schema: Schema, into run: inout Run) {
        guard
            schema.minimum != nil || schema.maximum != nil || schema.exclusiveMinimum != nil || schema.exclusiveMaximum != nil
                || schema.multipleOf != nil
        else { return }
        let n = value.numberValue!
        let exact = schema.advanced?.exactBounds
        /// How `value` compares with a bound: exactly for an integer (with
        /// the bound as written, or the double when it is a whole number in
        /// range), else as doubles. -1, 0, 1.
        func order(_ key: String, _ bound: Double) -> Int {
            if case .int(let i) = value {
                let whole = exact?[key] ?? (bound.rounded() == bound && abs(bound) < 9.2e18 ? Int(bound) : nil)
                if let whole { return i < whole ? -1 : i == whole ? 0 : 1 }
            }
            return n < bound ? -1 : n == bound ? 0 : 1
        }
        // Whole numbers as digits, never as 1.8e+19: the value as sent, a bound as written.
        func text(_ d: Double) -> String {
            guard d.rounded() == d, abs(d) < 1e21 else { return String(d) }
            return abs(d) < 9e15 ? String(Int(d)) : String(format: "%.0f", d)
        }
        func bound(_ key: String, _ d: Double) -> String { exact?[key].map(String.init) ?? text(d) }
        // Written only for a message: a valid number builds no text.
        var got: String { if case .int(let i) = value { String(i) } else { text(n) } }
        if let min = schema.minimum, order("minimum", min) < 0 {
            run.add("must be at least \(bound("minimum", min)), got \(got)")
        }
        if let max = schema.maximum, order("maximum", max) > 0 {
            run.add("must be at most \(bound("maximum", max)), got \(got)")
        }
        if let min = schema.exclusiveMinimum, order("exclusiveMinimum", min) <= 0 {
            run.add("must be greater than \(bound("exclusiveMinimum", min)), got \(got)")
        }
        if let max = schema.exclusiveMaximum, order("exclusiveMaximum", max) >= 0 {
            run.add("must be less than \(bound("exclusiveMaximum", max)), got \(got)")
        }
        if let factor = schema.multipleOf {
            let quotient = n / factor
            if case .int(let i) = value, factor.rounded() == factor, factor >= 1, factor < 9.2e18 {
                // An integer by a whole factor: exactly, past 2^53 too.
                if i % Int(factor) != 0 { run.add("must be a multiple of \(text(factor)), got \(got)") }
            } else if quotient.rounded() != quotient || !quotient.isFinite {
                run.add("must be a multiple of \(text(factor)), got \(got)")
            }
        }
    }

    private func validateString(_ s: String, _ schema: Schema, into run: inout Run) {
        // Lengths count code points (JSON Schema 2020-12 §6.3.1), not what
        // Swift counts as characters: "🇫🇷" is 2 long, "e\u{301}" is 2.
        if let min = schema.minLength, s.unicodeScalars.count < min {
            run.add("must be at least \(min) character\(min == 1 ? "" : "s") long")
        }
        if let max = schema.maxLength, s.unicodeScalars.count > max {
            run.add("must be at most \(max) character\(max == 1 ? "" : "s") long")
        }
        if let pattern = schema.pattern, !pattern.matches(s) {
            run.add("must match the pattern \(pattern.source)")
        }
        if let format = schema.format, !Self.string(s, hasFormat: format) {
            run.add("must be a valid \(format)")
        }
    }

    static func value(_ value: JSON, hasType type: String) -> Bool {
        Schema.TypeSet([type]).admits(value)
    }

    static func string(_ s: String, hasFormat format: String) -> Bool {
        switch format {
        case "uuid":
            return isUUID(s)
        case "date-time":
            // The time after the `T` as `time` is (a leap second only at 23:59 UTC).
            guard isDateTime(s), UTCCalendar.parse(s) != nil, let t = s.utf8.firstIndex(where: { $0 == 84 || $0 == 116 }) else { return false }
            return Formats.isTime(Array(s.utf8[s.utf8.index(after: t)...])[...])
        case "date":
            return s.count == 10 && UTCCalendar.parse(s) != nil
        case "email":
            return s.utf8.allSatisfy { $0 < 128 } && Formats.isIDNEmail(s)
        case "uri":
            return Formats.isURIReference(s, iri: false, absolute: true)
        default:
            return Formats.check(s, format) ?? true
        }
    }

    /// RFC 3339's `date-time`, as JSON Schema's format says: seconds and an
    /// offset (`Z` or `+01:00`) required, a fraction allowed
    /// (`2024-01-01T10:00:00.5Z`). The fields' ranges are `UTCCalendar`'s to
    /// check; this is the shape, which the calendar's parser (it also reads
    /// clock values written by hand) does not insist on.
    static func isDateTime(_ s: String) -> Bool {
        let b = Array(s.utf8)
        func digits(_ range: Range<Int>) -> Bool { range.upperBound <= b.count && range.allSatisfy { b[$0] >= 48 && b[$0] <= 57 } }
        func byte(_ index: Int, _ allowed: String) -> Bool { index < b.count && allowed.utf8.contains(b[index]) }
        guard digits(0..<4), byte(4, "-"), digits(5..<7), byte(7, "-"), digits(8..<10), byte(10, "Tt"),
            digits(11..<13), byte(13, ":"), digits(14..<16), byte(16, ":"), digits(17..<19)
        else { return false }
        var i = 19
        if byte(i, ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
            if i == start { return false }
        }
        if byte(i, "Zz") { return i + 1 == b.count }
        return byte(i, "+-") && digits(i + 1..<i + 3) && byte(i + 3, ":") && digits(i + 4..<i + 6) && i + 6 == b.count
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
    package static func escape(_ key: String) -> String {
        guard key.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return key }
        var escaped = ""
        for character in key.unicodeScalars {
            switch character {
            case "~": escaped += "~0"
            case "/": escaped += "~1"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}

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
