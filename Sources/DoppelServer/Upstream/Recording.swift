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
            guard state.exchanges.count < limit else {
                state.dropped += 1
                return
            }
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
        // Redacted first: the striker strikes every secret the redaction found.
        let cleaned = exchanges.map { redaction.redact($0) }
        let text = Text(striker: redaction.striker())
        let grouped = Grouped(cleaned, text: text)

        // Both files are built as values and written by the one YAML writer.
        let contractValue = JSON.object(
            JSONObject([
                ("doppel", .int(1)),
                ("info", .object(JSONObject([("title", text.string("Recorded from " + target)), ("version", "1")]))),
                ("endpoints", .object(JSONObject(grouped.endpointValues(text: text)))),
            ]))
        // Values Doppel built itself always write; a failure here is a bug, and says so in the file.
        func yaml(_ value: JSON, header: String) -> String {
            (try? YAMLWriter.yaml(value, header: header)) ?? "# Doppel could not write this recording as YAML.\n"
        }
        let contract = yaml(
            contractValue,
            header: """
                Recorded by `doppel record` from \(text.strike(target)).
                One endpoint per method and path; each status seen is a response with
                the first body recorded for it. Secrets are left out or "\(redacted)".
                """)
        let scenario = yaml(
            .object(JSONObject(grouped.scenarioMembers(contractFile: contractFile, text: text))),
            header: """
                Recorded by `doppel record` from \(text.strike(target)): the exchanges in order,
                each expecting the status the target gave. Run it against the
                recorded contract: doppel run THIS-FILE
                """)
        return Output(contract: contract, scenario: scenario, endpoints: grouped.order.count)
    }

    /// The exchanges grouped into endpoints by method and path template, in
    /// the order first seen, each with an id of its own and every status it answered.
    struct Grouped {
        var order: [String] = []
        var endpoints: [String: (method: String, template: String, responses: [(status: Int, response: MockResponse)])] = [:]
        var steps: [(key: String, exchange: Recorder.Exchange)] = []
        var ids: [String: String] = [:]

        init(_ exchanges: [Recorder.Exchange], text: Text) {
            for exchange in exchanges {
                let template = RecordingWriter.template(of: exchange.request.path)
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
            var used: Set<String> = []
            var nextSuffix: [String: Int] = [:]  // per base, so many alike are numbered in linear time
            for key in order {
                let endpoint = endpoints[key]!
                let base = RecordingWriter.identifier(method: endpoint.method, template: text.strike(endpoint.template))
                var id = base
                var n = nextSuffix[base] ?? 2
                while used.contains(id) {
                    id = base + "-\(n)"
                    n += 1
                }
                nextSuffix[base] = n
                used.insert(id)
                ids[key] = id
            }
        }

        /// The contract's endpoints: the first status seen is each one's
        /// answer; the others are documented, for overrides and `Prefer`.
        func endpointValues(text: Text) -> [(String, JSON)] {
            order.map { key in
                let endpoint = endpoints[key]!
                let id = ids[key]!
                func entry(_ status: Int, _ response: MockResponse) -> JSON {
                    .object(JSONObject([("name", .string("\(id)-\(status)")), ("status", .int(status))] + text.responseBody(response)))
                }
                var members: [(String, JSON)] = [
                    ("request", .string(text.strike(endpoint.method + " " + endpoint.template))),
                    ("responses", .array([entry(endpoint.responses[0].status, endpoint.responses[0].response)])),
                ]
                if endpoint.responses.count > 1 {
                    members.append(("documented", .array(endpoint.responses.dropFirst().map { entry($0.status, $0.response) })))
                }
                return (id, .object(JSONObject(members)))
            }
        }

        /// The scenario's members: the exchanges as steps, and a call whose
        /// status is not the endpoint's default forced to it.
        func scenarioMembers(contractFile: String, text: Text) -> [(String, JSON)] {
            var calls: [String: Int] = [:]
            var overrides: [JSON] = []
            var stepValues: [JSON] = []
            for (key, exchange) in steps {
                calls[key, default: 0] += 1
                if exchange.response.status != endpoints[key]!.responses[0].status {
                    overrides.append(
                        .object(
                            JSONObject([("endpoint", .string(ids[key]!)), ("call", .int(calls[key]!)), ("status", .int(exchange.response.status))])))
                }
                stepValues.append(text.step(exchange))
            }
            var members: [(String, JSON)] = [("contract", text.string(contractFile))]
            if !overrides.isEmpty { members.append(("overrides", .array(overrides))) }
            members.append(("steps", .array(stepValues)))
            return members
        }
    }

    /// The path with the segments that look like ids made parameters: numbers,
    /// UUIDs, and long tokens with digits in them.
    static func template(of path: String) -> String {
        var count = 0
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            guard Self.looksLikeID(segment) else {
                return String(segment).replacingOccurrences(of: "{", with: "%7B").replacingOccurrences(of: "}", with: "%7D")
            }
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
    /// recording's secrets, then made template-safe.
    struct Text {
        let striker: Redaction.Striker

        func strike(_ text: String) -> String { striker.strike(text) }

        /// A string of the recording, struck and template-safe.
        func string(_ text: String) -> JSON { .string(RecordingWriter.templateSafe(strike(text))) }

        /// A JSON value of the recording, its keys struck and its strings struck and template-safe.
        func clean(_ value: JSON) -> JSON {
            switch value {
            case .object(let object): return .object(JSONObject(object.pairs.map { (strike($0.key), clean($0.value)) }))
            case .array(let items): return .array(items.map(clean))
            case .string(let text): return string(text)
            default: return value
            }
        }

        /// Header fields as a mapping, struck and template-safe.
        func fields(_ headers: [(name: String, value: String)]) -> JSON {
            .object(JSONObject(headers.map { (strike($0.name), string($0.value)) }))
        }

        /// A response's headers, content type and body, as a contract response's members.
        func responseBody(_ response: MockResponse) -> [(String, JSON)] {
            var members: [(String, JSON)] = []
            let headers = response.headers.filter { header in
                let name = header.name.lowercased()
                return !RecordingWriter.transportHeaders.contains(name) && name != "content-type"
            }
            if !headers.isEmpty { members.append(("headers", fields(headers))) }
            let contentType = response.header("content-type")
            if let contentType { members.append(("content_type", string(contentType))) }
            guard !response.body.isEmpty else { return members }
            if let contentType, MediaTypes.isJSON(contentType), let json = try? JSONReader.parse(response.body) {
                members.append(("body", clean(json)))
            } else if let text = String(bytes: response.body, encoding: .utf8) {
                members.append(("text", string(text)))
            } else {
                members.append(("base64", .string(Data(response.body).base64EncodedString())))
            }
            return members
        }

        /// An exchange as a scenario step expecting the status the target gave.
        func step(_ exchange: Recorder.Exchange) -> JSON {
            let request = exchange.request
            let line = request.method + " " + request.path
            var members: [(String, JSON)] = []
            if exchange.requestBodyOmitted {
                members.append(("name", string(line + " (its body was not recorded: the recording's byte budget was spent)")))
            }
            members.append(("request", string(line)))
            if !request.queryItems.isEmpty {
                members.append(("query", .object(JSONObject(request.queryItems.map { (strike($0.0), string($0.1)) }))))
            }
            let headers = request.headers.filter { header in
                !RecordingWriter.transportHeaders.contains(header.name) && header.name != "content-type"
            }
            if !headers.isEmpty { members.append(("headers", fields(headers))) }
            if !request.body.isEmpty {
                let contentType = request.header("content-type")
                if let contentType, MediaTypes.isJSON(contentType), let json = try? JSONReader.parse(request.body) {
                    members.append(("json", clean(json)))
                } else if let text = String(bytes: request.body, encoding: .utf8) {
                    members.append(("text", string(text)))
                    if let contentType { members.append(("content_type", string(contentType))) }
                }
            }
            members.append(("expect", .object(JSONObject([("status", .int(exchange.response.status))]))))
            return .object(JSONObject(members))
        }
    }
}
