import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import Foundation

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a contract as an OpenAPI 3.1 (or 3.0) document.",
        discussion: """
            Every endpoint with its parameters, request body and security, and every \
            status it can answer, with the contract's schemas and its constant bodies \
            as examples. `--openapi-version 3.0` writes OpenAPI 3.0.3 for tools that read \
            no 3.1. See docs/openapi.md.
            """)

    @Argument(help: "The contract file (YAML).")
    var contract: String

    @Option(name: .shortAndLong, help: "Where to write the document; standard output when not given.")
    var output: String?

    @Option(help: "yaml or json; by default the output file's extension decides (YAML unless .json).")
    var format: OpenAPIDocumentWriter.Format?

    @Option(name: .customLong("openapi-version"), help: "3.1 (the default) or 3.0.")
    var version: OpenAPIDocumentWriter.Version = .v3_1

    func run() throws {
        prepareHeapForOneShotCommand()
        let contract = try loadContractOrExit(self.contract, release: .atExit)
        let format = self.format ?? output.map(OpenAPIDocumentWriter.Format.init(path:)) ?? .yaml
        let text: String
        do {
            let document = OpenAPIExporter.document(for: contract)
            if OpenAPIDocumentWriter.skipsValidation(document) {
                FileHandle.standardError.write(
                    Data(
                        "\(self.contract): warning: OpenAPIKit read the document but did not validate it: it has more than \(ContractDocument.largestValidatedMap) paths or schemas (its validation grows with the square of the size)\n"
                            .utf8))
            }
            text = try OpenAPIDocumentWriter.write(document, as: format, version: version)
        } catch {
            FileHandle.standardError.write(Data("\(self.contract): error: \(error.description)\n".utf8))
            throw ExitCode(1)
        }
        try writeOutput(text, to: output, what: "document")
    }
}

extension OpenAPIDocumentWriter.Format: ExpressibleByArgument {}
extension OpenAPIDocumentWriter.Version: ExpressibleByArgument {}
