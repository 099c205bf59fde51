import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import Foundation

/// Loads a contract or OpenAPI document for a command, printing every diagnostic and exiting 1 on errors.
/// `checkingWithOpenAPIKit`: see `ContractDocument.load`. With `release:
/// .atExit`, for a command that exits once it has printed, the contract too
/// is kept until the process exits: freeing the model of 1,000 endpoints
/// object by object took longer than listing them, and the system takes a
/// process's memory back at exit all at once.
func loadContractOrExit(_ path: String, checkingWithOpenAPIKit: Bool = true, release: ContractDocument.TreeRelease = .inBackground) throws -> Contract
{
    do {
        let contract = try ContractDocument.load(file: path, checkingWithOpenAPIKit: checkingWithOpenAPIKit, release: release)
        if case .atExit = release { _ = Unmanaged.passRetained(KeptUntilExit(contract)) }
        return contract
    } catch {
        printDiagnostics(error.diagnostics)
        throw ExitCode(1)
    }
}

/// A value never freed (see `loadContractOrExit`).
private final class KeptUntilExit {
    let value: Contract
    init(_ value: Contract) { self.value = value }
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
        url.query == nil
    else { return nil }
    return url
}

/// Where a server command listens (`serve`, `record`).
struct ListenOptions: ParsableArguments {
    @Option(help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port: Int = 8000

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535") }
    }

    /// The host as it goes into a URL: an IPv6 address in brackets.
    var urlHost: String { host.contains(":") ? "[\(host)]" : host }

    /// Why the server could not listen, for `doppel: cannot … on HOST:PORT: REASON`.
    static func failure(_ error: any Error) -> String {
        "\(error)".contains("Address already in use")
            ? "the address is already in use; stop the other server or choose another --port (0 picks a free one)"
            : "\(error)"
    }
}

/// Readies the heap of a command that loads a contract, prints and exits
/// (`routes`, `lint`, `export`, `import`): glibc grows the heap of every
/// thread but the main one a page at a time unless given a top pad, each
/// page an `mprotect` that holds the address space while the other
/// thread's page faults wait; a document of 1,000 operations took some 600
/// of them. A pad of 64 MiB makes that a few. The pad is address space,
/// not memory: pages are used only when written. `serve` keeps the
/// default, so that a running server's heap is returned as before.
func prepareHeapForOneShotCommand() {
    _ = GlibcHeap.setOption?(GlibcHeap.topPad, 64 << 20)
}
