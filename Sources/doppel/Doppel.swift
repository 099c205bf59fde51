import ArgumentParser

@main
struct Doppel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doppel",
        abstract: "A contract mock server: serves a YAML contract exactly, state and error paths included.",
        version: "0.1.0",
        subcommands: [Serve.self, Run.self, Lint.self, Routes.self, Export.self, Import.self]
    )
}
