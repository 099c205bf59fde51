import DoppelCore
import DoppelProtobuf
import DoppelServer
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Runs a scenario's steps over HTTP against a base URL and checks each
/// response against its expectations.
///
/// Against a Doppel server the scenario's `given` and `overrides` are
/// imposed on its own session through the admin API, and clock steps move
/// that session's clock. Against any other server (a real provider) they
/// cannot be, which the result's notes say; clock steps are skipped.
public struct ScenarioRunner: Sendable {
    /// The server the scenarios run against.
    public let baseURL: URL
    /// Whether the target answers Doppel's admin API.
    public let isDoppel: Bool
    /// The admin token of the target, if it requires one.
    public let adminToken: String?
    /// Whether each request carries the session as `Doppel-Session` (a
    /// Doppel target's, and `verify --setup`'s, which runs in a sequence's session).
    package var sendsSession: Bool
    /// Answers requests in process instead of over HTTP, admin calls
    /// included (`verify --setup` run on the contract's engine beside the
    /// provider; an agent's `run_scenario`); nil sends them.
    package var answer: (@Sendable (RecordedRequest) async -> MockResponse)?
    /// Seconds an admin call (a scenario's setup, the clock, a reset) may take (the test suite, on a loaded machine, gives more).
    package var adminTimeout: Double = 10

    /// A runner against `baseURL`; `probe(_:adminToken:)` tells whether it is a Doppel server.
    public init(baseURL: URL, isDoppel: Bool, adminToken: String? = nil) {
        self.baseURL = baseURL
        self.isDoppel = isDoppel
        self.adminToken = adminToken
        sendsSession = isDoppel
    }

    /// Asks `baseURL` whether it is a Doppel server.
    public static func probe(_ baseURL: URL, adminToken: String? = nil) async -> Bool {
        let runner = ScenarioRunner(baseURL: baseURL, isDoppel: false, adminToken: adminToken)
        guard let response = try? await runner.admin("GET", "/health", body: nil, timeout: 5) else { return false }
        // A Doppel server reached by a name it was not told to answer to is Doppel all the same:
        // its scenario calls then fail with the refusal's words (start it with --allow-host NAME).
        if response.status == 403, response.json?["type"] == "urn:doppel:problem:admin-host-refused" { return true }
        return response.status == 200 && response.json?["status"] == "ok"
    }

    /// The outcome of one step.
    public struct StepResult: Sendable {
        /// Passed, failed, or skipped (a clock step against a server that is not Doppel).
        public enum Outcome: Sendable, Equatable { case passed, failed, skipped }
        /// The step's name.
        public let name: String
        /// How the step ended.
        public let outcome: Outcome
        /// What was sent and received, like `POST /api/v1/children → 200`.
        public let summary: String
        /// What differed from the expectation, or why the step was skipped.
        public let details: [String]
        /// How long the step took.
        public let seconds: Double
    }

    /// The outcome of a scenario.
    public struct ScenarioResult: Sendable {
        /// The scenario run.
        public let scenario: Scenario
        /// The session it ran in.
        public let session: String
        /// What could not be imposed on the target (a server that is not Doppel), in words.
        public let notes: [String]
        /// Each step's outcome, in order.
        public let steps: [StepResult]
        /// Whether no step failed.
        public var passed: Bool { steps.allSatisfy { $0.outcome != .failed } }
        /// The values the steps captured, by name, as the run ended.
        public var captured: [String: JSON] = [:]
    }

    /// Runs a scenario in its own session.
    public func run(_ scenario: Scenario, session: String) async -> ScenarioResult {
        var notes: [String] = []
        var steps: [StepResult] = []
        if isDoppel {
            let refusal: String?
            do {
                let setup =
                    scenario.setup.isEmpty
                    ? try await admin("DELETE", "/scenario?session=\(session)", body: nil)
                    : try await admin("PUT", "/scenario?session=\(session)", body: .object(scenario.setup))
                refusal = setup.status == 200 ? nil : setup.json?["detail"]?.interpolationText ?? "status \(setup.status)"
            } catch {
                refusal = "\(error)"  // the target's failure in words: "no answer within 10s", a refused connection
            }
            if let reason = refusal {
                return ScenarioResult(
                    scenario: scenario, session: session, notes: ["the target refused the scenario's setup: \(reason)"],
                    steps: [StepResult(name: "setup", outcome: .failed, summary: "PUT /__doppel/scenario", details: [reason], seconds: 0)])
            }
        } else if !scenario.setup.isEmpty {
            notes.append(
                "\(baseURL.absoluteString) is not a Doppel server: the scenario's given state and overrides cannot be imposed there; the steps run against its current state"
            )
        }
        var captured: [String: JSON] = [:]
        let sockets = OpenSockets()
        var catalogs: [String: GRPCCatalog] = [:]
        for step in scenario.steps {
            let started = ContinuousClock.now
            var result: StepResult
            switch step.action {
            case .openSocket, .send, .receive, .closeSocket:
                result = await runSocketStep(step, scenario: scenario, session: session, captured: &captured, sockets: sockets)
            case .request, .clock:
                result = await run(step, scenario: scenario, session: session, captured: &captured)
            case .grpc(let call):
                result = await runGRPCStep(step, call, scenario: scenario, session: session, captured: &captured, catalogs: &catalogs)
            }
            let elapsed = ContinuousClock.now - started
            result = StepResult(
                name: result.name, outcome: result.outcome, summary: result.summary, details: result.details,
                seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            steps.append(result)
        }
        await sockets.closeAll()
        var result = ScenarioResult(scenario: scenario, session: session, notes: notes, steps: steps)
        result.captured = captured
        return result
    }

    private func run(_ step: Step, scenario: Scenario, session: String, captured: inout [String: JSON]) async -> StepResult {
        switch step.action {
        case .clock(_, let raw):
            guard isDoppel else {
                return StepResult(
                    name: step.name, outcome: .skipped, summary: "clock \(JSONWriter.encodeString(.object(raw)))",
                    details: ["a real provider's clock cannot be moved"], seconds: 0)
            }
            let response = try? await admin("POST", "/clock?session=\(session)", body: .object(raw))
            let ok = response?.status == 200
            return StepResult(
                name: step.name, outcome: ok ? .passed : .failed, summary: "clock → \(response?.json?["now"]?.interpolationText ?? "?")",
                details: ok ? [] : ["the clock change was refused: \(response?.json?["detail"]?.interpolationText ?? "no answer")"], seconds: 0)
        case .openSocket, .send, .receive, .closeSocket, .grpc:
            return StepResult(
                name: step.name, outcome: .failed, summary: step.name, details: ["a socket or gRPC step outside its runner"], seconds: 0)
        case .request(let template):
            let context = EvaluationContext(roots: captured, now: Date().timeIntervalSince1970)
            let request: OutgoingRequest
            let line: String
            do {
                (request, line) = try build(template, scenario: scenario, session: session, context: context)
            } catch {
                return StepResult(
                    name: step.name, outcome: .failed, summary: template.method, details: ["cannot build the request: \(error.message)"], seconds: 0)
            }
            let answer: HTTPAnswer
            do {
                answer = try await send(request)
            } catch {
                let expected = step.expectation.transportError
                let reason = Self.describe(error, for: request)
                return StepResult(
                    name: step.name, outcome: expected ? .passed : .failed, summary: "\(line) → \(reason)",
                    details: expected ? [] : ["expected a response, the request failed: \(reason)"], seconds: 0)
            }
            var differences = Self.differences(step.expectation, answer, context: context)
            let roots: [String: JSON] = captured.merging(["status": .int(answer.status), "headers": answer.headersJSON, "body": answer.bodyJSON]) {
                $1
            }
            differences += Self.capture(step.captures, roots: roots, now: context.now, into: &captured)
            return StepResult(
                name: step.name, outcome: differences.isEmpty ? .passed : .failed, summary: "\(line) → \(answer.status)",
                details: differences, seconds: 0)
        }
    }

    /// A step's captures evaluated over its answer's `roots`, kept in `captured`; each that is null, as a difference.
    static func capture(
        _ captures: [(String, DoppelCore.Expression)], roots: [String: JSON], now: Double, into captured: inout [String: JSON]
    ) -> [String] {
        var nulls: [String] = []
        for (name, expression) in captures {
            let value = (try? expression.evaluate(in: EvaluationContext(roots: roots, now: now))) ?? .null
            if value.isNull { nulls.append("capture \(name): \(expression.source) is null") }
            captured[name] = value
        }
        return nulls
    }

    /// What a response did not meet.
    static func differences(_ expectation: Expectation, _ answer: HTTPAnswer, context: EvaluationContext) -> [String] {
        var found: [String] = []
        if expectation.transportError { found.append("expected the request to fail in transport, got status \(answer.status)") }
        if let status = expectation.status, status != answer.status {
            let detail = answer.bodyText.isEmpty ? "" : " (body: \(answer.bodyText.prefix(200)))"
            found.append("status: expected \(status), got \(answer.status)\(detail)")
        }
        for (name, template) in expectation.headers {
            let actual = answer.headers.first { $0.key.lowercased() == name.lowercased() }.map { JSON.string($0.value) }
            do {
                found += BodyMatcher.differences(expected: try template.render(in: context), actual: actual, at: "headers.\(name)")
            } catch {
                found.append("headers.\(name): the expectation cannot be rendered: \(error.message)")
            }
        }
        if let template = expectation.body {
            do {
                found += BodyMatcher.differences(expected: try template.render(in: context), actual: answer.bodyJSON)
            } catch {
                found.append("body: the expectation cannot be rendered: \(error.message)")
            }
        }
        return found
    }

    func build(
        _ template: RequestTemplate, scenario: Scenario, session: String, context: EvaluationContext
    ) throws(EvaluationError) -> (OutgoingRequest, String) {
        var target = try template.path.render(in: context).interpolationText
        var query: [String] = []
        for (name, value) in template.query {
            query.append(Self.encode(name) + "=" + Self.encode(try value.render(in: context).interpolationText))
        }
        if !query.isEmpty { target += (target.contains("?") ? "&" : "?") + query.joined(separator: "&") }
        guard URL(string: baseURL.absoluteString.trimmingTrailingSlash + target) != nil else {
            throw EvaluationError("'\(target)' is not a valid path")
        }
        var request = OutgoingRequest(method: template.method, url: baseURL.absoluteString.trimmingTrailingSlash + target, timeout: template.timeout)
        if sendsSession { request.setHeader("Doppel-Session", session) }
        for (name, value) in scenario.defaultHeaders { request.setHeader(name, try value.render(in: context).interpolationText) }
        switch template.body {
        case .none:
            break
        case .json(let value):
            request.setHeader("Content-Type", "application/json")
            request.body = JSONWriter.encode(try value.render(in: context))
        case .text(let value, let type):
            request.setHeader("Content-Type", type)
            request.body = Array(try value.render(in: context).interpolationText.utf8)
        case .form(let fields):
            request.setHeader("Content-Type", "application/x-www-form-urlencoded")
            var pairs: [String] = []
            for (name, value) in fields { pairs.append(Self.encode(name) + "=" + Self.encode(try value.render(in: context).interpolationText)) }
            request.body = Array(pairs.joined(separator: "&").utf8)
        case .multipart(let parts):
            let boundary = "doppel-\(UUID().uuidString)"
            request.setHeader("Content-Type", "multipart/form-data; boundary=\(boundary)")
            var rendered: [MultipartBody.Part] = []
            for part in parts {
                rendered.append(
                    .init(
                        name: part.name, filename: part.filename, contentType: part.contentType,
                        content: try part.content.render(in: context).interpolationText))
            }
            request.body = Array(MultipartBody.encode(rendered, boundary: boundary))
        }
        for (name, value) in template.headers { request.setHeader(name, try value.render(in: context).interpolationText) }
        return (request, "\(template.method) \(target)")
    }

    static func encode(_ text: String) -> String {
        FormEncoding.percentEncoded(text)
    }

    /// A response as the runner saw it.
    struct HTTPAnswer {
        let status: Int
        let headers: [String: String]
        let body: Data

        var bodyText: String { String(decoding: body, as: UTF8.self) }
        var json: JSON? { try? JSONReader.parse([UInt8](body)) }
        var bodyJSON: JSON { body.isEmpty ? .null : (json ?? .string(bodyText)) }
        var headersJSON: JSON { .object(JSONObject(headers.map { ($0.key.lowercased(), .string($0.value)) }.sorted { $0.0 < $1.0 })) }
    }

    /// A request as the runner sends it.
    struct OutgoingRequest {
        var method: String
        var url: String
        var timeout: Double
        var headers: [(name: String, value: String)] = []
        var body: [UInt8]?

        init(method: String, url: String, timeout: Double) {
            self.method = method
            self.url = url
            self.timeout = timeout
        }

        /// Sets a header, replacing any earlier value of the same name.
        mutating func setHeader(_ name: String, _ value: String) {
            headers.removeAll { $0.name.lowercased() == name.lowercased() }
            headers.append((name, value))
        }
    }

    /// The most a response body may hold; a larger one fails the step.
    static let maximumBodyBytes = 64 << 20

    /// Sends one request on a connection of its own. A client that reuses
    /// connections may silently retry a request whose reused connection was
    /// reset or closed without a reply, hiding the very fault a step forces.
    /// Redirects are not followed: a step sees the status the target gave.
    ///
    /// With Doppel's own client (`Upstream`), as `--proxy` and callbacks:
    /// the target is anyone's server, and AsyncHTTPClient 1.37 traps on a
    /// status below 100 followed by a body, and bounds the wait for a head
    /// but not a body that drips a byte at a time. Here `timeout` bounds the
    /// whole exchange, the body by `maximumBodyBytes`.
    func send(_ request: OutgoingRequest) async throws -> HTTPAnswer {
        guard let url = URLComponents(string: request.url), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty,
            let origin = URL(string: "\(scheme)://\(host.contains(":") ? "[\(host)]" : host)\(url.port.map { ":\($0)" } ?? "")")
        else {
            throw TargetFailure(description: "invalid URL (\(request.url))")
        }
        let path = url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath
        let outgoing = RecordedRequest(
            method: request.method, path: path, query: url.percentEncodedQuery, headers: request.headers, body: request.body ?? [])
        if let answer {
            let response = await answer(outgoing)
            var headers: [String: String] = [:]
            for field in response.headers { headers[field.name] = headers[field.name].map { $0 + ", " + field.value } ?? field.value }
            return HTTPAnswer(status: response.status, headers: headers, body: Data(response.body))
        }
        let client = Upstream(base: origin, timeout: request.timeout, maxBodySize: Self.maximumBodyBytes)
        defer { Task { await client.shutdown() } }
        do {
            let answer: (status: Int, headers: [(name: String, value: String)], body: [UInt8])
            do {
                answer = try await client.send(outgoing)
            } catch .closedBeforeAnswer where ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"].contains(request.method.uppercased()) {
                // A connection closed before any byte of an answer: an idempotent
                // request is sent once more, as RFC 9110 (section 9.2.2) lets a client.
                answer = try await client.send(outgoing)
            }
            var headers: [String: String] = [:]
            for field in answer.headers {
                // Repeated fields are joined as one, the way RFC 9110 allows.
                headers[field.name] = headers[field.name].map { $0 + ", " + field.value } ?? field.value
            }
            return HTTPAnswer(status: answer.status, headers: headers, body: Data(answer.body))
        } catch {
            throw TargetFailure(
                description: Self.describe(error, timeout: request.timeout, address: "\(host):\(url.port ?? (scheme == "https" ? 443 : 80))"))
        }
    }

    /// Why a target gave no answer, in words.
    struct TargetFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// A transport failure in words, like `could not connect to 127.0.0.1:8000: connection refused`.
    static func describe(_ error: any Error, for request: OutgoingRequest) -> String {
        "\(error)"
    }

    private static func describe(_ failure: Upstream.Failure, timeout: Double, address: String) -> String {
        switch failure {
        case .timedOut: "no answer within \(formatSeconds(timeout))"
        case .couldNotConnect(let reason):
            "could not connect to \(address): " + (reason == "the connection was refused" ? "connection refused" : reason)
        case .closedBeforeAnswer: "the connection was closed before a complete response"
        case .badStatus(let status): "a malformed response: status \(String(format: "%03d", status)) is not an HTTP status (100–599)"
        case .tooLarge: "the response body is larger than \(maximumBodyBytes >> 20) MiB"
        case .overBudget(let limit): "the response body does not fit in \(limit >> 20) MiB"
        case .failed(let reason): reason
        }
    }

    private static func formatSeconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }

    func admin(_ method: String, _ path: String, body: JSON?, timeout: Double? = nil) async throws -> HTTPAnswer {
        var request = OutgoingRequest(
            method: method, url: baseURL.absoluteString.trimmingTrailingSlash + "/__doppel" + path, timeout: timeout ?? adminTimeout)
        if let adminToken { request.setHeader("Doppel-Admin-Token", adminToken) }
        if let body {
            request.setHeader("Content-Type", "application/json")
            request.body = JSONWriter.encode(body)
        }
        return try await send(request)
    }
}

extension String {
    var trimmingTrailingSlash: String { hasSuffix("/") ? String(dropLast()) : self }
}
