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
    enum Step {
        case key(String)
        case index(Int)
    }

    /// The work and findings of one validation.
    struct Run {
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
    func passes(_ value: JSON, _ schema: Schema, depth: Int, run: inout Run) -> Bool {
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
    func validate(_ value: JSON, _ schema: Schema, depth: Int, run: inout Run) {
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
    func enter(_ anchors: [(anchor: String, schema: String)], _ value: JSON, _ schema: Schema, depth: Int, run: inout Run) {
        run.scope.append(anchors)
        validate(value, schema, depth: depth, run: &run)
        run.scope.removeLast()
    }

    /// The schema a `$dynamicRef` to `anchor` uses: the one of the outermost
    /// resource in the dynamic scope with that `$dynamicAnchor`.
    @inline(never)
    func dynamicTarget(_ anchor: String, run: Run) -> String? {
        for anchors in run.scope {
            if let found = anchors.first(where: { $0.anchor == anchor }) { return found.schema }
        }
        return nil
    }

    @inline(never)
    func stop(depth: Int, run: inout Run) {
        if depth >= Self.maximumDepth {
            run.add("schema nesting deeper than \(Self.maximumDepth) levels")
        } else {
            run.add("validation stopped after \(Self.maximumChecks) schema checks; the value is too complex for its schema")
        }
        run.exhausted = true
    }

    @inline(never)
    func unknown(_ ref: String, run: inout Run) {
        run.add("unknown schema '\(ref)'")
    }

    @inline(never)
    func wrongType(_ value: JSON, _ schema: Schema, run: inout Run) {
        run.add("expected \((schema.types ?? []).joined(separator: " or ")), got \(value.typeName)")
    }

    /// `const` and `enum`.
    @inline(never)
    func validateValue(_ value: JSON, _ schema: Schema, run: inout Run) {
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
    func validateArray(_ items: [JSON], _ schema: Schema, depth: Int, run: inout Run) {
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
    func validateObject(_ value: JSON, _ object: JSONObject, _ schema: Schema, depth: Int, run: inout Run) {
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
    func validateCombinations(_ value: JSON, _ schema: Schema, depth: Int, run: inout Run) {
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
    func validateContains(_ items: [JSON], _ advanced: Schema.Advanced, depth: Int, run: inout Run) {
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
    func validateAdvancedMembers(
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
    func validateCondition(_ value: JSON, _ advanced: Schema.Advanced, depth: Int, run: inout Run) {
        guard let condition = advanced.ifSchema else { return }
        if passes(value, condition, depth: depth + 1, run: &run) {
            if let then = advanced.thenSchema, !run.exhausted { validate(value, then, depth: depth + 1, run: &run) }
        } else if let otherwise = advanced.elseSchema, !run.exhausted {
            validate(value, otherwise, depth: depth + 1, run: &run)
        }
    }

}
