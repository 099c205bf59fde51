import DoppelCore
import DoppelServer
import Foundation

/// A run's sending: requests to the provider and to the contract's engine, and what came back.
extension ProviderVerifier.Run {
    // MARK: Sending

    func oracleAnswer(_ request: RecordedRequest) -> MockResponse {
        let response = oracle.respond(to: request)
        // A gRPC method's answer as a gRPC client reads it (Doppel's own problems become a google.rpc.Status).
        guard let id = response.endpointID, let (method, catalog) = grpcMethod(of: id) else { return response }
        return Self.asGRPC(response, method: method, catalog: catalog, opensOnly: contract.grpc?.streams[id] != nil)
    }

    /// Remembers what an answer issued: a token, the id of a record a POST created.
    func remember(_ response: MockResponse, of endpoint: Endpoint, on side: inout Side) {
        remember(status: response.status, body: response.body, of: endpoint, on: &side)
    }

    func remember(_ answer: ScenarioRunner.HTTPAnswer, of endpoint: Endpoint, on side: inout Side) {
        remember(status: answer.status, body: [UInt8](answer.body), of: endpoint, on: &side)
    }

    func remember(status: Int, body: [UInt8], of endpoint: Endpoint, on side: inout Side) {
        guard (200...299).contains(status), let object = (try? JSONReader.parse(body))?.objectValue else { return }
        let places = [object] + ["data", "session", "result"].compactMap { object[$0]?.objectValue }
        for place in places {
            if let token = ["access_token", "accessToken", "token", "id_token", "idToken"].lazy.compactMap({ place[$0]?.stringValue }).first {
                side.token = token
                break
            }
        }
        if endpoint.method == "POST", endpoint.path.parameterNames.isEmpty {
            let id = ["id", "uuid"].lazy.compactMap { key in object[key].flatMap { $0.stringValue ?? ($0.intValue.map(String.init)) } }.first
            if let id { side.ids[endpoint.path.template] = id }
        }
    }

    /// Sends one request to the target within the budget and the rate;
    /// nil, with the check updated, when it could not.
    mutating func send(_ request: RecordedRequest, for check: inout ProviderVerifier.Check) async -> ScenarioRunner.HTTPAnswer? {
        if let stopped {
            check.summary = stopped
            return nil
        }
        guard sent < options.maxRequests else {
            stopped = "not sent: --max-requests (\(options.maxRequests)) reached"
            check.summary = stopped!
            return nil
        }
        if let rate = options.rate, rate > 0, let lastSent {
            let wait = 1 / rate - Date().timeIntervalSince(lastSent)
            if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
        }
        sent += 1
        lastSent = Date()
        check.sentAt = lastSent
        let outgoing = outgoingRequest(request)
        let started = Date()
        do {
            let answer: ScenarioRunner.HTTPAnswer
            if contract.endpoint(id: check.endpointID)?.socket != nil {
                answer = try await upgrade(outgoing)
            } else if grpcMethod(of: check.endpointID) != nil {
                answer = try await grpcCall(request, endpointID: check.endpointID)
            } else {
                answer = try await ScenarioRunner(baseURL: verifier.baseURL, isDoppel: false).send(outgoing)
            }
            check.seconds = Date().timeIntervalSince(started)
            return answer
        } catch {
            check.seconds = Date().timeIntervalSince(started)
            let reason = ScenarioRunner.describe(error, for: outgoing)
            check.outcome = .failed
            check.summary = reason
            check.details = [curl(request)]
            if reason.hasPrefix("could not connect") { stopped = "not sent: the target could not be reached (\(reason))" }
            return nil
        }
    }

    /// A WebSocket endpoint's request, sent as an upgrade: its answer
    /// (101, or the refusal), the socket closed at once when it opened.
    func upgrade(_ outgoing: ScenarioRunner.OutgoingRequest) async throws -> ScenarioRunner.HTTPAnswer {
        guard var components = URLComponents(string: outgoing.url) else {
            throw WebSocketClient.Failure(description: "not a URL: \(outgoing.url)")
        }
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        let handshakeHeaders: Set<String> = ["upgrade", "connection", "sec-websocket-version", "sec-websocket-key", "host"]
        let socket = try await WebSocketClient.connect(
            to: components.url!, headers: outgoing.headers.filter { !handshakeHeaders.contains($0.name.lowercased()) },
            timeout: outgoing.timeout)
        await socket.close()
        var headers: [String: String] = [:]
        for (name, value) in socket.handshake.headers { headers[name] = value }
        return ScenarioRunner.HTTPAnswer(status: socket.handshake.status, headers: headers, body: Data(socket.handshake.body))
    }

    func url(_ request: RecordedRequest) -> String {
        verifier.baseURL.absoluteString.trimmingTrailingSlash + request.path + (request.query.map { "?" + $0 } ?? "")
    }

    func outgoingRequest(_ request: RecordedRequest) -> ScenarioRunner.OutgoingRequest {
        var outgoing = ScenarioRunner.OutgoingRequest(method: request.method, url: url(request), timeout: options.timeout)
        outgoing.headers = request.headers
        if !request.body.isEmpty { outgoing.body = request.body }
        return outgoing
    }

    /// The request as a curl command line, its secrets as `***`.
    func curl(_ request: RecordedRequest) -> String {
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        var target = verifier.baseURL.absoluteString.trimmingTrailingSlash + request.path
        if let query = request.query {
            target +=
                "?"
                + query.split(separator: "&").map { pair -> String in
                    let name = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                    return Redaction.isSecretName(name) ? name + "=***" : String(pair)
                }.joined(separator: "&")
        }
        var words = ["curl", "-X", request.method, quoted(target)]
        for (name, value) in request.headers where name.lowercased() != "doppel-session" || options.session != nil {
            let shown =
                Redaction.isSecretName(name) ? (value.split(separator: " ").first.map { $0.contains(":") ? "***" : "\($0) ***" } ?? "***") : value
            words += ["-H", quoted("\(name): \(shown)")]
        }
        if !request.body.isEmpty { words += ["--data-raw", quoted(String(decoding: request.body.prefix(2_000), as: UTF8.self))] }
        return words.joined(separator: " ")
    }

    func bodyLines(_ answer: ScenarioRunner.HTTPAnswer) -> [String] {
        guard !answer.body.isEmpty else { return ["  body: (empty)"] }
        let text = answer.bodyText
        return ["  body: " + (text.count > 500 ? String(text.prefix(500)) + "…" : text)]
    }
}
