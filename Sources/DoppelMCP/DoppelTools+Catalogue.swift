import DoppelCore
import DoppelServer

/// The tools, each with its JSON Schema, the argument names it takes, and
/// what it does: the admin call it makes (docs/admin-api.md) or the request
/// it sends through the contract.
extension DoppelTools {
    struct Entry: Sendable {
        /// The tool as `tools/list` describes it: name, description, input schema, annotations.
        let definition: JSON
        let name: String
        let argumentNames: [String]
        let run: @Sendable (DoppelTools, ToolInput) async throws -> ToolResult

        init(
            _ name: String, _ description: String, readOnly: Bool, properties: [(String, JSON)] = [], required: [String] = [],
            run: @escaping @Sendable (DoppelTools, ToolInput) async throws -> ToolResult
        ) {
            var schema = JSONObject([("type", "object"), ("properties", .object(JSONObject(properties))), ("additionalProperties", false)])
            if !required.isEmpty { schema["required"] = .array(required.map { .string($0) }) }
            definition = .object(
                JSONObject([
                    ("name", .string(name)), ("description", .string(description)), ("inputSchema", .object(schema)),
                    ("annotations", ["readOnlyHint": .bool(readOnly), "openWorldHint": false]),
                ]))
            self.name = name
            argumentNames = properties.map(\.0)
            self.run = run
        }
    }

    /// `session`, as every session-scoped tool takes it.
    static let sessionProperty: (String, JSON) = (
        "session",
        [
            "type": "string",
            "description":
                "The Doppel-Session to work in; without it, the agent's own session (its id is in every answer). `default` is the server's own.",
        ]
    )

    static func property(_ name: String, _ type: String, _ description: String, extra: JSON = [:]) -> (String, JSON) {
        var schema = JSONObject([("type", .string(type)), ("description", .string(description))])
        if let extra = extra.objectValue { for (key, value) in extra.pairs { schema[key] = value } }
        return (name, .object(schema))
    }

    /// `text` and `file_name`, as the tools that read one document take them.
    static func document(named name: String) -> [(String, JSON)] {
        [
            property("text", "string", "The document's text (YAML or JSON), at most 1 MiB."),
            property("file_name", "string", "The name it is read under (default \(name); .json for JSON): problems are reported at it."),
        ]
    }

    static let catalogue: [Entry] = [
        Entry(
            "list_endpoints", "The contract's endpoints: id, method, path, auth, summary and the statuses each documents.", readOnly: true
        ) { tools, _ in await tools.admin("GET", "/routes") },
        Entry(
            "send_request",
            "Sends an HTTP request through the contract, in the session, and returns the answer (status, headers, body) with which response answered and why. It is journaled as any client's request.",
            readOnly: false,
            properties: [
                property("method", "string", "GET, POST, PUT, PATCH, DELETE, …"),
                property("path", "string", "The path, with its query string if any: /api/v1/stories?limit=5."),
                property("headers", "object", "Header fields, name to value.", extra: ["additionalProperties": ["type": "string"]]),
                ("body", ["description": "The body: a JSON value (sent as application/json unless headers set Content-Type), or text."]),
                sessionProperty,
            ],
            required: ["method", "path"]
        ) { tools, input in try await tools.send(input) },
        Entry(
            "explain",
            "The session's latest answers from the journal, oldest first, each with why it was chosen (`reason`) and the state it changed (`changes`).",
            readOnly: true,
            properties: [
                property("endpoint", "string", "Only this endpoint's answers."),
                property("status", "integer", "Only answers with this status."),
                property("limit", "integer", "How many of the newest answers (default 10).", extra: ["minimum": 1, "maximum": 1000]),
                sessionProperty,
            ]
        ) { tools, input in
            let limit = try input.int("limit") ?? 10
            guard (1...1_000).contains(limit) else { return failure("explain: `limit` must be from 1 to 1000.") }
            var query = [("session", try tools.session(of: input)), ("limit", String(limit))]
            if let endpoint = try input.string("endpoint") { query.append(("endpoint", endpoint)) }
            if let status = try input.int("status") { query.append(("status", String(status))) }
            return await tools.admin("GET", "/journal", query: query)
        },
        Entry(
            "force_next",
            "Forces an endpoint's next answer in the session to a documented response, by status and/or response name (a 402, a 429, a 503), once. State, clock and scenario stay.",
            readOnly: false,
            properties: [
                property("endpoint", "string", "The endpoint's id (list_endpoints)."),
                property("status", "integer", "A status the endpoint documents."),
                property("response", "string", "A response's name, where one status has several."),
                sessionProperty,
            ],
            required: ["endpoint"]
        ) { tools, input in
            var body = JSONObject([("endpoint", .string(try input.requiredString("endpoint")))])
            if let status = try input.int("status") { body["status"] = .int(status) }
            if let response = try input.string("response") { body["response"] = .string(response) }
            return await tools.admin("POST", "/next", query: [("session", try tools.session(of: input))], body: .object(body))
        },
        Entry(
            "clock",
            "Reads the session's clock, or moves it: `advance` (31d, 2h, 90s; units ms s m h d w mo y), `set` (an ISO 8601 instant), `freeze` (true or false) or `reset` (back to real time). One change a call.",
            readOnly: false,
            properties: [
                property("advance", "string", "How far to move the clock on: 31d, 2h, 1mo."),
                property("set", "string", "The instant to set: 2026-01-01T00:00:00Z."),
                property("freeze", "boolean", "Stop (true) or restart (false) the clock."),
                property("reset", "boolean", "true: back to real time."),
                sessionProperty,
            ]
        ) { tools, input in
            let session = [("session", try tools.session(of: input))]
            var changes: [(String, JSON)] = []
            if let advance = try input.string("advance") { changes.append(("advance", .string(advance))) }
            if let set = try input.string("set") { changes.append(("set", .string(set))) }
            if let freeze = try input.bool("freeze") { changes.append(("freeze", .bool(freeze))) }
            if let reset = try input.bool("reset") { changes.append(("reset", .bool(reset))) }
            guard changes.count <= 1 else {
                return failure("clock takes one change a call; given: \(changes.map { "`\($0.0)`" }.joined(separator: ", ")).")
            }
            guard let change = changes.first else { return await tools.admin("GET", "/clock", query: session) }
            return await tools.admin("POST", "/clock", query: session, body: .object(JSONObject([change])))
        },
        Entry(
            "start_scenario",
            "Starts the session over from a scenario: one loaded with the server (`name`), or one given inline (`scenario`: {given, overrides} as in a scenario file).",
            readOnly: false,
            properties: [
                property("name", "string", "A loaded scenario's name."),
                property("scenario", "object", "An inline scenario: {\"given\": {...}, \"overrides\": [...]}."),
                sessionProperty,
            ]
        ) { tools, input in
            let session = [("session", try tools.session(of: input))]
            switch (try input.string("name"), input.json("scenario")) {
            case (let name?, nil): return await tools.admin("PUT", "/scenario", query: session, body: .object(JSONObject([("name", .string(name))])))
            case (nil, let inline?):
                guard case .object = inline else {
                    return failure("start_scenario: `scenario` must be an object: {\"given\": {...}, \"overrides\": [...]}.")
                }
                return await tools.admin("PUT", "/scenario", query: session, body: inline)
            default: return failure("start_scenario takes `name` or `scenario`, one of them.")
            }
        },
        Entry(
            "run_scenario",
            "Runs a scenario's steps in the session, as `doppel run` does: the session starts over from its `given` and `overrides`, then each request goes through the contract (journaled) and is checked against its `expect`. Each step's outcome, and what differed.",
            readOnly: false,
            properties: [
                property("name", "string", "A loaded scenario's name (the server's --scenarios)."),
                property("text", "string", "A scenario file's YAML, at most 1 MiB; its `contract:` line may be left out (the served contract)."),
                sessionProperty,
            ]
        ) { tools, input in try await tools.runScenario(input) },
        Entry(
            "stop_scenario", "Starts the session over from the plain contract, with no scenario.", readOnly: false, properties: [sessionProperty]
        ) { tools, input in await tools.admin("DELETE", "/scenario", query: [("session", try tools.session(of: input))]) },
        Entry(
            "reset_session", "Forgets the session: its state, clock, sequences, forced answers and scenario.", readOnly: false,
            properties: [sessionProperty]
        ) { tools, input in await tools.admin("POST", "/reset", query: [("session", try tools.session(of: input))]) },
        Entry(
            "get_state", "The session's state: every name the contract declares, as the session holds it now.", readOnly: true,
            properties: [sessionProperty]
        ) { tools, input in await tools.admin("GET", "/state", query: [("session", try tools.session(of: input))]) },
        Entry(
            "coverage",
            "Each documented endpoint and status, reached or not in the session (with `all_sessions`: in every session), and the list of those never reached.",
            readOnly: true,
            properties: [property("all_sessions", "boolean", "Count every session's answers."), sessionProperty]
        ) { tools, input in
            if try input.bool("all_sessions") == true {
                guard try input.string("session") == nil else { return failure("coverage takes `session` or `all_sessions`, not both.") }
                return await tools.admin("GET", "/coverage")
            }
            return await tools.admin("GET", "/coverage", query: [("session", try tools.session(of: input))])
        },
        Entry(
            "verify",
            "Checks how often an endpoint answered in the session: exactly `count`, or between `min` and `max`, or at least once; `status` narrows it. `pass` says whether it held; `near_matches` where the other calls went.",
            readOnly: true,
            properties: [
                property("endpoint", "string", "The endpoint's id."),
                property("status", "integer", "Only answers with this status."),
                property("count", "integer", "Exactly this many.", extra: ["minimum": 0]),
                property("min", "integer", "At least this many.", extra: ["minimum": 0]),
                property("max", "integer", "At most this many.", extra: ["minimum": 0]),
                sessionProperty,
            ],
            required: ["endpoint"]
        ) { tools, input in
            var body = JSONObject([("endpoint", .string(try input.requiredString("endpoint"))), ("session", .string(try tools.session(of: input)))])
            for name in ["status", "count", "min", "max"] { if let value = try input.int(name) { body[name] = .int(value) } }
            return await tools.admin("POST", "/verify", body: .object(body))
        },
        Entry(
            "lint",
            "Checks a contract or an OpenAPI document given as text, as `doppel lint` does: every problem with its line and column.",
            readOnly: true,
            properties: document(named: "contract.yaml"), required: ["text"]
        ) { tools, input in try tools.lint(input) },
        Entry(
            "diff",
            "Lists every change between two versions of a contract or OpenAPI document given as text, each breaking or compatible for a client of the old one, as `doppel diff` does.",
            readOnly: true,
            properties: [
                property("old", "string", "The old version's text, at most 1 MiB."),
                property("new", "string", "The new version's text, at most 1 MiB."),
                property("file_name", "string", "The name both are read under (default contract.yaml; .json for JSON)."),
            ],
            required: ["old", "new"]
        ) { tools, input in try tools.diff(input) },
        Entry(
            "import_openapi",
            "Writes an OpenAPI 3.0/3.1/3.2 or Swagger 2.0 document given as text as a Doppel contract (YAML), as `doppel import` does: ready for state to be added; serving it answers as serving the document.",
            readOnly: true,
            properties: document(named: "openapi.yaml"), required: ["text"]
        ) { tools, input in try tools.importOpenAPI(input) },
    ]
}
