import DoppelCore
import Yams

/// Writes a contract tree (`OpenAPIImporter`'s) as contract YAML that reads
/// back to the same tree: strings that YAML would read as another type
/// (`"200"`, `"true"`, `""`) are quoted, plain scalars stay plain.
package enum ContractWriter {
    package static func yaml(_ root: SourceNode, header: String? = nil) throws -> String {
        let body = try Yams.serialize(node: node(root), width: -1, allowUnicode: true)
        guard let header else { return body }
        return header.split(separator: "\n", omittingEmptySubsequences: false).map { "# \($0)" }.joined(separator: "\n") + "\n" + body
    }

    static func node(_ source: SourceNode) -> Node {
        switch source.kind {
        case .scalar(let text, let plain):
            if plain { return .scalar(.init(text, Tag(.implicit), .plain)) }
            return .scalar(.init(text, Tag(.str), OpenAPIDocumentWriter.needsQuotes(text) ? .doubleQuoted : .any))
        case .sequence(let items):
            return .sequence(.init(items.map(node)))
        case .mapping(let pairs):
            return .mapping(.init(pairs.map { (node($0.key), node($0.value)) }))
        }
    }
}
