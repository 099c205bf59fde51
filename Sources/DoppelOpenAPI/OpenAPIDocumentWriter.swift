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
            // Checked without integer bounds past 64 bits, which OpenAPIKit cannot hold (written as they are).
            parsed = try decode(Document.self, from: ContractDocument.integerBoundsInRange(document))
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
                return try YAMLWriter.yaml(document)
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
            return try YAMLDecoder().decode(Document.self, from: YAMLWriter.node(document), userInfo: userInfo)
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
}
