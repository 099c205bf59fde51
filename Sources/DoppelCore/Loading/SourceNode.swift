import Foundation
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
///
/// The tree is bounded (`docs/limits.md`): at most `maximumNodes` nodes once
/// aliases are expanded, so a few hundred bytes of nested aliases (a
/// "billion laughs" document) are refused instead of filling memory, and at
/// most `maximumDepth` levels deep.
public enum SourceReader {
    /// The most nodes a document may have, aliases expanded.
    public static let maximumNodes = 1_000_000
    /// The deepest nesting of mappings and lists.
    public static let maximumDepth = 256
    /// The largest contract or scenario file read, in bytes.
    public static let maximumFileSize = 16 << 20

    /// Parses one YAML document. Syntax errors become a diagnostic at their mark.
    public static func read(_ text: String, file: String) -> Result<SourceNode?, ContractError> {
        do {
            // Scalars are typed by `resolvePlain`, so Yams need not tag them:
            // its default resolver matches every scalar against Foundation
            // regular expressions, which cost start-up time and pull in ICU.
            guard let root = try Yams.compose(yaml: text, .basic) else { return .success(nil) }
            var converter = Converter(file: file)
            let node = converter.convert(root, depth: 0)
            if let problem = converter.problem { return .failure(ContractError(diagnostics: [problem])) }
            return .success(node)
        } catch let error as YamlError {
            return .failure(ContractError(diagnostics: [diagnostic(for: error, file: file)]))
        } catch {
            return .failure(ContractError(diagnostics: [Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "\(error)")]))
        }
    }

    /// Reads a contract or scenario file as UTF-8 text, with a clear diagnostic
    /// for what is not one: a missing file, a folder, a device, an oversized
    /// file, or bytes that are not UTF-8 (located at the first bad byte).
    public static func readFile(_ file: String, what: String) -> Result<String, ContractError> {
        func failure(_ message: String, line: Int = 1, column: Int = 1) -> Result<String, ContractError> {
            .failure(ContractError(diagnostics: [Diagnostic(at: SourceLocation(file: file, line: line, column: column), message)]))
        }
        let bytes: [UInt8]
        switch readBytes(file, what: what) {
        case .success(let read): bytes = read
        case .failure(let reason): return failure("cannot read \(what): \(reason.message)")
        }
        if let text = String(validating: bytes, as: UTF8.self) { return .success(text) }
        // Locate the first byte that is not UTF-8, for the diagnostic.
        var line = 1, lineStart = 0, offset = 0
        while offset < bytes.count {
            let length = utf8SequenceLength(bytes, at: offset)
            if length == 0 { break }
            if bytes[offset] == 0x0A { line += 1; lineStart = offset + 1 }
            offset += length
        }
        let column = (String(decoding: bytes[lineStart..<offset], as: UTF8.self).count) + 1
        return failure("the \(what) is not UTF-8 text: byte 0x\(String(bytes[offset], radix: 16, uppercase: true)) at byte offset \(offset)", line: line, column: column)
    }

    /// Why a file could not be read, in a few words for a diagnostic.
    public struct Unreadable: Error, Sendable {
        public let message: String
    }

    /// The bytes of a regular file of at most `maximumFileSize` bytes; anything
    /// else (missing, a folder, a FIFO or device that would block or never end,
    /// too large, unreadable) is refused with the reason.
    public static func readBytes(_ file: String, what: String) -> Result<[UInt8], Unreadable> {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else { return .failure(Unreadable(message: "no such file")) }
        if isDirectory.boolValue { return .failure(Unreadable(message: "it is a folder, not a file")) }
        let attributes = try? FileManager.default.attributesOfItem(atPath: file)
        guard attributes?[.type] as? FileAttributeType == .typeRegular else { return .failure(Unreadable(message: "not a regular file")) }
        if let size = attributes?[.size] as? Int, size > maximumFileSize {
            return .failure(Unreadable(message: "\(size) bytes is more than the \(maximumFileSize >> 20) MiB a \(what) may have"))
        }
        guard let data = FileManager.default.contents(atPath: file) else { return .failure(Unreadable(message: "permission denied or unreadable")) }
        return .success([UInt8](data))
    }

    /// The length of the valid UTF-8 sequence at `offset`, or 0 when it is not one.
    private static func utf8SequenceLength(_ bytes: [UInt8], at offset: Int) -> Int {
        let first = bytes[offset]
        let length: Int
        switch first {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return 0
        }
        guard offset + length <= bytes.count else { return 0 }
        let slice = Array(bytes[offset..<offset + length])
        return String(validating: slice, as: UTF8.self) == nil ? 0 : length
    }

    static func diagnostic(for error: YamlError, file: String) -> Diagnostic {
        func at(_ mark: Mark) -> SourceLocation { SourceLocation(file: file, line: mark.line, column: mark.column) }
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            if problem.contains("Maximum nesting level") || context?.text.contains("Maximum nesting level") == true {
                return Diagnostic(at: at(mark), "YAML nests deeper than the parser allows (1000 levels; Doppel reads at most \(maximumDepth))")
            }
            let prefix = context.map { "\($0.text) " } ?? ""
            return Diagnostic(at: at(mark), "YAML syntax: \(prefix)\(problem)")
        case .reader(let problem, _, _, _):
            return Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "YAML: \(problem)")
        default:
            return Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "YAML: \(error)")
        }
    }

    /// Turns Yams nodes into `SourceNode`s, expanding aliases within the node budget.
    private struct Converter {
        let file: String
        var nodes = 0
        var problem: Diagnostic?

        init(file: String) { self.file = file }

        mutating func convert(_ node: Node, depth: Int) -> SourceNode {
            let mark = node.mark
            let location = SourceLocation(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1)
            let empty = SourceNode(kind: .scalar("", plain: true), location: location)
            guard problem == nil else { return empty }
            nodes += 1
            if nodes > SourceReader.maximumNodes {
                problem = Diagnostic(at: location, "the YAML expands to more than \(SourceReader.maximumNodes) nodes (aliases of aliases?); Doppel reads at most that many")
                return empty
            }
            if depth > SourceReader.maximumDepth {
                problem = Diagnostic(at: location, "YAML nests deeper than \(SourceReader.maximumDepth) levels")
                return empty
            }
            switch node {
            case .scalar(let scalar):
                let plain = scalar.style == .plain
                let quoted = scalar.style == .singleQuoted || scalar.style == .doubleQuoted
                return SourceNode(kind: .scalar(scalar.string, plain: plain), location: location, contentOffset: quoted ? 1 : 0)
            case .mapping(let mapping):
                var pairs: [(key: SourceNode, value: SourceNode)] = []
                for (key, value) in mapping {
                    pairs.append((key: convert(key, depth: depth + 1), value: convert(value, depth: depth + 1)))
                    if problem != nil { break }
                }
                return SourceNode(kind: .mapping(pairs), location: location)
            case .sequence(let sequence):
                var items: [SourceNode] = []
                for item in sequence {
                    items.append(convert(item, depth: depth + 1))
                    if problem != nil { break }
                }
                return SourceNode(kind: .sequence(items), location: location)
            case .alias:
                return empty
            }
        }
    }
}
