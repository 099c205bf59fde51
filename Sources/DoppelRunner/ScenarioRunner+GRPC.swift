import DoppelCore
import DoppelProtobuf
import Foundation

/// gRPC steps: a call made from JSON by the contract's `.proto`, sent over
/// HTTP/2 (`GRPCClient`), its answer checked as any step's: `status` the
/// gRPC status, `headers` the answer's metadata (headers and trailers),
/// `body` the reply (a server stream's list of replies), or for an error
/// the `google.rpc.Status` (`code`, `message`, `details` decoded from
/// `grpc-status-details-bin`).
extension ScenarioRunner {
    func runGRPCStep(
        _ step: Step, _ call: GRPCCallTemplate, scenario: Scenario, session: String, captured: inout [String: JSON],
        catalogs: inout [String: GRPCCatalog]
    ) async -> StepResult {
        let line = "gRPC \(call.method)"
        func failed(_ reason: String) -> StepResult {
            StepResult(name: step.name, outcome: .failed, summary: line, details: [reason], seconds: 0)
        }
        guard answer == nil else {
            return failed("a gRPC step is a call over HTTP/2 to a server, and this run answers its requests in process")
        }
        let key = call.definition.folder + "/" + call.definition.proto
        if catalogs[key] == nil {
            let (catalog, diagnostics) = GRPCCatalog.load(call.definition)
            guard let catalog else {
                return failed("the contract's .proto cannot be read: \(diagnostics.first.map(\.description) ?? "no reason given")")
            }
            catalogs[key] = catalog
        }
        let catalog = catalogs[key]!
        // A method the `.proto` lacks is called all the same (a step may expect UNIMPLEMENTED), with no message.
        let method = catalog.methods["/" + call.method]
        if method == nil, call.message != nil || call.messages != nil {
            return failed("\(call.definition.proto) declares no method \(call.method), so its message cannot be encoded")
        }
        let context = EvaluationContext(roots: captured, now: Date().timeIntervalSince1970)
        let messages: [[UInt8]]
        let metadata: [(name: String, value: String)]
        switch outgoing(call, method: method, catalog: catalog, scenario: scenario, session: session, context: context) {
        case .success(let built): (messages, metadata) = built
        case .failure(let reason): return failed(reason.description)
        }
        let answer: GRPCClient.Answer
        do {
            answer = try await GRPCClient.call(baseURL, path: "/" + call.method, metadata: metadata, messages: messages, timeout: call.timeout)
        } catch {
            let expected = step.expectation.transportError
            return StepResult(
                name: step.name, outcome: expected ? .passed : .failed, summary: "\(line) → \(error)",
                details: expected ? [] : ["expected an answer, the call failed: \(error)"], seconds: 0)
        }
        let (code, body, problems) = Self.read(answer, method: method, catalog: catalog)
        var differences = problems
        var expectation = step.expectation
        if let status = expectation.status, status != code {
            differences.append(
                "status: expected \(Self.statusName(status)), got \(Self.statusName(code)) (\(JSONWriter.encodeString(body).prefix(200)))")
        }
        if expectation.transportError { differences.append("expected the call to fail in transport, got \(Self.statusName(code))") }
        expectation.status = nil
        expectation.transportError = false
        let seen = HTTPAnswer(status: code, headers: answer.metadata, body: Data(JSONWriter.encode(body)))
        differences += Self.differences(expectation, seen, context: context)
        let roots = captured.merging(["status": .int(code), "headers": seen.headersJSON, "body": body]) { $1 }
        differences += Self.capture(step.captures, roots: roots, now: context.now, into: &captured)
        return StepResult(
            name: step.name, outcome: differences.isEmpty ? .passed : .failed, summary: "\(line) → \(Self.statusName(code))",
            details: differences, seconds: 0)
    }

    /// A call's messages, encoded by the `.proto`, and its metadata: the scenario's headers, the session, the step's own.
    func outgoing(
        _ call: GRPCCallTemplate, method: GRPCCatalog.Method?, catalog: GRPCCatalog, scenario: Scenario, session: String,
        context: EvaluationContext
    ) -> Result<([[UInt8]], [(name: String, value: String)]), GRPCClient.Failure> {
        var messages: [[UInt8]] = []
        var metadata: [(name: String, value: String)] = []
        do {
            let given: [JSON]
            if let list = call.messages {
                guard case .array(let items) = try list.render(in: context) else { return .failure(.init(description: "'messages' is not a list")) }
                given = items
            } else {
                given = method == nil ? [] : [try call.message?.render(in: context) ?? .object(JSONObject())]
            }
            if let method {
                do throws(GRPCClient.Failure) {
                    messages = try GRPCClient.encode(given, as: method.input, catalog: catalog)
                } catch {
                    return .failure(error)
                }
            }
            func set(_ name: String, _ value: String) {
                metadata.removeAll { $0.name == name }
                metadata.append((name, value))
            }
            if sendsSession { set(MockEngine.sessionHeader, session) }
            for (name, value) in scenario.defaultHeaders { set(name.lowercased(), try value.render(in: context).interpolationText) }
            for (name, value) in call.metadata { set(name, try value.render(in: context).interpolationText) }
        } catch {
            return .failure(.init(description: "cannot build the call: \(error.message)"))
        }
        return .success((messages, metadata))
    }

    /// An answer's gRPC status, and its body as a step sees it: the reply
    /// (a server stream's list), or the error's `google.rpc.Status`; with
    /// what could not be read.
    package static func read(_ answer: GRPCClient.Answer, method: GRPCCatalog.Method?, catalog: GRPCCatalog) -> (Int, JSON, [String]) {
        var problems: [String] = []
        let code: Int
        if let given = answer.field("grpc-status").flatMap({ Int($0) }) {
            code = given
        } else {
            // No status: what gRPC's clients make of the HTTP status (the protocol's own table).
            switch answer.httpStatus {
            case 400: code = 13
            case 401: code = 16
            case 403: code = 7
            case 404: code = 12
            case 429, 502, 503, 504: code = 14
            default: code = 2
            }
            problems.append("the answer has no grpc-status (HTTP status \(answer.httpStatus))")
        }
        let message = answer.field("grpc-message").map { $0.removingPercentEncoding ?? $0 } ?? ""
        guard code == 0 else {
            var status: JSON = ["code": .int(code), "message": .string(message)]
            if var encoded = answer.field("grpc-status-details-bin") {
                encoded += String(repeating: "=", count: (4 - encoded.count % 4) % 4)
                if let bytes = Data(base64Encoded: encoded), let decoded = try? catalog.codec.decode(Array(bytes), as: "google.rpc.Status") {
                    status = decoded
                } else {
                    problems.append("grpc-status-details-bin is not a google.rpc.Status")
                }
            }
            return (code, status, problems)
        }
        guard let method else {
            problems.append("the .proto declares no such method, so its answer cannot be read")
            return (code, .null, problems)
        }
        var replies: [JSON] = []
        for (index, bytes) in answer.messages.enumerated() {
            do {
                replies.append(try catalog.codec.decode(bytes, as: method.output))
            } catch {
                problems.append("reply \(index + 1) is not a valid \(method.output): \(error.message)")
            }
        }
        if method.serverStreaming { return (code, .array(replies), problems) }
        if replies.count != 1 { problems.append("a unary answer has one message; this one had \(answer.messages.count)") }
        return (code, replies.first ?? .null, problems)
    }

    /// A status by its name and number, like `RESOURCE_EXHAUSTED (8)`.
    package static func statusName(_ code: Int) -> String {
        GRPCDefinition.codes.first { $0.code == code }.map { "\($0.name) (\(code))" } ?? "status \(code)"
    }
}
