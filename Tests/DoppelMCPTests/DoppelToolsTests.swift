import DoppelCore
import DoppelServer
import DoppelTestSupport
import Testing

@testable import DoppelMCP

/// Doppel's MCP tools without a transport: what each call answers and
/// changes, through the admin API and the engine they share.
@Suite("MCP tools")
struct DoppelToolsTests {
    static let token =
        "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjJiOGMxZS03ZDRhLTRlNTktOWIxYy0yYTZmMGU4ZDRjNzEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCJ9.c2lnbmF0dXJl"

    static func api() throws -> AdminAPI {
        AdminAPI(engine: MockEngine(contract: try ContractLoader.load(file: contractPath("tales.yaml"))))
    }

    /// A generate request, as a client of the tales API sends it.
    static let generate: [String: JSON] = [
        "method": "POST", "path": "/api/v1/stories/generate", "headers": ["Authorization": .string(token)],
        "body": ["language": "ru", "child_id": "123e4567-e89b-12d3-a456-426614174000", "story_type": "child"],
    ]

    /// The structured answer of a call that succeeded.
    static func answer(_ result: ToolResult, sourceLocation: Testing.SourceLocation = #_sourceLocation) -> JSON {
        #expect(!result.isError, "\(result.text)", sourceLocation: sourceLocation)
        return result.structuredContent ?? .null
    }

    static func text(_ result: ToolResult) -> String {
        result.text
    }

    @Test("A forced 402 answers the next generate with the session's limit_info, and explain says why")
    func forcedPaymentRequired() async throws {
        let tools = DoppelTools(host: LocalAgentHost(api: try Self.api()), session: "agent")
        let forced = Self.answer(await tools.call("force_next", arguments: ["endpoint": "generate-story", "status": 402]))
        #expect(forced["waiting"]?.arrayValue?.count == 1)

        let sent = Self.answer(await tools.call("send_request", arguments: Self.generate))
        #expect(sent["session"]?.stringValue == "agent")
        #expect(sent["status"]?.intValue == 402)
        #expect(sent["body"]?["error_code"]?.stringValue == "MONTHLY_LIMIT_EXCEEDED")
        #expect(sent["body"]?["limit_info"]?["current_plan"]?.stringValue == "free")
        #expect(sent["reason"]?.stringValue?.contains("forced") == true, "\(sent)")

        // The next one is the contract's own choice again: the child is unknown.
        #expect(Self.answer(await tools.call("send_request", arguments: Self.generate))["status"]?.intValue == 404)

        let explained = Self.answer(await tools.call("explain", arguments: ["endpoint": "generate-story"]))
        let entries = explained["entries"]?.arrayValue ?? []
        #expect(entries.map { $0["status"]?.intValue } == [402, 404])
        #expect(entries.first?["reason"]?.stringValue?.contains("POST /__doppel/next") == true, "\(explained)")
        #expect(entries.allSatisfy { $0["session"]?.stringValue == "agent" })
    }

    /// Calls each refused with a message naming what to change.
    static let refusals: [(name: String, tool: String, arguments: [String: JSON], says: String)] = [
        ("unknown tool", "force", ["endpoint": "generate-story"], "There is no tool 'force'"),
        ("misspelt argument", "force_next", ["endpoint": "generate-story", "sesion": "x"], "unknown: `sesion`"),
        ("missing argument", "force_next", ["status": 402], "needs `endpoint`"),
        ("wrong type", "force_next", ["endpoint": "generate-story", "status": "402"], "`status` must be an integer"),
        ("undocumented status", "force_next", ["endpoint": "generate-story", "status": 418], "418"),
        ("unknown endpoint", "verify", ["endpoint": "no-such-endpoint"], "no-such-endpoint"),
        ("limit out of range", "explain", ["limit": 5000], "from 1 to 1000"),
        ("two clock changes", "clock", ["advance": "1d", "freeze": true], "one change a call"),
        ("bad clock change", "clock", ["advance": "soon"], "must be a duration"),
        ("unknown scenario", "start_scenario", ["name": "no-such-scenario"], "no-such-scenario"),
        ("invalid session", "reset_session", ["session": "two words"], "session"),
        ("admin path", "send_request", ["method": "GET", "path": "/__doppel/state"], "admin API"),
        ("relative path", "send_request", ["method": "GET", "path": "api/v1/free-stories"], "must start with /"),
        ("header injection", "send_request", ["method": "GET", "path": "/api/v1/free-stories", "headers": ["x-a": "b\r\nx-b: c"]], "header"),
        ("folder in a file name", "lint", ["text": "doppel: 1", "file_name": "../contract.yaml"], "plain file name"),
        ("document too large", "lint", ["text": .string(String(repeating: "#", count: (1 << 20) + 1))], "the most a document may be"),
        ("diff of a broken version", "diff", ["old": "doppel: 1\nendpoints: {}\n", "new": "doppel: [\n"], "new-contract.yaml:"),
        ("session as a header", "send_request", ["method": "GET", "path": "/", "headers": ["Doppel-Session": "other"]], "as `session`"),
        ("scenario by name and text", "run_scenario", ["name": "tales/generation-failed", "text": "steps: []"], "one of them"),
        ("unknown scenario to run", "run_scenario", ["name": "tales/nothing"], "no scenario named 'tales/nothing'"),
        ("scenario that does not load", "run_scenario", ["text": "steps:\n  - request: FETCH /x\n"], "agent-scenario.yaml:2:"),
        (
            "body over the server's limit", "send_request",
            ["method": "POST", "path": "/api/v1/children", "body": .string(String(repeating: "x", count: (1 << 20) + 1))],
            "the most a request may send is 1048576"
        ),
    ]

    /// What a call could change in the agent's session: its state, its
    /// clock's offset and freezing, its journal and its forced answers.
    static func everything(_ tools: DoppelTools) async -> [JSON?] {
        let clock = answer(await tools.call("clock", arguments: [:]))
        return [
            answer(await tools.call("get_state", arguments: [:])), clock["offset_seconds"], clock["frozen"],
            answer(await tools.call("explain", arguments: ["limit": 1000])),
            try? JSONReader.parse(
                await tools.host.admin(RecordedRequest(method: "GET", target: "/__doppel/next?session=agent", headers: [("host", "127.0.0.1")])).body),
        ]
    }

    @Test("Bad input gets an error result saying what to change, and changes nothing", arguments: refusals.map(\.name))
    func badInputChangesNothing(_ name: String) async throws {
        let refusal = try #require(Self.refusals.first { $0.name == name })
        let tools = DoppelTools(host: LocalAgentHost(api: try Self.api()), session: "agent")
        _ = Self.answer(await tools.call("send_request", arguments: ["method": "GET", "path": "/api/v1/free-stories"]))
        let before = await Self.everything(tools)

        let result = await tools.call(refusal.tool, arguments: refusal.arguments)
        #expect(result.isError == true)
        #expect(Self.text(result).contains(refusal.says), "\(Self.text(result))")

        #expect(await Self.everything(tools) == before)
    }

    @Test("Two agents in two sessions of one server never see each other's answers, forced answers or clocks")
    func sessionsAreApart() async throws {
        let api = try Self.api()
        let first = DoppelTools(host: LocalAgentHost(api: api))
        let second = DoppelTools(host: LocalAgentHost(api: api))
        #expect(first.session != second.session)
        #expect(first.session.hasPrefix("mcp-"))

        _ = Self.answer(await first.call("force_next", arguments: ["endpoint": "generate-story", "status": 402]))
        _ = Self.answer(await first.call("clock", arguments: ["advance": "40d"]))
        #expect(Self.answer(await second.call("send_request", arguments: Self.generate))["status"]?.intValue == 404)
        #expect(Self.answer(await first.call("send_request", arguments: Self.generate))["status"]?.intValue == 402)

        let seen = Self.answer(await second.call("explain", arguments: [:]))["entries"]?.arrayValue ?? []
        #expect(seen.count == 1)
        #expect(seen.allSatisfy { $0["session"]?.stringValue == second.session })
        #expect(Self.answer(await second.call("clock", arguments: [:]))["offset_seconds"]?.numberValue == 0)
        // Naming a session reaches it: the first agent's answers, read by the second.
        #expect(Self.answer(await second.call("explain", arguments: ["session": .string(first.session)]))["entries"]?.arrayValue?.count == 1)
    }

    @Test("Every tool declares an object schema whose properties are exactly the arguments it takes")
    func schemas() {
        for entry in DoppelTools.catalogue {
            guard case .object(let schema)? = entry.definition["inputSchema"], case .object(let properties)? = schema["properties"] else {
                Issue.record("\(entry.name): no object schema")
                continue
            }
            #expect(entry.definition["name"]?.stringValue == entry.name)
            #expect(schema["type"] == "object")
            #expect(schema["additionalProperties"] == false)
            #expect(Set(properties.keys) == Set(entry.argumentNames), "\(entry.name)")
            #expect(entry.definition["description"]?.stringValue?.isEmpty == false)
        }
        #expect(Set(DoppelTools.catalogue.map(\.name)).count == DoppelTools.catalogue.count)
    }

    static let twoEndpoints = """
        doppel: 1
        endpoints:
          list: { request: GET /items, auth: none, responses: [ { body: { items: [] } } ] }
          show: { request: "GET /items/{id}", auth: none, responses: [ { body: { id: "{{ path.id }}" } } ] }
        """

    @Test("lint reports every problem of a text at its line and column, under the file name given, reading no file beside it")
    func lint() async throws {
        let tools = DoppelTools(host: LocalAgentHost(api: try Self.api()), session: "agent")
        let clean = Self.answer(await tools.call("lint", arguments: ["text": .string(Self.twoEndpoints)]))
        #expect(clean["valid"] == true)
        #expect(clean["errors"]?.intValue == 0)

        let broken =
            Self.twoEndpoints.replacingOccurrences(of: "\"GET /items/{id}\"", with: "FETCH items") + """

                  secret: { request: GET /secret, auth: none, responses: [ { file: ../../../../etc/passwd } ] }
                """
        let found = Self.answer(await tools.call("lint", arguments: ["text": .string(broken), "file_name": "shop.yaml"]))
        #expect(found["valid"] == false)
        let problems = found["problems"]?.arrayValue ?? []
        #expect(problems.count >= 2, "\(found)")
        #expect(problems.contains { $0["line"]?.intValue == 4 && $0["text"]?.stringValue?.hasPrefix("shop.yaml:4:") == true }, "\(problems)")
        #expect(problems.contains { $0["line"]?.intValue == 5 && $0["message"]?.stringValue?.contains("outside") == true }, "\(problems)")
        #expect(!JSONWriter.encodeString(found).contains("root:"))
        #expect(!JSONWriter.encodeString(found).contains("doppel-mcp-"))
    }

    @Test("diff lists a removed endpoint as breaking and an added one as compatible")
    func diff() async throws {
        let tools = DoppelTools(host: LocalAgentHost(api: try Self.api()), session: "agent")
        let old = Self.twoEndpoints
        let new = """
            doppel: 1
            endpoints:
              list: { request: GET /items, auth: none, responses: [ { body: { items: [] } } ] }
              create: { request: POST /items, auth: none, responses: [ { status: 201, body: { id: "1" } } ] }
            """
        let changes = Self.answer(await tools.call("diff", arguments: ["old": .string(old), "new": .string(new)]))
        #expect(changes["breaking"]?.intValue == 1, "\(changes)")
        #expect(changes["compatible"]?.intValue == 1, "\(changes)")
        let listed = changes["changes"]?.arrayValue ?? []
        #expect(listed.contains { $0["breaking"] == true && $0["endpoint"]?.stringValue?.contains("/items/") == true }, "\(listed)")
    }

    @Test("import_openapi writes a document as a contract that lints clean; a text that is no OpenAPI document is refused")
    func importOpenAPI() async throws {
        let tools = DoppelTools(host: LocalAgentHost(api: try Self.api()), session: "agent")
        let document = """
            {"openapi": "3.1.0", "info": {"title": "Pets", "version": "1"},
             "paths": {"/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok",
               "content": {"application/json": {"example": [{"name": "Rex"}]}}}}}}}}
            """
        let imported = Self.answer(await tools.call("import_openapi", arguments: ["text": .string(document), "file_name": "pets.json"]))
        let contract = try #require(imported["contract"]?.stringValue)
        #expect(contract.contains("listPets"))
        #expect(Self.answer(await tools.call("lint", arguments: ["text": .string(contract)]))["valid"] == true)

        let refused = await tools.call("import_openapi", arguments: ["text": .string(Self.twoEndpoints)])
        #expect(refused.isError == true)
        #expect(Self.text(refused).contains("openapi.yaml:1:1: error: not an OpenAPI document"), "\(Self.text(refused))")
    }

    @Test("Resources: the contract, its OpenAPI export and the agent's session state; an unknown one is MCP's -32002")
    func resources() async throws {
        let tools = DoppelTools(host: LocalAgentHost(api: try Self.api()), session: "agent")
        #expect(Set(tools.resources.map(\.uri)) == ["doppel://contract", "doppel://contract/openapi", "doppel://session/state"])
        func read(_ uri: String) async throws -> JSON? {
            try JSONReader.parse(Array(try await tools.read(uri).utf8))
        }
        #expect(try await read("doppel://contract/openapi")?["openapi"]?.stringValue?.hasPrefix("3.1") == true)
        #expect(try await read("doppel://contract")?["endpoints"]?.arrayValue?.isEmpty == false)
        _ = await tools.call("clock", arguments: ["advance": "1d"])
        _ = Self.answer(
            await tools.call(
                "send_request",
                arguments: [
                    "method": "POST", "path": "/api/v1/subscription/purchase?plan_tier=premium&billing_cycle=monthly&payment_method=card",
                    "headers": ["Authorization": .string(Self.token)],
                ]))
        #expect(try await read("doppel://session/state")?["state"]?["plan"]?.stringValue == "premium")
        let unknown = await #expect(throws: AgentServer.Failure.self) { try await tools.read("doppel://nothing") }
        #expect(unknown?.code == -32002)
    }

    /// An echo of the request's text body, as large as the test sends.
    static let echo = """
        doppel: 1
        endpoints:
          echo:
            request: POST /echo
            body: { content_type: text/plain }
            responses: [ { content_type: text/plain, text: "{{ body }}" } ]
        """

    /// The host's own limit (`--max-body-size`), not the default.
    struct SmallHost: AgentHost {
        let inner: LocalAgentHost
        var engine: MockEngine { inner.engine }
        var maxBodySize: Int { 1024 }
        var scenarios: ScenarioCatalog { inner.scenarios }
        func admin(_ request: RecordedRequest) async -> MockResponse { await inner.admin(request) }
        func send(_ request: RecordedRequest) async -> MockResponse { await inner.send(request) }
    }

    @Test("send_request takes bodies up to the host's own limit, and shows at most 64 KiB of an answer, saying it cut it")
    func bodiesAreBounded() async throws {
        let api = AdminAPI(engine: MockEngine(contract: try ContractLoader.load(text: Self.echo, file: "echo.yaml")))
        let small = DoppelTools(host: SmallHost(inner: LocalAgentHost(api: api)), session: "agent")
        let text = ["method": JSON.string("POST"), "path": "/echo", "headers": ["Content-Type": "text/plain"]]
        let fits = Self.answer(
            await small.call("send_request", arguments: text.merging(["body": .string(String(repeating: "a", count: 1024))]) { $1 }))
        #expect(fits["status"] == 200 && fits["truncated"] == false && fits["body_bytes"] == 1024)
        let refused = await small.call("send_request", arguments: text.merging(["body": .string(String(repeating: "a", count: 1025))]) { $1 })
        #expect(refused.isError == true && Self.text(refused).contains("the most a request may send is 1024"), "\(Self.text(refused))")

        let tools = DoppelTools(host: LocalAgentHost(api: api), session: "agent")
        // 100,000 bytes of two-byte characters: the cut at 64 KiB falls inside none of them.
        let long = String(repeating: "ж", count: 50_000)
        let answer = Self.answer(await tools.call("send_request", arguments: text.merging(["body": .string(long)]) { $1 }))
        #expect(answer["truncated"] == true && answer["body_bytes"] == 100_000)
        #expect(answer["body"]?.stringValue == String(repeating: "ж", count: 32 << 10))
        let shown = await tools.call("send_request", arguments: text.merging(["body": .string(long)]) { $1 })
        #expect(Self.text(shown).utf8.count < 200_000, "the text form is bounded too")
    }

    /// Tales with its scenarios loaded, as `doppel serve --scenarios scenarios` has them.
    static func withScenarios() throws -> AdminAPI {
        let contract = try ContractLoader.load(file: contractPath("tales.yaml"))
        let catalog = try ScenarioCatalog.load(directory: repositoryRoot.appendingPathComponent("scenarios").path, contract: contract)
        return AdminAPI(engine: MockEngine(contract: contract), catalog: catalog)
    }

    @Test("run_scenario runs a loaded scenario's steps in the agent's session, journaled, and says each step's outcome")
    func runsALoadedScenario() async throws {
        let tools = DoppelTools(host: LocalAgentHost(api: try Self.withScenarios()), session: "agent")
        let run = Self.answer(await tools.call("run_scenario", arguments: ["name": "tales/generation-failed"]))
        #expect(run["passed"] == true && run["failed"] == 0 && run["session"] == "agent", "\(run)")
        #expect(run["steps"]?.arrayValue?.map { $0["outcome"]?.stringValue } == ["passed", "passed", "passed"])
        #expect(run["steps"]?.arrayValue?[1]["summary"] == "POST /api/v1/stories/generate → 500")
        let explained = Self.answer(await tools.call("explain", arguments: ["limit": 10]))
        #expect(explained["entries"]?.arrayValue?.map { $0["status"]?.intValue } == [200, 500, 200], "\(explained)")
        // Another session saw none of it.
        let other = Self.answer(await tools.call("explain", arguments: ["session": "someone-else"]))
        #expect(other["entries"]?.arrayValue?.isEmpty == true)
    }

    @Test("run_scenario runs a scenario given as text, without its contract line, and lists what differed")
    func runsAScenarioGivenAsText() async throws {
        let tools = DoppelTools(host: LocalAgentHost(api: try Self.withScenarios()), session: "agent")
        let text = """
            headers: { Authorization: "\(Self.token)" }
            given: { state: { plan: premium } }
            steps:
              - request: GET /api/v1/free-stories
                expect: { status: 200 }
              - name: a wrong expectation
                request: GET /api/v1/free-stories
                expect: { status: 201 }
            """
        let run = Self.answer(await tools.call("run_scenario", arguments: ["text": .string(text)]))
        #expect(run["passed"] == false && run["failed"] == 1, "\(run)")
        let failed = try #require(run["steps"]?.arrayValue?.last)
        #expect(failed["name"] == "a wrong expectation" && failed["outcome"] == "failed")
        #expect(failed["details"]?.arrayValue?.first?.stringValue?.hasPrefix("status: expected 201, got 200") == true, "\(failed)")
    }

    @Test("A socket step of run_scenario fails saying it needs a served port; the other steps run")
    func socketStepsNeedAServer() async throws {
        let contract = try ContractLoader.load(file: contractPath("realtime-demo.yaml"))
        let tools = DoppelTools(host: LocalAgentHost(api: AdminAPI(engine: MockEngine(contract: contract))), session: "agent")
        let text = """
            headers: { Authorization: Bearer t }
            steps:
              - request: GET /v1/subscriptions
                expect: { status: 200 }
              - socket: GET /v1/live
            """
        let run = Self.answer(await tools.call("run_scenario", arguments: ["text": .string(text)]))
        #expect(run["steps"]?.arrayValue?.map { $0["outcome"]?.stringValue } == ["passed", "failed"], "\(run)")
        #expect(run["steps"]?.arrayValue?.last?["details"]?.arrayValue?.first?.stringValue?.contains("needs a server to connect to") == true)
    }
}
