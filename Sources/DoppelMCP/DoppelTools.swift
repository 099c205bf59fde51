import DoppelCore
import DoppelServer

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

    /// What the server tells an agent when it connects.
    static func instructions(_ session: String, contract: Contract) -> String {
        """
        Doppel serves \(contract.info.title) \(contract.info.version) from its contract: every endpoint answers as \
        documented, state and all. Your calls work in the session \(session) unless they name another; a client \
        you test joins it with the header `Doppel-Session: \(session)`. Use list_endpoints to see what is \
        documented, force_next to make an endpoint's next answer an error path (a 402, a 429), send_request to see \
        an answer, explain to read why each answer was what it was, and coverage for the statuses not reached yet.
        """
    }

    /// Answers `tools/call`: a tool's result, or an error result for an
    /// unknown tool, input that does not fit, or a call the admin API refuses.
    package func call(_ name: String, arguments: [String: JSON]?) async -> ToolResult {
        guard let entry = Self.catalogue.first(where: { $0.name == name }) else {
            return Self.failure("There is no tool '\(name)'. Tools: \(Self.catalogue.map(\.name).joined(separator: ", ")).")
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
    static func failure(_ message: String) -> ToolResult {
        ToolResult(text: message, structuredContent: nil, isError: true)
    }

    /// A JSON answer as the result: its text, and the value itself as structured content.
    static func result(_ value: JSON) -> ToolResult {
        ToolResult(text: JSONWriter.encodePretty(value), structuredContent: value, isError: false)
    }

    /// An admin call: its JSON answer, or its problem as an error result.
    func admin(_ method: String, _ path: String, query: [(String, String)] = [], body: JSON? = nil) async -> ToolResult {
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

/// A tool's answer, as `tools/call` returns it: its text, for a JSON answer
/// the value itself, and whether it is an error result the model can act on.
package struct ToolResult: Sendable {
    package let text: String
    package let structuredContent: JSON?
    package let isError: Bool

    /// The `tools/call` result.
    var json: JSON {
        var result = JSONObject([("content", [["type": "text", "text": .string(text)]])])
        if let structuredContent { result["structuredContent"] = structuredContent }
        if isError { result["isError"] = true }
        return .object(result)
    }
}
