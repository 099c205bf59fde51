import DoppelCore
import Foundation
import OpenAPIKit
import OpenAPIKit30
import OpenAPIKitCompat
import Yams

/// Loads what `doppel` serves: a Doppel contract, or an OpenAPI 3.0/3.1
/// document (YAML or JSON, told apart by its top-level `openapi` key),
/// which is converted in memory into the same `Contract`.
///
/// An OpenAPI document goes through two stages:
/// 1. **Read**: OpenAPIKit decodes and validates it (3.0 through
///    OpenAPIKit30, converted to 3.1); its errors are located at the line
///    and column their coding path leads to.
/// 2. **Import** (`OpenAPIImporter`): the document as a contract tree, then
///    the contract loader as for any contract.
public enum ContractDocument {
    /// Loads a contract or OpenAPI document file. `checkingWithOpenAPIKit`
    /// false skips stage 1 for an OpenAPI document: OpenAPIKit takes about a
    /// second over a document of 1,000 operations, so `doppel serve` starts
    /// without it and runs it in the background (`openAPIKitProblems`).
    public static func load(file: String, checkingWithOpenAPIKit: Bool = true) throws(ContractError) -> Contract {
        // The conversion's problems are reported with the contract loader's, all at once.
        let (root, diagnostics) = try contractTree(file: file, checkingWithOpenAPIKit: checkingWithOpenAPIKit)
        return try ContractLoader.load(root: root, file: file, warnings: diagnostics)
    }

    /// Every diagnostic for a contract or OpenAPI document; empty when it loads.
    public static func lint(file: String) -> [Diagnostic] {
        ContractError.diagnostics { () throws(ContractError) in _ = try load(file: file) }
    }

    /// Whether a file is an OpenAPI document.
    public static func isOpenAPI(file: String) -> Bool {
        guard case .success(let text) = SourceReader.readFile(file, what: "document"),
              case .success(let root?) = SourceReader.read(text, file: file) else { return false }
        return OpenAPIImporter.isOpenAPI(root)
    }

    /// The contract tree of a file: the contract as written, or an OpenAPI
    /// document converted, with the conversion's diagnostics.
    public static func contractTree(file: String, checkingWithOpenAPIKit: Bool = true) throws(ContractError) -> (SourceNode, [Diagnostic]) {
        let text: String
        switch SourceReader.readFile(file, what: "contract") {
        case .success(let read): text = read
        case .failure(let error): throw error
        }
        let root: SourceNode
        switch SourceReader.read(text, file: file) {
        case .success(let node?): root = node
        case .success(nil): throw ContractError(diagnostics: [Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "the contract is empty")])
        case .failure(let error): throw error
        }
        guard OpenAPIImporter.isOpenAPI(root) else { return (root, []) }
        let problems = checkingWithOpenAPIKit ? read(root: root, file: file) : []
        if problems.contains(where: { $0.severity == .error }) { throw ContractError(diagnostics: problems) }
        let (contract, diagnostics) = OpenAPIImporter.contract(from: root, file: file)
        return (contract, problems + diagnostics)
    }

    /// What OpenAPIKit finds in a file that is an OpenAPI document; empty for a contract.
    public static func openAPIKitProblems(file: String) -> [Diagnostic] {
        guard case .success(let text) = SourceReader.readFile(file, what: "document"),
              case .success(let root?) = SourceReader.read(text, file: file), OpenAPIImporter.isOpenAPI(root) else { return [] }
        return read(root: root, file: file)
    }

    /// Stage 1: decodes and validates the document with OpenAPIKit; its
    /// problems located in the document.
    static func read(root: SourceNode, file: String) -> [Diagnostic] {
        let version = root["openapi"]?.scalarText ?? ""
        guard version.hasPrefix("3.0") || version.hasPrefix("3.1") else {
            return [Diagnostic(at: root["openapi"]?.location ?? root.location, "OpenAPI \(version) is not supported; Doppel reads OpenAPI 3.0 and 3.1 documents")]
        }
        let document: OpenAPIKit.OpenAPI.Document
        do {
            // Decoded from the tree already read, as JSON: Yams's Decoder
            // copies nodes on every key lookup, which made a document of
            // 1,000 operations take seconds; JSONDecoder takes milliseconds.
            // Vendor extensions (`x-`) are not decoded: Doppel does not use
            // them, and OpenAPIKit decodes every object twice to find them.
            let json = Data(JSONWriter.encode(root.json))
            let decoder = JSONDecoder()
            if version.hasPrefix("3.0") {
                decoder.userInfo[OpenAPIKit30.VendorExtensionsConfiguration.enabledKey] = false
                document = try decoder.decode(OpenAPIKit30.OpenAPI.Document.self, from: json).convert(to: .v3_1_1)
            } else {
                decoder.userInfo[OpenAPIKit.VendorExtensionsConfiguration.enabledKey] = false
                document = try decoder.decode(OpenAPIKit.OpenAPI.Document.self, from: json)
            }
        } catch {
            let problem = OpenAPIKit.OpenAPI.Error(from: error)
            let keys = problem.codingPath.map(\.stringValue)
            if keys.contains("schema") || keys.starts(with: ["components", "schemas"]) {
                // OpenAPIKit's schema model does not take every JSON Schema
                // 2020-12 form (`items: false`); Doppel's own schema loader
                // checks schemas, so this is only a note.
                let reason = problem.localizedDescription.split(separator: "\n").first.map(String.init) ?? ""
                return [Diagnostic(.warning, at: locate(problem.codingPath, in: root),
                                   "OpenAPIKit cannot read this schema (\(reason)); Doppel checks it with its own validator, and the rest of the document is not checked by OpenAPIKit")]
            }
            return [Diagnostic(at: locate(problem.codingPath, in: root), "not a valid OpenAPI \(version) document: \(problem.localizedDescription)")]
        }
        do {
            try document.validate(strict: false)
        } catch let collection as OpenAPIKit.ValidationErrorCollection {
            return collection.values.map { Diagnostic(at: locate($0.codingPath, in: root), "invalid OpenAPI document: \($0.reason)") }
        } catch {
            return [Diagnostic(at: root.location, "invalid OpenAPI document: \(error)")]
        }
        return []
    }

    /// The node a coding path leads to, as far as it goes.
    static func locate(_ path: [any CodingKey], in root: SourceNode) -> SourceLocation {
        var node = root
        for key in path {
            if let index = key.intValue, let items = node.sequenceItems, index < items.count {
                node = items[index]
            } else if let pair = node.mappingPairs?.first(where: { $0.key.scalarText == key.stringValue }) {
                node = pair.value
            } else {
                break
            }
        }
        return node.location
    }
}
