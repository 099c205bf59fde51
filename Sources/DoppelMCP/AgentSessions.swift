import DoppelCore
import DoppelServer
import Foundation
import MCP

/// `/__doppel/mcp` on `doppel serve`: Doppel's tools over MCP's Streamable
/// HTTP transport (specification 2025-11-25), each MCP session an agent
/// with a Doppel session of its own.
///
/// The server answers each POST with one JSON response (the specification
/// lets a server choose JSON over an event stream) and offers no stream of
/// its own (GET is 405): Doppel's tools answer at once and send nothing
/// unasked. An `initialize` without `Mcp-Session-Id` opens an MCP session
/// (an SDK `Server` on a `StatelessHTTPServerTransport`, which answers in
/// JSON); later calls name it; DELETE closes it; an unknown id is 404, so
/// the client initializes again. The admin API's gate (its token, `Host`,
/// `Origin`) has passed before a request gets here. At most
/// `maximumSessions` are open: the one idle longest makes room for a new one.
package actor AgentSessions: AgentDoor {
    private struct Open {
        let server: Server
        let transport: StatelessHTTPServerTransport
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
            guard let id, let closing = open.removeValue(forKey: id) else { return Self.error(404, "No open MCP session has this Mcp-Session-Id.") }
            await closing.server.stop()
            return MockResponse(status: 200)
        default:
            var refusal = Self.error(405, "Doppel answers MCP over POST, one JSON response a request; it offers no event stream.")
            refusal.headers.append(("Allow", "POST, DELETE"))
            return refusal
        }
        let transport: StatelessHTTPServerTransport
        if let id {
            guard var session = open[id] else { return Self.error(404, "No open MCP session has this Mcp-Session-Id: initialize again.") }
            session.lastUsed = .now
            open[id] = session
            transport = session.transport
        } else {
            guard (try? JSONReader.parse(request.body))?["method"]?.stringValue == "initialize" else {
                return Self.error(400, "Only an initialize request may come without an Mcp-Session-Id header.")
            }
            guard let opened = await openSession(host: host) else { return Self.error(500, "The MCP session could not be started.") }
            transport = opened.transport
            var response = await Self.convert(transport.handleRequest(Self.httpRequest(request)))
            if (200..<300).contains(response.status) {
                response.headers.append(("Mcp-Session-Id", opened.id))
            } else {
                await close(opened.id)
            }
            return response
        }
        return await Self.convert(transport.handleRequest(Self.httpRequest(request)))
    }

    /// A new MCP session with its own Doppel session. Room is made and the
    /// session kept with no suspension between, so however many open at
    /// once, no more than `maximumSessions` are ever kept.
    private func openSession(host: any AgentHost) async -> (id: String, transport: StatelessHTTPServerTransport)? {
        let tools = DoppelTools(host: host)
        let server = await DoppelMCPServer.make(tools, version: version)
        // Origin and Host are the admin API's gate's; these check what MCP itself asks of a request.
        let transport = StatelessHTTPServerTransport(
            validationPipeline: StandardValidationPipeline(validators: [
                AcceptHeaderValidator(mode: .jsonOnly), ContentTypeValidator(), ProtocolVersionValidator(),
            ]))
        do {
            try await server.start(transport: transport)
        } catch {
            return nil
        }
        var closing: [Open] = []
        while open.count >= Self.maximumSessions, let idlest = open.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
            if let evicted = open.removeValue(forKey: idlest) { closing.append(evicted) }
        }
        let id = UUID().uuidString
        open[id] = Open(server: server, transport: transport, lastUsed: .now)
        for evicted in closing { await evicted.server.stop() }
        return (id, transport)
    }

    private func close(_ id: String) async {
        guard let closing = open.removeValue(forKey: id) else { return }
        await closing.server.stop()
    }

    static func httpRequest(_ request: RecordedRequest) -> HTTPRequest {
        var headers: [String: String] = [:]
        for (name, value) in request.headers { headers[name] = headers[name].map { $0 + ", " + value } ?? value }
        return HTTPRequest(method: request.method, headers: headers, body: Data(request.body), path: request.path)
    }

    static func convert(_ response: HTTPResponse) -> MockResponse {
        if case .stream = response { return error(500, "The MCP server answered with a stream, which Doppel does not send.") }
        var headers = response.headers.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        let body = response.bodyData.map { [UInt8]($0) } ?? []
        if !body.isEmpty, !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            headers.append(("Content-Type", "application/json"))
        }
        return MockResponse(status: response.statusCode, headers: headers, body: body)
    }

    /// A JSON-RPC error answer, its id null (the request's own is not known here).
    static func error(_ status: Int, _ message: String) -> MockResponse {
        let body = JSON.object(
            JSONObject([
                ("jsonrpc", "2.0"), ("id", .null), ("error", .object(JSONObject([("code", .int(-32600)), ("message", .string(message))]))),
            ]))
        return MockResponse(status: status, headers: [("Content-Type", "application/json")], body: JSONWriter.encode(body))
    }
}
