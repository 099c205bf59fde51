/// `mcp:`: an MCP server the contract describes (tools with input schemas,
/// each answered by responses chosen as an endpoint's are), served over
/// MCP's Streamable HTTP transport at `path` as JSON answers.
///
/// The section is rewritten into endpoints of the contract before they are
/// read, one per JSON-RPC method and one per tool (`mcp.TOOL`), whose
/// `match` picks the request's `method` and tool name. So a tool's answers
/// are chosen by the same `when`, `let`, state and effects as an HTTP
/// response's; its calls are journaled, counted by verify and coverage,
/// and kept per `Doppel-Session` like any request's; and every problem is
/// reported at the line the user wrote, since the rewritten endpoints hold
/// the user's own nodes (only the JSON-RPC wrapping is made here, placed
/// at the `mcp:` key).
extension ContractLoader {
    static let mcpKeys: Set<String> = ["path", "server", "instructions", "auth", "tools"]
    static let mcpToolKeys: Set<String> = ["description", "title", "input_schema", "output_schema", "responses"]
    static let mcpResponseKeys: Set<String> = [
        "name", "when", "let", "effects", "delay", "fault", "text", "content", "structured", "is_error", "error", "description",
    ]
    static let mcpErrorKeys: Set<String> = ["code", "message", "data"]
    static let mcpServerKeys: Set<String> = ["name", "version"]
    /// The MCP protocol versions the rewritten server answers `initialize` with (the client's own when it is one of them).
    static let mcpVersions = ["2025-11-25", "2025-06-18", "2025-03-26"]

    /// The endpoints `mcp:` stands for, as (id, node) entries of `endpoints`.
    mutating func mcpEndpoints(_ node: SourceNode?, info: Contract.Info) -> [(name: String, node: SourceNode)] {
        guard let node else { return [] }
        guard let mcp = MappingReader(node, allowed: Self.mcpKeys, context: "'mcp'", diagnostics: &diagnostics) else { return [] }
        let make = NodeMaker(at: node)
        let path = mcp.string("path", diagnostics: &diagnostics) ?? "/mcp"
        guard path.hasPrefix("/"), !path.contains("{") else {
            diagnostics.error("'path' of 'mcp' must be a path like /mcp, without parameters", at: mcp["path"]?.location ?? node.location)
            return []
        }
        var serverName = info.title
        var serverVersion = info.version
        if let server = mcp["server"],
            let reader = MappingReader(server, allowed: Self.mcpServerKeys, context: "'server' of 'mcp'", diagnostics: &diagnostics)
        {
            serverName = reader.string("name", diagnostics: &diagnostics) ?? serverName
            serverVersion = reader.string("version", diagnostics: &diagnostics) ?? serverVersion
        }
        let rpc = JSONRPCNodes(make: make, request: make.text("POST \(path)"), auth: mcp["auth"])
        var entries = [
            rpc.initialize(serverName: serverName, serverVersion: serverVersion, instructionsNode: mcp["instructions"]), rpc.notification(),
            rpc.ping(),
        ]
        var listed: [SourceNode] = []
        var names: [String] = []
        for tool in MappingReader.entries(of: mcp["tools"] ?? make.mapping([]), context: "'tools' of 'mcp'", diagnostics: &diagnostics) {
            guard let served = mcpTool(tool, rpc: rpc) else { continue }
            names.append(tool.name)
            listed.append(served.listed)
            entries.append(served.entry)
        }
        entries.insert(rpc.toolsList(listed), at: 3)
        entries.append(rpc.unknown(names))
        // The server offers no stream of its own (GET) and no session to end (DELETE).
        entries += ["GET", "DELETE"].map { rpc.notOffered($0, path: path) }
        return entries
    }

    /// A tool: its entry in `tools/list`, and its endpoint (`mcp.NAME`); nil for one that cannot be served (its problems reported).
    private mutating func mcpTool(
        _ tool: (name: String, keyNode: SourceNode, value: SourceNode), rpc: JSONRPCNodes
    ) -> (listed: SourceNode, entry: (name: String, node: SourceNode))? {
        let make = rpc.make
        guard let reader = MappingReader(tool.value, allowed: Self.mcpToolKeys, context: "tool '\(tool.name)'", diagnostics: &diagnostics)
        else { return nil }
        guard tool.name.range(of: "^[A-Za-z0-9_.-]{1,128}$", options: .regularExpression) != nil else {
            diagnostics.error(
                "tool name '\(tool.name)' must be 1 to 128 letters, digits, '_', '-' or '.' (MCP's tool names)", at: tool.keyNode.location)
            return nil
        }
        let schema = reader["input_schema"] ?? make.mapping([("type", make.text("object"))])
        var description: [(String, SourceNode)] = []
        if let text = reader["description"] { description.append(("description", text)) }
        if let title = reader["title"] { description.append(("title", title)) }
        var outputSchema: [(String, SourceNode)] = []
        if let output = reader["output_schema"] { outputSchema.append(("outputSchema", output)) }
        let listed = make.mapping([("name", make.text(tool.name))] + description + [("inputSchema", schema)] + outputSchema)

        var answers: [SourceNode] = []
        for item in reader["responses"]?.sequenceItems ?? [] {
            if let response = mcpResponse(item, tool: tool.name, rpc: rpc) { answers.append(response) }
        }
        if reader["responses"] == nil {
            diagnostics.error("tool '\(tool.name)' needs 'responses': what a call of it answers", at: tool.keyNode.location)
        } else if answers.isEmpty, reader["responses"]?.sequenceItems == nil {
            diagnostics.error("'responses' of tool '\(tool.name)' must be a list", at: reader["responses"]!.location)
        }
        return (
            listed,
            (
                "mcp.\(tool.name)",
                rpc.endpoint(
                    [
                        ("summary", make.text("MCP tool \(tool.name)")),
                        ("match", make.plain("body.method == 'tools/call' and body.params.name == '\(tool.name)'")),
                    ]
                        + rpc.call(
                            method: rpc.constant("tools/call"),
                            params: make.mapping([
                                ("type", make.text("object")), ("required", make.sequence([make.text("name")])),
                                ("properties", make.mapping([("name", rpc.constant(tool.name)), ("arguments", schema)])),
                            ]),
                            // Arguments that break the tool's input schema: JSON-RPC's invalid params.
                            invalid: make.mapping([
                                ("status", make.plain("400")),
                                (
                                    "body",
                                    rpc.failure(
                                        code: -32602,
                                        message:
                                            "Invalid params for tool \(tool.name): {{ join(map(errors, e => replace(e.pointer, '/body/params/arguments', 'arguments') + ' ' + e.message), '; ') }}",
                                        data: make.mapping([("errors", make.template("{{ errors }}"))]))
                                ),
                            ])) + [
                            ("let", make.mapping([("arguments", make.plain("body.params.arguments ?? {}"))])),
                            ("responses", make.sequence(answers.isEmpty ? [make.mapping([("status", make.plain("200"))])] : answers)),
                        ])
            )
        )
    }

    /// One of a tool's responses, as an endpoint's: its `when`, `let`,
    /// `effects`, `delay` and `fault` as written; its result (`text`,
    /// `content`, `structured`, `is_error`) or JSON-RPC `error` wrapped.
    private mutating func mcpResponse(
        _ item: SourceNode, tool: String, rpc: JSONRPCNodes
    ) -> SourceNode? {
        let make = rpc.make
        guard let reader = MappingReader(item, allowed: Self.mcpResponseKeys, context: "a response of tool '\(tool)'", diagnostics: &diagnostics)
        else { return nil }
        var pairs: [(String, SourceNode)] = []
        for key in ["name", "when", "let", "effects", "delay", "fault", "description"] {
            if let value = reader[key] { pairs.append((key, value)) }
        }
        pairs.append(("status", make.plain("200")))
        if let error = reader["error"] {
            for key in ["text", "content", "structured", "is_error"] where reader.has(key) {
                diagnostics.error(
                    "a response of tool '\(tool)' with 'error' answers a JSON-RPC error; '\(key)' belongs to a result", at: reader[key]!.location)
            }
            guard let errorReader = MappingReader(error, allowed: Self.mcpErrorKeys, context: "'error' of tool '\(tool)'", diagnostics: &diagnostics),
                let code = errorReader.required("code", diagnostics: &diagnostics),
                let message = errorReader.required("message", diagnostics: &diagnostics)
            else { return nil }
            guard case .int = code.json else {
                diagnostics.error("'code' of a JSON-RPC error must be an integer, such as -32603", at: code.location)
                return nil
            }
            var members: [(String, SourceNode)] = [("code", code), ("message", message)]
            if let data = errorReader["data"] { members.append(("data", data)) }
            pairs.append(
                (
                    "body", make.mapping([("jsonrpc", make.text("2.0")), ("id", make.template("{{ body.id }}")), ("error", make.mapping(members))])
                ))
            return make.mapping(pairs)
        }
        var result: [(String, SourceNode)] = []
        switch (reader["text"], reader["content"]) {
        case (let text?, nil):
            result.append(("content", make.sequence([make.mapping([("type", make.text("text")), ("text", text)])])))
        case (nil, let content?):
            result.append(("content", content))
        case (nil, nil):
            // Structured content given as one placeholder is also given as
            // its JSON text, as MCP asks of a tool that returns it.
            if let text = reader["structured"]?.scalarText?.trimmingCharacters(in: .whitespaces), text.hasPrefix("{{"), text.hasSuffix("}}"),
                text.dropFirst(2).range(of: "{{") == nil
            {
                let inner = text.dropFirst(2).dropLast(2)
                result.append(
                    ("content", make.sequence([make.mapping([("type", make.text("text")), ("text", make.template("{{ string(\(inner)) }}"))])])))
            } else {
                result.append(("content", make.sequence([])))
            }
        case (.some, .some):
            diagnostics.error("a response of tool '\(tool)' has 'text' and 'content'; give one of them", at: item.location)
            return nil
        }
        if let structured = reader["structured"] { result.append(("structuredContent", structured)) }
        let isError = reader["is_error"]
        switch isError?.json {
        // A boolean, or a placeholder that makes one: any other text would reach the client as a string.
        case nil, .bool?: break
        case .string(let text)? where text.includes("{{"): break
        default:
            diagnostics.error("'is_error' of a response of tool '\(tool)' must be true, false or a {{ }} expression", at: isError!.location)
        }
        result.append(("isError", isError ?? make.plain("false")))
        pairs.append(("body", rpc.answer(make.mapping(result))))
        return make.mapping(pairs)
    }
}

/// The JSON-RPC nodes of one MCP server's endpoints: each a POST to its
/// path with the section's auth, answered with JSON-RPC results and errors.
struct JSONRPCNodes {
    let make: NodeMaker
    let request: SourceNode
    let auth: SourceNode?

    func endpoint(_ pairs: [(String, SourceNode)]) -> SourceNode {
        make.mapping([("request", request)] + (auth.map { [("auth", $0)] } ?? []) + pairs)
    }
    func answer(_ result: SourceNode) -> SourceNode {
        make.mapping([("jsonrpc", make.text("2.0")), ("id", make.template("{{ body.id }}")), ("result", result)])
    }
    func failure(code: Int, message: String, data: SourceNode? = nil) -> SourceNode {
        make.mapping([
            ("jsonrpc", make.text("2.0")), ("id", make.template("{{ body.id }}")),
            (
                "error",
                make.mapping([("code", make.plain(String(code))), ("message", make.template(message))] + (data.map { [("data", $0)] } ?? []))
            ),
        ])
    }
    func responses(_ body: SourceNode, status: Int = 200) -> SourceNode {
        make.sequence([make.mapping([("status", make.plain(String(status))), ("body", body)])])
    }
    /// A JSON-RPC request's body schema (its `method`, an `id` unless a
    /// notification, and `params`), and for a body that breaks it
    /// JSON-RPC's invalid request (or `invalid`, a tool's invalid params).
    func call(method: SourceNode, id: Bool = true, params: SourceNode? = nil, invalid: SourceNode? = nil) -> [(String, SourceNode)] {
        var properties: [(String, SourceNode)] = [
            ("jsonrpc", make.mapping([("const", make.text("2.0"))])), ("method", method),
        ]
        var required = ["jsonrpc", "method"]
        if id {
            properties.append(
                ("id", make.mapping([("type", make.sequence([make.text("string"), make.text("integer")])), ("example", make.plain("1"))])))
            required.append("id")
        }
        if let params {
            properties.append(("params", params))
            required.append("params")
        }
        let schema = make.mapping([
            ("type", make.text("object")), ("required", make.sequence(required.map(make.text))), ("properties", make.mapping(properties)),
        ])
        let refusal =
            invalid
            ?? make.mapping([
                ("status", make.plain("400")),
                (
                    "body",
                    failure(
                        code: -32600,
                        message: "Invalid Request: {{ join(map(errors, e => replace(e.pointer, '/body', '') + ' ' + e.message), '; ') }}")
                ),
            ])
        return [("body", make.mapping([("schema", schema)])), ("on_invalid", refusal)]
    }
    func constant(_ value: String) -> SourceNode { make.mapping([("const", make.text(value))]) }
    var object: SourceNode { make.mapping([("type", make.text("object"))]) }

    /// `initialize`: the protocol version (the client's when this server speaks it), capabilities and server info.
    func initialize(serverName: String, serverVersion: String, instructionsNode: SourceNode?) -> (name: String, node: SourceNode) {
        var instructions: [(String, SourceNode)] = []
        if let text = instructionsNode { instructions = [("instructions", text)] }
        let clientVersion = "body.params.protocolVersion"
        let versions = "[" + ContractLoader.mcpVersions.map { "'\($0)'" }.joined(separator: ", ") + "]"
        return (
            "mcp.initialize",
            endpoint(
                [
                    ("summary", make.text("MCP: initialize")), ("match", make.plain("body.method == 'initialize'")),
                ]
                    + call(
                        method: constant("initialize"),
                        params: make.mapping([
                            ("type", make.text("object")),
                            ("required", make.sequence([make.text("protocolVersion"), make.text("capabilities"), make.text("clientInfo")])),
                            (
                                "properties",
                                make.mapping([
                                    (
                                        "protocolVersion",
                                        make.mapping([("type", make.text("string")), ("example", make.text(ContractLoader.mcpVersions[0]))])
                                    ),
                                    ("capabilities", object),
                                    (
                                        "clientInfo",
                                        make.mapping([
                                            ("type", make.text("object")),
                                            ("required", make.sequence([make.text("name"), make.text("version")])),
                                            (
                                                "properties",
                                                make.mapping([
                                                    ("name", make.mapping([("type", make.text("string"))])),
                                                    ("version", make.mapping([("type", make.text("string"))])),
                                                ])
                                            ),
                                        ])
                                    ),
                                ])
                            ),
                        ])) + [
                        (
                            "responses",
                            responses(
                                answer(
                                    make.mapping(
                                        [
                                            (
                                                "protocolVersion",
                                                make.template(
                                                    "{{ if(\(clientVersion) in \(versions), \(clientVersion), '\(ContractLoader.mcpVersions[0])') }}")
                                            ),
                                            ("capabilities", make.mapping([("tools", make.mapping([("listChanged", make.plain("false"))]))])),
                                            (
                                                "serverInfo",
                                                make.mapping([("name", make.text(serverName)), ("version", make.text(serverVersion))])
                                            ),
                                        ] + instructions)))
                        )
                    ])
        )
    }

    /// A notification: accepted, with no answer.
    func notification() -> (name: String, node: SourceNode) {
        (
            "mcp.notification",
            endpoint(
                [
                    ("summary", make.text("MCP: a notification (no answer)")),
                    ("match", make.plain("starts_with(string(body.method), 'notifications/') and body.id == null")),
                ]
                    + call(
                        method: make.mapping([
                            ("type", make.text("string")), ("pattern", make.text("^notifications/")),
                            ("example", make.text("notifications/initialized")),
                        ]),
                        id: false) + [
                        ("responses", make.sequence([make.mapping([("status", make.plain("202"))])]))
                    ])
        )
    }

    /// `ping`: an empty result.
    func ping() -> (name: String, node: SourceNode) {
        (
            "mcp.ping",
            endpoint(
                [
                    ("summary", make.text("MCP: ping")), ("match", make.plain("body.method == 'ping'")),
                ] + call(method: constant("ping")) + [
                    ("responses", responses(answer(make.mapping([]))))
                ])
        )
    }

    /// `tools/list`: every tool as `listed`.
    func toolsList(_ listed: [SourceNode]) -> (name: String, node: SourceNode) {
        (
            "mcp.tools.list",
            endpoint(
                [
                    ("summary", make.text("MCP: tools/list")), ("match", make.plain("body.method == 'tools/list'")),
                ] + call(method: constant("tools/list")) + [
                    ("responses", responses(answer(make.mapping([("tools", make.sequence(listed))]))))
                ])
        )
    }

    /// What the server does not have: a method, a tool, or a body that is not JSON-RPC.
    func unknown(_ names: [String]) -> (name: String, node: SourceNode) {
        let known = "[" + names.map { "'\($0)'" }.joined(separator: ", ") + "]"
        return (
            "mcp.unknown",
            endpoint([
                ("summary", make.text("MCP: a method or tool the server does not have")),
                ("body", make.mapping([("content_type", make.text("application/json"))])),
                // A body that is not JSON at all: JSON-RPC's parse error.
                (
                    "on_invalid",
                    make.mapping([
                        ("status", make.plain("400")),
                        ("body", failure(code: -32700, message: "Parse error: {{ errors[0].message }}", data: nil)),
                    ])
                ),
                (
                    "responses",
                    make.sequence([
                        make.mapping([
                            ("name", make.text("invalid-request")),
                            ("when", make.plain("body.jsonrpc != '2.0' or body.method == null")),
                            ("status", make.plain("400")),
                            ("body", failure(code: -32600, message: "Invalid Request: a JSON-RPC 2.0 request has jsonrpc '2.0' and a method")),
                        ]),
                        make.mapping([
                            ("name", make.text("unknown-tool")), ("when", make.plain("body.method == 'tools/call'")),
                            ("status", make.plain("400")),
                            (
                                "body",
                                failure(
                                    code: -32602,
                                    message: "Unknown tool: {{ body.params.name }}; the tools are \(names.joined(separator: ", "))",
                                    data: make.mapping([("tools", make.template("{{ \(known) }}"))]))
                            ),
                        ]),
                        make.mapping([
                            ("name", make.text("unknown-method")), ("status", make.plain("200")),
                            ("body", failure(code: -32601, message: "Method not found: {{ body.method }}")),
                        ]),
                    ])
                ),
            ])
        )
    }

    /// A method MCP's transport allows that this server does not offer.
    func notOffered(_ method: String, path: String) -> (name: String, node: SourceNode) {
        (
            "mcp.\(method.lowercased())",
            make.mapping([
                ("request", make.text("\(method) \(path)")), ("auth", make.text("none")),
                ("summary", make.text("MCP: \(method) is not offered (answers are JSON, sessions are Doppel's)")),
                (
                    "responses",
                    make.sequence([make.mapping([("status", make.plain("405")), ("headers", make.mapping([("Allow", make.text("POST"))]))])])
                ),
            ])
        )
    }
}

/// Nodes made for a rewritten section, placed at one node of the user's.
struct NodeMaker {
    let at: SourceNode

    /// A string, whatever it reads like.
    func text(_ value: String) -> SourceNode { SourceNode(kind: .scalar(value, plain: false), placedAs: at) }
    /// A plain scalar: a number, a boolean, an expression.
    func plain(_ value: String) -> SourceNode { SourceNode(kind: .scalar(value, plain: true), placedAs: at) }
    /// A string with placeholders.
    func template(_ value: String) -> SourceNode { SourceNode(kind: .scalar(value, plain: false), placedAs: at) }
    func mapping(_ pairs: [(String, SourceNode)]) -> SourceNode {
        SourceNode(kind: .mapping(pairs.map { (key: text($0.0), value: $0.1) }), placedAs: at)
    }
    func sequence(_ items: [SourceNode]) -> SourceNode { SourceNode(kind: .sequence(items), placedAs: at) }
}
