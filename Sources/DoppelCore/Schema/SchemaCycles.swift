/// Finds named schemas that refer back to themselves without descending into
/// the value (through `$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`
/// or `dependentSchemas` alone).
///
/// `Node: {properties: {next: Node}}` is a recursive *data* shape and fine:
/// each turn of the cycle moves one level into the value, so validation ends
/// with the value. `Pet: {oneOf: [Cat]}` with `Cat: {allOf: [Pet]}` checks the
/// same value against the same schema forever; no value can pass or fail it,
/// so the loader reports it instead of serving it.
enum SchemaCycles {
    /// Each cycle found, as the names along it with the first repeated at the end (`A → B → A`).
    static func find(in registry: [String: Schema]) -> [[String]] {
        var edges: [String: [String]] = [:]
        for (name, schema) in registry {
            var refs: [String] = []
            collectUnguardedRefs(schema, into: &refs)
            edges[name] = refs
        }
        // Iterative depth-first search with colours, so a long chain of
        // schemas cannot exhaust the stack.
        enum Colour { case white, grey, black }
        var colour: [String: Colour] = [:]
        var cycles: [[String]] = []
        var reported: Set<Set<String>> = []
        for root in registry.keys.sorted() where colour[root, default: .white] == .white {
            var stack: [(name: String, next: Int)] = [(root, 0)]
            colour[root] = .grey
            while let top = stack.last {
                let targets = edges[top.name] ?? []
                if top.next < targets.count {
                    stack[stack.count - 1].next += 1
                    let target = targets[top.next]
                    switch colour[target, default: .white] {
                    case .white where registry[target] != nil:
                        colour[target] = .grey
                        stack.append((target, 0))
                    case .grey:
                        let start = stack.firstIndex { $0.name == target }!
                        let members = stack[start...].map(\.name)
                        if reported.insert(Set(members)).inserted { cycles.append(members + [target]) }
                    default:
                        break
                    }
                } else {
                    colour[top.name] = .black
                    stack.removeLast()
                }
            }
        }
        return cycles
    }

    /// Names a schema reaches while still looking at the same value.
    private static func collectUnguardedRefs(_ schema: Schema, into refs: inout [String]) {
        var pending = [schema]
        while let next = pending.popLast() {
            if let ref = next.ref { refs.append(ref) }
            pending += next.allOf
            pending += next.anyOf
            pending += next.oneOf
            if let negated = next.not { pending.append(negated) }
            // The rarer keywords that look at the same value: conditions and dependent schemas.
            if let advanced = next.advanced {
                pending += [advanced.ifSchema, advanced.thenSchema, advanced.elseSchema].compactMap { $0 }
                pending += advanced.dependentSchemas.map(\.1)
            }
        }
    }
}
