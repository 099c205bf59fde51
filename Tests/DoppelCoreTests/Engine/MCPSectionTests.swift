import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

/// A contract's `mcp:` section: an MCP server answered by the engine as
/// endpoints are (contracts/mcp-todo.yaml), without sockets.
@Suite struct MCPSectionTests {
    static func engine() throws -> MockEngine {
        MockEngine(contract: try ContractLoader.load(file: contractPath("mcp-todo.yaml")))
    }

    static func call(_ engine: MockEngine, _ method: String, _ params: JSON? = nil, id: JSON? = 1, session: String = "agent") -> MockResponse {
        var body = JSONObject([("jsonrpc", "2.0"), ("method", .string(method))])
        if let id { body["id"] = id }
        if let params { body["params"] = params }
        return engine.send("POST", "/mcp", json: .object(body), token: nil, session: session)
    }

    static func tool(_ engine: MockEngine, _ name: String, _ arguments: JSON, session: String = "agent") -> MockResponse {
        call(engine, "tools/call", ["name": .string(name), "arguments": arguments], session: session)
    }

    @Test func initializeAnswersTheClientsVersionWhenKnownAndTheServersInfo() throws {
        let engine = try Self.engine()
        let known = Self.call(
            engine, "initialize", ["protocolVersion": "2025-06-18", "capabilities": [:], "clientInfo": ["name": "t", "version": "1"]])
        #expect(known.status == 200)
        #expect(known.json?["result"]?["protocolVersion"] == "2025-06-18")
        #expect(known.json?["result"]?["serverInfo"] == ["name": "doppel-todo", "version": "1.0"])
        #expect(known.json?["result"]?["capabilities"] == ["tools": ["listChanged": false]])
        #expect(known.json?["id"] == 1 && known.json?["jsonrpc"] == "2.0")
        let unknown = Self.call(
            engine, "initialize", ["protocolVersion": "1999-01-01", "capabilities": [:], "clientInfo": ["name": "t", "version": "1"]], id: "a")
        #expect(unknown.json?["result"]?["protocolVersion"] == "2025-11-25" && unknown.json?["id"] == "a")
        let notified = Self.call(engine, "notifications/initialized", id: nil)
        #expect(notified.status == 202 && notified.body.isEmpty)
        #expect(Self.call(engine, "ping").json?["result"] == [:])
        #expect(engine.send("GET", "/mcp", token: nil).status == 405)
    }

    @Test func toolsAreListedWithTheirSchemas() throws {
        let tools = try #require(Self.call(try Self.engine(), "tools/list").json?["result"]?["tools"]?.arrayValue)
        #expect(tools.map { $0["name"] } == ["add_task", "list_tasks", "complete_task"])
        #expect(tools[0]["inputSchema"]?["required"] == ["title"])
        #expect(tools[0]["description"] == "Adds a task to the to-do list.")
    }

    @Test func theSixthTaskIsTheQuotaErrorAndSessionsKeepTheirOwnLists() throws {
        let engine = try Self.engine()
        for n in 1...5 {
            let added = Self.tool(engine, "add_task", ["title": .string("task \(n)")])
            #expect(added.json?["result"]?["isError"] == false)
            #expect(added.json?["result"]?["structuredContent"]?["id"] == .string("t\(n)"))
            #expect(added.json?["result"]?["content"]?.arrayValue?.first?["text"]?.stringValue?.contains("\"task \(n)\"") == true)
        }
        let refused = Self.tool(engine, "add_task", ["title": "one more"])
        #expect(refused.status == 200 && refused.json?["result"]?["isError"] == true)
        #expect(refused.json?["result"]?["structuredContent"] == ["error": "quota_exceeded", "limit": 5, "tasks": 5])
        #expect(refused.json?["result"]?["content"]?.arrayValue?.first?["text"] == "Task limit reached: 5 tasks. Complete or remove one first.")
        #expect(Self.tool(engine, "add_task", ["title": "mine"], session: "other").json?["result"]?["isError"] == false)
        let listed = Self.tool(engine, "list_tasks", [:]).json?["result"]?["structuredContent"]?["tasks"]?.arrayValue
        #expect(listed?.count == 5)
        #expect(Self.tool(engine, "complete_task", ["id": "t2"]).json?["result"]?["structuredContent"]?["done"] == true)
        let unknown = Self.tool(engine, "complete_task", ["id": "t9"])
        #expect(
            unknown.json?["result"]?["isError"] == true
                && unknown.json?["result"]?["content"]?.arrayValue?.first?["text"] == "No task t9; list_tasks shows the ids.")
        let entries = engine.journal.entries.filter { $0.session == "agent" }
        #expect(entries.filter { $0.endpointID == "mcp.add_task" }.count == 6)
        #expect(entries.contains { $0.responseName == "quota-exceeded" && $0.reason?.contains("len(state.tasks) >= data.task_limit") == true })
    }

    @Test func protocolErrorsAreJSONRPCErrors() throws {
        let engine = try Self.engine()
        let invalid = Self.tool(engine, "add_task", ["title": 5])
        #expect(invalid.status == 400 && invalid.json?["error"]?["code"] == -32602)
        #expect(invalid.json?["error"]?["message"] == "Invalid params for tool add_task: arguments/title expected string, got integer")
        let missing = Self.tool(engine, "add_task", [:])
        #expect(missing.json?["error"]?["message"]?.stringValue?.contains("arguments/title is required") == true, "\(missing.json ?? nil)")
        let unknownTool = Self.tool(engine, "delete_everything", [:])
        #expect(unknownTool.status == 400 && unknownTool.json?["error"]?["code"] == -32602)
        #expect(unknownTool.json?["error"]?["data"]?["tools"] == ["add_task", "list_tasks", "complete_task"])
        let unknownMethod = Self.call(engine, "resources/list")
        #expect(unknownMethod.json?["error"]?["code"] == -32601 && unknownMethod.json?["error"]?["message"] == "Method not found: resources/list")
        let notRPC = engine.send("POST", "/mcp", json: ["method": "tools/list"], token: nil)
        #expect(notRPC.status == 400 && notRPC.json?["error"]?["code"] == -32600)
        // Nothing was added by any of them.
        #expect(Self.tool(engine, "list_tasks", [:]).json?["result"]?["structuredContent"]?["tasks"] == [])
    }

    @Test func twoHundredParallelCallsInOneSessionAddExactlyFive() async throws {
        let engine = try Self.engine()
        let outcomes = await withTaskGroup(of: Bool?.self) { group in
            for n in 0..<200 {
                group.addTask {
                    Self.tool(engine, "add_task", ["title": .string("t\(n)")], session: "burst").json?["result"]?["isError"].map { $0 == true }
                }
            }
            var counted: [Bool?: Int] = [:]
            for await outcome in group { counted[outcome, default: 0] += 1 }
            return counted
        }
        #expect(outcomes == [false: 5, true: 195])
    }

    static let lintCases: [(String, String, String)] = [
        ("unknown tool key", "    t:\n      inputs: {}\n      responses: [ { text: hi } ]\n", "6:7"),
        ("bad tool name", "    'two words':\n      responses: [ { text: hi } ]\n", "5:5"),
        ("error code", "    t:\n      responses: [ { error: { code: oops, message: m } } ]\n", "6:37"),
        ("text and content", "    t:\n      responses:\n        - { text: a, content: [] }\n", "7:11"),
        ("no responses", "    t:\n      description: d\n", "5:5"),
        ("bad when", "    t:\n      responses:\n        - { when: nope > 1, text: a }\n", "7:19"),
        ("is_error not a boolean", "    t:\n      responses:\n        - { text: a, is_error: maybe }\n", "7:32"),
    ]

    @Test func isErrorIsABooleanOrAnExpression() {
        for value in ["true", "false", "\"{{ len(arguments) > 1 }}\""] {
            let text = "doppel: 1\nmcp:\n  path: /mcp\n  tools:\n    t:\n      responses:\n        - { text: a, is_error: \(value) }\n"
            #expect(diagnostics(of: text).isEmpty, "is_error: \(value): \(diagnostics(of: text).map(\.message))")
        }
    }

    @Test(arguments: lintCases)
    func lintPlacesEveryProblemAtItsLine(name: String, tools: String, at: String) {
        let text = "doppel: 1\nmcp:\n  path: /mcp\n  tools:\n" + tools
        let found = diagnostics(of: text).map { "\($0.location.line):\($0.location.column): \($0.message)" }
        #expect(found.contains { $0.hasPrefix(at + ":") }, "\(name): \(found)")
    }

    @Test func scenarioStepsCallToolsAndTheirMistakesAreLinted() throws {
        let contract = try ContractLoader.load(file: contractPath("mcp-todo.yaml"))
        let scenario = try ScenarioLoader.load(
            text: "steps:\n  - tool: add_task\n    arguments: { title: x }\n  - mcp: tools/list\n", file: "s.yaml", contract: contract)
        guard case .request(let call) = scenario.steps[0].action, case .json(let body) = call.body else {
            Issue.record("an MCP step is a request with a JSON body")
            return
        }
        #expect(call.method == "POST" && call.path.constantValue == "/mcp")
        let rendered = try body.render(in: EvaluationContext(now: 0))
        #expect(rendered == ["jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ["name": "add_task", "arguments": ["title": "x"]]])
        #expect(scenario.steps.map(\.name) == ["tool add_task", "tools/list"])

        let tales = try ContractLoader.load(file: contractPath("tales.yaml"))
        #expect(
            scenarioProblems("steps:\n  - tool: add_task\n", contract: tales).contains { $0.hasPrefix("2:11:") && $0.contains("no 'mcp:' section") })
        #expect(scenarioProblems("steps:\n  - tool: add_task\n    json: {}\n", contract: contract).contains { $0.hasPrefix("3:11:") })
        #expect(scenarioProblems("steps:\n  - tool: add_task\n    params: {}\n", contract: contract).contains { $0.contains("takes 'arguments'") })
    }

    /// A tool's answer may be late or broken, as an endpoint's may.
    @Test func toolAnswersTakeDelaysAndFaults() throws {
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                state: { counters: { calls: 0 } }
                mcp:
                  tools:
                    search:
                      responses:
                        - when: state.calls == 2
                          fault: connection_reset
                          effects: [ "state.calls += 1" ]
                        - delay: 250ms
                          effects: [ "state.calls += 1" ]
                          text: "found {{ state.calls }}"
                """))
        func call() -> Decision {
            let body = JSONWriter.encode(["jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ["name": "search", "arguments": [:]]])
            return engine.decided(
                RecordedRequest(method: "POST", target: "/mcp", headers: [(name: "Content-Type", value: "application/json")], body: body))
        }
        let first = call()
        #expect(first.delay == 0.25 && first.delivery.kind == .whole)
        #expect(call().response?.json?["result"]?["content"]?.arrayValue?.first?["text"] == "found 2")
        #expect(call().delivery.kind == .fault(.connectionReset), "the third call breaks, as documented")
    }
}
