import DoppelCore
import DoppelServer
import Foundation

extension DoppelTools {
    /// The most of an answer's body `send_request` shows (an agent reads
    /// it twice, as text and as structured content, into its context).
    static let shownBody = 64 << 10

    /// `send_request`: the request through the contract in the session, as a
    /// client's would be (journaled), and the answer in full with why it was chosen.
    func send(_ input: ToolInput) async throws(ToolInput.Refusal) -> ToolResult {
        let method = try input.requiredString("method").uppercased()
        guard HTTPToken.isValid(method) else {
            throw ToolInput.Refusal(message: "send_request: `method` must be an HTTP method such as GET or POST.")
        }
        let target = try input.requiredString("path")
        guard target.hasPrefix("/"), !target.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true }) else {
            throw ToolInput.Refusal(
                message: "send_request: `path` must start with / and hold no spaces or control characters: /api/v1/stories?limit=5.")
        }
        let path = String(target.prefix { $0 != "?" })
        guard !AdminAPI.handles(path) else {
            throw ToolInput.Refusal(
                message: "send_request sends requests to the contract; \(AdminAPI.prefix)/ is the admin API, which the other tools call.")
        }
        let session = try self.session(of: input)
        var headers = try input.strings("headers").map { (name: $0.0.lowercased(), value: $0.1) }
        for (name, value) in headers where !HTTPToken.isValid(name) || value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
            throw ToolInput.Refusal(message: "send_request: the header `\(name)` is not a valid field name and value.")
        }
        if let named = headers.last(where: { $0.name == MockEngine.sessionHeader }), named.value != session {
            throw ToolInput.Refusal(message: "send_request: give the session as `session`, not as a Doppel-Session header.")
        }
        headers.removeAll { $0.name == MockEngine.sessionHeader }
        headers.append((MockEngine.sessionHeader, session))
        var body: [UInt8] = []
        switch input.json("body") {
        case nil: break
        case .string(let text)?: body = Array(text.utf8)
        case let value?:
            body = JSONWriter.encode(value)
            if !headers.contains(where: { $0.name == "content-type" }) { headers.append(("content-type", "application/json")) }
        }
        // The server's own limit on a request's body (`--max-body-size`).
        guard body.count <= host.maxBodySize else {
            throw ToolInput.Refusal(message: "send_request: the body is \(body.count) bytes; the most a request may send is \(host.maxBodySize).")
        }
        let response = await host.send(RecordedRequest(method: method, target: target, headers: headers, body: body))
        return Self.result(.object(Self.describe(response, session: session)))
    }

    /// An answer as the agent reads it: the body as JSON where it is, else as text (or base64).
    static func describe(_ response: MockResponse, session: String) -> JSONObject {
        var object = JSONObject([
            ("session", .string(session)), ("status", .int(response.status)),
            ("headers", .array(response.headers.map { .object(JSONObject([("name", .string($0.name)), ("value", .string($0.value))])) })),
        ])
        let preview = BodyPreview(Array(response.body), limit: shownBody)
        if !preview.truncated, !response.body.isEmpty, let json = try? JSONReader.parse(response.body) {
            object["body"] = json
        } else if let text = preview.text {
            object["body"] = .string(text)
        } else {
            object["body_base64"] = .string(preview.base64 ?? "")
        }
        object["body_bytes"] = .int(preview.bytes)
        object["truncated"] = .bool(preview.truncated)
        object["endpoint"] = response.endpointID.map(JSON.string) ?? .null
        object["response"] = response.responseName.map(JSON.string) ?? .null
        object["reason"] = response.reason.map { .string($0.text) } ?? .null
        object["changes"] = .array(response.changes.map(JSON.string))
        return object
    }
}
