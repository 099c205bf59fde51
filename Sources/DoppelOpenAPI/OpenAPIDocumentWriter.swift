import DoppelCore
import Foundation
import OpenAPIKit
import OpenAPIKit30
import Yams

/// Writes an OpenAPI document built as `JSON` through OpenAPIKit: it is
/// decoded into OpenAPIKit's model, validated there, and encoded as YAML or
/// JSON. A document OpenAPIKit cannot read or finds invalid is an error.
///
/// The document is decoded from a YAML node tree rather than JSON text:
/// Yams's decoder lists a mapping's keys in their order, so paths,
/// properties and responses keep the contract's order.
public enum OpenAPIDocumentWriter {
    public enum Format: String, Sendable, CaseIterable {
        case yaml, json

        /// The format a file's extension names; YAML unless it ends in `.json`.
        public init(path: String) {
            self = path.lowercased().hasSuffix(".json") ? .json : .yaml
        }
    }

    /// The OpenAPI version written: the exporter builds 3.1, and
    /// `OpenAPI30Downgrade` rewrites it for 3.0.
    public enum Version: String, Sendable, CaseIterable {
        case v3_1 = "3.1"
        case v3_0 = "3.0"
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The document as text, after OpenAPIKit has read and validated it as
    /// the given version (a 3.1 document is first rewritten for 3.0).
    public static func write(_ document: JSON, as format: Format, version: Version = .v3_1) throws(Failure) -> String {
        switch version {
        case .v3_1:
            return try write(OpenAPIKit.OpenAPI.Document.self, from: document, as: format) { try $0.validate() }
        case .v3_0:
            return try write(OpenAPIKit30.OpenAPI.Document.self, from: OpenAPI30Downgrade.document(document), as: format) {
                try $0.validate()
            }
        }
    }

    static func write<Document: Codable>(
        _: Document.Type, from document: JSON, as format: Format, validate: (Document) throws -> Void
    ) throws(Failure) -> String {
        let parsed: Document
        do {
            parsed = try YAMLDecoder().decode(Document.self, from: node(document))
        } catch {
            throw Failure(description: "OpenAPIKit cannot read the document: \(error)")
        }
        do {
            try validate(parsed)
        } catch {
            throw Failure(description: "the document is not valid OpenAPI: \(error)")
        }
        do {
            switch format {
            case .yaml:
                return try readableByYAML11(YAMLEncoder().encode(parsed))
            case .json:
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
                return String(decoding: try encoder.encode(parsed), as: UTF8.self) + "\n"
            }
        } catch {
            throw Failure(description: "OpenAPIKit cannot write the document: \(error)")
        }
    }

    /// A JSON value as a YAML node whose scalars carry their JSON type.
    static func node(_ value: JSON) -> Node {
        switch value {
        case .null: return .scalar(.init("null", Tag(.null)))
        case .bool(let flag): return .scalar(.init(flag ? "true" : "false", Tag(.bool)))
        case .int(let number): return .scalar(.init(String(number), Tag(.int)))
        case .double(let number): return .scalar(.init(String(number), Tag(.float)))
        case .string(let text): return .scalar(.init(text, Tag(.str), .doubleQuoted))
        case .array(let items): return .sequence(.init(items.map(node)))
        case .object(let object): return .mapping(.init(object.pairs.map { (Node($0.key), node($0.value)) }))
        }
    }

    /// Yams writes mapping keys plain, so the status `"200"` would come back
    /// as the integer 200 to a YAML reader; such keys are quoted. It writes
    /// numbers like `0e+0`, which YAML 1.1 readers take for strings; they
    /// are written `0` (or with a decimal point).
    static func readableByYAML11(_ yaml: String) throws -> String {
        guard let root = try Yams.compose(yaml: yaml, .basic) else { return yaml }
        func quoted(_ node: Node) -> Node {
            switch node {
            case .mapping(let mapping):
                return .mapping(.init(mapping.map { pair in
                    var key = pair.key
                    if case .scalar(var scalar) = key, scalar.style == .plain, looksTyped(scalar.string) {
                        scalar.style = .singleQuoted
                        key = .scalar(scalar)
                    }
                    return (key, quoted(pair.value))
                }, mapping.tag, mapping.style))
            case .sequence(let sequence):
                return .sequence(.init(sequence.map(quoted), sequence.tag, sequence.style))
            case .scalar(var scalar):
                guard scalar.style == .plain, Int(scalar.string) == nil, let number = Double(scalar.string), number.isFinite else { return node }
                if number == number.rounded(), abs(number) < 1e15 {
                    scalar.string = String(Int(number))
                } else if !scalar.string.contains("."), let exponent = scalar.string.firstIndex(where: { $0 == "e" || $0 == "E" }) {
                    scalar.string.insert(contentsOf: ".0", at: exponent)
                }
                return .scalar(scalar)
            case .alias:
                return node
            }
        }
        return try Yams.serialize(node: quoted(root))
    }

    /// Whether a plain YAML scalar would be read as something other than a string.
    static func looksTyped(_ text: String) -> Bool {
        ["", "~", "null", "true", "false", "yes", "no", "on", "off"].contains(text.lowercased())
            || Int(text) != nil || Double(text) != nil
    }
}
