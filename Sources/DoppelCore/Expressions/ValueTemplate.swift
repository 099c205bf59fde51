/// A JSON value that may hold `{{ expression }}` placeholders, compiled once.
///
/// A string that is exactly one placeholder (`"{{ state.stories_used }}"`)
/// renders to the expression's value with its JSON type; a placeholder inside
/// longer text is interpolated as text.
package indirect enum ValueTemplate: Sendable {
    case constant(JSON)
    case expression(Expression)
    case interpolated([TemplateSegment])
    case array([ValueTemplate])
    case object(ObjectTemplate)

    /// The value when nothing in it needs rendering.
    package var constantValue: JSON? {
        if case .constant(let value) = self { return value }
        return nil
    }

    /// Renders the template against a context.
    package func render(in context: EvaluationContext) throws(EvaluationError) -> JSON {
        switch self {
        case .constant(let value):
            return value
        case .expression(let expression):
            return try expression.evaluate(in: context)
        case .interpolated(let segments):
            return .string(try TemplateSegment.render(segments, in: context))
        case .array(let items):
            var values: [JSON] = []
            values.reserveCapacity(items.count)
            for item in items { values.append(try item.render(in: context)) }
            return .array(values)
        case .object(let template):
            var values = ContiguousArray<JSON>()
            values.reserveCapacity(template.values.count)
            for value in template.values { values.append(try value.render(in: context)) }
            return .object(JSONObject(uniqueKeys: template.keys, values: values))
        }
    }

    /// Every expression in the template, for static checks.
    package var expressions: [Expression] {
        switch self {
        case .constant: []
        case .expression(let e): [e]
        case .interpolated(let segments): segments.compactMap { if case .expression(let e) = $0 { e } else { nil } }
        case .array(let items): items.flatMap(\.expressions)
        case .object(let template): template.values.flatMap(\.expressions)
        }
    }
}

/// An object whose members may hold placeholders, its keys kept apart: a
/// rendered object shares the one array of keys (no key is copied, searched
/// or hashed per request).
package struct ObjectTemplate: Sendable {
    /// The keys, each once, in order.
    let keys: ContiguousArray<String>
    /// The members' templates, in the keys' order.
    package let values: [ValueTemplate]

    /// Members in order; a key given twice keeps its first place and its last template, as a JSON object would.
    package init(_ pairs: [(String, ValueTemplate)]) {
        var keys = ContiguousArray<String>()
        var values: [ValueTemplate] = []
        var positions: [String: Int] = [:]
        for (key, value) in pairs {
            if let position = positions[key] {
                values[position] = value
            } else {
                positions[key] = keys.count
                keys.append(key)
                values.append(value)
            }
        }
        self.keys = keys
        self.values = values
    }

    /// The members in order.
    package var pairs: [(String, ValueTemplate)] { Array(zip(keys, values)) }
}

/// A piece of an interpolated string: literal text or a placeholder.
package enum TemplateSegment: Sendable {
    case text(String)
    case expression(Expression)

    static func render(_ segments: [TemplateSegment], in context: EvaluationContext) throws(EvaluationError) -> String {
        var out = ""
        for segment in segments {
            switch segment {
            case .text(let t): out += t
            case .expression(let e):
                let value = try e.evaluate(in: context)
                if value.exceedsEncodedSize(Expression.maximumBuild - out.utf8.count) { throw .budget("the template '\(e.source)'") }
                out += value.interpolationText
            }
        }
        return out
    }
}

/// Compiles strings with `{{ }}` placeholders.
package enum TemplateParser {
    /// A placeholder that did not parse, with the character offset of the problem in the string.
    package struct Failure: Error, Sendable {
        package let message: String
        package let offset: Int
    }

    /// Splits a string into text and parsed expressions. Returns nil segments
    /// when the string has no placeholder at all.
    package static func segments(of text: String) throws(Failure) -> [TemplateSegment]? {
        guard text.includes("{{") else { return nil }
        let chars = Array(text)
        var segments: [TemplateSegment] = []
        var literal = ""
        var i = 0
        while i < chars.count {
            if chars[i] == "{", i + 1 < chars.count, chars[i + 1] == "{" {
                guard let close = closing(chars, from: i + 2) else { throw Failure(message: "'{{' without a closing '}}'", offset: i) }
                let inner = String(chars[(i + 2)..<close])
                do {
                    let expression = try Expression.parse(inner)
                    if !literal.isEmpty {
                        segments.append(.text(literal))
                        literal = ""
                    }
                    segments.append(.expression(expression))
                } catch {
                    throw Failure(message: error.message, offset: i + 2 + error.offset)
                }
                i = close + 2
            } else {
                literal.append(chars[i])
                i += 1
            }
        }
        if !literal.isEmpty { segments.append(.text(literal)) }
        return segments
    }

    /// Where the placeholder opened before `start` closes: the first `}}`
    /// outside the expression's own strings and braces, so an object
    /// literal may end one (`{{ {data: {delta: w}} }}`). When that finds no
    /// end (an unclosed quote or brace), the first `}}` at all, so the
    /// expression's parser names what is wrong.
    private static func closing(_ chars: [Character], from start: Int) -> Int? {
        var depth = 0
        var j = start
        scan: while j < chars.count {
            switch chars[j] {
            case "'", "\"":
                let quote = chars[j]
                j += 1
                while j < chars.count, chars[j] != quote {
                    j += chars[j] == "\\" ? 2 : 1
                }
                if j >= chars.count { break scan }
            case "{":
                depth += 1
            case "}":
                if depth == 0, j + 1 < chars.count, chars[j + 1] == "}" { return j }
                depth = max(0, depth - 1)
            default:
                break
            }
            j += 1
        }
        j = start
        while j + 1 < chars.count {
            if chars[j] == "}", chars[j + 1] == "}" { return j }
            j += 1
        }
        return nil
    }

    /// Compiles a string value: constant, whole-value expression, or interpolation.
    package static func compile(_ text: String) throws(Failure) -> ValueTemplate {
        guard let segments = try segments(of: text) else { return .constant(.string(text)) }
        if segments.count == 1, case .expression(let e) = segments[0] { return .expression(e) }
        return .interpolated(segments)
    }
}
