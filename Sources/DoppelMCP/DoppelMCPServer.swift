import DoppelCore
import DoppelServer
import MCP

/// An MCP server (modelcontextprotocol/swift-sdk) offering `DoppelTools`:
/// `tools/list` and `tools/call`, on whatever transport it is started
/// (`doppel mcp` gives it standard input and output).
package enum DoppelMCPServer {
    /// What the server tells an agent when it connects.
    static func instructions(_ tools: DoppelTools, contract: Contract) -> String {
        """
        Doppel serves \(contract.info.title) \(contract.info.version) from its contract: every endpoint answers as \
        documented, state and all. Your calls work in the session \(tools.session) unless they name another; a client \
        you test joins it with the header `Doppel-Session: \(tools.session)`. Use list_endpoints to see what is \
        documented, force_next to make an endpoint's next answer an error path (a 402, a 429), send_request to see \
        an answer, explain to read why each answer was what it was, and coverage for the statuses not reached yet.
        """
    }

    /// A server with Doppel's tools registered, not yet started.
    package static func make(_ tools: DoppelTools, version: String) async -> Server {
        let server = Server(
            name: "doppel", version: version, instructions: instructions(tools, contract: tools.host.engine.contract),
            capabilities: .init(resources: .init(subscribe: false, listChanged: false), tools: .init(listChanged: false)))
        await server.withMethodHandler(ListTools.self) { _ in ListTools.Result(tools: tools.tools) }
        await server.withMethodHandler(CallTool.self) { params in await tools.call(params.name, arguments: params.arguments) }
        await server.withMethodHandler(ListResources.self) { _ in ListResources.Result(resources: tools.resources) }
        await server.withMethodHandler(ReadResource.self) { params in try await tools.read(params.uri) }
        return server
    }
}
