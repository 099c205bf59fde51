/// A recursive-descent parser for the expression language.
///
/// Precedence, loosest first: `??`, `or`, `and`, `not`, comparisons and `in`,
/// `+ -`, `* / %`, unary `-`, then member access, indexing and calls.
///
/// Every parse step returns its subtree's depth with it, and a tree deeper
/// than `Expression.maximumDepth` is a syntax error: the checker, the
/// evaluator and even freeing a tree recurse once per level, so an
/// unbounded tree (20,000 parentheses, a chain of 100,000 `+`) would
/// overflow the stack instead of failing cleanly.
struct ExpressionParser {
    typealias Node = Expression.Node
    /// A parsed subtree and how many levels deep it is.
    typealias Parsed = (node: Node, depth: Int)
    private var tokens: [ExpressionLexer.Token] = []
    private var position = 0
    private let source: String
    /// How many parse functions are active; bounds the parser's own recursion.
    private var nesting = 0

    init(_ source: String) { self.source = source }

    mutating func parseComplete() throws(ExpressionSyntaxError) -> Node {
        guard source.utf8.count <= Expression.maximumLength else {
            throw ExpressionSyntaxError(message: "expression is longer than \(Expression.maximumLength) bytes", offset: 0)
        }
        tokens = try ExpressionLexer.tokenize(source)
        if case .end = tokens[0].kind { throw ExpressionSyntaxError(message: "empty expression", offset: 0) }
        let node = try parseCoalesce().node
        guard case .end = current.kind else {
            throw ExpressionSyntaxError(message: "unexpected \(describe(current)) after the expression", offset: current.offset)
        }
        return node
    }

    /// A node one level above its children, refused past the depth limit.
    private func node(_ node: Node, over depths: Int..., at offset: Int) throws(ExpressionSyntaxError) -> Parsed {
        let depth = (depths.max() ?? 0) + 1
        guard depth <= Expression.maximumDepth else { throw tooDeep(at: offset) }
        return (node, depth)
    }

    private func tooDeep(at offset: Int) -> ExpressionSyntaxError {
        ExpressionSyntaxError(message: "expression nests deeper than \(Expression.maximumDepth) levels", offset: offset)
    }

    /// Runs a parse step that may recurse, refusing to go deeper than the tree could.
    private mutating func nested(_ step: (inout Self) throws(ExpressionSyntaxError) -> Parsed) throws(ExpressionSyntaxError) -> Parsed {
        nesting += 1
        defer { nesting -= 1 }
        guard nesting <= Expression.maximumDepth else { throw tooDeep(at: current.offset) }
        return try step(&self)
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

    private mutating func parseCoalesce() throws(ExpressionSyntaxError) -> Parsed {
        try nested { parser throws(ExpressionSyntaxError) in
            var left = try parser.parseOr()
            while parser.isSymbol("??") {
                let offset = parser.current.offset
                parser.advance()
                let right = try parser.parseOr()
                left = try parser.node(.coalesce(left.node, right.node), over: left.depth, right.depth, at: offset)
            }
            return left
        }
    }

    private mutating func parseOr() throws(ExpressionSyntaxError) -> Parsed {
        var left = try parseAnd()
        while isWord("or") || isSymbol("||") {
            let offset = current.offset
            advance()
            let right = try parseAnd()
            left = try node(.or(left.node, right.node), over: left.depth, right.depth, at: offset)
        }
        return left
    }

    private mutating func parseAnd() throws(ExpressionSyntaxError) -> Parsed {
        var left = try parseNot()
        while isWord("and") || isSymbol("&&") {
            let offset = current.offset
            advance()
            let right = try parseNot()
            left = try node(.and(left.node, right.node), over: left.depth, right.depth, at: offset)
        }
        return left
    }

    private mutating func parseNot() throws(ExpressionSyntaxError) -> Parsed {
        if (isWord("not") && !peekIsWord("in")) || isSymbol("!") {
            let offset = current.offset
            advance()
            let operand = try nested { parser throws(ExpressionSyntaxError) in try parser.parseNot() }
            return try node(.not(operand.node), over: operand.depth, at: offset)
        }
        return try parseComparison()
    }

    private mutating func parseComparison() throws(ExpressionSyntaxError) -> Parsed {
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
        let offset = current.offset
        advance()
        let right = try parseAdditive()
        if case .symbol(let s) = current.kind, ["==", "!=", "<", "<=", ">", ">="].contains(s) {
            throw ExpressionSyntaxError(message: "comparisons do not chain; join them with 'and'", offset: current.offset)
        }
        return try node(.binary(op, left.node, right.node), over: left.depth, right.depth, at: offset)
    }

    private mutating func parseAdditive() throws(ExpressionSyntaxError) -> Parsed {
        var left = try parseMultiplicative()
        while isSymbol("+") || isSymbol("-") {
            let op: Expression.BinaryOperator = isSymbol("+") ? .add : .subtract
            let offset = current.offset
            advance()
            let right = try parseMultiplicative()
            left = try node(.binary(op, left.node, right.node), over: left.depth, right.depth, at: offset)
        }
        return left
    }

    private mutating func parseMultiplicative() throws(ExpressionSyntaxError) -> Parsed {
        var left = try parseUnary()
        while isSymbol("*") || isSymbol("/") || isSymbol("%") {
            let op: Expression.BinaryOperator = isSymbol("*") ? .multiply : isSymbol("/") ? .divide : .remainder
            let offset = current.offset
            advance()
            let right = try parseUnary()
            left = try node(.binary(op, left.node, right.node), over: left.depth, right.depth, at: offset)
        }
        return left
    }

    private mutating func parseUnary() throws(ExpressionSyntaxError) -> Parsed {
        if isSymbol("-") {
            let offset = current.offset
            advance()
            let operand = try nested { parser throws(ExpressionSyntaxError) in try parser.parseUnary() }
            if case .literal(.int(let i)) = operand.node, i != Int.min { return (.literal(.int(-i)), 1) }
            if case .literal(.double(let d)) = operand.node { return (.literal(.double(-d)), 1) }
            return try node(.negate(operand.node), over: operand.depth, at: offset)
        }
        return try parsePostfix()
    }

    private mutating func parsePostfix() throws(ExpressionSyntaxError) -> Parsed {
        var parsed = try parsePrimary()
        while true {
            if isSymbol(".") {
                advance()
                guard case .identifier(let name) = current.kind else {
                    throw ExpressionSyntaxError(message: "expected a name after '.' but found \(describe(current))", offset: current.offset)
                }
                parsed = try node(.member(parsed.node, name, offset: current.offset), over: parsed.depth, at: current.offset)
                advance()
            } else if isSymbol("[") {
                let offset = current.offset
                advance()
                let index = try parseCoalesce()
                try expect("]")
                parsed = try node(.index(parsed.node, index.node), over: parsed.depth, index.depth, at: offset)
            } else {
                return parsed
            }
        }
    }

    private mutating func parsePrimary() throws(ExpressionSyntaxError) -> Parsed {
        let token = current
        switch token.kind {
        case .number(let value):
            advance()
            return (.literal(value), 1)
        case .string(let text):
            advance()
            return (.literal(.string(text)), 1)
        case .identifier(let name):
            advance()
            if isSymbol("=>") {
                advance()
                let body = try parseCoalesce()
                return try node(.lambda(name, body.node), over: body.depth, at: token.offset)
            }
            switch name {
            case "true": return (.literal(.bool(true)), 1)
            case "false": return (.literal(.bool(false)), 1)
            case "null": return (.literal(.null), 1)
            case "and", "or", "not", "in":
                throw ExpressionSyntaxError(message: "expected a value but found '\(name)'", offset: token.offset)
            default: break
            }
            if isSymbol("(") {
                advance()
                var arguments: [Node] = []
                var depth = 0
                if !isSymbol(")") {
                    repeat {
                        if !arguments.isEmpty { advance() }
                        let argument = try parseCoalesce()
                        arguments.append(argument.node)
                        depth = max(depth, argument.depth)
                    } while isSymbol(",")
                }
                try expect(")")
                return try node(.call(Expression.Call(name: name, arguments: arguments, offset: token.offset)), over: depth, at: token.offset)
            }
            return (.name(name, slot: Roots.Slot(name: name), offset: token.offset), 1)
        case .symbol("("):
            advance()
            let inner = try parseCoalesce()
            try expect(")")
            return inner
        case .symbol("["):
            advance()
            var items: [Node] = []
            var depth = 0
            if !isSymbol("]") {
                let first = try parseCoalesce()
                items.append(first.node)
                depth = first.depth
                while isSymbol(",") {
                    advance()
                    if isSymbol("]") { break }
                    let item = try parseCoalesce()
                    items.append(item.node)
                    depth = max(depth, item.depth)
                }
            }
            try expect("]")
            return try node(.array(items), over: depth, at: token.offset)
        case .symbol("{"):
            advance()
            var pairs: [(String, Node)] = []
            var depth = 0
            while !isSymbol("}") {
                let key: String
                switch current.kind {
                case .identifier(let k), .string(let k): key = k
                default:
                    throw ExpressionSyntaxError(message: "expected an object key but found \(describe(current))", offset: current.offset)
                }
                advance()
                try expect(":")
                let value = try parseCoalesce()
                pairs.append((key, value.node))
                depth = max(depth, value.depth)
                if isSymbol(",") { advance() } else { break }
            }
            try expect("}")
            return try node(.object(pairs), over: depth, at: token.offset)
        default:
            throw ExpressionSyntaxError(message: "expected a value but found \(describe(token))", offset: token.offset)
        }
    }
}
