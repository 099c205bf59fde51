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
}
