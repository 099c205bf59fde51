/// Relations a response states between the values of one answer: a member
/// computed from another member's value (`converted_amount: round(query.amount
/// * rate, 2)` beside `rate: "{{ rate }}"`). `doppel verify` holds a
/// provider's answer to them with the provider's own values: its rate, not
/// the contract's, so a provider whose data differs still passes, and one
/// whose arithmetic is off does not.
extension MockEngine {
    /// The relations of `response` that `answer` (a provider's answer to
    /// `request`) breaks, each as `/member: expected …, got …`. A relation is
    /// a member (at any depth of objects) whose expression reads a `let`
    /// that another member shows as it is; one that reads state is not
    /// checked (the provider's state is its own).
    package func relationProblems(of response: ResponseDefinition, for endpoint: Endpoint, request: RecordedRequest, answer: JSON) -> [String] {
        guard case .json(let body, _, _) = response.body, case .object = body, answer.objectValue != nil else { return [] }
        let bindings = endpoint.bindings + response.bindings
        let letNames = Set(bindings.map(\.0))
        // Members of objects at any depth (not inside lists), by their path.
        let members = Self.members(of: body, at: [])
        func provided(_ path: [String]) -> JSON? {
            var value: JSON? = answer
            for key in path { value = value?.objectValue?[key] }
            return value
        }
        // Lets an answer shows as they are: `rate: "{{ rate }}"`, here or in a nested object.
        var shown: [String: [String]] = [:]
        for (path, value) in members {
            if case .expression(let expression) = value, expression.isName, let name = expression.rootNames.first, letNames.contains(name),
                shown[name] == nil
            {
                shown[name] = path
            }
        }
        guard !shown.isEmpty else { return [] }
        let derivation = StateDerivation(endpoint: endpoint, response: response)
        var relations: [([String], Expression)] = []
        for (path, value) in members {
            guard case .expression(let expression) = value, !expression.isPath, provided(path) != nil,
                !expression.rootNames.isDisjoint(with: Set(shown.keys))
            else { continue }
            if case .derived = derivation.places(of: value) { continue }
            relations.append((path, expression))
        }
        guard !relations.isEmpty else { return [] }
        // The request as the contract reads it, the lets as the provider's answer shows them.
        let now = clock()
        var context = EvaluationContext(roots: baseRoots(forRelationsOf: request), now: now, request: request)
        guard case .valid(let parts) = validator.validate(request, queryItems: request.queryItems, pathParameters: [:], for: endpoint) else {
            return []
        }
        context.use(parts)
        if case .matched(_, let parameters) = router.route(method: request.method, path: request.path, conditions: { _, _ in [] }),
            !parameters.isEmpty
        {
            context.roots[.path] = Self.object(parameters)
        }
        context.roots[.state] = .object(contract.state.initial)
        for (name, value) in bindings {
            if let path = shown[name], let theirs = provided(path) {
                context.roots[bound: name] = theirs
            } else {
                guard let rendered = try? value.render(in: context) else { return [] }
                context.roots[bound: name] = rendered
            }
        }
        var problems: [String] = []
        for (path, expression) in relations {
            guard let expected = try? expression.evaluate(in: context), let got = provided(path) else { continue }
            if expected == got { continue }
            if let x = expected.numberValue, let y = got.numberValue, abs(x - y) <= 1e-9 * max(1, abs(x)) { continue }
            let inputs = shown.filter { expression.rootNames.contains($0.key) }.sorted { $0.key < $1.key }
                .map { "\($0.value.joined(separator: ".")) \(JSONWriter.encodeString(provided($0.value) ?? .null))" }.joined(separator: ", ")
            let source = expression.source.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()
            problems.append(
                path.map { "/" + SchemaValidator.escape($0) }.joined()
                    + ": expected \(JSONWriter.encodeString(expected)) (\(String(source)), with the answer's own \(inputs)), got \(JSONWriter.encodeString(got))"
            )
        }
        return problems
    }

    /// The members of a body's objects, at any depth down to 16 (not inside lists), with their paths.
    static func members(of template: ValueTemplate, at path: [String]) -> [([String], ValueTemplate)] {
        guard case .object(let object) = template, path.count < 16 else { return [] }
        return object.pairs.flatMap { key, value in [(path + [key], value)] + members(of: value, at: path + [key]) }
    }

    private func baseRoots(forRelationsOf request: RecordedRequest) -> Roots {
        var roots = Roots()
        roots[.path] = .object(JSONObject())
        roots[.body] = .null
        roots[.auth] = .null
        roots[.session] = .string(request.sessionID)
        roots[.data] = contract.data
        return roots
    }
}

extension Expression {
    /// Whether the expression is one name alone (`rate`).
    package var isName: Bool {
        if case .name = root { return true }
        return false
    }
}
