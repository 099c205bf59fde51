/// Checks a parsed expression against what a contract declares: known root
/// names, known functions with the right number of arguments, declared state
/// and data names. Run at load time so mistakes are lint errors, not 500s.
package struct ExpressionChecker: Sendable {
    /// A problem at a character offset of the expression's text.
    package struct Problem: Sendable, Equatable {
        package let message: String
        package let offset: Int
    }

    /// Root names the expression may use.
    package var roots: Set<String>
    /// Names declared under `state`.
    package var stateNames: Set<String>
    /// Top-level keys of `data`.
    package var dataNames: Set<String>

    /// The path parameters `path` has, where an endpoint's path is known.
    let pathNames: [String]?
    /// Where an endpoint is known: whether its `query` schema reads a query
    /// parameter as a number. Any other query value is text.
    let numericQuery: (@Sendable (String) -> Bool)?

    package init(
        roots: Set<String>, stateNames: Set<String>, dataNames: Set<String>, pathNames: [String]? = nil,
        numericQuery: (@Sendable (String) -> Bool)? = nil
    ) {
        self.roots = roots
        self.stateNames = stateNames
        self.dataNames = dataNames
        self.pathNames = pathNames
        self.numericQuery = numericQuery
    }

    /// A problem when `node` is a query value used where only a number will
    /// do, and the endpoint's query schema does not make it one: it arrives
    /// as text, and the request would fail with a 500.
    private func checkNumber(_ node: Expression.Node, for use: String, into problems: inout [Problem]) {
        guard let numericQuery, case .member(.name("query", _, _), let name, let offset) = node, !numericQuery(name) else { return }
        problems.append(
            Problem(
                message:
                    "query.\(name) is text unless the endpoint's query schema gives it type integer or number, so \(use) would fail; declare it, or write int(query.\(name))",
                offset: offset))
    }

    package func check(_ expression: Expression) -> [Problem] {
        var problems: [Problem] = []
        check(expression.root, insideIteration: false, into: &problems)
        return problems
    }

    private func check(_ node: Expression.Node, insideIteration: Bool, into problems: inout [Problem]) {
        switch node {
        case .literal:
            break
        case .name(let name, _, let offset):
            if name == "it" || name == "key" && !roots.contains("key") {
                if !insideIteration {
                    problems.append(Problem(message: "'it' is only defined inside filter(), map() and the other list functions", offset: offset))
                }
            } else if !roots.contains(name) {
                problems.append(Problem(message: "unknown name '\(name)'\(Suggestion.hint(for: name, in: roots))", offset: offset))
            }
        case .member(let base, let name, let offset):
            if case .name("state", _, _) = base, !stateNames.contains(name) {
                problems.append(Problem(message: "state has no '\(name)'\(Suggestion.hint(for: name, in: stateNames))", offset: offset))
            } else if case .name("data", _, _) = base, !dataNames.contains(name) {
                problems.append(Problem(message: "data has no '\(name)'\(Suggestion.hint(for: name, in: dataNames))", offset: offset))
            } else if case .name("path", _, _) = base, let pathNames, !pathNames.contains(name) {
                let has =
                    pathNames.isEmpty ? "the endpoint's path has no parameters" : "it has \(pathNames.map { "'\($0)'" }.joined(separator: ", "))"
                problems.append(Problem(message: "path has no '\(name)'\(Suggestion.hint(for: name, in: pathNames)); \(has)", offset: offset))
            }
            check(base, insideIteration: insideIteration, into: &problems)
        case .index(let base, let index):
            check(base, insideIteration: insideIteration, into: &problems)
            check(index, insideIteration: insideIteration, into: &problems)
        case .not(let operand), .negate(let operand):
            check(operand, insideIteration: insideIteration, into: &problems)
        case .binary(let op, let left, let right):
            if [.subtract, .multiply, .divide, .remainder].contains(op) {
                checkNumber(left, for: "'\(op.rawValue)'", into: &problems)
                checkNumber(right, for: "'\(op.rawValue)'", into: &problems)
            }
            check(left, insideIteration: insideIteration, into: &problems)
            check(right, insideIteration: insideIteration, into: &problems)
        case .and(let left, let right), .or(let left, let right), .coalesce(let left, let right):
            check(left, insideIteration: insideIteration, into: &problems)
            check(right, insideIteration: insideIteration, into: &problems)
        case .array(let items):
            for item in items { check(item, insideIteration: insideIteration, into: &problems) }
        case .object(let pairs):
            for (_, value) in pairs { check(value, insideIteration: insideIteration, into: &problems) }
        case .lambda(let parameter, _):
            problems.append(
                Problem(message: "'\(parameter) => ...' can only be the second argument of filter(), map() and the other list functions", offset: 0))
        case .call(let call):
            let (name, arguments, offset) = (call.name, call.arguments, call.offset)
            if let function = call.function {
                let arity = function.arity
                if !arity.contains(arguments.count) {
                    let expected = arity.lowerBound == arity.upperBound ? "\(arity.lowerBound)" : "\(arity.lowerBound) to \(arity.upperBound)"
                    problems.append(
                        Problem(
                            message: "\(name)() takes \(expected) argument\(arity.upperBound == 1 ? "" : "s"), not \(arguments.count)", offset: offset
                        ))
                }
            } else {
                problems.append(
                    Problem(message: "unknown function '\(name)'\(Suggestion.hint(for: name, in: Function.allCases.map(\.rawValue)))", offset: offset)
                )
            }
            // Arguments only a number will do.
            let numeric: [Int] =
                switch call.function {
                case .slice: [1, 2]
                case .round, .monthStart: [1]
                case .abs, .floor, .ceil, .date: [0]
                default: []
                }
            for index in numeric where index < arguments.count {
                checkNumber(arguments[index], for: "\(name)()", into: &problems)
            }
            if call.function == .matches, call.pattern == nil, arguments.count == 2, case .literal(.string(let pattern)) = arguments[1] {
                do {
                    _ = try LinearRegex(pattern)
                } catch {
                    problems.append(Problem(message: "matches(): unusable pattern '\(pattern)': \(error.message)", offset: offset))
                }
            }
            let iterating = call.function?.isIterating ?? false
            for (i, argument) in arguments.enumerated() {
                if iterating, i == 1, case .lambda(let parameter, let body) = argument {
                    var inner = self
                    inner.roots.insert(parameter)
                    inner.check(body, insideIteration: true, into: &problems)
                } else {
                    check(argument, insideIteration: insideIteration || (iterating && i == 1), into: &problems)
                }
            }
        }
    }
}
