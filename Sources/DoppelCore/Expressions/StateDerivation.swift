/// Which places of a response's rendered body the contract derives from the
/// session's state: what `doppel verify` holds a provider's values to, step
/// by step, when it drives the provider and the contract in lockstep.
///
/// Read statically from the templates: a placeholder is derived from state
/// when its expression reads `state` (or `clock`, `records`), or a `let`
/// (the endpoint's or the response's) that does, however indirectly. A place
/// is *exact* when its value is the state value as it is (a path such as
/// `state.plan`, `limits.monthly_stories` or a record by its key, or any number or boolean
/// computed from state, such as `len(state.children)`): text a template
/// writes around a value (a story's title made from a child's name) is the
/// mock's own wording, which a provider need not share.
package struct StateDerivation: Sendable {
    /// How one place of a body is rendered.
    package indirect enum Place: Sendable {
        /// Not from state (constants, request input, generated values).
        case free
        /// One placeholder's whole value: the state's value as it is (`plain`), or computed from it.
        case derived(plain: Bool)
        /// An object's members.
        case object([String: Place])
        /// An array's items, by position.
        case array([Place])
    }

    /// The names that read state, directly or through a binding.
    private let stateNames: Set<String>

    /// The analysis for an endpoint and one of its responses: their `let`
    /// bindings are looked through.
    package init(endpoint: Endpoint, response: ResponseDefinition?) {
        var names: Set<String> = ["state", "clock", "records", "session"]
        let bindings = endpoint.bindings + (response?.bindings ?? [])
        // A fixed point: a binding that reads a state-derived binding is one too.
        var changed = true
        while changed {
            changed = false
            for (name, template) in bindings where !names.contains(name) {
                if template.expressions.contains(where: { !$0.rootNames.isDisjoint(with: names) }) {
                    names.insert(name)
                    changed = true
                }
            }
        }
        stateNames = names
    }

    /// The places of a body template.
    package func places(of template: ValueTemplate) -> Place {
        switch template {
        case .constant:
            return .free
        case .expression(let expression):
            guard !expression.rootNames.isDisjoint(with: stateNames) else { return .free }
            return .derived(plain: expression.isPath)
        case .interpolated(let segments):
            let reads = segments.contains { segment in
                if case .expression(let expression) = segment { return !expression.rootNames.isDisjoint(with: stateNames) }
                return false
            }
            return reads ? .derived(plain: false) : .free
        case .array(let items):
            return .array(items.map(places(of:)))
        case .object(let template):
            var members: [String: Place] = [:]
            for (key, value) in template.pairs { members[key] = places(of: value) }
            return .object(members)
        }
    }

    /// The places of a response's body, or nil when it has no JSON template.
    package func places(of response: ResponseDefinition) -> Place? {
        guard case .json(let template, _, _) = response.body else { return nil }
        return places(of: template)
    }
}

extension Expression {
    /// The names the expression reads at its root (`state`, `body`, a
    /// `let`'s name), the parameters of its `it => …` arguments aside.
    package var rootNames: Set<String> {
        var names: Set<String> = []
        Self.collect(root, bound: [], into: &names)
        return names
    }

    private static func collect(_ node: Node, bound: Set<String>, into names: inout Set<String>) {
        switch node {
        case .literal: break
        case .name(let name, _, _): if !bound.contains(name) { names.insert(name) }
        case .member(let base, _, _): collect(base, bound: bound, into: &names)
        case .index(let base, let index):
            collect(base, bound: bound, into: &names)
            collect(index, bound: bound, into: &names)
        case .call(let call):
            // `map(list, it.x)`: the list functions bind `it` in their later arguments.
            for argument in call.arguments { collect(argument, bound: bound.union(["it"]), into: &names) }
            if let first = call.arguments.first { collect(first, bound: bound, into: &names) }
        case .not(let inner), .negate(let inner): collect(inner, bound: bound, into: &names)
        case .binary(_, let left, let right), .and(let left, let right), .or(let left, let right), .coalesce(let left, let right):
            collect(left, bound: bound, into: &names)
            collect(right, bound: bound, into: &names)
        case .array(let items): for item in items { collect(item, bound: bound, into: &names) }
        case .object(let members): for (_, value) in members { collect(value, bound: bound, into: &names) }
        case .lambda(let parameter, let body): collect(body, bound: bound.union([parameter]), into: &names)
        }
    }

    /// Whether the expression reads a value as it is: a name followed only
    /// by members and indexes (`state.plan`, `state.children[body.child_id]`).
    package var isPath: Bool {
        var node = root
        while true {
            switch node {
            case .name: return true
            case .member(let base, _, _): node = base
            case .index(let base, _): node = base
            default: return false
            }
        }
    }
}
