import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import Foundation

/// Loads a contract or OpenAPI document for a command, printing every diagnostic and exiting 1 on errors.
/// `checkingWithOpenAPIKit`: see `ContractDocument.load`.
func loadContractOrExit(_ path: String, checkingWithOpenAPIKit: Bool = true, release: ContractDocument.TreeRelease = .inBackground) throws -> Contract {
    do {
        return try ContractDocument.load(file: path, checkingWithOpenAPIKit: checkingWithOpenAPIKit, release: release)
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

/// Writes a command's output to `path`, or to standard output when there is
/// none; a file that cannot be written is an error naming it, and exit 1.
func writeOutput(_ text: String, to path: String?, what: String) throws {
    guard let path else {
        print(text, terminator: "")
        return
    }
    do {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    } catch {
        FileHandle.standardError.write(Data("\(path): error: cannot write the \(what): \(error.localizedDescription)\n".utf8))
        throw ExitCode(1)
    }
}

/// The URL of a server to forward to (`serve --proxy`, `record --target`):
/// http or https, with a host and no query; nil otherwise.
func upstreamURL(_ text: String) -> URL? {
    guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false,
          url.query == nil else { return nil }
    return url
}
