import DoppelCore
import DoppelRunner
import DoppelServer
import DoppelTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Testing

@testable import DoppelMCP

/// `/__doppel/mcp` over loopback: MCP sessions opened, used and closed,
/// the admin token required, and many agents at once each in a Doppel
/// session of its own.
@Suite("MCP over Streamable HTTP")
struct AgentSessionsTests {
    static let token = "mcp-test-token"

    /// A server of tales.yaml with the MCP endpoint and an admin token, for `body`.
    static func serving(_ body: (TestClient, AgentSessions) async throws -> Void) async throws {
        var configuration = ServerConfiguration.testing
        configuration.adminToken = token
        let engine = MockEngine(contract: try ContractLoader.load(file: contractPath("tales.yaml")), configuration: configuration)
        let agents = AgentSessions(version: "test")
        let (ports, announce) = AsyncStream.makeStream(of: Int.self)
        let app = buildApplication(slot: EngineSlot(engine), configuration: configuration, recorder: nil, agents: agents) { port in
            announce.yield(port)
            announce.finish()
        }
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: Logger(label: "mcp")))
        let task = Task { try await group.run() }
        defer { task.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        try await body(TestClient(base: URL(string: "http://127.0.0.1:\(port)")!, maxConnections: 32), agents)
        await group.triggerGracefulShutdown()
    }

    static func rpc(_ client: TestClient, _ method: String, _ params: JSON, id: String?, token: String? = token) async throws -> HTTPResult {
        try await MCPCalls.rpc(client, method, params, id: id, token: token)
    }

    static let initialize = MCPCalls.initialize

    static func tool(_ name: String, _ arguments: JSONObject) -> JSON { MCPCalls.tool(name, arguments) }

    static func open(_ client: TestClient) async throws -> (id: String, session: String) {
        try #require(try await MCPCalls.open(client, token: token))
    }

    @Test("An MCP session is opened by initialize, its tools reach the server's sessions, and it is closed by DELETE")
    func lifecycle() async throws {
        try await Self.serving { client, agents in
            #expect(try await Self.rpc(client, "initialize", Self.initialize, id: nil, token: nil).status == 401)
            #expect(try await Self.rpc(client, "tools/list", .object(JSONObject()), id: nil).status == 400)
            #expect(try await Self.rpc(client, "tools/list", .object(JSONObject()), id: "no-such-session").status == 404)
            #expect(try await client.send("GET", "/__doppel/mcp", token: nil, headers: ["Doppel-Admin-Token": Self.token]).status == 405)

            let (id, session) = try await Self.open(client)
            let listed = try await Self.rpc(client, "tools/list", .object(JSONObject()), id: id)
            #expect(listed.json?["result"]?["tools"]?.arrayValue?.count == DoppelTools.catalogue.count)
            let forced = try await Self.rpc(
                client, "tools/call", Self.tool("force_next", JSONObject([("endpoint", "generate-story"), ("status", 402)])), id: id)
            #expect(forced.json?["result"]?["isError"] == nil, "\(forced.json ?? .null)")
            // A client over HTTP in the agent's session gets the forced answer.
            let generated = try await client.send(
                "POST", "/api/v1/stories/generate",
                json: ["language": "ru", "child_id": "123e4567-e89b-12d3-a456-426614174000", "story_type": "child"], session: session)
            #expect(generated.status == 402)
            #expect(generated.json?["limit_info"] != nil)

            #expect(await agents.count == 1)
            #expect(
                try await client.send("DELETE", "/__doppel/mcp", token: nil, headers: ["Mcp-Session-Id": id, "Doppel-Admin-Token": Self.token]).status
                    == 200)
            #expect(await agents.count == 0)
            #expect(try await Self.rpc(client, "tools/list", .object(JSONObject()), id: id).status == 404)
        }
    }

    @Test("Forty agents at once: each in a Doppel session of its own, each sees its own forced 402 and only its own answers")
    func manyAgentsApart() async throws {
        try await Self.serving { client, agents in
            let outcomes = try await withThrowingTaskGroup(of: (String, Int?, [String]).self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let (id, session) = try await Self.open(client)
                        // Every other agent forces its next generate to 402; the rest get the contract's 404.
                        if index.isMultiple(of: 2) {
                            _ = try await Self.rpc(
                                client, "tools/call", Self.tool("force_next", JSONObject([("endpoint", "generate-story"), ("status", 402)])), id: id)
                        }
                        let generate = JSONObject([
                            ("method", "POST"), ("path", "/api/v1/stories/generate"),
                            ("headers", .object(JSONObject([("Authorization", .string("Bearer \(sampleJWT)"))]))),
                            ("body", ["language": "ru", "child_id": "123e4567-e89b-12d3-a456-426614174000", "story_type": "child"]),
                        ])
                        let sent = try await Self.rpc(client, "tools/call", Self.tool("send_request", generate), id: id)
                        let explained = try await Self.rpc(client, "tools/call", Self.tool("explain", JSONObject()), id: id)
                        let sessions = (explained.json?["result"]?["structuredContent"]?["entries"]?.arrayValue ?? []).compactMap {
                            $0["session"]?.stringValue
                        }
                        return (
                            session, sent.json?["result"]?["structuredContent"]?["status"]?.intValue,
                            sessions + [index.isMultiple(of: 2) ? "forced" : "plain"]
                        )
                    }
                }
                var all: [(String, Int?, [String])] = []
                for try await outcome in group { all.append(outcome) }
                return all
            }
            #expect(Set(outcomes.map(\.0)).count == 40)
            #expect(outcomes.filter { $0.2.last == "forced" }.allSatisfy { $0.1 == 402 })
            #expect(outcomes.filter { $0.2.last == "plain" }.allSatisfy { $0.1 == 404 })
            #expect(outcomes.filter { $0.1 == 402 }.count == 20)
            #expect(outcomes.allSatisfy { $0.2.dropLast() == [$0.0] }, "\(outcomes)")
            #expect(await agents.count == 40)
        }
    }

    @Test("At most 100 MCP sessions are kept: 130 opened at once leave 100, and the one idle longest makes room for the next")
    func sessionsAreBounded() async throws {
        try await Self.serving { client, agents in
            let first = try await Self.open(client)
            // Each initialize is answered with a session: none is refused for want of room. (A session opened here may be
            // closed again by a later one before its first call, being the idlest; so opens are counted, not calls.)
            let opened = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<130 {
                    group.addTask { try await Self.rpc(client, "initialize", Self.initialize, id: nil).header("Mcp-Session-Id") != nil }
                }
                var count = 0
                for try await ok in group where ok { count += 1 }
                return count
            }
            #expect(opened == 130)
            #expect(await agents.count == AgentSessions.maximumSessions)
            // The first, idle longest, was closed to make room: its client is told to initialize again.
            #expect(try await Self.rpc(client, "tools/list", .object(JSONObject()), id: first.id).status == 404)
        }
    }
}
