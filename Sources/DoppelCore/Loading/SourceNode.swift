import Yams

/// A YAML node with the place it was written, so that every later problem can
/// be reported at its line and column.
public struct SourceNode: Sendable {
    public enum Kind: Sendable {
        /// A scalar; `plain` is false for quoted and block scalars, which are always strings.
        case scalar(String, plain: Bool)
        case mapping([(key: SourceNode, value: SourceNode)])
        case sequence([SourceNode])
    }

    public var kind: Kind
    public var location: SourceLocation
    /// Columns between the mark and the first character of a scalar's text
    /// (1 for a quoted scalar), used to point inside expressions.
    public var contentOffset: Int

    public init(kind: Kind, location: SourceLocation, contentOffset: Int = 0) {
        self.kind = kind
        self.location = location
        self.contentOffset = contentOffset
    }

    /// The scalar's text, for any scalar.
    public var scalarText: String? {
        if case .scalar(let s, _) = kind { return s }
        return nil
    }

    public var mappingPairs: [(key: SourceNode, value: SourceNode)]? {
        if case .mapping(let pairs) = kind { return pairs }
        return nil
    }

    public var sequenceItems: [SourceNode]? {
        if case .sequence(let items) = kind { return items }
        return nil
    }

    /// The value under a scalar key of a mapping.
    public subscript(key: String) -> SourceNode? {
        mappingPairs?.first { $0.key.scalarText == key }?.value
    }

    /// What the node is, for messages: "a mapping", "a list", "a string".
    public var kindDescription: String {
        switch kind {
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .scalar: "a scalar"
        }
    }

    /// Where the text of the scalar starts (inside any quotes).
    public var contentLocation: SourceLocation { location.advanced(by: contentOffset) }

    /// The node as a JSON value, resolving plain scalars by YAML's core schema:
    /// `null`/`~`/empty, `true`/`false`, integers, floats, and strings otherwise.
    public var json: JSON {
        switch kind {
        case .scalar(let text, let plain):
            return plain ? Self.resolvePlain(text) : .string(text)
        case .sequence(let items):
            return .array(items.map(\.json))
        case .mapping(let pairs):
            var object = JSONObject()
            for pair in pairs { object[pair.key.scalarText ?? "\(pair.key.json)"] = pair.value.json }
            return .object(object)
        }
    }

    static func resolvePlain(_ text: String) -> JSON {
        switch text {
        case "", "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        case ".inf", ".Inf", ".INF", "+.inf": return .double(.infinity)
        case "-.inf", "-.Inf", "-.INF": return .double(-.infinity)
        default: break
        }
        if let first = text.utf8.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") || (first >= 48 && first <= 57) || first == UInt8(ascii: ".") {
            if let i = Int(text) { return .int(i) }
            if text.hasPrefix("0x"), let i = Int(text.dropFirst(2), radix: 16) { return .int(i) }
            if text.hasPrefix("0o"), let i = Int(text.dropFirst(2), radix: 8) { return .int(i) }
            if text.contains(where: { $0.isNumber }), !text.contains(where: { $0.isLetter && $0 != "e" && $0 != "E" }),
               let d = Double(text) {
                return .double(d)
            }
        }
        return .string(text)
    }
}

/// Reads YAML text into a `SourceNode` tree, turning syntax errors into diagnostics.
public enum SourceReader {
    /// Parses one YAML document. Syntax errors become a diagnostic at their mark.
    public static func read(_ text: String, file: String) -> Result<SourceNode?, ContractError> {
        do {
            guard let root = try Yams.compose(yaml: text) else { return .success(nil) }
            return .success(convert(root, file: file))
        } catch let error as YamlError {
            return .failure(ContractError(diagnostics: [diagnostic(for: error, file: file)]))
        } catch {
            return .failure(ContractError(diagnostics: [Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "\(error)")]))
        }
    }

    static func diagnostic(for error: YamlError, file: String) -> Diagnostic {
        func at(_ mark: Mark) -> SourceLocation { SourceLocation(file: file, line: mark.line, column: mark.column) }
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            let prefix = context.map { "\($0.text) " } ?? ""
            return Diagnostic(at: at(mark), "YAML syntax: \(prefix)\(problem)")
        case .reader(let problem, _, _, _):
            return Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "YAML: \(problem)")
        default:
            return Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "YAML: \(error)")
        }
    }

    static func convert(_ node: Node, file: String) -> SourceNode {
        let mark = node.mark
        let location = SourceLocation(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1)
        switch node {
        case .scalar(let scalar):
            let plain = scalar.style == .plain
            let quoted = scalar.style == .singleQuoted || scalar.style == .doubleQuoted
            return SourceNode(kind: .scalar(scalar.string, plain: plain), location: location, contentOffset: quoted ? 1 : 0)
        case .mapping(let mapping):
            let pairs = mapping.map { (key: convert($0.key, file: file), value: convert($0.value, file: file)) }
            return SourceNode(kind: .mapping(pairs), location: location)
        case .sequence(let sequence):
            return SourceNode(kind: .sequence(sequence.map { convert($0, file: file) }), location: location)
        case .alias:
            return SourceNode(kind: .scalar("", plain: true), location: location)
        }
    }
}
