import Foundation
import Yams

/// Doppel's one YAML writer, on Yams's emitter: contract trees (`doppel
/// import`), and JSON values (`doppel export`'s OpenAPI documents, `doppel
/// record`'s contract and scenario). One rule for scalars everywhere: a
/// string that a YAML reader would take for another type (`'200'`, `'yes'`,
/// `''`, `'null'`) or that has spaces at either end of its one line is
/// quoted; other strings are plain where YAML allows, and Yams quotes what
/// plain YAML cannot hold. Numbers are written as YAML 1.1 reads them.
package enum YAMLWriter {
    /// `value` as a YAML document, after `header` as `#` comment lines.
    package static func yaml(_ value: JSON, header: String? = nil) throws -> String {
        try document(node(value), header: header)
    }

    /// A contract tree as YAML that reads back to the same tree: scalars
    /// written plain in the source stay plain, quoted ones stay strings.
    package static func yaml(_ tree: SourceNode, header: String? = nil) throws -> String {
        try document(node(tree), header: header)
    }

    private static func document(_ node: Node, header: String?) throws -> String {
        let body = try Yams.serialize(node: node, width: -1, allowUnicode: true)
        guard let header else { return body }
        return header.split(separator: "\n", omittingEmptySubsequences: false).map { "# \($0)" }.joined(separator: "\n") + "\n" + body
    }

    /// A JSON value as a YAML node whose scalars carry their JSON type, for
    /// OpenAPIKit to read and for people and every YAML reader (YAML 1.1
    /// readers such as PyYAML included); numbers as YAML 1.1 reads them
    /// (`1.0e+20`, never `1e+20`; `.inf`, `-.inf` and `.nan` as YAML writes them).
    package static func node(_ value: JSON) -> Node {
        switch value {
        case .null: return .scalar(.init("null", Tag(.null), .plain))
        case .bool(let flag): return .scalar(.init(flag ? "true" : "false", Tag(.bool), .plain))
        case .int(let number): return .scalar(.init(String(number), Tag(.int), .plain))
        case .double(let number):
            var text = number.isNaN ? ".nan" : number.isInfinite ? (number < 0 ? "-.inf" : ".inf") : String(number)
            if number.isFinite, !text.contains("."), let exponent = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
                text.insert(contentsOf: ".0", at: exponent)
            }
            return .scalar(.init(text, Tag(.float), .plain))
        case .string(let text): return string(text)
        case .array(let items): return .sequence(.init(items.map(node)))
        case .object(let object):
            // Keys keep Yams's implicit tag: its decoder finds a key by text and resolved tag.
            return .mapping(
                .init(
                    object.pairs.map { pair in
                        (.scalar(.init(pair.key, Tag(.implicit), needsQuotes(pair.key) ? .singleQuoted : .any)), node(pair.value))
                    }))
        }
    }

    private static func node(_ source: SourceNode) -> Node {
        switch source.kind {
        case .scalar(let text, let plain):
            if plain { return .scalar(.init(text, Tag(.implicit), .plain)) }
            return string(text)
        case .sequence(let items):
            return .sequence(.init(items.map(node)))
        case .mapping(let pairs):
            return .mapping(.init(pairs.map { (node($0.key), node($0.value)) }))
        }
    }

    private static func string(_ text: String) -> Node {
        .scalar(.init(text, Tag(.str), needsQuotes(text) ? .singleQuoted : .any))
    }

    /// Whether a string must be quoted to be read back as that string: it
    /// looks like another type, or has spaces at either end of a single line.
    package static func needsQuotes(_ text: String) -> Bool {
        looksTyped(text) || !text.contains("\n") && text != text.trimmingCharacters(in: .whitespaces)
    }

    /// Whether a plain YAML scalar would be read as something other than a
    /// string, by YAML 1.2 or by a YAML 1.1 reader (PyYAML, many tools):
    /// 1.1 also reads dates (`2025-11-25`), sexagesimal numbers (`1:30`),
    /// hexadecimal and octal (`0x1F`, `017`) and digits with underscores
    /// (`1_000`).
    package static func looksTyped(_ text: String) -> Bool {
        ["", "~", "null", "true", "false", "yes", "no", "on", "off", "y", "n", ".nan", ".inf", "-.inf", "+.inf"].contains(text.lowercased())
            || Int(text) != nil || Double(text) != nil
            || text.range(of: yaml11Typed, options: .regularExpression) != nil
    }

    private static let yaml11Typed =
        "^([0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\\.[0-9_]*)?|[-+]?0x[0-9a-fA-F_]+|[-+]?0[0-7_]+|[-+]?[0-9][0-9_]*(\\.[0-9_]*)?([eE][-+]?[0-9]+)?)$"
}
