import DoppelCore
import Foundation

/// The importer's schemas, references and literal values.
extension OpenAPIImporter {
    // MARK: Schemas

    /// Keywords that only annotate, dropped without a word.
    static let annotations: Set<String> = [
        "xml", "externalDocs", "contentMediaType", "contentEncoding", "contentSchema", "$schema", "$id", "$anchor", "$defs",
        "definitions", "$dynamicAnchor", "$vocabulary",
    ]
    /// Keywords Doppel's validator does not check yet, dropped with a warning.
    static let unchecked: Set<String> = ["$dynamicRef"]

    /// A schema as the contract format writes it: `$ref`s to component
    /// schemas by name, 3.0's boolean `exclusiveMinimum` as 3.1's number,
    /// annotation keywords and formats Doppel does not check left out.
    mutating func schema(_ node: SourceNode) -> SourceNode {
        guard var pairs = node.mappingPairs else { return node }
        if isVersion30, node["$ref"] != nil { pairs = withoutIgnoredSiblings(pairs) }
        var fields: [(String, SourceNode)] = []
        for (key, value) in pairs {
            guard let name = key.scalarText else { continue }
            // The keywords Doppel reads first; the sets of the others are
            // looked up only for what is left.
            switch name {
            case "$ref":
                if let target = schemaReference(value) { fields.append((name, target)) }
            case "properties", "patternProperties", "dependentSchemas":
                fields.append(
                    (
                        name,
                        ContractNode.map(
                            (value.mappingPairs ?? []).compactMap { pair in pair.key.scalarText.map { ($0, schema(pair.value)) } }, at: value.location
                        )
                    ))
            case "dependencies":
                // Draft 4's (OpenAPI 3.0's) one keyword for both: a list of names or a schema.
                var names: [(String, SourceNode)] = []
                var schemas: [(String, SourceNode)] = []
                for (member, dependent) in value.mappingPairs ?? [] {
                    guard let text = member.scalarText else { continue }
                    if dependent.sequenceItems != nil { names.append((text, dependent)) } else { schemas.append((text, schema(dependent))) }
                }
                if !names.isEmpty { fields.append(("dependentRequired", ContractNode.map(names, at: value.location))) }
                if !schemas.isEmpty { fields.append(("dependentSchemas", ContractNode.map(schemas, at: value.location))) }
            case "propertyNames", "if", "then", "else", "contains", "unevaluatedProperties", "unevaluatedItems":
                fields.append((name, schema(value)))
            case "items" where value.sequenceItems != nil:
                // Draft 4's (OpenAPI 3.0's) tuple: a list of `items` is 2020-12's
                // `prefixItems`, and `additionalItems` its `items`.
                fields.append(("prefixItems", ContractNode.list(value.sequenceItems!.map { schema($0) }, at: value.location)))
                if let additional = node["additionalItems"] { fields.append(("items", schema(additional))) }
            case "additionalItems":
                continue
            case "items", "additionalProperties", "not":
                fields.append((name, schema(value)))
            case "allOf", "anyOf", "oneOf", "prefixItems":
                fields.append((name, ContractNode.list((value.sequenceItems ?? []).map { schema($0) }, at: value.location)))
            case "format":
                if let format = value.scalarText, Schema.formats.contains(format) { fields.append((name, value)) }
            case "exclusiveMinimum", "exclusiveMaximum":
                // 3.0: a flag on minimum/maximum; 3.1: the bound itself.
                if value.json == .bool(true), let bound = node[name == "exclusiveMinimum" ? "minimum" : "maximum"] {
                    fields.append((name, bound))
                } else if case .bool = value.json {
                    continue
                } else {
                    fields.append((name, value))
                }
            case "minimum", "maximum":
                let flag = name == "minimum" ? "exclusiveMinimum" : "exclusiveMaximum"
                if node[flag]?.json == .bool(true) { continue }
                fields.append((name, value))
            case "discriminator":
                fields.append((name, discriminator(value)))
            case "x-doppel-dynamic-ref", "x-doppel-dynamic-scope":
                if let field = dynamicField(name, value) { fields.append(field) }
            default:
                if name.hasPrefix("x-") || Self.annotations.contains(name) { continue }
                if Self.unchecked.contains(name) {
                    warnings.warning("schema keyword '\(name)' is not checked by Doppel yet; it is left out", at: key.location)
                    continue
                }
                // JSON Schema ignores keywords it does not know; so does Doppel, saying so.
                if !Schema.keywords.contains(name) {
                    warnings.warning(
                        "'\(name)' is no JSON Schema keyword Doppel knows; it is ignored\(Suggestion.hint(for: name, in: Schema.keywords))",
                        at: key.location)
                    continue
                }
                fields.append((name, value))
            }
        }
        return ContractNode.map(fields, at: node.location)
    }

    /// OpenAPI 3.0 (as draft 4): a `$ref`'s siblings are ignored, with a
    /// warning. `nullable` beside one is kept, as the documents that write
    /// it mean it, and so are annotations.
    mutating func withoutIgnoredSiblings(_ pairs: [(key: SourceNode, value: SourceNode)]) -> [(key: SourceNode, value: SourceNode)] {
        let ignored = pairs.filter { pair in
            guard let key = pair.key.scalarText else { return false }
            return key != "$ref" && key != "nullable" && !key.hasPrefix("x-") && !Self.annotations.contains(key)
                && !["description", "title", "example", "deprecated", "readOnly", "writeOnly", "externalDocs"].contains(key)
        }
        if let first = ignored.first {
            warnings.warning(
                "\(ignored.compactMap(\.key.scalarText).map { "'\($0)'" }.joined(separator: ", ")) beside $ref \(ignored.count == 1 ? "is" : "are") ignored, as OpenAPI 3.0 says (3.1 checks both: wrap them in allOf to keep them in 3.0)",
                at: first.key.location)
            return pairs.filter { pair in !ignored.contains { $0.key === pair.key } }
        }
        return pairs
    }

    /// `DocumentBundler`'s resolution of `$dynamicRef` (`{ref: Name,
    /// anchor: A}`) and of a schema resource's `$dynamicAnchor`s (`{A:
    /// Name, ...}`), as the contract writes them.
    mutating func dynamicField(_ name: String, _ value: SourceNode) -> (String, SourceNode)? {
        if name == "x-doppel-dynamic-ref" {
            guard let refNode = value["ref"], let target = schemaReference(refNode), let anchor = value["anchor"] else { return nil }
            return ("$dynamicRef", ContractNode.map([("ref", target), ("anchor", anchor)], at: value.location))
        }
        let scope = (value.mappingPairs ?? []).compactMap { pair -> (String, SourceNode)? in
            guard let anchor = pair.key.scalarText, let target = schemaReference(pair.value) else { return nil }
            return (anchor, target)
        }
        return scope.isEmpty ? nil : ("$dynamicScope", ContractNode.map(scope, at: value.location))
    }

    /// `#/components/schemas/Pet` as `Pet`; any other `$ref` is an error.
    mutating func schemaReference(_ node: SourceNode) -> SourceNode? {
        guard let text = node.scalarText else { return nil }
        let prefix = "#/components/schemas/"
        // On the bytes: a Substring's contains("/") is Foundation's string
        // search, and dropFirst(n) walks characters; a document of 1,000
        // operations has thousands of these references.
        let bytes = text.utf8
        guard bytes.starts(with: prefix.utf8), !bytes.dropFirst(prefix.utf8.count).contains(UInt8(ascii: "/")) else {
            errors.error(
                "$ref '\(text)' is not a schema of components.schemas; Doppel follows schema references to '\(prefix)NAME' only", at: node.location)
            return nil
        }
        let name = Self.unescape(String(text[bytes.index(bytes.startIndex, offsetBy: prefix.utf8.count)...]))
        guard componentSchemaNames.contains(name) else {
            // The document's own mistake: served with a schema that accepts anything there.
            errors.warning("unresolved $ref '\(text)': components.schemas has no '\(name)'; any value is accepted there", at: node.location)
            return nil
        }
        return ContractNode.string(name, at: node.location)
    }

    mutating func discriminator(_ node: SourceNode) -> SourceNode {
        var fields: [(String, SourceNode)] = []
        if let property = node["propertyName"] { fields.append(("propertyName", property)) }
        if let mapping = node["mapping"]?.mappingPairs {
            var entries: [(String, SourceNode)] = []
            for (key, value) in mapping {
                guard let name = key.scalarText, let target = value.scalarText else { continue }
                entries.append((name, target.hasPrefix("#") ? (schemaReference(value) ?? value) : value))
            }
            fields.append(("mapping", ContractNode.map(entries, at: node.location)))
        }
        return ContractNode.map(fields, at: node.location)
    }

    // MARK: References

    /// The node, or the node a `$ref` at it points to within the document
    /// (followed through chains, at most 32 hops); nil, with an error, when
    /// it points nowhere or outside the document.
    mutating func resolved(_ node: SourceNode?) -> SourceNode? {
        guard var current = node else { return nil }
        for _ in 0..<32 {
            guard let refNode = current["$ref"], let ref = refNode.scalarText else { return current }
            guard ref.hasPrefix("#/") || ref == "#" else {
                errors.error("$ref '\(ref)' points outside the document; Doppel reads one file", at: refNode.location)
                return nil
            }
            var target: SourceNode? = root
            for token in ref.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
                let key = Self.unescape(String(token))
                if let index = Int(key), let items = target?.sequenceItems {
                    target = items.indices.contains(index) ? items[index] : nil
                } else {
                    target = target?[key]
                }
            }
            guard let target else {
                errors.error("unresolved $ref '\(ref)': the document has nothing there", at: refNode.location)
                return nil
            }
            current = target
        }
        errors.error("$ref chain longer than 32 hops (a cycle?)", at: current.location)
        return nil
    }

    /// A JSON pointer token: `~1` is `/`, `~0` is `~`, and percent-escapes decoded.
    static func unescape(_ token: String) -> String {
        // Most tokens are plain names; Foundation's rewrites bridge to NSString.
        guard token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "%") }) else { return token }
        let decoded = token.removingPercentEncoding ?? token
        return decoded.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
    }

    // MARK: Literal values

    /// Example values are sent as they are: any `{{` in their strings is
    /// written as a placeholder that produces `{{`, so no template runs.
    static func escapedTemplates(_ node: SourceNode) -> SourceNode {
        guard hasTemplate(node) else { return node }
        switch node.kind {
        case .scalar(let text, let plain):
            guard text.includes("{{") else { return node }
            return SourceNode(kind: .scalar(escaped(text), plain: plain), location: node.location, contentOffset: node.contentOffset)
        case .sequence(let items):
            return SourceNode(kind: .sequence(items.map(escapedTemplates)), location: node.location)
        case .mapping(let pairs):
            return SourceNode(kind: .mapping(pairs.map { ($0.key, escapedTemplates($0.value)) }), location: node.location)
        }
    }

    /// Whether any string in a value has `{{` in it, so that most examples
    /// are kept as they are rather than copied.
    static func hasTemplate(_ node: SourceNode) -> Bool {
        switch node.kind {
        case .scalar(let text, _): text.includes("{{")
        case .sequence(let items): items.contains(where: hasTemplate)
        case .mapping(let pairs): pairs.contains { hasTemplate($0.value) }
        }
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "{{", with: "{{ '{{' }}")
    }
}
