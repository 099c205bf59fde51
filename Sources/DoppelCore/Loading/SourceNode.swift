import Foundation

/// A YAML node with the place it was written, so that every later problem can
/// be reported at its line and column.
package final class SourceNode: Sendable {
    package enum Kind: Sendable {
        /// A scalar; `plain` is false for quoted and block scalars, which are always strings.
        case scalar(String, plain: Bool)
        case mapping([(key: SourceNode, value: SourceNode)])
        case sequence([SourceNode])
    }

    package let kind: Kind
    // The place, packed into 16 bytes (see `SourceFiles`): a node takes a
    // 64-byte block, where a `SourceLocation` made it 96.
    let line: Int32
    let column: Int32
    let offset: Int32
    let fileID: UInt32

    /// Where the node starts.
    package var location: SourceLocation {
        SourceLocation(file: SourceFiles.name(fileID), line: Int(line), column: Int(column))
    }

    /// Columns between the mark and the first character of a scalar's text
    /// (1 for a quoted scalar), used to point inside expressions.
    package var contentOffset: Int { Int(offset) }

    package init(kind: Kind, location: SourceLocation, contentOffset: Int = 0) {
        self.kind = kind
        self.fileID = SourceFiles.id(location.file)
        self.line = Int32(clamping: location.line)
        self.column = Int32(clamping: location.column)
        self.offset = Int32(clamping: contentOffset)
    }

    /// A node at the same place as `other` (without looking its file up again).
    package convenience init(kind: Kind, placedAs other: SourceNode, contentOffset: Int = 0) {
        self.init(kind: kind, fileID: other.fileID, line: other.line, column: other.column, contentOffset: Int32(clamping: contentOffset))
    }

    /// A node of the file numbered `fileID` in `SourceFiles`.
    init(kind: Kind, fileID: UInt32, line: Int32, column: Int32, contentOffset: Int32 = 0) {
        self.kind = kind
        self.fileID = fileID
        self.line = line
        self.column = column
        self.offset = contentOffset
    }

    /// The scalar's text, for any scalar.
    package var scalarText: String? {
        if case .scalar(let s, _) = kind { return s }
        return nil
    }

    package var mappingPairs: [(key: SourceNode, value: SourceNode)]? {
        if case .mapping(let pairs) = kind { return pairs }
        return nil
    }

    package var sequenceItems: [SourceNode]? {
        if case .sequence(let items) = kind { return items }
        return nil
    }

    /// The value under a scalar key of a mapping.
    package subscript(key: String) -> SourceNode? {
        guard case .mapping(let pairs) = kind else { return nil }
        for index in pairs.indices {
            if case .scalar(let text, _) = pairs[index].key.kind, text.isSameKey(as: key) { return pairs[index].value }
        }
        return nil
    }

    /// What the node is, for messages: "a mapping", "a list", "a string".
    package var kindDescription: String {
        switch kind {
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .scalar: "a scalar"
        }
    }

    /// Where the text of the scalar starts (inside any quotes).
    package var contentLocation: SourceLocation { location.advanced(by: contentOffset) }

    /// The node as a JSON value, resolving plain scalars by YAML's core schema:
    /// `null`/`~`/empty, `true`/`false`, integers, floats, and strings otherwise.
    package var json: JSON {
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
        if let first = text.utf8.first,
            first == UInt8(ascii: "-") || first == UInt8(ascii: "+") || (first >= 48 && first <= 57) || first == UInt8(ascii: ".")
        {
            if let i = Int(text) { return .int(i) }
            if text.hasPrefix("0x"), let i = Int(text.dropFirst(2), radix: 16) { return .int(i) }
            if text.hasPrefix("0o"), let i = Int(text.dropFirst(2), radix: 8) { return .int(i) }
            if text.contains(where: { $0.isNumber }), !text.contains(where: { $0.isLetter && $0 != "e" && $0 != "E" }),
                let d = Double(text)
            {
                return .double(d)
            }
        }
        return .string(text)
    }
}

extension String {
    /// Whether two mapping keys are the same: lengths first, since most keys
    /// looked up are not the one compared against, and String's equality
    /// otherwise compares the bytes of every pair that differ.
    @inline(__always)
    func isSameKey(as other: String) -> Bool {
        utf8.count == other.utf8.count && self == other
    }
}
