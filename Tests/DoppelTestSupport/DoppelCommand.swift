import DoppelRunner
import Foundation

/// The built `doppel` executable, run as a user would run it, for the tests
/// of its commands and of what only a whole process shows.
package enum DoppelCommand {
    /// Where the build put `doppel`: beside the test bundle, or the debug folder.
    package static var executable: URL? {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("doppel"),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("doppel"),
            repositoryRoot.appendingPathComponent(".build/debug/doppel"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Why a command could not be run or served.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// What a finished command left: its exit status (128 + the signal that
    /// ended it) and both streams.
    package struct Run: Sendable {
        package let status: Int32
        package let output: String
        package let errors: String
    }

    /// Runs `doppel` with `arguments` in the repository's folder, on a
    /// thread of its own (a test waiting for a process must not hold one of
    /// the few threads every task shares).
    package static func run(_ arguments: [String]) async throws -> Run {
        guard let executable else { throw Failure(description: "build the doppel executable first (swift build)") }
        let root = repositoryRoot.path
        return try await offThePool { try runWaiting(executable.path, arguments, in: root) }
    }

    private static func runWaiting(_ executable: String, _ arguments: [String], in folder: String) throws -> Run {
        let process = try ChildProcess(executable, arguments, directory: folder)
        // A command that never ends is stopped (and the test fails on its
        // status) rather than holding the suite; standard error is read
        // beside standard output, so neither pipe can fill and stall it.
        let watchdog = DispatchWorkItem { process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 300, execute: watchdog)
        defer { watchdog.cancel() }
        let output = ChildProcess.Drained(process.output)
        let errors = ChildProcess.Drained(process.errors)
        let ending = process.waitUntilExit()
        let status: Int32 =
            switch ending {
            case .exit(let code): code
            case .signal(let number): 128 + number
            }
        return Run(
            status: status, output: String(decoding: output.value(within: 300), as: UTF8.self),
            errors: String(decoding: errors.value(within: 300), as: UTF8.self))
    }

    /// A `doppel serve` process on a free port, its port and its banner.
    package struct Served {
        package let process: ChildProcess
        package let output: FileHandle
        package let errors: FileHandle
        package let port: Int
        package let banner: String
    }

    /// Starts `doppel serve` with `--port 0` and reads its banner up to the listening line.
    package static func serve(_ arguments: [String]) async throws -> Served {
        guard let executable else { throw Failure(description: "build the doppel executable first (swift build)") }
        let process = try ChildProcess(executable.path, ["serve"] + arguments + ["--port", "0"], directory: repositoryRoot.path)
        guard let output = process.output, let errors = process.errors else {
            process.terminate()
            throw Failure(description: "doppel serve was started without pipes")
        }
        let banner = await readBanner(output, until: "Listening on")
        guard
            let port = banner.split(separator: "\n").first(where: { $0.hasPrefix("Listening on") })
                .flatMap({ $0.split(separator: ":").dropFirst(2).first }).flatMap({ Int($0.prefix { $0.isNumber }) })
        else {
            process.terminate()
            throw Failure(description: "doppel serve did not start: \(banner)")
        }
        return Served(process: process, output: output, errors: errors, port: port, banner: banner)
    }
}

/// What a child printed on `handle` up to and including the first read that
/// holds `marker`, or all it printed within 60 s (its end, or a pause).
package func readBanner(_ handle: FileHandle, until marker: String) async -> String {
    (try? await offThePool {
        var banner = ""
        let deadline = Date().addingTimeInterval(60)
        while !banner.contains(marker), Date() < deadline {
            guard let data = readSome(handle, within: deadline.timeIntervalSinceNow), !data.isEmpty else { break }
            banner += String(decoding: data, as: UTF8.self)
        }
        return banner
    }) ?? ""
}
