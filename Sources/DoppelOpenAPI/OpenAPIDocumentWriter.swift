import DoppelCore
import Foundation
import OpenAPIKit
import OpenAPIKit30
import Yams

/// Writes an OpenAPI document built as `JSON`: OpenAPIKit reads it into its
/// model of the version written and validates it there, and the document is
/// then written as built, in YAML or JSON. A document OpenAPIKit cannot read
/// or finds invalid is an error.
///
/// OpenAPIKit checks but does not write: its model holds example values in
/// unordered dictionaries, and it folds a `null` branch of `anyOf` into the
/// whole schema's nullability, which it then writes as `type: 'null'` beside
/// the `anyOf` (admitting null alone). Written as built, every member keeps
/// the contract's order and every schema means what the exporter made it.
public enum OpenAPIDocumentWriter {
    /// The file format written.
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

    /// Why OpenAPIKit refused the document, in words.
    public struct Failure: Error, CustomStringConvertible {
        /// What OpenAPIKit said.
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

    static func write<Document: Decodable>(
        _: Document.Type, from document: JSON, as format: Format, validate: (Document) throws -> Void
    ) throws(Failure) -> String {
        let parsed: Document
        do {
            parsed = try decode(Document.self, from: document)
        } catch {
            throw Failure(description: "OpenAPIKit cannot read the document: \(error)")
        }
        // OpenAPIKit's validation takes time of the square of a map's size
        // (see `ContractDocument.largestValidatedMap`); past the bound the
        // document is still read into OpenAPIKit's model, which checks its
        // structure, and `skipsValidation` says so.
        if !skipsValidation(document) {
            do {
                try validate(parsed)
            } catch {
                throw Failure(description: "the document is not valid OpenAPI: \(error)")
            }
        }
        switch format {
        case .yaml:
            do {
                return try Yams.serialize(node: readableNode(document), width: -1, allowUnicode: true)
            } catch {
                throw Failure(description: "cannot write the document as YAML: \(error)")
            }
        case .json:
            return JSONWriter.encodePretty(document) + "\n"
        }
    }

    /// Whether `write` leaves out OpenAPIKit's validation of a document:
    /// when its `paths` or `components.schemas` have more entries than
    /// `ContractDocument.largestValidatedMap`.
    package static func skipsValidation(_ document: JSON) -> Bool {
        let largest = max(document["paths"]?.objectValue?.count ?? 0, document["components"]?["schemas"]?.objectValue?.count ?? 0)
        return largest > ContractDocument.largestValidatedMap
    }

    /// The document in OpenAPIKit's model, read through Foundation's
    /// `JSONDecoder`: Yams's decoder finds each mapping key by a linear search,
    /// so reading a document of 8,000 paths took a minute. A document with a
    /// number JSON cannot hold (infinity, NaN) is read through YAML, which can.
    /// Both read the same model (`OpenAPIExportTests` compares them).
    static func decode<Document: Decodable>(_: Document.Type, from document: JSON, throughYAML: Bool = false) throws -> Document {
        // Vendor extensions (`x-`) are not read: validation does not look at
        // them, and OpenAPIKit decodes every object a second time to find
        // them, most of an export's time.
        var userInfo: [CodingUserInfoKey: any Sendable] = [:]
        userInfo[OpenAPIKit.VendorExtensionsConfiguration.enabledKey] = false  // assigned, not a literal: the two may be one key
        userInfo[OpenAPIKit30.VendorExtensionsConfiguration.enabledKey] = false
        if throughYAML || !allFinite(document) {
            return try YAMLDecoder().decode(Document.self, from: readableNode(document), userInfo: userInfo)
        }
        let decoder = JSONDecoder()
        decoder.userInfo = userInfo
        return try decoder.decode(Document.self, from: Data(JSONWriter.encodeString(document).utf8))
    }

    static func allFinite(_ value: JSON) -> Bool {
        switch value {
        case .double(let number): return number.isFinite
        case .array(let items): return items.allSatisfy(allFinite)
        case .object(let object): return object.pairs.allSatisfy { allFinite($0.value) }
        default: return true
        }
    }

    /// A JSON value as a YAML node whose scalars carry their JSON type, for
    /// OpenAPIKit to read and for people and every YAML reader: strings plain
    /// where no reader would take them for another type (`'200'`, `'yes'`
    /// and `''` are quoted, as YAML 1.1 readers such as PyYAML would read
    /// them as numbers, booleans or null), and numbers as YAML 1.1 reads them
    /// (`1.0e+20`, never `1e+20`; `.inf`, `-.inf` and `.nan` as YAML writes
    /// them).
    static func readableNode(_ value: JSON) -> Node {
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
        case .array(let items): return .sequence(.init(items.map(readableNode)))
        case .object(let object):
            // Keys keep Yams's implicit tag: its decoder finds a key by text and resolved tag.
            return .mapping(.init(object.pairs.map { pair in
                (.scalar(.init(pair.key, Tag(.implicit), needsQuotes(pair.key) ? .singleQuoted : .any)), readableNode(pair.value))
            }))
        }
    }

    static func string(_ text: String) -> Node {
        .scalar(.init(text, Tag(.str), needsQuotes(text) ? .singleQuoted : .any))
    }

    /// Whether a string must be quoted to be read back as that string: it
    /// looks like another type, or has spaces at either end of a single line.
    static func needsQuotes(_ text: String) -> Bool {
        looksTyped(text) || !text.contains("\n") && text != text.trimmingCharacters(in: .whitespaces)
    }

    /// Whether a plain YAML scalar would be read as something other than a string.
    static func looksTyped(_ text: String) -> Bool {
        ["", "~", "null", "true", "false", "yes", "no", "on", "off"].contains(text.lowercased())
            || Int(text) != nil || Double(text) != nil
    }
}
