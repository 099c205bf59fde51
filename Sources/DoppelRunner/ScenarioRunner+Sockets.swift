import DoppelCore
import Foundation

/// The sockets a scenario run has open, by the names its steps give them.
actor OpenSockets {
    private var sockets: [String: WebSocketClient] = [:]

    func set(_ name: String, _ socket: WebSocketClient?) async {
        if let old = sockets[name] { await old.close() }
        sockets[name] = socket
    }

    func get(_ name: String) -> WebSocketClient? { sockets[name] }

    func closeAll() async {
        let all = sockets.values
        sockets = [:]
        for socket in all { await socket.close() }
    }
}

extension ScenarioRunner {
    /// A socket step, against the target as any step is: its upgrade
    /// carries the session (on a Doppel server) and the scenario's headers.
    func runSocketStep(_ step: Step, scenario: Scenario, session: String, captured: inout [String: JSON], sockets: OpenSockets) async -> StepResult {
        let context = EvaluationContext(roots: captured, now: Date().timeIntervalSince1970)
        if answer != nil {
            return Self.result(
                step, false, step.name, ["a socket step needs a server to connect to; run the scenario against a served port (doppel run --target)"])
        }
        switch step.action {
        case .openSocket(let template, let name):
            return await openSocket(step, template, as: name, scenario: scenario, session: session, context: context, sockets: sockets)
        case .send(let template, let name):
            return await send(step, template, to: name, context: context, sockets: sockets)
        case .receive(let expectation, let name):
            return await receive(step, expectation, from: name, context: context, captured: &captured, sockets: sockets)
        case .closeSocket(let name, let code):
            guard await sockets.get(name) != nil else { return Self.result(step, false, "close", ["socket '\(name)' is not open"]) }
            if let socket = await sockets.get(name) { await socket.close(code: code) }
            await sockets.set(name, nil)
            return Self.result(step, true, "close \(name) (\(code))")
        case .request, .clock, .grpc:
            return Self.result(step, false, step.name, ["not a socket step"])
        }
    }

    static func result(_ step: Step, _ passed: Bool, _ summary: String, _ details: [String] = []) -> StepResult {
        StepResult(name: step.name, outcome: passed ? .passed : .failed, summary: summary, details: details, seconds: 0)
    }

    /// Opens socket `name` by its upgrade, and checks the handshake's answer.
    func openSocket(
        _ step: Step, _ template: RequestTemplate, as name: String, scenario: Scenario, session: String, context: EvaluationContext,
        sockets: OpenSockets
    ) async -> StepResult {
        let request: OutgoingRequest
        let line: String
        do {
            (request, line) = try build(template, scenario: scenario, session: session, context: context)
        } catch {
            return Self.result(step, false, "socket", ["cannot build the upgrade: \(error.message)"])
        }
        guard var components = URLComponents(string: request.url) else { return Self.result(step, false, line, ["not a URL: \(request.url)"]) }
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        let socket: WebSocketClient
        do {
            socket = try await WebSocketClient.connect(to: components.url!, headers: request.headers, timeout: template.timeout)
        } catch {
            return Self.result(step, false, "socket \(line) → \(error)", ["the upgrade failed: \(error)"])
        }
        await sockets.set(name, socket.isOpen ? socket : nil)
        let handshake = socket.handshake
        var headers: [String: String] = [:]
        for (name, value) in handshake.headers { headers[name] = value }
        let answer = HTTPAnswer(status: handshake.status, headers: headers, body: Data(handshake.body))
        let differences = Self.differences(step.expectation, answer, context: context)
        return Self.result(step, differences.isEmpty, "socket \(line) → \(handshake.status)\(socket.isOpen ? " as \(name)" : "")", differences)
    }

    /// Sends a message rendered from `template` on socket `name`.
    func send(_ step: Step, _ template: ValueTemplate, to name: String, context: EvaluationContext, sockets: OpenSockets) async -> StepResult {
        guard let socket = await sockets.get(name) else { return Self.result(step, false, "send", ["socket '\(name)' is not open"]) }
        let text: String
        do {
            let value = try template.render(in: context)
            text = value.stringValue ?? String(decoding: JSONWriter.encode(value), as: UTF8.self)
        } catch {
            return Self.result(step, false, "send", ["cannot build the message: \(error.message)"])
        }
        do {
            try await socket.send(text)
            return Self.result(step, true, "→ \(name): \(text.prefix(120))")
        } catch {
            return Self.result(step, false, "→ \(name)", ["the message could not be sent: \(error)"])
        }
    }

    /// Waits for the message (or close) `expectation` describes on socket
    /// `name`; messages that do not match are passed over (a heartbeat
    /// between two answers), and listed if none matches.
    func receive(
        _ step: Step, _ expectation: SocketExpectation, from name: String, context: EvaluationContext, captured: inout [String: JSON],
        sockets: OpenSockets
    ) async -> StepResult {
        guard let socket = await sockets.get(name) else { return Self.result(step, false, "receive", ["socket '\(name)' is not open"]) }
        var expected: JSON?
        if let template = expectation.message {
            do { expected = try template.render(in: context) } catch {
                return Self.result(step, false, "receive", ["the expectation cannot be rendered: \(error.message)"])
            }
        }
        // Messages that do not match are passed over (a heartbeat between two answers), and listed if none matches.
        let deadline = ContinuousClock.now + .milliseconds(Int64(expectation.within * 1000))
        var passed: [String] = []
        while true {
            let left =
                Double((deadline - ContinuousClock.now).components.attoseconds) / 1e18
                + Double((deadline - ContinuousClock.now).components.seconds)
            guard left > 0, let message = await socket.receive(within: left) else { break }
            switch message {
            case .text(let text):
                guard !expectation.waitsForClose else {
                    passed.append(text)
                    continue
                }
                let value = (try? JSONReader.parse(Array(text.utf8))) ?? .string(text)
                if let expected, !BodyMatcher.differences(expected: expected, actual: value).isEmpty {
                    passed.append(text)
                    continue
                }
                var differences: [String] = []
                for (capture, expression) in step.captures {
                    let roots = captured.merging(["message": value]) { $1 }
                    let got = (try? expression.evaluate(in: EvaluationContext(roots: roots, now: context.now))) ?? .null
                    if got.isNull { differences.append("capture \(capture): \(expression.source) is null") }
                    captured[capture] = got
                }
                return Self.result(step, differences.isEmpty, "← \(name): \(text.prefix(120))", differences)
            case .binary(let bytes):
                passed.append("(\(bytes.count) binary bytes)")
            case .close(let code, let reason):
                if expectation.waitsForClose, expectation.closeCode == nil || expectation.closeCode == code {
                    await sockets.set(name, nil)
                    return Self.result(step, true, "← \(name): closed \(code)\(reason.isEmpty ? "" : " (\(reason))")")
                }
                await sockets.set(name, nil)
                return Self.result(
                    step,
                    false, "← \(name): closed \(code)",
                    [
                        "the server closed the socket (\(code)\(reason.isEmpty ? "" : ": \(reason)")) before \(Self.waitedFor(expectation, expected))"
                    ]
                        + Self.passedOver(passed))
            }
        }
        return Self.result(
            step,
            false, "← \(name): nothing within \(expectation.within) s",
            ["no \(Self.waitedFor(expectation, expected)) within \(expectation.within) s"] + Self.passedOver(passed))
    }

    static func waitedFor(_ expectation: SocketExpectation, _ expected: JSON?) -> String {
        if expectation.waitsForClose { return "close frame\(expectation.closeCode.map { " with code \($0)" } ?? "")" }
        return expected.map { "message matching \(String(decoding: JSONWriter.encode($0), as: UTF8.self).prefix(200))" } ?? "message"
    }

    static func passedOver(_ texts: [String]) -> [String] {
        guard !texts.isEmpty else { return [] }
        return [
            "received instead (\(texts.count)): " + texts.prefix(3).map { String($0.prefix(200)) }.joined(separator: " | ")
                + (texts.count > 3 ? " | …" : "")
        ]
    }
}
