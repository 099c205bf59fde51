/// A recursive-descent parser for the expression language.
///
/// Precedence, loosest first: `??`, `or`, `and`, `not`, comparisons and `in`,
/// `+ -`, `* / %`, unary `-`, then member access, indexing and calls.
struct ExpressionParser {
    typealias Node = Expression.Node
    private var tokens: [ExpressionLexer.Token] = []
    private var position = 0
    private let source: String

    init(_ source: String) { self.source = source }

    mutating func parseComplete() throws(ExpressionSyntaxError) -> Node {
        tokens = try ExpressionLexer.tokenize(source)
        if case .end = tokens[0].kind { throw ExpressionSyntaxError(message: "empty expression", offset: 0) }
        let node = try parseCoalesce()
        guard case .end = current.kind else {
            throw ExpressionSyntaxError(message: "unexpected \(describe(current)) after the expression", offset: current.offset)
        }
        return node
    }

    private var current: ExpressionLexer.Token { tokens[position] }

    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    private func isSymbol(_ s: String) -> Bool {
        if case .symbol(s) = current.kind { return true }
        return false
    }

    private func isWord(_ w: String) -> Bool {
        if case .identifier(w) = current.kind { return true }
        return false
    }

    private func peekIsWord(_ w: String) -> Bool {
        guard position + 1 < tokens.count else { return false }
        if case .identifier(w) = tokens[position + 1].kind { return true }
        return false
    }

    private func describe(_ token: ExpressionLexer.Token) -> String {
        switch token.kind {
        case .number(let n): "number \(n.interpolationText)"
        case .string(let s): "string '\(s)'"
        case .identifier(let s): "'\(s)'"
        case .symbol(let s): "'\(s)'"
        case .end: "end of expression"
        }
    }

    private mutating func expect(_ symbol: String) throws(ExpressionSyntaxError) {
        guard isSymbol(symbol) else {
            throw ExpressionSyntaxError(message: "expected '\(symbol)' but found \(describe(current))", offset: current.offset)
        }
        advance()
    }

    private mutating func parseCoalesce() throws(ExpressionSyntaxError) -> Node {
        var left = try parseOr()
        while isSymbol("??") {
            advance()
            left = .coalesce(left, try parseOr())
        }
        return left
    }

    private mutating func parseOr() throws(ExpressionSyntaxError) -> Node {
        var left = try parseAnd()
        while isWord("or") || isSymbol("||") {
            advance()
            left = .or(left, try parseAnd())
        }
        return left
    }

    private mutating func parseAnd() throws(ExpressionSyntaxError) -> Node {
        var left = try parseNot()
        while isWord("and") || isSymbol("&&") {
            advance()
            left = .and(left, try parseNot())
        }
        return left
    }

    private mutating func parseNot() throws(ExpressionSyntaxError) -> Node {
        if (isWord("not") && !peekIsWord("in")) || isSymbol("!") {
            advance()
            return .not(try parseNot())
        }
        return try parseComparison()
    }

    private mutating func parseComparison() throws(ExpressionSyntaxError) -> Node {
        let left = try parseAdditive()
        let op: Expression.BinaryOperator?
        switch current.kind {
        case .symbol(let s): op = ["==", "!=", "<", "<=", ">", ">="].contains(s) ? Expression.BinaryOperator(rawValue: s) : nil
        case .identifier("in"): op = .contains
        case .identifier("not") where peekIsWord("in"):
            advance()
            op = .notContains
        default: op = nil
        }
        guard let op else { return left }
        advance()
        let right = try parseAdditive()
        if case .symbol(let s) = current.kind, ["==", "!=", "<", "<=", ">", ">="].contains(s) {
            throw ExpressionSyntaxError(message: "comparisons do not chain; join them with 'and'", offset: current.offset)
        }
        return .binary(op, left, right)
    }

    private mutating func parseAdditive() throws(ExpressionSyntaxError) -> Node {
        var left = try parseMultiplicative()
        while isSymbol("+") || isSymbol("-") {
            let op: Expression.BinaryOperator = isSymbol("+") ? .add : .subtract
            advance()
            left = .binary(op, left, try parseMultiplicative())
        }
        return left
    }

    private mutating func parseMultiplicative() throws(ExpressionSyntaxError) -> Node {
        var left = try parseUnary()
        while isSymbol("*") || isSymbol("/") || isSymbol("%") {
            let op: Expression.BinaryOperator = isSymbol("*") ? .multiply : isSymbol("/") ? .divide : .remainder
            advance()
            left = .binary(op, left, try parseUnary())
        }
        return left
    }

    private mutating func parseUnary() throws(ExpressionSyntaxError) -> Node {
        if isSymbol("-") {
            advance()
            let operand = try parseUnary()
            if case .literal(.int(let i)) = operand { return .literal(.int(-i)) }
            if case .literal(.double(let d)) = operand { return .literal(.double(-d)) }
            return .negate(operand)
        }
        return try parsePostfix()
    }

    private mutating func parsePostfix() throws(ExpressionSyntaxError) -> Node {
        var node = try parsePrimary()
        while true {
            if isSymbol(".") {
                advance()
                guard case .identifier(let name) = current.kind else {
                    throw ExpressionSyntaxError(message: "expected a name after '.' but found \(describe(current))", offset: current.offset)
                }
                node = .member(node, name, offset: current.offset)
                advance()
            } else if isSymbol("[") {
                advance()
                let index = try parseCoalesce()
                try expect("]")
                node = .index(node, index)
            } else {
                return node
            }
        }
    }

    private mutating func parsePrimary() throws(ExpressionSyntaxError) -> Node {
        let token = current
        switch token.kind {
        case .number(let value):
            advance()
            return .literal(value)
        case .string(let text):
            advance()
            return .literal(.string(text))
        case .identifier(let name):
            advance()
            if isSymbol("=>") {
                advance()
                return .lambda(name, try parseCoalesce())
            }
            switch name {
            case "true": return .literal(.bool(true))
            case "false": return .literal(.bool(false))
            case "null": return .literal(.null)
            case "and", "or", "not", "in":
                throw ExpressionSyntaxError(message: "expected a value but found '\(name)'", offset: token.offset)
            default: break
            }
            if isSymbol("(") {
                advance()
                var arguments: [Node] = []
                if !isSymbol(")") {
                    arguments.append(try parseCoalesce())
                    while isSymbol(",") {
                        advance()
                        arguments.append(try parseCoalesce())
                    }
                }
                try expect(")")
                return .call(name, arguments, offset: token.offset)
            }
            return .name(name, offset: token.offset)
        case .symbol("("):
            advance()
            let inner = try parseCoalesce()
            try expect(")")
            return inner
        case .symbol("["):
            advance()
            var items: [Node] = []
            if !isSymbol("]") {
                items.append(try parseCoalesce())
                while isSymbol(",") {
                    advance()
                    if isSymbol("]") { break }
                    items.append(try parseCoalesce())
                }
            }
            try expect("]")
            return .array(items)
        case .symbol("{"):
            advance()
            var pairs: [(String, Node)] = []
            while !isSymbol("}") {
                let key: String
                switch current.kind {
                case .identifier(let k), .string(let k): key = k
                default:
                    throw ExpressionSyntaxError(message: "expected an object key but found \(describe(current))", offset: current.offset)
                }
                advance()
                try expect(":")
                pairs.append((key, try parseCoalesce()))
                if isSymbol(",") { advance() } else { break }
            }
            try expect("}")
            return .object(pairs)
        default:
            throw ExpressionSyntaxError(message: "expected a value but found \(describe(token))", offset: token.offset)
        }
    }
}
