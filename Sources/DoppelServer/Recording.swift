import DoppelCore
import Foundation

/// The exchanges a recording proxy (`doppel record`) passed between a client
/// and the target, in order, bounded in count and in the bytes of the bodies
/// it keeps.
package final class Recorder: Sendable {
    /// One request and the target's answer.
    package struct Exchange: Sendable {
        package var request: RecordedRequest
        package var response: MockResponse
        /// The request's body was not kept: the recording's byte budget was spent.
        package var requestBodyOmitted: Bool

        package init(request: RecordedRequest, response: MockResponse, requestBodyOmitted: Bool = false) {
            self.request = request
            self.response = response
            self.requestBodyOmitted = requestBodyOmitted
        }
    }

    /// The most exchanges kept; later ones are still forwarded, and counted.
    package let limit: Int
    /// The most body bytes kept in all; past it, bodies are left out (the
    /// exchange's status is still recorded) and counted.
    package let maxBodyBytes: Int
    private struct State {
        var exchanges: [Exchange] = []
        var dropped = 0
        var omittedBodies = 0
        var bodyBytes = 0
        /// Method, path template and status of the answers whose body is kept:
        /// a recording writes the first body of each, so later ones are not kept.
        var answered: Set<String> = []
    }
    private let state = Locked(State())

    package init(limit: Int = 10_000, maxBodyBytes: Int = 256 << 20) {
        self.limit = limit
        self.maxBodyBytes = maxBodyBytes
    }

    package func record(_ request: RecordedRequest, _ response: MockResponse) {
        let key = request.method + " " + RecordingWriter.template(of: request.path) + " \(response.status)"
        state.withLock { state in
            guard state.exchanges.count < limit else { state.dropped += 1; return }
            var exchange = Exchange(request: request, response: response)
            if state.answered.contains(key) {
                exchange.response.body = []
            } else if state.bodyBytes + response.body.count <= maxBodyBytes {
                state.bodyBytes += response.body.count
                state.answered.insert(key)
            } else {
                exchange.response.body = []
                state.omittedBodies += 1
            }
            if state.bodyBytes + request.body.count <= maxBodyBytes {
                state.bodyBytes += request.body.count
            } else {
                exchange.request.body = []
                exchange.requestBodyOmitted = true
                state.omittedBodies += 1
            }
            state.exchanges.append(exchange)
        }
    }

    package var exchanges: [Exchange] { state.withLock { $0.exchanges } }
    /// Exchanges forwarded past the limit, not kept.
    package var dropped: Int { state.withLock { $0.dropped } }
    /// Bodies left out past `maxBodyBytes`.
    package var omittedBodies: Int { state.withLock { $0.omittedBodies } }
}

/// Writes a recording as a contract (one endpoint per method and path
/// template, each status seen as a response with its first recorded body)
/// and a scenario that replays the exchanges as steps expecting their
/// recorded statuses (overrides pin the calls whose status is not the
/// endpoint's first). Secrets are never written (see `Redaction`): headers,
/// query parameters and body fields named like secrets are left out or
/// "[redacted]", unless a header is kept by name, and each value so found is
/// struck from every other string of the recording.
package enum RecordingWriter {
    package struct Output: Sendable {
        package let contract: String
        package let scenario: String
        package let endpoints: Int
    }

    /// Headers never written: what belongs to one connection or message.
    static let transportHeaders: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length",
        "date", "server", "doppel-session", "accept-encoding", "content-encoding", "user-agent", "accept",
    ]
    static let redacted = Redaction.redacted

    package static func write(_ exchanges: [Recorder.Exchange], target: String, contractFile: String, keepHeaders: Set<String> = []) -> Output {
        var redaction = Redaction(keepHeaders: keepHeaders)
        let exchanges = exchanges.map { redaction.redact($0) }
        let text = Text(striker: redaction.striker())

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
        var nextSuffix: [String: Int] = [:]  // per base, so many alike are numbered in linear time
        for key in order {
            let endpoint = endpoints[key]!
            let base = Self.identifier(method: endpoint.method, template: text.strike(endpoint.template))
            var id = base
            var n = nextSuffix[base] ?? 2
            while used.contains(id) { id = base + "-\(n)"; n += 1 }
            nextSuffix[base] = n
            used.insert(id)
            ids[key] = id
        }

        var contract = """
            # Recorded by `doppel record` from \(target).
            # One endpoint per method and path; each status seen is a response with
            # the first body recorded for it. Secrets are left out or "\(redacted)".
            doppel: 1
            info: { title: \(text.quoted("Recorded from " + target)), version: "1" }
            endpoints:

            """
        for key in order {
            let endpoint = endpoints[key]!
            let id = ids[key]!
            func entry(_ status: Int, _ response: MockResponse) -> String {
                "      - name: \(id)-\(status)\n        status: \(status)\n" + text.responseBody(response)
            }
            // The first status seen is the endpoint's answer; the others are documented, for overrides and `Prefer`.
            contract += "  \(id):\n    request: \(text.quoted(endpoint.method + " " + endpoint.template, templateSafe: false))\n"
            contract += "    responses:\n" + entry(endpoint.responses[0].status, endpoint.responses[0].response)
            if endpoint.responses.count > 1 {
                contract += "    documented:\n" + endpoint.responses.dropFirst().map { entry($0.status, $0.response) }.joined()
            }
        }

        var scenario = """
            # Recorded by `doppel record` from \(target): the exchanges in order,
            # each expecting the status the target gave. Run it against the
            # recorded contract: doppel run THIS-FILE

            contract: \(text.quoted(contractFile))

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
            stepLines.append(text.step(exchange))
        }
        if !overrides.isEmpty { scenario += "overrides:\n" + overrides.joined(separator: "\n") + "\n" }
        scenario += "steps:\n" + stepLines.joined()
        return Output(contract: contract, scenario: scenario, endpoints: order.count)
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

    /// Text a template shows as it is: `{{` written as a placeholder of its own.
    static func templateSafe(_ text: String) -> String {
        text.contains("{{") ? text.replacingOccurrences(of: "{{", with: "{{ '{{' }}") : text
    }

    /// How each value of a recording is written: every string struck of the
    /// recording's secrets, then made template-safe, then quoted.
    struct Text {
        let striker: Redaction.Striker

        func strike(_ text: String) -> String { striker.strike(text) }

        func quoted(_ text: String, templateSafe: Bool = true) -> String {
            let struck = strike(text)
            return JSONWriter.encodeString(.string(templateSafe ? RecordingWriter.templateSafe(struck) : struck))
        }

        /// JSON as a YAML flow value (JSON is YAML), its strings struck and template-safe.
        func flow(_ value: JSON) -> String { JSONWriter.encodeString(clean(value)) }

        func clean(_ value: JSON) -> JSON {
            switch value {
            case .object(let object): return .object(JSONObject(object.pairs.map { (strike($0.key), clean($0.value)) }))
            case .array(let items): return .array(items.map(clean))
            case .string(let text): return .string(RecordingWriter.templateSafe(strike(text)))
            default: return value
            }
        }

        func responseBody(_ response: MockResponse) -> String {
            var text = ""
            let headers = response.headers.filter { header in
                let name = header.name.lowercased()
                return !RecordingWriter.transportHeaders.contains(name) && name != "content-type"
            }
            if !headers.isEmpty {
                text += "        headers:\n"
                for header in headers { text += "          \(quoted(header.name)): \(quoted(header.value))\n" }
            }
            let contentType = response.header("content-type")
            if let contentType { text += "        content_type: \(quoted(contentType))\n" }
            guard !response.body.isEmpty else { return text }
            if let contentType, MediaTypes.isJSON(contentType), let json = try? JSONReader.parse(response.body) {
                text += "        body: \(flow(json))\n"
            } else if let string = String(bytes: response.body, encoding: .utf8) {
                text += "        text: \(quoted(string))\n"
            } else {
                text += "        base64: \(Data(response.body).base64EncodedString())\n"
            }
            return text
        }

        func step(_ exchange: Recorder.Exchange) -> String {
            let request = exchange.request
            var text = "  - request: \(quoted(request.method + " " + request.path))\n"
            if !request.queryItems.isEmpty {
                let pairs = request.queryItems.map { "\(quoted($0.0)): \(quoted($0.1))" }
                text += "    query: { \(pairs.joined(separator: ", ")) }\n"
            }
            let headers = request.headers.filter { header in
                !RecordingWriter.transportHeaders.contains(header.name) && header.name != "content-type"
            }
            if !headers.isEmpty {
                text += "    headers: { \(headers.map { "\(quoted($0.name)): \(quoted($0.value))" }.joined(separator: ", ")) }\n"
            }
            if exchange.requestBodyOmitted { text += "    # The request's body was not recorded: the recording's byte budget was spent.\n" }
            if !request.body.isEmpty {
                let contentType = request.header("content-type")
                if let contentType, MediaTypes.isJSON(contentType), let json = try? JSONReader.parse(request.body) {
                    text += "    json: \(flow(json))\n"
                } else if let string = String(bytes: request.body, encoding: .utf8) {
                    text += "    text: \(quoted(string))\n"
                    if let contentType { text += "    content_type: \(quoted(contentType))\n" }
                }
            }
            text += "    expect: { status: \(exchange.response.status) }\n"
            return text
        }
    }
}
