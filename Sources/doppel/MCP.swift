import ArgumentParser
import DoppelCore
import DoppelMCP
import DoppelServer
import Foundation
import Logging
import ServiceLifecycle

/// `doppel mcp`: Doppel's tools for an agent, over standard input and
/// output (the Model Context Protocol's stdio transport), on a contract
/// served in this process; with `--port`, the same contract (the same
/// sessions) is served over HTTP too, for the client under test.
struct MCPCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp",
        abstract: "Offer Doppel's tools to an agent over MCP (standard input and output), on a contract served in this process.",
        discussion: """
            The agent works in a session of its own (its id is in every answer and in the server's instructions) unless \
            a tool call names another. Standard output carries the protocol alone; what Doppel says goes to standard error.
            """)

    @Argument(help: "The contract file (YAML) or OpenAPI document.")
    var contract: String

    @Option(help: "The session the agent's calls work in (default: mcp- and eight random hex digits).")
    var session: String?

    @Option(help: "Also serve the contract over HTTP on 127.0.0.1 at this port (0 picks a free one), in the same sessions.")
    var port: Int?

    func validate() throws {
        if let session, !SessionStore.isValid(id: session) { throw ValidationError("--session: \(Problem.invalidSession(session).detail)") }
        if let port, !(0...65535).contains(port) { throw ValidationError("--port must be from 0 to 65535") }
    }

    func run() async throws {
        let contract = try loadContractOrExit(self.contract, checkingWithOpenAPIKit: false)
        printDiagnostics(Array(contract.warnings.prefix(Serve.warningsShown)))
        let engine = MockEngine(contract: contract, configuration: ServerConfiguration.defaults)
        let slot = EngineSlot(engine)
        let session = self.session ?? DoppelTools.newSessionID()
        var host: any AgentHost = LocalAgentHost(api: AdminAPI(slot: slot))
        // With --port, the HTTP server listens before the agent is answered, or the command fails.
        var serving: (group: ServiceGroup, task: Task<Void, Never>)?
        if let port {
            var configuration = ServerConfiguration.defaults
            configuration.port = port
            configuration.logFormat = .none
            let (listening, announce) = AsyncStream.makeStream(of: Result<Int, any Error>.self)
            let agents = AgentSessions(version: Doppel.configuration.version)
            let (app, serverHost) = buildServer(slot: slot, configuration: configuration, recorder: nil, agents: agents) { bound in
                announce.yield(.success(bound))
            }
            // The tools take the HTTP server's path, so its event stream and dashboard see their calls.
            host = serverHost
            let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [app], logger: Logger(label: "doppel")))
            serving = (group, Task { do { try await group.run() } catch { announce.yield(.failure(error)) } })
            var outcome: Result<Int, any Error>?
            for await first in listening {
                outcome = first
                break
            }
            switch outcome {
            case .success(let bound)?:
                FileHandle.standardError.write(
                    Data("doppel: serving \(self.contract) on http://127.0.0.1:\(bound) (session \(session))\n".utf8))
            case .failure(let error)?:
                FileHandle.standardError.write(Data("doppel: cannot serve on 127.0.0.1:\(port): \(ListenOptions.failure(error))\n".utf8))
                throw ExitCode(1)
            case nil:
                throw ExitCode(1)
            }
        }
        let server = AgentServer(DoppelTools(host: host, session: session), version: Doppel.configuration.version)
        do {
            // Until the agent closes standard input.
            try await server.serve(LineTransport())
        } catch {
            FileHandle.standardError.write(Data("doppel: standard input or output failed: \(error)\n".utf8))
        }
        // Then the HTTP server stops as on SIGTERM.
        if let serving {
            await serving.group.triggerGracefulShutdown()
            await serving.task.value
        }
    }
}
