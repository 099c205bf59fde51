import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import Foundation

/// Loads a contract or OpenAPI document for a command, printing every diagnostic and exiting 1 on errors.
/// `checkingWithOpenAPIKit`: see `ContractDocument.load`.
func loadContractOrExit(_ path: String, checkingWithOpenAPIKit: Bool = true) throws -> Contract {
    do {
        return try ContractDocument.load(file: path, checkingWithOpenAPIKit: checkingWithOpenAPIKit)
    } catch {
        printDiagnostics(error.diagnostics)
        throw ExitCode(1)
    }
}

/// Prints diagnostics to standard error, one `path:line:column: error: message` per line.
func printDiagnostics(_ diagnostics: [Diagnostic]) {
    for diagnostic in diagnostics {
        FileHandle.standardError.write(Data((diagnostic.description + "\n").utf8))
    }
}
