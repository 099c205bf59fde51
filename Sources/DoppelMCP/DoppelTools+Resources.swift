import DoppelCore
import DoppelOpenAPI
import DoppelServer
import MCP

/// What an agent can read without calling a tool: the contract as the
/// admin API describes it, its OpenAPI export, and its session's state.
extension DoppelTools {
    /// The resources `resources/list` offers.
    package var resources: [Resource] {
        [
            Resource(
                name: "contract", uri: "doppel://contract",
                description: "The served contract: endpoints with their documented statuses, rate limits, initial state, scenarios.",
                mimeType: "application/json"),
            Resource(
                name: "openapi", uri: "doppel://contract/openapi",
                description: "The contract as an OpenAPI 3.1 document, every status it can answer with an example (doppel export).",
                mimeType: "application/json"),
            Resource(
                name: "state", uri: "doppel://session/state",
                description: "This agent's session: its state as the session holds it now (session \(session)).",
                mimeType: "application/json"),
        ]
    }

    /// `resources/read`: the resource's JSON text; an unknown URI is MCP's -32002.
    package func read(_ uri: String) async throws -> ReadResource.Result {
        let value: JSON
        switch uri {
        case "doppel://contract": value = try await adminJSON("/contract", query: [])
        case "doppel://contract/openapi": value = OpenAPIExporter.document(for: host.engine.contract)
        case "doppel://session/state": value = try await adminJSON("/state", query: [("session", session)])
        default:
            throw MCPError.serverError(
                code: -32002, message: "Resource not found: \(uri). Resources: \(resources.map(\.uri).joined(separator: ", ")).")
        }
        return ReadResource.Result(contents: [.text(JSONWriter.encodePretty(value), uri: uri, mimeType: "application/json")])
    }

    /// An admin call's JSON answer, or its failure as an MCP error.
    private func adminJSON(_ path: String, query: [(String, String)]) async throws -> JSON {
        let result = await admin("GET", path, query: query)
        guard result.isError != true, let structured = result.structuredContent else {
            throw MCPError.internalError(result.content.compactMap { if case .text(let text, _, _) = $0 { text } else { nil } }.joined())
        }
        return JSON(mcp: structured)
    }
}
