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
        func result(_ passed: Bool, _ summary: String, _ details: [String] = []) -> StepResult {
            StepResult(name: step.name, outcome: passed ? .passed : .failed, summary: summary, details: details, seconds: 0)
        }
        switch step.action {
        case .openSocket(let template, let name):
            let request: OutgoingRequest
            let line: String
            do {
                (request, line) = try build(template, scenario: scenario, session: session, context: context)
            } catch {
                return result(false, "socket", ["cannot build the upgrade: \(error.message)"])
            }
            guard var components = URLComponents(string: request.url) else { return result(false, line, ["not a URL: \(request.url)"]) }
            components.scheme = components.scheme == "https" ? "wss" : "ws"
            let socket: WebSocketClient
            do {
                socket = try await WebSocketClient.connect(to: components.url!, headers: request.headers, timeout: template.timeout)
            } catch {
                return result(false, "socket \(line) → \(error)", ["the upgrade failed: \(error)"])
            }
            await sockets.set(name, socket.isOpen ? socket : nil)
            let handshake = socket.handshake
            var headers: [String: String] = [:]
            for (name, value) in handshake.headers { headers[name] = value }
            let answer = HTTPAnswer(status: handshake.status, headers: headers, body: Data(handshake.body))
            let differences = Self.differences(step.expectation, answer, context: context)
            return result(differences.isEmpty, "socket \(line) → \(handshake.status)\(socket.isOpen ? " as \(name)" : "")", differences)
        case .send(let template, let name):
            guard let socket = await sockets.get(name) else { return result(false, "send", ["socket '\(name)' is not open"]) }
            let text: String
            do {
                let value = try template.render(in: context)
                text = value.stringValue ?? String(decoding: JSONWriter.encode(value), as: UTF8.self)
            } catch {
                return result(false, "send", ["cannot build the message: \(error.message)"])
            }
            do {
                try await socket.send(text)
                return result(true, "→ \(name): \(text.prefix(120))")
            } catch {
                return result(false, "→ \(name)", ["the message could not be sent: \(error)"])
            }
        case .receive(let expectation, let name):
            guard let socket = await sockets.get(name) else { return result(false, "receive", ["socket '\(name)' is not open"]) }
            var expected: JSON?
            if let template = expectation.message {
                do { expected = try template.render(in: context) } catch {
                    return result(false, "receive", ["the expectation cannot be rendered: \(error.message)"])
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
                    return result(differences.isEmpty, "← \(name): \(text.prefix(120))", differences)
                case .binary(let bytes):
                    passed.append("(\(bytes.count) binary bytes)")
                case .close(let code, let reason):
                    if expectation.waitsForClose, expectation.closeCode == nil || expectation.closeCode == code {
                        await sockets.set(name, nil)
                        return result(true, "← \(name): closed \(code)\(reason.isEmpty ? "" : " (\(reason))")")
                    }
                    await sockets.set(name, nil)
                    return result(
                        false, "← \(name): closed \(code)",
                        [
                            "the server closed the socket (\(code)\(reason.isEmpty ? "" : ": \(reason)")) before \(Self.waitedFor(expectation, expected))"
                        ]
                            + Self.passedOver(passed))
                }
            }
            return result(
                false, "← \(name): nothing within \(expectation.within) s",
                ["no \(Self.waitedFor(expectation, expected)) within \(expectation.within) s"] + Self.passedOver(passed))
        case .closeSocket(let name, let code):
            guard await sockets.get(name) != nil else { return result(false, "close", ["socket '\(name)' is not open"]) }
            if let socket = await sockets.get(name) { await socket.close(code: code) }
            await sockets.set(name, nil)
            return result(true, "close \(name) (\(code))")
        case .request, .clock:
            return result(false, step.name, ["not a socket step"])
        }
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
