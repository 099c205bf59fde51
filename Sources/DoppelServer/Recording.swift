import DoppelCore
import Foundation

/// The exchanges a recording proxy (`doppel record`) passed between a client
/// and the target, in order, bounded.
public final class Recorder: Sendable {
    /// One request and the target's answer.
    public struct Exchange: Sendable {
        public let request: RecordedRequest
        public let response: MockResponse
    }

    /// The most exchanges kept; later ones are still forwarded, and counted.
    public let limit: Int
    private let state = Locked<(exchanges: [Exchange], dropped: Int)>(([], 0))

    public init(limit: Int = 10_000) {
        self.limit = limit
    }

    public func record(_ request: RecordedRequest, _ response: MockResponse) {
        state.withLock { state in
            if state.exchanges.count < limit { state.exchanges.append(Exchange(request: request, response: response)) } else { state.dropped += 1 }
        }
    }

    public var exchanges: [Exchange] { state.withLock { $0.exchanges } }
    /// Exchanges forwarded past the limit, not kept.
    public var dropped: Int { state.withLock { $0.dropped } }
}

/// Writes a recording as a contract (one endpoint per method and path
/// template, each status seen as a response with its first recorded body)
/// and a scenario that replays the exchanges as steps expecting their
/// recorded statuses (overrides pin the calls whose status is not the
/// endpoint's first). Secrets are never written: `Authorization`, `Cookie`
/// and `Set-Cookie`, and body fields named like tokens, passwords, secrets
/// or keys, unless a header is kept by name.
public enum RecordingWriter {
    public struct Output: Sendable {
        public let contract: String
        public let scenario: String
        public let endpoints: Int
    }

    /// Headers never written: secrets, and what belongs to one connection or message.
    static let secretHeaders: Set<String> = ["authorization", "cookie", "set-cookie", "proxy-authorization"]
    static let transportHeaders: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length",
        "date", "server", "doppel-session", "accept-encoding", "content-encoding", "user-agent", "accept",
    ]
    static let redacted = "[redacted]"

    /// Whether a body field's name says it holds a secret.
    static func isSecretField(_ name: String) -> Bool {
        let lower = name.lowercased().replacingOccurrences(of: "_", with: "").replacingOccurrences(of: "-", with: "")
        return ["token", "password", "passwd", "secret", "apikey", "accesskey", "privatekey", "authorization", "cookie", "session"]
            .contains { lower.contains($0) }
    }

    public static func write(_ exchanges: [Recorder.Exchange], target: String, contractFile: String, keepHeaders: Set<String> = []) -> Output {
        let kept = Set(keepHeaders.map { $0.lowercased() })
        // Endpoints by method and path template, in the order first seen.
        var order: [String] = []
        var endpoints: [String: (method: String, template: String, responses: [(status: Int, response: MockResponse)])] = [:]
        var steps: [(key: String, exchange: Recorder.Exchange)] = []
        for exchange in exchanges {
            let template = Self.template(of: exchange.request.path)
            let key = exchange.request.method + " " + template
            if endpoints[key] == nil {
                order.append(key)
                endpoints[key] = (exchange.request.method, template, [])
            }
            if !endpoints[key]!.responses.contains(where: { $0.status == exchange.response.status }) {
                endpoints[key]!.responses.append((exchange.response.status, exchange.response))
            }
            steps.append((key, exchange))
        }
        var ids: [String: String] = [:]
        var used: Set<String> = []
        for key in order {
            let endpoint = endpoints[key]!
            var id = Self.identifier(method: endpoint.method, template: endpoint.template)
            var n = 2
            while used.contains(id) { id = Self.identifier(method: endpoint.method, template: endpoint.template) + "-\(n)"; n += 1 }
            used.insert(id)
            ids[key] = id
        }

        var contract = """
            # Recorded by `doppel record` from \(target).
            # One endpoint per method and path; each status seen is a response with
            # the first body recorded for it. Secrets are left out or "\(redacted)".
            doppel: 1
            info: { title: \(Self.quoted("Recorded from " + target)), version: "1" }
            endpoints:

            """
        for key in order {
            let endpoint = endpoints[key]!
            let id = ids[key]!
            func entry(_ status: Int, _ response: MockResponse) -> String {
                "      - name: \(id)-\(status)\n        status: \(status)\n" + Self.responseBody(response, keep: kept)
            }
            // The first status seen is the endpoint's answer; the others are documented, for overrides and `Prefer`.
            contract += "  \(id):\n    request: \(Self.quoted(endpoint.method + " " + endpoint.template))\n"
            contract += "    responses:\n" + entry(endpoint.responses[0].status, endpoint.responses[0].response)
            if endpoint.responses.count > 1 {
                contract += "    documented:\n" + endpoint.responses.dropFirst().map { entry($0.status, $0.response) }.joined()
            }
        }

        var scenario = """
            # Recorded by `doppel record` from \(target): the exchanges in order,
            # each expecting the status the target gave. Run it against the
            # recorded contract: doppel run THIS-FILE

            contract: \(Self.quoted(contractFile))

            """
        // A call whose status is not the endpoint's default is forced to it.
        var calls: [String: Int] = [:]
        var overrides: [String] = []
        var stepLines: [String] = []
        for (key, exchange) in steps {
            calls[key, default: 0] += 1
            let endpoint = endpoints[key]!
            if exchange.response.status != endpoint.responses[0].status {
                overrides.append("  - { endpoint: \(ids[key]!), call: \(calls[key]!), status: \(exchange.response.status) }")
            }
            stepLines.append(Self.step(exchange, keep: kept))
        }
        if !overrides.isEmpty { scenario += "overrides:\n" + overrides.joined(separator: "\n") + "\n" }
        scenario += "steps:\n" + stepLines.joined()
        // A secret the client sent may come back inside a body (an echo, an
        // error message): every one seen is struck out wherever it appears.
        let secrets = Self.secrets(in: exchanges, keep: kept)
        return Output(contract: Self.strike(secrets, from: contract), scenario: Self.strike(secrets, from: scenario), endpoints: order.count)
    }

    /// The path with the segments that look like ids made parameters: numbers,
    /// UUIDs, and long tokens with digits in them.
    static func template(of path: String) -> String {
        var count = 0
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            guard Self.looksLikeID(segment) else { return String(segment).replacingOccurrences(of: "{", with: "%7B").replacingOccurrences(of: "}", with: "%7D") }
            count += 1
            return count == 1 ? "{id}" : "{id\(count)}"
        }
        return segments.joined(separator: "/")
    }

    static func looksLikeID(_ segment: Substring) -> Bool {
        guard !segment.isEmpty else { return false }
        if segment.allSatisfy(\.isNumber) { return true }
        let hex = segment.filter { $0 != "-" }
        if segment.count == 36, hex.count == 32, hex.allSatisfy(\.isHexDigit) { return true }  // a UUID
        let digits = segment.filter(\.isNumber).count
        return segment.count >= 12 && digits >= 2 && segment.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
    }

    static func identifier(method: String, template: String) -> String {
        let words = template.split(separator: "/").map { $0.hasPrefix("{") ? "by-" + $0.dropFirst().dropLast() : String($0) }
        let text = ([method.lowercased()] + words).joined(separator: "-").lowercased()
        let cleaned = String(text.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "-" })
        return cleaned.isEmpty ? "root" : cleaned
    }

    static func responseBody(_ response: MockResponse, keep: Set<String>) -> String {
        var text = ""
        let headers = response.headers.filter { header in
            let name = header.name.lowercased()
            return keep.contains(name) || (!secretHeaders.contains(name) && !transportHeaders.contains(name) && name != "content-type")
        }
        if !headers.isEmpty {
            text += "        headers:\n"
            for header in headers { text += "          \(quoted(header.name)): \(quoted(templateSafe(header.value)))\n" }
        }
        let contentType = response.header("content-type")
        if let contentType { text += "        content_type: \(quoted(contentType))\n" }
        guard !response.body.isEmpty else { return text }
        if let contentType, MediaTypes.isJSON(contentType), let json = try? JSONReader.parse(response.body) {
            text += "        body: \(flow(redact(json)))\n"
        } else if let string = String(bytes: response.body, encoding: .utf8) {
            text += "        text: \(quoted(templateSafe(string)))\n"
        } else {
            text += "        base64: \(Data(response.body).base64EncodedString())\n"
        }
        return text
    }

    static func step(_ exchange: Recorder.Exchange, keep: Set<String>) -> String {
        let request = exchange.request
        var text = "  - request: \(quoted(request.method + " " + templateSafe(request.path)))\n"
        if !request.queryItems.isEmpty {
            let pairs = request.queryItems.map { "\(quoted($0.0)): \(quoted(templateSafe(isSecretField($0.0) ? redacted : $0.1)))" }
            text += "    query: { \(pairs.joined(separator: ", ")) }\n"
        }
        let headers = request.headers.filter { header in
            keep.contains(header.name) || (!secretHeaders.contains(header.name) && !transportHeaders.contains(header.name) && header.name != "content-type")
        }
        if !headers.isEmpty {
            text += "    headers: { \(headers.map { "\(quoted($0.name)): \(quoted(templateSafe($0.value)))" }.joined(separator: ", ")) }\n"
        }
        if !request.body.isEmpty {
            let contentType = request.header("content-type")
            if let contentType, MediaTypes.isJSON(contentType), let json = try? JSONReader.parse(request.body) {
                text += "    json: \(flow(redact(json)))\n"
            } else if let string = String(bytes: request.body, encoding: .utf8) {
                text += "    text: \(quoted(templateSafe(string)))\n"
                if let contentType { text += "    content_type: \(quoted(contentType))\n" }
            }
        }
        text += "    expect: { status: \(exchange.response.status) }\n"
        return text
    }

    /// The secrets of a recording: credentials and cookie values sent or set,
    /// and the values of secret-looking query parameters and JSON fields.
    static func secrets(in exchanges: [Recorder.Exchange], keep: Set<String>) -> [String] {
        var found: Set<String> = []
        func cookieValues(_ header: String) {
            for pair in header.split(separator: ";") {
                guard let equals = pair.firstIndex(of: "=") else { continue }
                found.insert(String(pair[pair.index(after: equals)...]).trimmingCharacters(in: .whitespaces))
            }
        }
        func fields(_ value: JSON) {
            switch value {
            case .object(let object):
                for pair in object.pairs {
                    if isSecretField(pair.key), case .string(let text) = pair.value { found.insert(text) } else { fields(pair.value) }
                }
            case .array(let items): items.forEach(fields)
            default: break
            }
        }
        for exchange in exchanges {
            for header in exchange.request.headers where !keep.contains(header.name) {
                switch header.name {
                case "authorization", "proxy-authorization":
                    found.insert(header.value)
                    if let space = header.value.firstIndex(of: " ") { found.insert(String(header.value[header.value.index(after: space)...])) }
                case "cookie": cookieValues(header.value)
                default: break
                }
            }
            for header in exchange.response.headers where header.name.lowercased() == "set-cookie" && !keep.contains("set-cookie") {
                cookieValues(String(header.value.prefix { $0 != ";" }))
            }
            for (name, value) in exchange.request.queryItems where isSecretField(name) { found.insert(value) }
            for body in [exchange.request.body, exchange.response.body] {
                if let json = try? JSONReader.parse(body) { fields(json) }
            }
        }
        // Short values would strike out ordinary text.
        return found.filter { $0.count >= 6 && $0 != redacted }.sorted { $0.count > $1.count }
    }

    static func strike(_ secrets: [String], from text: String) -> String {
        secrets.reduce(text) { $0.replacingOccurrences(of: $1, with: redacted) }
    }

    /// Secret-looking fields' values replaced, at any depth; strings made template-safe.
    static func redact(_ value: JSON) -> JSON {
        switch value {
        case .object(let object):
            return .object(JSONObject(object.pairs.map { pair in (pair.key, isSecretField(pair.key) && !isContainer(pair.value) ? .string(redacted) : redact(pair.value)) }))
        case .array(let items):
            return .array(items.map(redact))
        case .string(let text):
            return .string(templateSafe(text))
        default:
            return value
        }
    }

    static func isContainer(_ value: JSON) -> Bool {
        if case .object = value { return true }
        if case .array = value { return true }
        return false
    }

    /// Text a template shows as it is: `{{` written as a placeholder of its own.
    static func templateSafe(_ text: String) -> String {
        text.contains("{{") ? text.replacingOccurrences(of: "{{", with: "{{ '{{' }}") : text
    }

    /// JSON as a YAML flow value (JSON is YAML).
    static func flow(_ value: JSON) -> String { JSONWriter.encodeString(value) }

    static func quoted(_ text: String) -> String { JSONWriter.encodeString(.string(text)) }
}
