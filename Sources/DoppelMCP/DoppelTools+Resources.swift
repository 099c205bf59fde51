import DoppelCore
import DoppelOpenAPI
import DoppelServer

/// What an agent can read without calling a tool: the contract as the
/// admin API describes it, its OpenAPI export, and its session's state.
extension DoppelTools {
    /// A resource as `resources/list` describes it.
    package struct Resource: Sendable {
        package let name: String
        package let uri: String
        package let description: String

        var json: JSON {
            ["name": .string(name), "uri": .string(uri), "description": .string(description), "mimeType": "application/json"]
        }
    }

    /// The resources `resources/list` offers.
    package var resources: [Resource] {
        [
            Resource(
                name: "contract", uri: "doppel://contract",
                description: "The served contract: endpoints with their documented statuses, rate limits, initial state, scenarios."),
            Resource(
                name: "openapi", uri: "doppel://contract/openapi",
                description: "The contract as an OpenAPI 3.1 document, every status it can answer with an example (doppel export)."),
            Resource(
                name: "state", uri: "doppel://session/state",
                description: "This agent's session: its state as the session holds it now (session \(session))."),
        ]
    }

    /// `resources/read`: the resource's JSON text; an unknown URI is MCP's -32002.
    package func read(_ uri: String) async throws(AgentServer.Failure) -> String {
        let value: JSON
        switch uri {
        case "doppel://contract": value = try await adminJSON("/contract", query: [])
        case "doppel://contract/openapi": value = OpenAPIExporter.document(for: host.engine.contract)
        case "doppel://session/state": value = try await adminJSON("/state", query: [("session", session)])
        default:
            throw AgentServer.Failure(
                code: -32002, message: "Resource not found: \(uri). Resources: \(resources.map(\.uri).joined(separator: ", ")).")
        }
        return JSONWriter.encodePretty(value)
    }

    /// An admin call's JSON answer, or its failure as an MCP error.
    private func adminJSON(_ path: String, query: [(String, String)]) async throws(AgentServer.Failure) -> JSON {
        let result = await admin("GET", path, query: query)
        guard !result.isError, let structured = result.structuredContent else {
            throw AgentServer.Failure(code: -32603, message: result.text)
        }
        return structured
    }
}
