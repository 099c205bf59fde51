import DoppelCore
import DoppelGraphQL
import DoppelProtobuf
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
///    the contract loader as for any contract. To serve it, the endpoints
///    are not put in the tree: the loader makes each from its operation
///    and reads it at once (`EndpointEntries`), so that no tree of every
///    endpoint is built.
public enum ContractDocument {
    /// Loads a contract or OpenAPI document file. `checkingWithOpenAPIKit`
    /// false skips stage 1 for an OpenAPI document (OpenAPIKit takes about a
    /// second over a document of 1,000 operations).
    ///
    /// The trees read on the way (some 100,000 nodes for a document of
    /// 1,000 operations, whose freeing took a sixth of its load time) are
    /// freed as `release` says.
    public static func load(file: String, checkingWithOpenAPIKit: Bool = true, release: TreeRelease = .inBackground) throws(ContractError) -> Contract
    {
        let source = try contractTree(file: file, check: checkingWithOpenAPIKit ? .now : .skipped, endpointsInTree: false)
        let contract = try load(source, file: file)
        dispose(consume source, as: release)
        return contract
    }

    /// What becomes of the trees read for a contract once it is built.
    public enum TreeRelease: Sendable {
        /// Freed on another thread, while the caller goes on.
        case inBackground
        /// Never freed, for a command that exits once it has printed: the
        /// system takes a process's memory back at exit all at once (as
        /// compilers leave theirs), and a thread freeing meanwhile would
        /// contend with the printing for the allocator.
        case atExit
    }

    /// Loads a file without waiting for OpenAPIKit, as `doppel serve` does:
    /// the check, when the file is an OpenAPI document, is returned to be run
    /// beside the server, on the tree already read.
    public static func loadDeferringCheck(file: String) throws(ContractError) -> (contract: Contract, check: (@Sendable () -> [Diagnostic])?) {
        let source = try contractTree(file: file, check: .deferred, endpointsInTree: false)
        let contract = try load(source, file: file)
        let check = source.deferredCheck
        dispose(consume source, as: .inBackground)
        return (contract, check)
    }

    private static func dispose(_ source: consuming Source, as release: TreeRelease) {
        let holder = Holder(source)
        switch release {
        case .inBackground:
            DispatchQueue.global(qos: .utility).async { holder.source = nil }
        case .atExit:
            _ = Unmanaged.passRetained(holder)
        }
    }

    /// The only reference to the trees on their way to being freed.
    private final class Holder: @unchecked Sendable {
        var source: Source?
        init(_ source: consuming Source) { self.source = source }
    }

    /// The conversion's problems are reported with the contract loader's, all at once.
    private static func load(_ source: Source, file: String) throws(ContractError) -> Contract {
        var contract = try ContractLoader.load(
            root: source.tree, file: file, warnings: source.diagnostics, endpoints: source.endpoints, isVendorDocument: source.isOpenAPI)
        contract.bodyFiles += source.referencedFiles
        contract.isOpenAPIDocument = source.isOpenAPI
        // What only the GraphQL library finds: the SDL's own problems, resolvers that name no field.
        let graphQL = GraphQLService.problems(of: contract)
        if !graphQL.isEmpty { throw ContractError(diagnostics: contract.warnings + graphQL) }
        // What only reading the `.proto` finds: its own problems, methods it does not declare.
        let grpc = GRPCCatalog.problems(of: contract)
        if grpc.contains(where: { $0.severity == .error }) { throw ContractError(diagnostics: contract.warnings + grpc) }
        contract.warnings += grpc
        return contract
    }

    /// Every diagnostic for a contract or OpenAPI document, warnings
    /// included; empty when it loads clean.
    public static func lint(file: String) -> [Diagnostic] {
        ContractError.diagnostics { () throws(ContractError) in try load(file: file).warnings }
    }

    /// A file read as a contract tree.
    package struct Source: Sendable {
        /// The contract as written, or an OpenAPI document converted.
        package let tree: SourceNode
        /// An OpenAPI document's endpoints, when they are not in `tree` but
        /// made as the loader reads them.
        package let endpoints: EndpointEntries?
        /// The conversion's and OpenAPIKit's warnings and errors.
        package let diagnostics: [Diagnostic]
        /// Whether the file is an OpenAPI document rather than a contract.
        package let isOpenAPI: Bool
        /// OpenAPIKit's check of an OpenAPI document, when it was skipped.
        package let deferredCheck: (@Sendable () -> [Diagnostic])?
        /// The OpenAPI document's own tree, kept to be freed with the contract's.
        let document: SourceNode?
        /// The other files the document's `$ref`s read, watched with it.
        package let referencedFiles: [String]
    }

    /// The contract tree of a file, read once, with every endpoint in it.
    package static func contractTree(file: String, checkingWithOpenAPIKit: Bool = true) throws(ContractError) -> Source {
        try contractTree(file: file, check: checkingWithOpenAPIKit ? .now : .deferred, endpointsInTree: true)
    }

    /// When OpenAPIKit checks an OpenAPI document.
    enum Check {
        /// Before the document is imported; its errors stop the load.
        case now
        /// Returned as `Source.deferredCheck`, to be run later on the tree read.
        case deferred
        /// Not at all.
        case skipped
    }

    static func contractTree(file: String, check: Check, endpointsInTree: Bool) throws(ContractError) -> Source {
        let parsed: SourceNode
        switch SourceReader.readTree(file: file, what: "contract") {
        case .success(let node?): parsed = node
        case .success(nil):
            throw ContractError(diagnostics: [Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "the contract is empty")])
        case .failure(let error): throw error
        }
        // Swagger 2.0: read as the OpenAPI 3.0 document that says the same (`Swagger2Converter`).
        var converted: [Diagnostic] = []
        var document = parsed
        var adapt: ((SourceNode, [String], Bool) -> SourceNode)?
        if Swagger2Converter.isSwagger2(parsed) {
            (document, converted) = Swagger2Converter.convert(parsed)
            adapt = { node, keys, isSchema in Swagger2Converter.adaptReferenced(node, keys: keys, schema: isSchema, document: parsed) }
        }
        guard OpenAPIImporter.isOpenAPI(document) else {
            return Source(tree: parsed, endpoints: nil, diagnostics: [], isOpenAPI: false, deferredCheck: nil, document: nil, referencedFiles: [])
        }
        // A version Doppel cannot serve is refused by every command alike, before
        // anything is served (not in the check `serve` runs beside the server).
        if let unsupported = unsupportedVersion(document) { throw ContractError(diagnostics: [unsupported]) }
        // References to other files, brought in first (`DocumentBundler`).
        let (bundled, bundleProblems, referencedFiles) = DocumentBundler.bundle(document, file: file, adapt: adapt)
        if bundleProblems.contains(where: { $0.severity == .error }) { throw ContractError(diagnostics: bundleProblems) }
        let root = bundled
        let problems = converted + bundleProblems + (check == .now ? read(root: root, file: file) : [])
        if problems.contains(where: { $0.severity == .error }) { throw ContractError(diagnostics: problems) }
        let deferredCheck: (@Sendable () -> [Diagnostic])? = check == .deferred ? { @Sendable in read(root: root, file: file) } : nil
        if endpointsInTree {
            let (contract, diagnostics) = OpenAPIImporter.contract(from: root, file: file)
            return Source(
                tree: contract, endpoints: nil, diagnostics: problems + diagnostics, isOpenAPI: true, deferredCheck: deferredCheck, document: root,
                referencedFiles: referencedFiles)
        }
        let (contract, endpoints, diagnostics) = OpenAPIImporter.contractInParts(from: root, file: file)
        return Source(
            tree: contract, endpoints: endpoints, diagnostics: problems + diagnostics, isOpenAPI: true, deferredCheck: deferredCheck, document: root,
            referencedFiles: referencedFiles)
    }

    /// The most entries of `paths`, `components.schemas` or
    /// `components.responses` a document may have for OpenAPIKit to validate it.
    package static let largestValidatedMap = 2_000

    /// Keywords whose value is a schema, where JSON Schema 2020-12 allows
    /// `true` or `false` for one.
    static let schemaKeywords: Set<String> = [
        "items", "contains", "not", "if", "then", "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems",
    ]
    /// Keywords whose value maps names to schemas, or lists schemas.
    static let schemaMapKeywords: Set<String> = ["properties", "patternProperties", "$defs", "dependentSchemas"]
    static let schemaListKeywords: Set<String> = ["prefixItems", "allOf", "anyOf", "oneOf"]

    /// The document as OpenAPIKit is given it: a boolean schema (`items:
    /// false` after `prefixItems`, valid JSON Schema 2020-12 that OpenAPIKit
    /// 6.4 cannot decode) written as the object schema that means the same
    /// (`{}` for true, `{not: {}}` for false). Only OpenAPIKit's copy:
    /// Doppel's own schema loader reads the document as written.
    static func booleanSchemasSpelledOut(_ value: JSON) -> JSON {
        func schema(_ value: JSON) -> JSON {
            switch value {
            case .bool(true): return .object(JSONObject())
            case .bool(false): return .object(JSONObject([("not", .object(JSONObject()))]))
            default: return booleanSchemasSpelledOut(value)
            }
        }
        switch value {
        case .object(let object):
            return .object(
                JSONObject(
                    object.pairs.map { key, member in
                        if schemaKeywords.contains(key) { return (key, schema(member)) }
                        if schemaMapKeywords.contains(key), let map = member.objectValue {
                            return (key, .object(JSONObject(map.pairs.map { ($0.key, schema($0.value)) })))
                        }
                        if schemaListKeywords.contains(key), let list = member.arrayValue { return (key, .array(list.map(schema))) }
                        return (key, booleanSchemasSpelledOut(member))
                    }))
        case .array(let items):
            return .array(items.map(booleanSchemasSpelledOut))
        default:
            return value
        }
    }

    /// The copy of a document OpenAPIKit decodes, with what Doppel reads
    /// itself (and warns about) but OpenAPIKit 6.4 stops at taken out:
    /// boolean schemas spelled out (`booleanSchemasSpelledOut`); in a 3.1
    /// or 3.2 document, draft 4's boolean `exclusiveMinimum` and
    /// `exclusiveMaximum` (a schema of the draft 4 dialect, by its
    /// `$schema` or the document's `jsonSchemaDialect`; Doppel reads them
    /// as 3.0's); security requirements that name a scheme the document
    /// does not declare (Doppel warns and leaves them out).
    static func forOpenAPIKit(_ document: JSON, version30: Bool) -> JSON {
        var value = booleanSchemasSpelledOut(document)
        guard case .object(var top) = value else { return value }
        let declared = Set(top["components"]?.objectValue?["securitySchemes"]?.objectValue?.pairs.map(\.key) ?? [])
        func known(_ security: JSON) -> JSON {
            guard let list = security.arrayValue else { return security }
            return .array(list.filter { requirement in requirement.objectValue?.pairs.allSatisfy { declared.contains($0.key) } ?? true })
        }
        func clean(_ value: JSON, parent: String?) -> JSON {
            switch value {
            case .object(let object):
                let integer = Self.isIntegerSchema(object)
                return .object(
                    JSONObject(
                        object.pairs.compactMap { key, member in
                            if !version30, key == "exclusiveMinimum" || key == "exclusiveMaximum", case .bool = member { return nil }
                            if integer, Self.integerBounds.contains(key), case .double = member { return nil }
                            if key == "security", parent.map({ ["paths", "properties", "components"].contains($0) }) != true {
                                return (key, known(member))
                            }
                            return (key, clean(member, parent: key))
                        }))
            case .array(let items):
                return .array(items.map { clean($0, parent: parent) })
            default:
                return value
            }
        }
        if let security = top["security"] { top["security"] = known(security) }
        if let paths = top["paths"] { top["paths"] = clean(paths, parent: "paths") }
        if let components = top["components"] { top["components"] = clean(components, parent: "components") }
        if let webhooks = top["webhooks"] { top["webhooks"] = clean(webhooks, parent: "webhooks") }
        value = .object(top)
        return value
    }

    /// The keywords OpenAPIKit 6.4 reads as 64-bit integers in an integer
    /// schema: a bound past that range (`maximum: 18446744073709551615`,
    /// valid JSON Schema, Doppel reads it as a number) is left out of
    /// OpenAPIKit's copy, whose decoding would stop there.
    static let integerBounds: Set<String> = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]

    /// Whether a schema object's `type` is `integer` (alone or in a list).
    static func isIntegerSchema(_ object: JSONObject) -> Bool {
        switch object["type"] {
        case .string("integer"): true
        case .array(let types): types.contains(.string("integer"))
        default: false
        }
    }

    /// What `forOpenAPIKit` does for integer bounds alone, for a document
    /// Doppel wrote (`OpenAPIDocumentWriter` checks it with OpenAPIKit).
    package static func integerBoundsInRange(_ value: JSON) -> JSON {
        switch value {
        case .object(let object):
            let integer = isIntegerSchema(object)
            return .object(
                JSONObject(
                    object.pairs.compactMap { key, member in
                        if integer, integerBounds.contains(key), case .double = member { return nil }
                        return (key, integerBoundsInRange(member))
                    }))
        case .array(let items):
            return .array(items.map(integerBoundsInRange))
        default:
            return value
        }
    }

    /// Stage 1: decodes and validates the document with OpenAPIKit; its
    /// problems located in the document.
    /// The refusal of a document's `openapi` version, nil for one Doppel serves.
    static func unsupportedVersion(_ root: SourceNode) -> Diagnostic? {
        let version = root["openapi"]?.scalarText ?? ""
        guard !(version.hasPrefix("3.0") || version.hasPrefix("3.1") || version.hasPrefix("3.2")) else { return nil }
        return Diagnostic(
            at: root["openapi"]?.location ?? root.location,
            "OpenAPI \(version) is not supported; Doppel reads OpenAPI 3.0, 3.1 and 3.2 documents, and Swagger 2.0")
    }

    static func read(root: SourceNode, file: String) -> [Diagnostic] {
        if let unsupported = unsupportedVersion(root) { return [unsupported] }
        let version = root["openapi"]?.scalarText ?? ""
        let document: OpenAPIKit.OpenAPI.Document
        do {
            // Decoded from the tree already read, as JSON: Yams's Decoder
            // copies nodes on every key lookup, which made a document of
            // 1,000 operations take seconds; JSONDecoder takes milliseconds.
            // Vendor extensions (`x-`) are not decoded: Doppel does not use
            // them, and OpenAPIKit decodes every object twice to find them.
            let json = Data(JSONWriter.encode(Self.forOpenAPIKit(root.json, version30: version.hasPrefix("3.0"))))
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
            if keys.contains("callbacks") {
                // OpenAPIKit reads a callback's URL as a runtime expression and
                // stops at one it cannot parse (`{{` in it); Doppel reads callbacks
                // itself, the URL's other braces as they are, so serving and
                // importing the document agree.
                let reason = problem.localizedDescription.split(separator: "\n").first.map(String.init) ?? ""
                return [
                    Diagnostic(
                        .warning, at: locate(problem.codingPath, in: root),
                        "OpenAPIKit cannot read this callback (\(reason)); Doppel reads it itself, and the rest of the document is not checked by OpenAPIKit"
                    )
                ]
            }
            if keys.contains("schema") || keys.starts(with: ["components", "schemas"]) {
                // OpenAPIKit's schema model does not take every JSON Schema
                // 2020-12 form (`items: false`); Doppel's own schema loader
                // checks schemas, so this is only a note.
                let reason = problem.localizedDescription.split(separator: "\n").first.map(String.init) ?? ""
                return [
                    Diagnostic(
                        .warning, at: locate(problem.codingPath, in: root),
                        "OpenAPIKit cannot read this schema (\(reason)); Doppel checks it with its own validator, and the rest of the document is not checked by OpenAPIKit"
                    )
                ]
            }
            // Doppel reads the document itself, and `serve` runs this check
            // beside the server (only printing it): so that lint and serve
            // agree, what only OpenAPIKit finds is a warning, as every
            // mistake of someone else's document is (`lint --strict` fails on it).
            return [
                Diagnostic(
                    .warning, at: locate(problem.codingPath, in: root),
                    "not a valid OpenAPI \(version) document: \(problem.localizedDescription) (Doppel serves it as it reads it; OpenAPIKit checked no further)"
                )
            ]
        }
        // OpenAPIKit 6.4's ordered dictionary counts itself on every
        // subscript, so its validation takes time that grows with the square
        // of a map's size: 90,000 paths took minutes. Past the bound it is
        // skipped, with a note; Doppel's own checks of the document still run.
        let largest = max(document.paths.count, document.components.schemas.count, document.components.responses.count)
        guard largest <= Self.largestValidatedMap else {
            return [
                Diagnostic(
                    .warning, at: root.location,
                    "OpenAPIKit's validation was skipped: the document has a map of \(largest) entries (paths or components), more than \(Self.largestValidatedMap); Doppel's own checks still ran"
                )
            ]
        }
        do {
            try document.validate(strict: false)
        } catch let collection as OpenAPIKit.ValidationErrorCollection {
            return collection.values.map { Diagnostic(.warning, at: locate($0.codingPath, in: root), "invalid OpenAPI document: \($0.reason)") }
        } catch {
            return [Diagnostic(.warning, at: root.location, "invalid OpenAPI document: \(error)")]
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
