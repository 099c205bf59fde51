import DoppelCore
import Foundation

/// The MCP server that offers `DoppelTools` to an agent: JSON-RPC 2.0
/// messages in, answers out, on whichever transport carries them (`doppel
/// mcp`'s standard input and output, `/__doppel/mcp`'s POSTs).
///
/// It answers `initialize` (the client's protocol version when it is one of
/// `protocolVersions`, else the newest), `ping`, `tools/list`,
/// `tools/call`, `resources/list` and `resources/read`; any other method is
/// `-32601`. Notifications and a client's responses get no answer. A batch
/// (an array, as protocol versions before 2025-06-18 allow) is answered as
/// an array of its requests' answers.
///
/// Written here rather than on modelcontextprotocol/swift-sdk's `Server`,
/// which Doppel used before: that package is one library target, and on
/// Linux it imports FoundationNetworking for its HTTP client transport and
/// OAuth, so every `doppel serve` loaded libcurl and the 30 libraries it
/// needs (about 6 MB resident, a seventh of the server's) for code it never
/// runs. These six methods are what Doppel's tools need; the official
/// Python SDK drives both transports in CI (`.ci/mcp-clients.py`).
package actor AgentServer {
    /// The protocol versions answered, newest first.
    package static let protocolVersions = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]

    /// A JSON-RPC error: its code and what it says.
    package struct Failure: Error, Sendable {
        package let code: Int
        package let message: String

        package init(code: Int, message: String) {
            self.code = code
            self.message = message
        }

        package static func invalidRequest(_ message: String) -> Failure { Failure(code: -32600, message: message) }
        package static func invalidParams(_ message: String) -> Failure { Failure(code: -32602, message: message) }
    }

    let tools: DoppelTools
    let version: String
    private var initialized = false

    package init(_ tools: DoppelTools, version: String) {
        self.tools = tools
        self.version = version
    }

    /// The answer to one message as read (a request, a notification, or a
    /// batch of them); nil when nothing is to be sent back.
    package func answer(_ message: [UInt8]) async -> [UInt8]? {
        let parsed: JSON
        do {
            parsed = try JSONReader.parse(message)
        } catch {
            return JSONWriter.encode(Self.error(id: .null, Failure(code: -32700, message: "Parse error: \(error)")))
        }
        return await answer(parsed: parsed).map { JSONWriter.encode($0) }
    }

    /// The answer to a message already parsed (`/__doppel/mcp` reads it
    /// first to check it): one answer, an array of a batch's, or nil.
    package func answer(parsed message: JSON) async -> JSON? {
        guard case .array(let items) = message else { return await answerOne(message) }
        guard !items.isEmpty else { return Self.error(id: .null, Failure.invalidRequest("An empty batch.")) }
        var answers: [JSON] = []
        for item in items {
            if let answer = await answerOne(item) { answers.append(answer) }
        }
        return answers.isEmpty ? nil : .array(answers)
    }

    /// What kind of message `message` is: a request (with its id), a
    /// notification or a response; nil for anything JSON-RPC does not know.
    package enum Kind: Equatable {
        case request(method: String)
        case notification
        case response
    }

    package static func kind(of message: JSON) -> Kind? {
        guard let object = message.objectValue else { return nil }
        if let method = object["method"]?.stringValue {
            guard let id = object["id"] else { return .notification }
            return isID(id) ? .request(method: method) : nil
        }
        return object["id"] != nil && (object["result"] != nil || object["error"] != nil) ? .response : nil
    }

    /// Whether `id` can identify a request: MCP's ids are strings or integers, never null.
    static func isID(_ id: JSON) -> Bool {
        switch id {
        case .string, .int: true
        default: false
        }
    }

    private func answerOne(_ message: JSON) async -> JSON? {
        let id = message["id"] ?? .null
        switch Self.kind(of: message) {
        case nil:
            return Self.error(
                id: Self.isID(id) ? id : .null,
                Failure.invalidRequest("Not a JSON-RPC 2.0 request: it needs a `method` and an `id` (a string or an integer)."))
        case .notification?, .response?:
            return nil
        case .request(let method)?:
            do {
                let result = try await call(method, params: message["params"] ?? .object(JSONObject()))
                return .object(JSONObject([("jsonrpc", "2.0"), ("id", id), ("result", result)]))
            } catch {
                return Self.error(id: id, error)
            }
        }
    }

    private func call(_ method: String, params: JSON) async throws(Failure) -> JSON {
        guard let params = params.objectValue else { throw .invalidParams("`params` must be an object.") }
        switch method {
        case "initialize":
            guard !initialized else { throw .invalidRequest("The server is already initialized.") }
            guard let asked = params["protocolVersion"]?.stringValue else { throw .invalidParams("initialize needs `protocolVersion`.") }
            initialized = true
            let contract = tools.host.engine.contract
            return .object(
                JSONObject([
                    ("protocolVersion", .string(Self.protocolVersions.contains(asked) ? asked : Self.protocolVersions[0])),
                    ("capabilities", ["resources": ["subscribe": false, "listChanged": false], "tools": ["listChanged": false]]),
                    ("serverInfo", ["name": "doppel", "version": .string(version)]),
                    ("instructions", .string(DoppelTools.instructions(tools.session, contract: contract))),
                ]))
        case "ping":
            return .object(JSONObject())
        case "tools/list":
            return ["tools": .array(DoppelTools.catalogue.map(\.definition))]
        case "tools/call":
            guard let name = params["name"]?.stringValue else { throw .invalidParams("tools/call needs the tool's `name`.") }
            var arguments: [String: JSON] = [:]
            switch params["arguments"] {
            case nil, .null?: break
            case .object(let given)?: for (key, value) in given.pairs { arguments[key] = value }
            default: throw .invalidParams("tools/call's `arguments` must be an object.")
            }
            return await tools.call(name, arguments: arguments).json
        case "resources/list":
            return ["resources": .array(tools.resources.map(\.json))]
        case "resources/read":
            guard let uri = params["uri"]?.stringValue else { throw .invalidParams("resources/read needs the resource's `uri`.") }
            let text = try await tools.read(uri)
            return ["contents": [["uri": .string(uri), "mimeType": "application/json", "text": .string(text)]]]
        default:
            throw Failure(code: -32601, message: "Unknown method: \(method)")
        }
    }

    /// A JSON-RPC error answer.
    package static func error(id: JSON, _ error: any Error) -> JSON {
        let failure = error as? Failure ?? Failure(code: -32603, message: "\(error)")
        return .object(
            JSONObject([
                ("jsonrpc", "2.0"), ("id", id),
                ("error", .object(JSONObject([("code", .int(failure.code)), ("message", .string(failure.message))]))),
            ]))
    }
}

extension AgentServer {
    /// The most messages from standard input answered at once.
    package static let concurrentMessages = 16

    /// Answers the messages `transport` reads until its input ends, each
    /// answer one line; at most `concurrentMessages` at once (the next line
    /// is read when one of them is answered), so a long tool call does not
    /// hold up a `ping`, and a client that writes faster than it reads does
    /// not grow the process.
    package func serve(_ transport: LineTransport) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var running = 0
            for try await line in transport.receive() {
                if running >= Self.concurrentMessages {
                    try await group.next()
                    running -= 1
                }
                group.addTask {
                    if let answer = await self.answer(Array(line)) { try await transport.send(Data(answer)) }
                }
                running += 1
            }
            try await group.waitForAll()
        }
    }
}
