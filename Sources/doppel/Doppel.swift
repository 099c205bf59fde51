import ArgumentParser

@main
struct Doppel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doppel",
        abstract: "A contract mock server: serves a YAML contract exactly, state and error paths included.",
        version: "0.1.0",
        subcommands: [Serve.self, Run.self, Verify.self, Diff.self, Lint.self, Routes.self, Export.self, Import.self, Record.self, MCPCommand.self]
    )

    /// ArgumentParser's `main`, run on the main thread. The commands that
    /// are not async (`lint`, `routes`, `export`, `import`) then allocate
    /// from glibc's main heap, which grows in large steps; the heaps of
    /// other threads grow one page per system call, which was a tenth of
    /// the time `doppel routes` took on a document of 1,000 operations.
    @MainActor
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
