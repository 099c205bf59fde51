import DoppelCore
import Foundation

/// Building contract nodes located in the document.
package enum ContractNode {
    /// A mapping whose keys are placed where their values are.
    static func map(_ pairs: [(String, SourceNode)], at location: SourceLocation) -> SourceNode {
        SourceNode(
            kind: .mapping(pairs.map { (key: SourceNode(kind: .scalar($0.0, plain: false), placedAs: $0.1), value: $0.1) }), location: location)
    }

    static func list(_ items: [SourceNode], at location: SourceLocation) -> SourceNode {
        SourceNode(kind: .sequence(items), location: location)
    }

    /// A JSON value as a node: strings as strings, other scalars plain.
    static func value(_ value: JSON, at location: SourceLocation) -> SourceNode {
        switch value {
        case .string(let text): string(text, at: location)
        case .array(let items): list(items.map { self.value($0, at: location) }, at: location)
        case .object(let members): map(members.pairs.map { ($0.key, self.value($0.value, at: location)) }, at: location)
        default: plain(value.interpolationText, at: location)
        }
    }

    /// A string, whatever it looks like.
    package static func string(_ text: String, at location: SourceLocation) -> SourceNode {
        SourceNode(kind: .scalar(text, plain: false), location: location)
    }

    /// A plain scalar, typed as YAML types it (numbers, booleans).
    static func plain(_ text: String, at location: SourceLocation) -> SourceNode {
        SourceNode(kind: .scalar(text, plain: true), location: location)
    }

    /// A mapping with one key set (replaced or added).
    /// A mapping with a key added after another (at the start when that one is absent).
    package static func inserting(_ key: String, _ value: SourceNode, after earlier: String, in node: SourceNode) -> SourceNode {
        var pairs = node.mappingPairs ?? []
        let at = pairs.firstIndex(where: { $0.key.scalarText == earlier }).map { $0 + 1 } ?? 0
        pairs.insert((key: SourceNode(kind: .scalar(key, plain: false), placedAs: value), value: value), at: at)
        return SourceNode(kind: .mapping(pairs), location: node.location)
    }

    static func setting(_ key: String, _ value: SourceNode, in node: SourceNode) -> SourceNode {
        var pairs = node.mappingPairs ?? []
        if let index = pairs.firstIndex(where: { $0.key.scalarText == key }) {
            pairs[index].value = value
        } else {
            pairs.insert((key: SourceNode(kind: .scalar(key, plain: false), placedAs: value), value: value), at: 0)
        }
        return SourceNode(kind: .mapping(pairs), location: node.location)
    }
}
