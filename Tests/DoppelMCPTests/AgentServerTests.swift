import DoppelCore
import DoppelServer
import DoppelTestSupport
import Foundation
import Testing

@testable import DoppelMCP

#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
#endif

/// The MCP server of Doppel's tools without a transport: JSON-RPC 2.0 as
/// MCP uses it, message by message; then what `/__doppel/mcp` asks of a
/// POST, and standard input answered many messages at once.
@Suite("MCP server")
struct AgentServerTests {
    static func server() throws -> AgentServer {
        let api = AdminAPI(engine: MockEngine(contract: try ContractLoader.load(file: contractPath("tales.yaml"))))
        return AgentServer(DoppelTools(host: LocalAgentHost(api: api), session: "agent"), version: "9.9.9")
    }

    /// One message in, its answer out (nil: none).
    static func answer(_ server: AgentServer, _ message: String) async throws -> JSON? {
        guard let answer = await server.answer(Array(message.utf8)) else { return nil }
        return try JSONReader.parse(answer)
    }

    /// Messages and what each is answered: a result holding `result`'s
    /// members, an error with `code`, or nothing (`silent`).
    static let messages: [(name: String, message: String, id: JSON, result: [String: JSON]?, code: Int?, silent: Bool)] = [
        (
            "initialize in a version answered",
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            1, ["protocolVersion": "2025-06-18"], nil, false
        ),
        (
            "initialize in a version not answered",
            #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{}}}"#,
            1, ["protocolVersion": "2025-11-25"], nil, false
        ),
        ("initialize without a version", #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#, 1, nil, -32602, false),
        ("ping, a string id", #"{"jsonrpc":"2.0","id":"p-1","method":"ping"}"#, "p-1", [:], nil, false),
        ("an unknown method", #"{"jsonrpc":"2.0","id":2,"method":"prompts/list"}"#, 2, nil, -32601, false),
        ("not JSON", #"{"jsonrpc":"2.0","id":"#, .null, nil, -32700, false),
        ("no method", #"{"jsonrpc":"2.0","id":3}"#, 3, nil, -32600, false),
        ("a null id", #"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, .null, nil, -32600, false),
        ("an id that is an object", #"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, .null, nil, -32600, false),
        ("params not an object", #"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1]}"#, 4, nil, -32602, false),
        ("tools/call without a name", #"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}"#, 5, nil, -32602, false),
        (
            "tools/call with arguments not an object", #"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"clock","arguments":"x"}}"#,
            5, nil, -32602, false
        ),
        (
            "an unknown tool: an error result", #"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope"}}"#, 6, ["isError": true],
            nil, false
        ),
        ("an unknown resource", #"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"doppel://nothing"}}"#, 7, nil, -32002, false),
        ("resources/read without a uri", #"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{}}"#, 7, nil, -32602, false),
        ("a notification", #"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, .null, nil, nil, true),
        ("a client's response", #"{"jsonrpc":"2.0","id":8,"result":{}}"#, .null, nil, nil, true),
        ("an empty batch", "[]", .null, nil, -32600, false),
        ("a batch of notifications", #"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#, .null, nil, nil, true),
    ]

    @Test("Each message is answered as JSON-RPC 2.0 and MCP say", arguments: messages.map(\.name))
    func message(_ name: String) async throws {
        let expected = try #require(Self.messages.first { $0.name == name })
        let answer = try await Self.answer(try Self.server(), expected.message)
        if expected.silent {
            #expect(answer == nil)
            return
        }
        let object = try #require(answer?.objectValue, "\(String(describing: answer))")
        #expect(object["jsonrpc"] == "2.0")
        #expect(object["id"] == expected.id)
        if let code = expected.code {
            #expect(object["error"]?["code"]?.intValue == code, "\(object)")
            #expect(object["error"]?["message"]?.stringValue?.isEmpty == false)
            #expect(object["result"] == nil)
        }
        if let members = expected.result {
            let result = try #require(object["result"]?.objectValue, "\(object)")
            for (key, value) in members { #expect(result[key] == value, "\(key) in \(result)") }
            if members.isEmpty { #expect(result.isEmpty) }
        }
    }

    @Test("initialize says who answers and what it offers; a second is refused; the tools and resources are listed")
    func initializeThenList() async throws {
        let server = try Self.server()
        let first = try #require(
            try await Self.answer(server, #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#))
        #expect(first["result"]?["serverInfo"] == ["name": "doppel", "version": "9.9.9"])
        #expect(first["result"]?["capabilities"]?["tools"] != nil)
        #expect(first["result"]?["capabilities"]?["resources"] != nil)
        #expect(first["result"]?["instructions"]?.stringValue?.contains("session agent") == true)
        let again = try await Self.answer(server, #"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#)
        #expect(again?["error"]?["code"]?.intValue == -32600)

        let tools = try await Self.answer(server, #"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#)?["result"]?["tools"]?.arrayValue ?? []
        #expect(tools.count == DoppelTools.catalogue.count)
        #expect(tools.allSatisfy { $0["inputSchema"]?["type"] == "object" && $0["annotations"]?["readOnlyHint"] != nil })
        let resources = try await Self.answer(server, #"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#)
        #expect(resources?["result"]?["resources"]?.arrayValue?.compactMap { $0["uri"]?.stringValue }.contains("doppel://contract") == true)
        let read = try await Self.answer(
            server, #"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"doppel://session/state"}}"#)
        let content = try #require(read?["result"]?["contents"]?.arrayValue?.first)
        #expect(content["uri"] == "doppel://session/state")
        #expect(try JSONReader.parse(content["text"]?.stringValue ?? "")["session"] == "agent")
    }

    @Test("A batch is answered as an array of its requests' answers, in order; its notifications get none")
    func batch() async throws {
        let answer = try await Self.answer(
            try Self.server(),
            #"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"nope"},{"x":1}]"#
        )
        let answers = try #require(answer?.arrayValue)
        #expect(answers.map { $0["id"] } == [1, 2, .null])
        #expect(answers[0]["result"] == [:])
        #expect(answers.dropFirst().map { $0["error"]?["code"]?.intValue } == [-32601, -32600])
    }

    @Test("A tool call's result carries its text, the value as structured content, and isError for a refusal")
    func toolCall() async throws {
        let server = try Self.server()
        let called = try await Self.answer(
            server,
            #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"force_next","arguments":{"endpoint":"generate-story","status":402}}}"#)
        let result = try #require(called?["result"])
        #expect(result["isError"] == nil)
        #expect(result["content"]?.arrayValue?.first?["type"] == "text")
        let text = try #require(result["content"]?.arrayValue?.first?["text"]?.stringValue)
        #expect(try JSONReader.parse(text) == result["structuredContent"])
        #expect(result["structuredContent"]?["waiting"]?.arrayValue?.count == 1)

        let refused = try await Self.answer(
            server,
            #"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"force_next","arguments":{"endpoint":"generate-story","sesion":"x"}}}"#)
        #expect(refused?["result"]?["isError"] == true)
        #expect(refused?["result"]?["content"]?.arrayValue?.first?["text"]?.stringValue?.contains("`sesion`") == true)
        #expect(refused?["result"]?["structuredContent"] == nil)
    }

    // MARK: /__doppel/mcp

    static func post(_ body: String, headers: [(String, String)]) -> RecordedRequest {
        RecordedRequest(method: "POST", target: "/__doppel/mcp", headers: headers, body: Array(body.utf8))
    }

    static let json = [("accept", "application/json, text/event-stream"), ("content-type", "application/json")]
    static let initialize = #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#

    @Test("Over HTTP: a POST must accept JSON (406), be JSON (415), name a version answered (400); a notification is 202")
    func httpRefusals() async throws {
        let api = AdminAPI(engine: MockEngine(contract: try ContractLoader.load(file: contractPath("tales.yaml"))))
        let host = LocalAgentHost(api: api)
        let agents = AgentSessions(version: "1")
        let html = await agents.answer(
            Self.post(Self.initialize, headers: [("accept", "text/html"), ("content-type", "application/json")]), host: host)
        #expect(html.status == 406)
        let text = await agents.answer(
            Self.post(Self.initialize, headers: [("accept", "application/json"), ("content-type", "text/plain")]), host: host)
        #expect(text.status == 415)
        let broken = await agents.answer(Self.post("{", headers: Self.json), host: host)
        #expect(broken.status == 400)
        #expect(try JSONReader.parse(broken.body)["error"]?["code"]?.intValue == -32700)
        let notRPC = await agents.answer(Self.post(#"{"hello":1}"#, headers: Self.json), host: host)
        #expect(notRPC.status == 400)
        #expect(await agents.count == 0)

        let opened = await agents.answer(Self.post(Self.initialize, headers: Self.json), host: host)
        #expect(opened.status == 200)
        let id = try #require(opened.headers.first { $0.name == "Mcp-Session-Id" }?.value)
        #expect(await agents.count == 1)
        let inSession = Self.json + [("mcp-session-id", id)]
        let unknownVersion = await agents.answer(
            Self.post(#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#, headers: inSession + [("mcp-protocol-version", "1999-01-01")]), host: host)
        #expect(unknownVersion.status == 400)
        #expect(String(decoding: unknownVersion.body, as: UTF8.self).contains("2025-11-25"))
        let ping = await agents.answer(
            Self.post(#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#, headers: inSession + [("mcp-protocol-version", "2025-06-18")]), host: host)
        #expect(ping.status == 200)
        #expect(try JSONReader.parse(ping.body)["result"] == [:])
        let notified = await agents.answer(Self.post(#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, headers: inSession), host: host)
        #expect(notified.status == 202)
        #expect(notified.body.isEmpty)

        // An initialize that fails keeps no session.
        let failed = await agents.answer(Self.post(#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#, headers: Self.json), host: host)
        #expect(failed.status == 200)
        #expect(failed.headers.contains { $0.name == "Mcp-Session-Id" } == false)
        #expect(await agents.count == 1)
    }

    // MARK: Standard input

    @Test("Standard input: 200 messages written at once are each answered once, by id, and the input's end ends the server")
    func manyMessagesOnStandardInput() async throws {
        let input = LineTransportTests.pipe()
        let output = LineTransportTests.pipe()
        let server = try Self.server()
        let serving = Task { try await server.serve(LineTransport(input: input.read, output: output.write)) }
        let lines = (0..<200).map { index in
            index.isMultiple(of: 3)
                ? #"{"jsonrpc":"2.0","id":\#(index),"method":"tools/call","params":{"name":"clock","arguments":{"advance":"1s"}}}"#
                : #"{"jsonrpc":"2.0","id":\#(index),"method":"ping"}"#
        }
        let writer = Thread {
            LineTransportTests.put(Array((lines.joined(separator: "\n") + "\n").utf8), to: input.write)
            close(input.write)
        }
        writer.start()
        try await serving.value
        close(output.write)
        var read: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(output.read, $0.baseAddress!, $0.count) }
            if count <= 0 { break }
            read += chunk[..<count]
        }
        close(input.read)
        close(output.read)
        let answers = try String(decoding: read, as: UTF8.self).split(separator: "\n").map { try JSONReader.parse(String($0)) }
        #expect(answers.count == 200)
        #expect(Set(answers.compactMap { $0["id"]?.intValue }) == Set(0..<200))
        #expect(answers.allSatisfy { $0["result"] != nil })
        // Every clock call took effect once: 67 seconds on the agent's clock.
        let clock = try await Self.answer(server, #"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"clock","arguments":{}}}"#)
        #expect(clock?["result"]?["structuredContent"]?["offset_seconds"]?.numberValue == 67, "\(String(describing: clock))")
    }
}
