/// Parses effect text: `state.NAME[...] = expr`, `+= expr`, `-= expr`, or `delete state.NAME[...]`.
enum EffectParser {
    struct Parsed {
        let name: String
        let path: [Effect.PathStep]
        let operation: Effect.Operation
        let value: Expression?
        /// Character offset of the value expression in the effect text.
        let valueOffset: Int
    }

    struct Failure: Error {
        let message: String
        let offset: Int
    }

    static func parse(_ text: String, stateKinds: Set<String>) -> Result<Parsed, Failure> {
        let chars = Array(text)
        var targetText: String
        var targetOffset = 0
        var operation: Effect.Operation
        var value: Expression?
        var valueOffset = 0

        let trimmed = String(text.trimmingSpaces)
        if trimmed.hasPrefix("delete ") {
            operation = .delete
            targetOffset = (text.range(of: "delete ").map { text.distance(from: text.startIndex, to: $0.upperBound) }) ?? 7
            targetText = String(chars[targetOffset...])
        } else {
            guard let (opIndex, op) = findOperator(chars) else {
                return .failure(Failure(message: "expected 'state.name = value', '+=', '-=' or 'delete state.name[key]'", offset: 0))
            }
            operation = op
            targetText = String(chars[..<opIndex])
            valueOffset = opIndex + op.rawValue.count
            let valueText = String(chars[valueOffset...])
            do {
                value = try Expression.parse(valueText)
            } catch {
                return .failure(Failure(message: error.message, offset: valueOffset + error.offset))
            }
        }
        let target: Expression
        do {
            target = try Expression.parse(targetText)
        } catch {
            return .failure(Failure(message: error.message, offset: targetOffset + error.offset))
        }
        // Flatten the target into state.NAME followed by steps.
        var steps: [Effect.PathStep] = []
        var node = target.root
        while true {
            switch node {
            case .member(let base, let name, _):
                steps.insert(.member(name), at: 0)
                node = base
                continue
            case .index(let base, let index):
                steps.insert(.index(Expression(source: "", root: index)), at: 0)
                node = base
                continue
            case .name("state", _, _):
                break
            default:
                return .failure(Failure(message: "an effect can only change state: write 'state.<name>'", offset: targetOffset))
            }
            break
        }
        guard case .member(let name)? = steps.first else {
            return .failure(Failure(message: "an effect must name a state entry: 'state.<name>'", offset: targetOffset))
        }
        guard stateKinds.contains(name) else {
            return .failure(Failure(message: "state has no '\(name)'\(Suggestion.hint(for: name, in: stateKinds))", offset: targetOffset))
        }
        if operation == .delete, steps.count < 2 {
            return .failure(Failure(message: "delete needs a key: 'delete state.\(name)[key]'", offset: targetOffset))
        }
        return .success(Parsed(name: name, path: Array(steps.dropFirst()), operation: operation, value: value, valueOffset: valueOffset))
    }

    /// The first assignment operator outside strings and brackets.
    private static func findOperator(_ chars: [Character]) -> (Int, Effect.Operation)? {
        var depth = 0
        var quote: Character?
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if let q = quote {
                if c == "\\" {
                    i += 2
                    continue
                }
                if c == q { quote = nil }
            } else if c == "'" || c == "\"" {
                quote = c
            } else if "([{".contains(c) {
                depth += 1
            } else if ")]}".contains(c) {
                depth -= 1
            } else if depth == 0, c == "=" {
                let next = i + 1 < chars.count ? chars[i + 1] : " "
                let previous = i > 0 ? chars[i - 1] : " "
                if next == "=" {
                    i += 2
                    continue
                }
                if previous == "+" { return (i - 1, .add) }
                if previous == "-" { return (i - 1, .subtract) }
                if "=!<>".contains(previous) {
                    i += 1
                    continue
                }
                return (i, .assign)
            }
            i += 1
        }
        return nil
    }
}
