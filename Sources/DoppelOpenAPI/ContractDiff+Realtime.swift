import DoppelCore

/// What changed in an endpoint's WebSocket (its subprotocols, the rules
/// that answer messages and send them, their close codes) and in the
/// callbacks its responses make. The rule is the one for HTTP: what a
/// client sends must still be taken, and what it receives (a message, a
/// close frame, a callback's request to its own server) must be what it
/// can read.
extension ContractDiff.Differ {
    mutating func compareSocket(_ a: Endpoint, _ b: Endpoint, _ signature: String) {
        switch (a.socket, b.socket) {
        case (nil, nil):
            return
        case (.some, nil):
            add("socket-removed", true, signature, "websocket", "the endpoint no longer upgrades to a WebSocket")
        case (nil, .some):
            add("socket-added", false, signature, "websocket", "the endpoint now upgrades to a WebSocket")
        case let (before?, after?):
            compareSocket(before, after, signature)
        }
    }

    /// Whether both versions can say what a socket's rules and pushes are:
    /// an OpenAPI document says nothing of them, and a contract compared
    /// with one would seem to have lost them all.
    var comparesRealtime: Bool { !old.isOpenAPIDocument && !new.isOpenAPIDocument }

    private mutating func compareSocket(_ a: SocketDefinition, _ b: SocketDefinition, _ signature: String) {
        // Offering no subprotocol is always taken; offering only one the endpoint no longer speaks is refused.
        for name in a.protocols where !b.protocols.contains(name) {
            add("socket-protocol-removed", true, signature, "websocket", "subprotocol \(name) is no longer spoken")
        }
        for name in b.protocols where !a.protocols.contains(name) {
            add("socket-protocol-added", false, signature, "websocket", "subprotocol \(name) is now spoken")
        }
        guard comparesRealtime else { return }
        let groups: [(String, [SocketRule], [SocketRule])] = [
            ("on_connect", a.onConnect, b.onConnect), ("every", a.every, b.every), ("on_message", a.onMessage, b.onMessage),
            ("on_unmatched", a.onUnmatched.map { [$0] } ?? [], b.onUnmatched.map { [$0] } ?? []),
        ]
        for (group, oldRules, newRules) in groups {
            func place(_ rule: SocketRule) -> String {
                rule.name.hasPrefix(group) ? "websocket \(rule.name)" : "websocket \(group) \(rule.name)"
            }
            for (index, rule) in oldRules.enumerated() {
                // Rules are matched by name; unnamed ones (named by their place) in order.
                guard
                    let counterpart = newRules.first(where: { $0.name == rule.name })
                        ?? (Self.isPlaceName(rule.name) && index < newRules.count
                            && Self.isPlaceName(newRules[index].name) ? newRules[index] : nil)
                else {
                    let detail =
                        switch group {
                        case "on_message": "messages it answered are no longer answered by it"
                        case "on_unmatched": "a message no rule takes is now ignored"
                        default: "its messages are no longer sent"
                        }
                    add("socket-rule-removed", true, signature, place(rule), detail)
                    continue
                }
                compareRule(rule, counterpart, signature, place(rule))
            }
            for rule in newRules where !oldRules.contains(where: { $0.name == rule.name }) && !Self.isPlaceName(rule.name) {
                add("socket-rule-added", false, signature, place(rule), "a new rule")
            }
        }
        let oldCodes = Set(a.rules.compactMap(\.close?.code))
        let newCodes = Set(b.rules.compactMap(\.close?.code))
        for code in oldCodes.subtracting(newCodes).sorted() {
            add("close-code-removed", true, signature, "websocket", "close code \(code) is no longer sent")
        }
        for code in newCodes.subtracting(oldCodes).sorted() {
            add("close-code-added", false, signature, "websocket", "close code \(code) may now be sent")
        }
    }

    /// Whether a rule's name is the loader's for an unnamed rule (`on_message[2]`).
    static func isPlaceName(_ name: String) -> Bool { name.hasSuffix("]") }

    private mutating func compareRule(_ a: SocketRule, _ b: SocketRule, _ signature: String, _ place: String) {
        // The messages a rule takes: a request's schema, which may accept more, never less.
        if let oldSchema = a.schema {
            compareSchema(
                OpenAPIExporter.schemaJSON(oldSchema), b.schema.map(OpenAPIExporter.schemaJSON) ?? [:], request: true, signature,
                place + " message taken", "")
        } else if b.schema != nil {
            add("socket-message-narrowed", true, signature, place, "the rule now takes only messages of a schema")
        }
        // The messages it sends: an answer's shape, which may say more, never less.
        for (index, message) in a.messages.enumerated() {
            guard index < b.messages.count else {
                add("socket-message-removed", true, signature, place, "message \(index + 1) is no longer sent")
                continue
            }
            compareSchema(
                OpenAPIExporter.inferredSchema(message), OpenAPIExporter.inferredSchema(b.messages[index]),
                request: false, signature, place + " message \(index + 1)", "")
        }
        if b.messages.count > a.messages.count {
            add("socket-message-added", false, signature, place, "\(b.messages.count - a.messages.count) more message(s) sent")
        }
        comparePushes(a.pushes, b.pushes, signature, place)
        switch (a.close, b.close) {
        case let (before?, after?) where before.code != after.code:
            add("close-code-changed", true, signature, place, "the rule closes with \(after.code), not \(before.code)")
        case (nil, let after?):
            add("socket-close-added", true, signature, place, "the rule now closes the socket (\(after.code))")
        case (let before?, nil):
            add("socket-close-removed", true, signature, place, "the rule no longer closes the socket (\(before.code))")
        default:
            break
        }
        if let before = a.interval, let after = b.interval, before != after {
            add("socket-interval-changed", false, signature, place, "every \(Self.seconds(before)), now every \(Self.seconds(after))")
        }
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    /// The messages a status's responses push to the session's sockets, by
    /// order: each must still be one a client reads.
    mutating func comparePushes(_ before: [ResponseDefinition], _ after: [ResponseDefinition], _ signature: String, _ place: String) {
        guard comparesRealtime else { return }
        comparePushes(before.flatMap(\.pushes), after.flatMap(\.pushes), signature, place)
    }

    /// Pushes by order, a response's or a socket rule's: each still sent, and its message one a client reads.
    private mutating func comparePushes(_ oldPushes: [SocketPush], _ newPushes: [SocketPush], _ signature: String, _ place: String) {
        for (index, push) in oldPushes.enumerated() {
            guard index < newPushes.count else {
                add("socket-push-removed", true, signature, place, "push \(index + 1)\(push.socket.map { " to \($0)" } ?? "") is no longer sent")
                continue
            }
            compareSchema(
                OpenAPIExporter.inferredSchema(push.message), OpenAPIExporter.inferredSchema(newPushes[index].message),
                request: false, signature, place + " push \(index + 1)", "")
        }
    }

    /// The requests Doppel makes to a client's server (`callbacks`) per
    /// status: a callback gone, or its method, media type, headers or body's
    /// shape changed, is breaking for the server that receives it.
    mutating func compareCallbacks(_ before: [ResponseDefinition], _ after: [ResponseDefinition], _ signature: String, _ place: String) {
        let oldCallbacks = before.flatMap(\.callbacks)
        let newCallbacks = after.flatMap(\.callbacks)
        var seen: Set<String> = []
        for callback in oldCallbacks where seen.insert(callback.name).inserted {
            let at = "\(place) callback \(callback.name)"
            guard let counterpart = newCallbacks.first(where: { $0.name == callback.name }) else {
                // An OpenAPI document names only callbacks whose URL a runtime expression can say.
                guard old.isOpenAPIDocument == new.isOpenAPIDocument else { continue }
                add("callback-removed", true, signature, at, "the callback is no longer made")
                continue
            }
            if callback.method != counterpart.method {
                add("callback-method-changed", true, signature, at, "\(callback.method) became \(counterpart.method)")
            }
            let oldType = callback.contentType.map(MediaTypes.essence)
            let newType = counterpart.contentType.map(MediaTypes.essence)
            if let oldType, let newType, oldType != newType {
                add("callback-media-type-changed", true, signature, at, "\(oldType) became \(newType)")
            }
            let oldHeaders = Set(callback.headers.map { $0.0.lowercased() })
            let newHeaders = Set(counterpart.headers.map { $0.0.lowercased() })
            for header in oldHeaders.subtracting(newHeaders).sorted() {
                add("callback-header-removed", true, signature, at, "header \(header) is no longer sent")
            }
            switch (callback.body, counterpart.body) {
            case let (oldBody?, newBody?):
                compareSchema(
                    OpenAPIExporter.inferredSchema(oldBody), OpenAPIExporter.inferredSchema(newBody), request: false, signature, at + " body", "")
            case (.some, nil):
                add("callback-body-removed", true, signature, at, "the callback no longer sends a body")
            default:
                break
            }
        }
        for callback in newCallbacks where seen.insert(callback.name).inserted && old.isOpenAPIDocument == new.isOpenAPIDocument {
            add("callback-added", false, signature, "\(place) callback \(callback.name)", "a new callback")
        }
    }
}
