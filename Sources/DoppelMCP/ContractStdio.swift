import DoppelCore
import DoppelServer
import Foundation

/// `doppel serve --stdio`: the contract's own MCP server (its `mcp:`
/// section) over standard input and output, MCP's stdio transport. Each
/// line is one JSON-RPC message, answered as a POST of it to the server's
/// path would be (through `host`, so it is journaled and shown as any
/// request); a notification's 202 sends nothing back.
package enum ContractStdio {
    /// The path of the contract's MCP server, when it has one.
    package static func path(of contract: Contract) -> String? {
        contract.endpoints.first { $0.id == "mcp.initialize" }?.path.template
    }

    /// Answers lines from `transport` until its input ends.
    package static func serve(host: any AgentHost, path: String, session: String, transport: LineTransport = LineTransport()) async {
        do {
            for try await line in transport.receive() {
                // The server's own limit on a request's body (`--max-body-size`), as over HTTP.
                guard line.count <= host.maxBodySize else {
                    let refusal =
                        #"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"The message is \#(line.count) bytes; the most one may be is \#(host.maxBodySize) (--max-body-size)."}}"#
                    try await transport.send(Data(refusal.utf8))
                    continue
                }
                let request = RecordedRequest(
                    method: "POST", target: path,
                    headers: [("content-type", "application/json"), ("accept", "application/json"), (MockEngine.sessionHeader, session)],
                    body: Array(line))
                let response = await host.send(request)
                guard !response.body.isEmpty else { continue }
                try await transport.send(Data(response.body))
            }
        } catch {
            FileHandle.standardError.write(Data("doppel: standard input or output failed: \(error)\n".utf8))
        }
    }
}
