import DoppelCore
import Foundation
import OpenAPIKit
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

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The document as text, after OpenAPIKit has read and validated it.
    public static func write(_ document: JSON, as format: Format) throws(Failure) -> String {
        let parsed: OpenAPI.Document
        do {
            parsed = try YAMLDecoder().decode(OpenAPI.Document.self, from: node(document))
        } catch {
            throw Failure(description: "OpenAPIKit cannot read the document: \(error)")
        }
        do {
            _ = try parsed.validate()
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
