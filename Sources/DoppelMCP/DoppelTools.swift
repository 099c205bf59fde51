import DoppelCore
import DoppelServer
import MCP

/// Doppel's tools for an agent (`doppel mcp`): each one a call of the admin
/// API or a request through the contract, so an agent sees exactly what a
/// person with curl sees, and each scoped to a session.
///
/// An agent works in a session of its own (`session`, made when the tools
/// are) unless a call names another (`"session": "default"` is the
/// server's own). A call whose input does not fit its schema, or that the
/// admin API refuses, is answered as an error result (`isError`) saying
/// what to change, and changes nothing.
package struct DoppelTools: Sendable {
    /// What the tools act through: the admin API and the contract.
    let host: any AgentHost
    /// The session a call that names none works in.
    package let session: String

    package init(host: any AgentHost, session: String = DoppelTools.newSessionID()) {
        self.host = host
        self.session = session
    }

    /// A session id of the agent's own: `mcp-` and eight random hex digits.
    package static func newSessionID() -> String {
        "mcp-" + String(UInt32.random(in: .min ... .max), radix: 16).leftPadded(to: 8)
    }

    /// The tools, as `tools/list` answers.
    package var tools: [Tool] { Self.catalogue.map(\.tool) }

    /// Answers `tools/call`: a tool's result, or an error result for an
    /// unknown tool, input that does not fit, or a call the admin API refuses.
    package func call(_ name: String, arguments: [String: Value]?) async -> CallTool.Result {
        guard let entry = Self.catalogue.first(where: { $0.tool.name == name }) else {
            return Self.failure("There is no tool '\(name)'. Tools: \(Self.catalogue.map(\.tool.name).joined(separator: ", ")).")
        }
        let input = ToolInput(arguments ?? [:], tool: name)
        do {
            try input.refuseUnknown(allowed: entry.argumentNames)
            return try await entry.run(self, input)
        } catch {
            return Self.failure(error.message)
        }
    }

    // MARK: Answers

    /// An error result a model can act on.
    static func failure(_ message: String) -> CallTool.Result {
        CallTool.Result(content: [.text(text: message, annotations: nil, _meta: nil)], isError: true)
    }

    /// A JSON answer as the result: its text, and the value itself as structured content.
    static func result(_ value: JSON) -> CallTool.Result {
        let structured: Value? = Value(doppel: value)
        return CallTool.Result(content: [.text(text: JSONWriter.encodePretty(value), annotations: nil, _meta: nil)], structuredContent: structured)
    }

    /// An admin call: its JSON answer, or its problem as an error result.
    func admin(_ method: String, _ path: String, query: [(String, String)] = [], body: JSON? = nil) async -> CallTool.Result {
        var headers: [(name: String, value: String)] = [("host", "127.0.0.1")]
        if body != nil { headers.append(("content-type", "application/json")) }
        let target =
            AdminAPI.prefix + path
            + (query.isEmpty
                ? "" : "?" + query.map { "\(FormEncoding.percentEncoded($0.0))=\(FormEncoding.percentEncoded($0.1))" }.joined(separator: "&"))
        let request = RecordedRequest(
            method: method, target: target, headers: headers, body: body.map { JSONWriter.encode($0) } ?? [])
        let response = await host.admin(request)
        let value = (try? JSONReader.parse(response.body)) ?? .string(String(decoding: response.body, as: UTF8.self))
        guard response.status < 400 else {
            let detail = value.objectValue?["detail"]?.stringValue ?? "the admin API answered \(response.status)"
            return Self.failure("\(detail) (\(response.status) \(value.objectValue?["type"]?.stringValue ?? ""))")
        }
        return Self.result(value)
    }

    /// The session a call works in: the one it names, else the agent's own.
    func session(of input: ToolInput) throws(ToolInput.Refusal) -> String {
        try input.string("session") ?? session
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

extension Value {
    /// A Doppel JSON value as MCP's.
    init(doppel json: JSON) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .int(let value): self = .int(value)
        case .double(let value): self = .double(value)
        case .string(let value): self = .string(value)
        case .array(let items): self = .array(items.map { Value(doppel: $0) })
        case .object(let object):
            self = .object(Dictionary(object.pairs.map { ($0.key, Value(doppel: $0.value)) }, uniquingKeysWith: { _, last in last }))
        }
    }
}

extension JSON {
    /// MCP's value as Doppel's JSON (binary data as base64 text).
    init(mcp value: MCP.Value) {
        switch value {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .int(let value): self = .int(value)
        case .double(let value): self = .double(value)
        case .string(let value): self = .string(value)
        case .data(_, let data): self = .string(data.base64EncodedString())
        case .array(let items): self = .array(items.map { JSON(mcp: $0) })
        case .object(let members): self = .object(JSONObject(members.sorted { $0.key < $1.key }.map { ($0.key, JSON(mcp: $0.value)) }))
        }
    }
}
