import Foundation

/// Templates and expressions, compiled and checked against the names in scope.
extension ContractLoader {
    /// Compiles a value with `{{ }}` placeholders. With `bareExpression`, a
    /// scalar without braces is itself an expression (used by `let`).
    mutating func compileTemplate(_ node: SourceNode, roots: Set<String>, bareExpression: Bool = false) -> ValueTemplate? {
        switch node.kind {
        case .scalar(let text, let plain):
            // In `let`, a scalar is an expression however it is quoted, as in `when`.
            if bareExpression, !text.includes("{{") {
                return compileExpression(node, roots: roots).map { .expression($0) }
            }
            guard plain || text.includes("{{") else { return .constant(node.json) }
            guard case .string = node.json else { return .constant(node.json) }
            do {
                let template = try TemplateParser.compile(text)
                for expression in template.expressions {
                    check(expression, roots: roots, at: node.contentLocation, offsetBase: 0, within: text)
                }
                return template
            } catch {
                diagnostics.error("bad placeholder: \(error.message)", at: node.contentLocation.advanced(by: error.offset))
                return nil
            }
        case .sequence(let items):
            var templates: [ValueTemplate] = []
            var failed = false
            for item in items {
                if let t = compileTemplate(item, roots: roots) { templates.append(t) } else { failed = true }
            }
            if failed { return nil }
            // A constant list is built from its items' values: `node.json`
            // at every level walked each subtree once per level above it.
            if templates.allSatisfy({ $0.constantValue != nil }) { return .constant(.array(templates.map { $0.constantValue! })) }
            return .array(templates)
        case .mapping(let pairs):
            var templates: [(String, ValueTemplate)] = []
            var failed = false
            for pair in pairs {
                guard let key = pair.key.scalarText else { continue }
                if let t = compileTemplate(pair.value, roots: roots) { templates.append((key, t)) } else { failed = true }
            }
            if failed { return nil }
            if templates.allSatisfy({ $0.1.constantValue != nil }) {
                // Keys that are not scalars are left out of templates; `json` names them.
                guard templates.count == pairs.count else { return .constant(node.json) }
                var object = JSONObject()
                for (key, template) in templates { object[key] = template.constantValue! }
                return .constant(.object(object))
            }
            return .object(ObjectTemplate(templates))
        }
    }

    /// Compiles an expression written as a whole scalar (a `when`, a `match`, a `let`).
    mutating func compileExpression(_ node: SourceNode, roots: Set<String>) -> Expression? {
        guard let text = node.scalarText else {
            diagnostics.error("an expression must be a string, not \(node.kindDescription)", at: node.location)
            return nil
        }
        if case .bool(let b) = node.json { return .constant(.bool(b)) }
        do {
            let expression = try Expression.parse(text)
            check(expression, roots: roots, at: node.contentLocation, offsetBase: 0)
            return expression
        } catch {
            diagnostics.error("bad expression: \(error.message)", at: node.contentLocation.advanced(by: error.offset))
            return nil
        }
    }

    /// Reports names, functions and state members an expression gets wrong.
    mutating func check(_ expression: Expression, roots: Set<String>, at location: SourceLocation, offsetBase: Int, within text: String? = nil) {
        let checker = ExpressionChecker(roots: roots, stateNames: stateNames, dataNames: dataNames, pathNames: pathNames, numericQuery: numericQuery)
        // Inside a template the expression's own offsets start after its '{{'.
        let base = text.flatMap { t in t.range(of: expression.source).map { t.distance(from: t.startIndex, to: $0.lowerBound) } } ?? offsetBase
        for problem in checker.check(expression) {
            diagnostics.error(problem.message, at: location.advanced(by: base + problem.offset))
        }
    }
}
