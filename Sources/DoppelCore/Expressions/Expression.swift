/// A parsed expression of the contract language, ready to evaluate many times.
///
/// Expressions are parsed once when a contract loads (`Expression.parse`), so
/// a bad one is a load-time diagnostic and serving never parses text.
package struct Expression: Sendable, CustomStringConvertible {
    /// The text the expression was parsed from.
    package let source: String
    let root: Node

    /// The syntax tree.
    indirect enum Node: Sendable {
        case literal(JSON)
        /// A name; `slot` is set, when parsed, for the built-in roots.
        case name(String, slot: Roots.Slot?, offset: Int)
        case member(Node, String, offset: Int)
        case index(Node, Node)
        case call(Call)
        case not(Node)
        case negate(Node)
        case binary(BinaryOperator, Node, Node)
        case and(Node, Node)
        case or(Node, Node)
        case coalesce(Node, Node)
        case array([Node])
        case object([(String, Node)])
        /// `name => body`, the per-element argument of the list functions.
        case lambda(String, Node)
    }

    /// A function call, resolved when the expression is parsed.
    struct Call: Sendable {
        /// The name as written.
        let name: String
        /// The function it names; nil for an unknown name (a load-time diagnostic).
        let function: Function?
        let arguments: [Node]
        let offset: Int
        /// `matches(text, 'literal')`: the pattern compiled once, at load.
        let pattern: LinearRegex?

        init(name: String, arguments: [Node], offset: Int) {
            self.name = name
            self.function = Function(rawValue: name)
            self.arguments = arguments
            self.offset = offset
            if function == .matches, arguments.count == 2, case .literal(.string(let source)) = arguments[1] {
                pattern = try? LinearRegex(source)
            } else {
                pattern = nil
            }
        }
    }

    enum BinaryOperator: String, Sendable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case contains = "in"
        case notContains = "not in"
        case add = "+"
        case subtract = "-"
        case multiply = "*"
        case divide = "/"
        case remainder = "%"
    }

    package var description: String { source }

    /// The deepest syntax tree an expression may have (parentheses, operators, calls, lists).
    package static let maximumDepth = 64
    /// The longest expression text, in bytes.
    package static let maximumLength = 16_384
    /// What one evaluation may build: bytes of new text plus 8 per new list
    /// element or object member. Templates over request input (`join(map(...))`)
    /// stop here instead of allocating without bound.
    package static let maximumBuild = 16 << 20

    /// Parses expression text; the error's offset is in characters from its start.
    package static func parse(_ source: String) throws(ExpressionSyntaxError) -> Expression {
        var parser = ExpressionParser(source)
        let root = try parser.parseComplete()
        return Expression(source: source, root: root)
    }

    /// A constant expression, for values written as plain YAML.
    package static func constant(_ value: JSON) -> Expression {
        Expression(source: JSONWriter.encodeString(value), root: .literal(value))
    }

    /// The literal value when the whole expression is a constant.
    var constantValue: JSON? {
        if case .literal(let value) = root { return value }
        return nil
    }
}

/// A syntax error in an expression: what, and at which character of its text.
package struct ExpressionSyntaxError: Error, Sendable, CustomStringConvertible {
    package let message: String
    /// Character offset into the expression's text.
    package let offset: Int
    package var description: String { message }
}

/// Why evaluating an expression failed at run time (a type error, a bad argument).
package struct EvaluationError: Error, Sendable, CustomStringConvertible {
    package let message: String
    /// True when the evaluation would have built more than `Expression.maximumBuild`
    /// (large request input through a template): the client's input is too large, not the contract wrong.
    package let exceedsBudget: Bool
    package init(_ message: String, exceedsBudget: Bool = false) {
        self.message = message
        self.exceedsBudget = exceedsBudget
    }
    package var description: String { message }

    static func budget(_ what: String) -> EvaluationError {
        EvaluationError("\(what) would build more than \(Expression.maximumBuild >> 20) MiB (the evaluation budget)", exceedsBudget: true)
    }
}
