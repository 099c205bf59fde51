import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Write an OpenAPI 3.0/3.1/3.2 or Swagger 2.0 document as a Doppel contract, ready for state to be added.",
        discussion: """
            Every operation with its parameters, request body and security, and every \
            documented response: the first 2xx under 'responses', the rest under \
            'documented', 'on_invalid' (400/422) and 'on_unauthorized' (401/403); each \
            example a response named after it. Serving the contract answers as serving \
            the document does. See docs/openapi.md.
            """)

    @Argument(help: "The OpenAPI document (YAML or JSON).")
    var document: String

    @Option(name: .shortAndLong, help: "Where to write the contract; standard output when not given.")
    var output: String?

    func run() throws {
        prepareHeapForOneShotCommand()
        let tree: SourceNode
        var hasMistakes = false
        do {
            let source = try ContractDocument.contractTree(file: document)
            guard source.isOpenAPI else {
                FileHandle.standardError.write(Data("\(document): error: not an OpenAPI document (it has no top-level 'openapi' key)\n".utf8))
                throw ExitCode(1)
            }
            // The same checks as serving: an import that would not load is not written.
            let loaded = try ContractLoader.load(root: source.tree, file: document, warnings: source.diagnostics, isVendorDocument: true)
            printDiagnostics(loaded.warnings)
            // The document's own mistakes stay warnings in the contract, as when it is served.
            let strict = ContractError.thrown(by: { () throws(ContractError) in
                _ = try ContractLoader.load(root: source.tree, file: document)
            })
            hasMistakes = strict.contains { $0.severity == .error }
            tree =
                hasMistakes
                ? ContractNode.inserting("document_mistakes", ContractNode.string("warn", at: source.tree.location), after: "doppel", in: source.tree)
                : source.tree
        } catch let error as ContractError {
            printDiagnostics(error.diagnostics)
            throw ExitCode(1)
        }
        let name = URL(fileURLWithPath: document).lastPathComponent
        let text: String
        do {
            text = try YAMLWriter.yaml(
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
        } catch {
            FileHandle.standardError.write(Data("\(document): error: cannot write the contract: \(error)\n".utf8))
            throw ExitCode(1)
        }
        try writeOutput(text, to: output, what: "contract")
    }
}
