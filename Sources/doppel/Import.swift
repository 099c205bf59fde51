import ArgumentParser
import DoppelCore
import DoppelGraphQL
import DoppelOpenAPI
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Write an OpenAPI 3.0/3.1/3.2 or Swagger 2.0 document, or a GraphQL schema, as a Doppel contract, ready for state to be added.",
        discussion: """
            Every operation with its parameters, request body and security, and every \
            documented response: the first 2xx under 'responses', the rest under \
            'documented', 'on_invalid' (400/422) and 'on_unauthorized' (401/403); each \
            example a response named after it. Serving the contract answers as serving \
            the document does. See docs/openapi.md. A GraphQL schema (.graphql, \
            .graphqls, .gql) becomes a contract serving it at /graphql, every field \
            answered from the schema until a resolver is added (docs/graphql.md).
            """)

    @Argument(help: "The OpenAPI document (YAML or JSON), or a GraphQL schema.")
    var document: String

    @Option(name: .shortAndLong, help: "Where to write the contract; standard output when not given.")
    var output: String?

    func run() throws {
        prepareHeapForOneShotCommand()
        if SchemaImport.isSDL(document) { return try importSDL() }
        let imported: ContractImport.Imported
        do {
            imported = try ContractImport.contract(fromDocument: document)
        } catch {
            printDiagnostics(error.diagnostics)
            throw ExitCode(1)
        }
        printDiagnostics(imported.warnings)
        try writeOutput(imported.text, to: output, what: "contract")
    }

    /// A GraphQL schema (`.graphql`, `.graphqls`, `.gql`) as a contract serving it.
    private func importSDL() throws {
        let sdl: String
        do {
            sdl = try String(contentsOfFile: document, encoding: .utf8)
        } catch {
            FileHandle.standardError.write(Data("\(document): error: cannot read the schema: \(error.localizedDescription)\n".utf8))
            throw ExitCode(1)
        }
        switch SchemaImport.contract(fromSDL: sdl, file: document) {
        case .success(let text): try writeOutput(text, to: output, what: "contract")
        case .failure(let problems):
            printDiagnostics(problems.diagnostics)
            throw ExitCode(1)
        }
    }
}
