import DoppelCore
import DoppelServer
import Foundation

/// `/__doppel/mcp` on `doppel serve`: Doppel's tools over MCP's Streamable
/// HTTP transport (specification 2025-11-25), each MCP session an agent
/// with a Doppel session of its own.
///
/// The server answers each POST with one JSON response (the specification
/// lets a server choose JSON over an event stream) and offers no stream of
/// its own (GET is 405): Doppel's tools answer at once and send nothing
/// unasked. An `initialize` without `Mcp-Session-Id` opens an MCP session
/// (an `AgentServer` of its own, kept once its initialize succeeded); later
/// calls name it; a notification is 202 with no body; DELETE closes it; an unknown id is 404, so
/// the client initializes again. The admin API's gate (its token, `Host`,
/// `Origin`) has passed before a request gets here. At most
/// `maximumSessions` are open: the one idle longest makes room for a new one.
package actor AgentSessions: AgentDoor {
    private struct Open {
        let server: AgentServer
        var lastUsed: ContinuousClock.Instant
    }

    /// The most MCP sessions open at once.
    package static let maximumSessions = 100
    private let version: String
    private var open: [String: Open] = [:]

    package init(version: String) {
        self.version = version
    }

    /// How many MCP sessions are open (for tests).
    package var count: Int { open.count }

    package func answer(_ request: RecordedRequest, host: any AgentHost) async -> MockResponse {
        let id = request.header("mcp-session-id")
        switch request.method {
        case "POST": break
        case "DELETE":
            guard let id, open.removeValue(forKey: id) != nil else { return Self.error(404, "No open MCP session has this Mcp-Session-Id.") }
            return MockResponse(status: 200)
        default:
            var refusal = Self.error(405, "Doppel answers MCP over POST, one JSON response a request; it offers no event stream.")
            refusal.headers.append(("Allow", "POST, DELETE"))
            return refusal
        }
        let server: AgentServer
        if let id {
            guard var session = open[id] else { return Self.error(404, "No open MCP session has this Mcp-Session-Id: initialize again.") }
            session.lastUsed = .now
            open[id] = session
            server = session.server
        } else {
            server = AgentServer(DoppelTools(host: host), version: version)
        }
        let message: JSON
        do {
            message = try JSONReader.parse(request.body)
        } catch {
            return Self.error(400, "The body is not JSON: \(error).", code: -32700)
        }
        let kinds = message.arrayValue.map { $0.map(AgentServer.kind(of:)) } ?? [AgentServer.kind(of: message)]
        guard !kinds.isEmpty, kinds.allSatisfy({ $0 != nil }) else {
            return Self.error(
                400, "The body is no JSON-RPC 2.0 message: each needs a `method` and, to be answered, an `id` (a string or an integer).")
        }
        let initializing = kinds.contains(.request(method: "initialize"))
        if let refusal = Self.refusal(of: request, initializing: initializing) { return refusal }
        guard id != nil || initializing else { return Self.error(400, "Only an initialize request may come without an Mcp-Session-Id header.") }
        guard let answer = await server.answer(parsed: message) else { return MockResponse(status: 202) }
        var response = MockResponse(status: 200, headers: [("Content-Type", "application/json")], body: JSONWriter.encode(answer))
        // A new MCP session is kept once its initialize succeeded.
        if id == nil, (answer.arrayValue ?? [answer]).contains(where: { $0["result"] != nil }) {
            response.headers.append(("Mcp-Session-Id", keep(server)))
        }
        return response
    }

    /// What MCP's Streamable HTTP transport asks of a POST, as the official
    /// SDKs check it: it accepts JSON (406), it is JSON (415), and it names
    /// a protocol version answered here, if any (400; an initialize names
    /// its version in its body).
    static func refusal(of request: RecordedRequest, initializing: Bool) -> MockResponse? {
        let accepted = (request.header("accept") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard accepted.contains(where: { $0.hasPrefix("application/json") }) else {
            return error(406, "Not Acceptable: a client must accept application/json.")
        }
        let type = (request.header("content-type") ?? "").split(separator: ";").first?.trimmingCharacters(in: .whitespaces) ?? ""
        guard type == "application/json" else { return error(415, "Unsupported Media Type: Content-Type must be application/json.") }
        if !initializing, let version = request.header("mcp-protocol-version"), !AgentServer.protocolVersions.contains(version) {
            return error(400, "Unsupported protocol version: \(version). Supported: \(AgentServer.protocolVersions.joined(separator: ", ")).")
        }
        return nil
    }

    /// Keeps a new MCP session under a new id. Room is made and the session
    /// kept with no suspension between, so however many open at once, no
    /// more than `maximumSessions` are ever kept.
    private func keep(_ server: AgentServer) -> String {
        while open.count >= Self.maximumSessions, let idlest = open.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
            open.removeValue(forKey: idlest)
        }
        let id = UUID().uuidString
        open[id] = Open(server: server, lastUsed: .now)
        return id
    }

    /// A JSON-RPC error answer, its id null (the request's own is not known here).
    static func error(_ status: Int, _ message: String, code: Int = -32600) -> MockResponse {
        let body = AgentServer.error(id: .null, AgentServer.Failure(code: code, message: message))
        return MockResponse(status: status, headers: [("Content-Type", "application/json")], body: JSONWriter.encode(body))
    }
}
