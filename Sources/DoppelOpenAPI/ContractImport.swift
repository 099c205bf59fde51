import DoppelCore
import Foundation

/// An OpenAPI document written as a contract (`doppel import`, and the MCP
/// `import_openapi` tool): the contract tree the document means, with the
/// same checks as serving it, as YAML.
package enum ContractImport {
    /// The contract's YAML, and the document's warnings.
    package struct Imported: Sendable {
        package let text: String
        package let warnings: [Diagnostic]
    }

    /// `file` (an OpenAPI or Swagger document) as a contract. Throws what
    /// keeps it from loading, or that it is not an OpenAPI document. A
    /// document with mistakes of its own keeps them as warnings
    /// (`document_mistakes: warn`), served as written, as when it is served.
    package static func contract(fromDocument file: String) throws(ContractError) -> Imported {
        let source = try ContractDocument.contractTree(file: file)
        guard source.isOpenAPI else {
            throw ContractError(diagnostics: [
                Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "not an OpenAPI document (it has no top-level 'openapi' key)")
            ])
        }
        // The same checks as serving: an import that would not load is not written.
        let loaded = try ContractLoader.load(root: source.tree, file: file, warnings: source.diagnostics, isVendorDocument: true)
        let strict = ContractError.thrown(by: { () throws(ContractError) in
            _ = try ContractLoader.load(root: source.tree, file: file)
        })
        let hasMistakes = strict.contains { $0.severity == .error }
        let tree =
            hasMistakes
            ? ContractNode.inserting("document_mistakes", ContractNode.string("warn", at: source.tree.location), after: "doppel", in: source.tree)
            : source.tree
        let name = URL(fileURLWithPath: file).lastPathComponent
        do {
            let text = try YAMLWriter.yaml(
                tree,
                header: """
                    Imported from \(name) by `doppel import`. A response with
                    `body_from_schema: true` answers with a value generated from its schema.
                    """
                        + (hasMistakes
                            ? """

                            The document has mistakes of its own (`doppel lint` lists them), which
                            `document_mistakes: warn` keeps as warnings, served as written; fix them
                            and remove that line to make them errors again.
                            """ : ""))
            return Imported(text: text, warnings: loaded.warnings)
        } catch {
            throw ContractError(diagnostics: [Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "cannot write the contract: \(error)")])
        }
    }
}
