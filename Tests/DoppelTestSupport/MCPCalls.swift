import DoppelCore
import Foundation

/// MCP's Streamable HTTP spoken by hand over a `TestClient`: JSON-RPC
/// requests to `/__doppel/mcp`, for the live tests of the MCP endpoint.
package enum MCPCalls {
    /// One JSON-RPC call, in MCP session `id` (none: it may open one), with the admin `token` if any.
    package static func rpc(_ client: TestClient, _ method: String, _ params: JSON, id: String?, token: String?) async throws -> HTTPResult {
        var headers = ["Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"]
        if let id { headers["Mcp-Session-Id"] = id }
        if let token { headers["Doppel-Admin-Token"] = token }
        let message = JSON.object(JSONObject([("jsonrpc", .string("2.0")), ("id", .int(1)), ("method", .string(method)), ("params", params)]))
        return try await client.send("POST", "/__doppel/mcp", json: message, token: nil, headers: headers)
    }

    package static let initialize = JSON.object(
        JSONObject([
            ("protocolVersion", .string("2025-11-25")), ("capabilities", .object(JSONObject())),
            ("clientInfo", .object(JSONObject([("name", .string("test")), ("version", .string("1"))]))),
        ]))

    /// `tools/call`'s parameters.
    package static func tool(_ name: String, _ arguments: JSONObject) -> JSON {
        .object(JSONObject([("name", .string(name)), ("arguments", .object(arguments))]))
    }

    /// A tool call's structured result, nil for an error result.
    package static func call(_ client: TestClient, _ name: String, _ arguments: JSONObject, id: String, token: String?) async throws -> JSON? {
        let answer = try await rpc(client, "tools/call", tool(name, arguments), id: id, token: token)
        guard answer.json?["result"]?["isError"] != .bool(true) else { return nil }
        return answer.json?["result"]?["structuredContent"]
    }

    /// A new MCP session's id, and the Doppel session its tools work in; nil when it could not be opened.
    package static func open(_ client: TestClient, token: String?) async throws -> (id: String, session: String)? {
        let opened = try await rpc(client, "initialize", initialize, id: nil, token: token)
        guard let id = opened.header("Mcp-Session-Id") else { return nil }
        guard let session = try await call(client, "get_state", JSONObject(), id: id, token: token)?["session"]?.stringValue else { return nil }
        return (id, session)
    }
}
