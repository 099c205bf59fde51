extension ScenarioLoader {
    /// A socket step: `socket:` opens one, `send:` sends on it, `receive:`
    /// waits for a matching message, `closed:` for the server's close frame,
    /// `close:` closes it. Steps name their socket with `as`, `to` and
    /// `from`; without a name, the one opened last.
    static func readSocketStep(
        _ kind: String, _ reader: MappingReader, index: Int, router: EndpointRouter, sockets: inout [String],
        captured: inout Set<String>, loader: inout ContractLoader
    ) -> Step? {
        let allowed = socketStepKeys[kind] ?? []
        for key in reader.keys where !allowed.contains(key) {
            loader.diagnostics.error(
                "'\(key)' does not go with '\(kind)' in step \(index + 1); a \(kind) step takes \(allowed.subtracting([kind]).sorted().joined(separator: ", "))",
                at: reader[key]?.location ?? reader.node.location)
        }
        let explicitName = reader.string("name", diagnostics: &loader.diagnostics)
        /// The socket a step names (`to`, `from`), else the one opened last.
        func socket(_ key: String) -> String? {
            if let named = reader.string(key, diagnostics: &loader.diagnostics) {
                if !sockets.contains(named) {
                    loader.diagnostics.error(
                        "no earlier step opens a socket named '\(named)'\(Suggestion.hint(for: named, in: sockets))", at: reader[key]!.location)
                    return nil
                }
                return named
            }
            guard let last = sockets.last else {
                loader.diagnostics.error(
                    "step \(index + 1) uses a socket, but no earlier step opens one ('socket: GET /path')", at: reader.node.location)
                return nil
            }
            return last
        }
        func within() -> Double {
            guard let node = reader["within"] else { return 5 }
            if let duration = node.scalarText.flatMap(CalendarDuration.parse), duration.months == 0, duration.seconds > 0, duration.seconds <= 600 {
                return duration.seconds
            }
            loader.diagnostics.error("'within' must be a duration up to 10m, like 3s", at: node.location)
            return 5
        }
        switch kind {
        case "socket":
            guard let request = readRequest(reader, key: "socket", roots: captured, loader: &loader) else {
                if reader["socket"]?.scalarText == nil { loader.diagnostics.error("'socket' must be 'GET /path'", at: reader["socket"]!.location) }
                return nil
            }
            if request.method != "GET" {
                loader.diagnostics.error(
                    "a WebSocket opens with GET: write 'socket: GET \(request.path.constantValue?.stringValue ?? "/path")'",
                    at: reader["socket"]!.location)
            }
            var expectation = readExpectation(reader["expect"], roots: captured, loader: &loader)
            if expectation.status == nil { expectation.status = 101 }
            if case .string(let path)? = request.path.constantValue, expectation.status == 101 {
                let target = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
                if case .matched(let endpoint, _) = router.route(method: "GET", path: target, conditions: { _, _ in [] }), endpoint.socket == nil {
                    loader.diagnostics.error(
                        "\(endpoint.id) (GET \(target)) is not a WebSocket endpoint of the contract", at: reader["socket"]!.location)
                }
            }
            let name = reader.string("as", diagnostics: &loader.diagnostics) ?? "socket"
            sockets.append(name)
            return Step(
                name: explicitName ?? "socket \(reader["socket"]?.scalarText ?? "")", action: .openSocket(request, name: name),
                expectation: expectation, captures: [], location: reader.node.location)
        case "send":
            guard let node = reader["send"], let message = loader.compileTemplate(node, roots: captured), let target = socket("to") else {
                return nil
            }
            return Step(
                name: explicitName ?? "→ \(target)", action: .send(message, socket: target), expectation: Expectation(), captures: [],
                location: reader.node.location)
        case "receive":
            guard let node = reader["receive"], let target = socket("from") else { return nil }
            let message = loader.compileTemplate(node, roots: captured)
            checkMatchers(node, loader: &loader)
            var captures: [(String, Expression)] = []
            for entry in reader.entries("capture", diagnostics: &loader.diagnostics) {
                if let expression = loader.compileExpression(entry.value, roots: captured.union(["message"])) {
                    captures.append((entry.name, expression))
                }
            }
            captured.formUnion(captures.map(\.0))
            return Step(
                name: explicitName ?? "← \(target)", action: .receive(SocketExpectation(message: message, within: within()), socket: target),
                expectation: Expectation(), captures: captures, location: reader.node.location)
        case "closed":
            guard let node = reader["closed"], let target = socket("from") else { return nil }
            var code: Int?
            if case .int(let value) = node.json {
                code = value
            } else if !(node.scalarText == "any") {
                loader.diagnostics.error("'closed' is the close code expected, like 4000, or 'any'", at: node.location)
            }
            return Step(
                name: explicitName ?? "← \(target)",
                action: .receive(SocketExpectation(closeCode: code, waitsForClose: true, within: within()), socket: target),
                expectation: Expectation(), captures: [], location: reader.node.location)
        default:
            // `close: NAME`, or `close: {code: N}` / `close: N` for the socket opened last.
            guard let node = reader["close"] else { return nil }
            var code = 1000
            var target = sockets.last
            if case .int(let value) = node.json {
                code = value
            } else if let named = node.scalarText {
                target = sockets.contains(named) ? named : nil
                if target == nil {
                    loader.diagnostics.error(
                        "no earlier step opens a socket named '\(named)'\(Suggestion.hint(for: named, in: sockets))", at: node.location)
                }
            }
            guard let target else {
                if sockets.isEmpty { loader.diagnostics.error("step \(index + 1) closes a socket, but no earlier step opens one", at: node.location) }
                return nil
            }
            return Step(
                name: explicitName ?? "close \(target)", action: .closeSocket(target, code: code), expectation: Expectation(), captures: [],
                location: reader.node.location)
        }
    }
}
