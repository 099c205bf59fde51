extension ContractLoader {
    static let socketKeys: Set<String> = ["on_connect", "every", "on_message", "on_unmatched", "protocols", "description"]
    /// A gRPC method's `stream:`: a socket's rules without subprotocols, with `on_end`.
    static let streamKeys: Set<String> = ["on_connect", "every", "on_message", "on_unmatched", "on_end", "description"]
    static let socketRuleKeys: Set<String> = [
        "name", "description", "when", "let", "effects", "send", "push", "close", "delay", "interval", "schema",
    ]
    static let pushKeys: Set<String> = ["socket", "stream", "subscription", "send", "delay"]
    static let endKeys: Set<String> = ["status", "message", "details"]
    static let closeKeys: Set<String> = ["code", "reason"]
    static let callbackKeys: Set<String> = [
        "name", "url", "method", "headers", "body", "schema", "content_type", "delay", "retries", "retry_delay", "timeout", "description",
    ]
    /// The most retries a callback may ask for.
    static let maximumRetries = 10
    /// The most a close frame's reason may hold, in bytes (RFC 6455 section 5.5: 125 for the frame, 2 of them the code).
    static let maximumCloseReason = 123

    /// Where a rule runs, which decides the keys it may have.
    enum SocketTrigger {
        case connect, every, message, unmatched, end

        var key: String {
            switch self {
            case .connect: "on_connect"
            case .every: "every"
            case .message: "on_message"
            case .unmatched: "on_unmatched"
            case .end: "on_end"
            }
        }
    }

    /// `websocket:` of an endpoint, or (`grpc`) `stream:` of a gRPC method,
    /// whose rules send messages of the method's reply type and may `end`
    /// the call rather than `close` a socket.
    mutating func readSocket(_ node: SourceNode, endpointID id: String, endpointLets: [String], grpc: Bool = false) -> SocketDefinition? {
        let context = grpc ? "stream of method '\(id)'" : "websocket of endpoint '\(id)'"
        let keys = grpc ? Self.streamKeys : Self.socketKeys
        guard let reader = MappingReader(node, allowed: keys, context: context, diagnostics: &diagnostics) else { return nil }
        func rules(_ trigger: SocketTrigger) -> [SocketRule] {
            guard let list = reader[trigger.key] else { return [] }
            guard let items = list.sequenceItems else {
                diagnostics.error("'\(trigger.key)' of \(context) must be a list of rules", at: list.location)
                return []
            }
            return items.enumerated().compactMap { index, item in
                readSocketRule(item, name: "\(trigger.key)[\(index)]", trigger: trigger, endpointLets: endpointLets, context: context, grpc: grpc)
            }
        }
        let onConnect = rules(.connect)
        let every = rules(.every)
        let onMessage = rules(.message)
        let onUnmatched = reader["on_unmatched"].flatMap {
            readSocketRule($0, name: "on_unmatched", trigger: .unmatched, endpointLets: endpointLets, context: context, grpc: grpc)
        }
        let onEnd = rules(.end)
        var seen: Set<String> = []
        for rule in onConnect + every + onMessage + (onUnmatched.map { [$0] } ?? []) + onEnd where !seen.insert(rule.name).inserted {
            diagnostics.error(
                "two rules of \(context) are named '\(rule.name)'; the journal and verify tell rules apart by name", at: rule.definition.location)
        }
        var protocols: [String] = []
        if let node = reader["protocols"] {
            for item in node.sequenceItems ?? [node] {
                guard let name = item.scalarText, !name.isEmpty, HTTPToken.isValid(name) else {
                    diagnostics.error("a subprotocol is a token like graphql-transport-ws", at: item.location)
                    continue
                }
                protocols.append(name)
            }
        }
        var socket = SocketDefinition(onConnect: onConnect, every: every, onMessage: onMessage, onUnmatched: onUnmatched)
        socket.protocols = protocols
        socket.onEnd = onEnd
        return socket
    }

    private mutating func readSocketRule(
        _ node: SourceNode, name: String, trigger: SocketTrigger, endpointLets: [String], context: String, grpc: Bool
    ) -> SocketRule? {
        var allowed = Self.socketRuleKeys
        if trigger != .every { allowed.remove("interval") }
        if trigger != .message { allowed.remove("schema") }
        if grpc {
            allowed.remove("close")
            allowed.insert("end")
        }
        let ruleContext = "rule \(name) of \(context)"
        guard let reader = MappingReader(node, allowed: allowed, context: ruleContext, diagnostics: &diagnostics) else { return nil }
        var scope = Self.requestRoots.union(endpointLets)
        if trigger == .message || trigger == .unmatched { scope.insert("message") }
        let when = reader["when"].flatMap { compileExpression($0, roots: scope) }
        if trigger == .unmatched, let whenNode = reader["when"] {
            diagnostics.error("'on_unmatched' takes every message no rule takes, so it cannot have 'when'", at: whenNode.location)
        }
        let bindings = readBindings(reader["let"], roots: scope, context: ruleContext)
        let renderRoots = scope.union(bindings.map(\.0))
        let effects = reader["effects"].map { readEffects($0, roots: renderRoots) } ?? []
        var messages: [ValueTemplate] = []
        if let send = reader["send"] {
            // A list is several messages; one message that is a JSON array is written as a list of one list.
            for item in send.sequenceItems ?? [send] {
                if let template = compileTemplate(item, roots: renderRoots) { messages.append(template) }
            }
        }
        let pushes = reader["push"].map { readPushes($0, roots: renderRoots, context: ruleContext) } ?? []
        let close = reader["close"].flatMap { readClose($0, context: ruleContext) }
        let end = reader["end"].flatMap { readEnd($0, roots: renderRoots, context: ruleContext) }
        var interval: Double?
        if trigger == .every {
            if let node = reader.required("interval", diagnostics: &diagnostics) {
                if let text = node.scalarText, let duration = CalendarDuration.parse(text), duration.months == 0, duration.seconds >= 0.01 {
                    interval = duration.seconds
                } else {
                    diagnostics.error("'interval' must be a duration of at least 10ms, like 500ms or 30s", at: node.location)
                }
            }
        }
        let schema = reader["schema"].flatMap { readSchema($0, context: "schema of \(ruleContext)") }
        let ownName = readName(reader, default: name, context: ruleContext)
        if messages.isEmpty, pushes.isEmpty, effects.isEmpty, node["close"] == nil, node["end"] == nil {
            diagnostics.warning("\(ruleContext) sends nothing, changes nothing and \(grpc ? "ends" : "closes") nothing", at: node.location)
        }
        var definition = ResponseDefinition(
            name: ownName, when: when, status: 101, headers: [], body: .empty, bindings: bindings,
            effects: effects, location: node.location)
        definition.delay = readDelay(reader["delay"])
        definition.description = reader.string("description", diagnostics: &diagnostics)
        var rule = SocketRule(
            definition: definition, messages: messages, pushes: pushes, close: close, schema: schema,
            interval: trigger == .every ? interval ?? 1 : nil)
        rule.end = end
        return rule
    }

    /// `end:` of a gRPC stream's rule: a status by name or number (`end: OK`),
    /// or a mapping with its `status`, `message` and `details` as an error response's.
    private mutating func readEnd(_ node: SourceNode, roots: Set<String>, context: String) -> StreamEnd? {
        let reader: MappingReader?
        let statusNode: SourceNode?
        if node.scalarText != nil {
            reader = nil
            statusNode = node
        } else {
            guard let mapping = MappingReader(node, allowed: Self.endKeys, context: "end of \(context)", diagnostics: &diagnostics) else {
                return nil
            }
            reader = mapping
            statusNode = mapping["status"]
        }
        var code = 0
        if let statusNode {
            let text = statusNode.scalarText ?? ""
            guard let known = GRPCDefinition.codes.first(where: { $0.name == text || String($0.code) == text }) else {
                diagnostics.error(
                    "'status' of an end must be a gRPC status's name (like RESOURCE_EXHAUSTED) or number, not '\(text)'", at: statusNode.location)
                return nil
            }
            code = known.code
        }
        if code == 0, let extra = ["message", "details"].first(where: { reader?.has($0) == true }) {
            diagnostics.error("'\(extra)' belongs to an end whose 'status' is an error, not OK", at: reader![extra]!.location)
            return nil
        }
        if let details = reader?["details"], details.sequenceItems == nil {
            diagnostics.error("'details' of an end must be a list of messages, each with its '@type'", at: details.location)
            return nil
        }
        return StreamEnd(
            code: code, message: reader?["message"].flatMap { compileTemplate($0, roots: roots) },
            details: reader?["details"].flatMap { compileTemplate($0, roots: roots) })
    }

    /// `push:` of a response or a socket rule: messages for the session's open sockets.
    mutating func readPushes(_ node: SourceNode, roots: Set<String>, context: String) -> [SocketPush] {
        var pushes: [SocketPush] = []
        for item in node.sequenceItems ?? [node] {
            guard let reader = MappingReader(item, allowed: Self.pushKeys, context: "push of \(context)", diagnostics: &diagnostics) else { continue }
            guard let send = reader.required("send", diagnostics: &diagnostics), let message = compileTemplate(send, roots: roots) else { continue }
            if reader.has("socket"), reader.has("stream") {
                diagnostics.error(
                    "a push goes to a WebSocket endpoint ('socket') or to a gRPC method's streams ('stream'), not both", at: item.location)
                continue
            }
            let socket = reader.string("socket", diagnostics: &diagnostics) ?? reader.string("stream", diagnostics: &diagnostics)
            var push = SocketPush(socket: socket, message: message, delay: readDelay(reader["delay"]), location: item.location)
            if let field = reader.string("subscription", diagnostics: &diagnostics) {
                let parts = field.split(separator: ".", omittingEmptySubsequences: false)
                if socket != nil {
                    diagnostics.error("a push goes to a 'socket' or to a GraphQL 'subscription', not both", at: reader["subscription"]!.location)
                    continue
                }
                guard parts.count == 2, parts.allSatisfy({ Self.isGraphQLName($0) }) else {
                    diagnostics.error(
                        "'subscription' of a push names a subscription field as 'Type.field' (like 'Subscription.storyReady'), not '\(field)'",
                        at: reader["subscription"]!.location)
                    continue
                }
                push.subscription = field
            }
            pushes.append(push)
        }
        return pushes
    }

    private mutating func readClose(_ node: SourceNode, context: String) -> SocketClose? {
        guard let reader = MappingReader(node, allowed: Self.closeKeys, context: "close of \(context)", diagnostics: &diagnostics) else { return nil }
        let code = reader.int("code", diagnostics: &diagnostics) ?? 1000
        let usable = SocketClose.isSendable(code)
        if !usable {
            diagnostics.error(
                "close code \(code) cannot be sent: use 1000–1003, 1007–1014, or 3000–4999 for the API's own",
                at: reader["code"]?.location ?? node.location)
            return nil
        }
        let reason = reader.string("reason", diagnostics: &diagnostics) ?? ""
        if reason.utf8.count > Self.maximumCloseReason {
            diagnostics.error(
                "a close reason holds at most \(Self.maximumCloseReason) bytes; this one has \(reason.utf8.count)", at: reader["reason"]!.location)
            return nil
        }
        return SocketClose(code: code, reason: reason)
    }

    /// Every `push: {socket: NAME}` names a WebSocket endpoint (or a gRPC
    /// method with `stream:` rules, `streams`), and a
    /// `push: {subscription: Type.field}` is made by a contract with a
    /// `graphql:` section (whose schema the GraphQL door checks it against).
    mutating func checkSocketNames(_ endpoints: [Endpoint], streams: [String: SocketDefinition]) {
        let sockets = endpoints.filter { $0.socket != nil && $0.id != GraphQLDefinition.socketEndpointID }.map(\.id) + streams.keys.sorted()
        let pushes =
            SocketPush.all(in: endpoints, responses: namedResponses.values) + streams.keys.sorted().flatMap { streams[$0]!.rules.flatMap(\.pushes) }
        var reported: Set<String> = []
        let hasGraphQL = endpoints.contains { $0.id == GraphQLDefinition.socketEndpointID }
        for push in pushes where push.subscription != nil && !hasGraphQL && reported.insert("\(push.location)").inserted {
            diagnostics.error(
                "push names subscription '\(push.subscription!)', but the contract has no 'graphql:' section to subscribe to", at: push.location)
        }
        for push in pushes {
            guard let name = push.socket, !sockets.contains(name), reported.insert("\(push.location)").inserted else { continue }
            let known = sockets.isEmpty ? " (the contract has no WebSocket endpoint)" : Suggestion.hint(for: name, in: sockets)
            diagnostics.error(
                "push names '\(name)', which is neither a WebSocket endpoint nor a gRPC method with 'stream:' rules\(known)", at: push.location)
        }
    }

    /// `callbacks:` of a response: requests Doppel makes when it is chosen.
    mutating func readCallbacks(_ node: SourceNode, roots: Set<String>, context: String) -> [CallbackDefinition] {
        guard let items = node.sequenceItems else {
            diagnostics.error("'callbacks' of \(context) must be a list", at: node.location)
            return []
        }
        var callbacks: [CallbackDefinition] = []
        for (index, item) in items.enumerated() {
            let name = "callbacks[\(index)]"
            guard let reader = MappingReader(item, allowed: Self.callbackKeys, context: "\(name) of \(context)", diagnostics: &diagnostics) else {
                continue
            }
            guard let urlNode = reader.required("url", diagnostics: &diagnostics), let url = compileTemplate(urlNode, roots: roots) else { continue }
            if case .string(let fixed)? = url.constantValue {
                let scheme = fixed.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
                if scheme != "http" && scheme != "https" || URLParts(fixed) == nil {
                    diagnostics.error("a callback's url must be an http or https URL, like http://127.0.0.1:9000/hooks", at: urlNode.contentLocation)
                }
            }
            var method = "POST"
            if let methodNode = reader["method"], let text = methodNode.scalarText {
                method = text.uppercased()
                if !Self.methods.contains(method) {
                    diagnostics.error("unknown method '\(text)'\(Suggestion.hint(for: method, in: Self.methods))", at: methodNode.location)
                }
            }
            var headers: [(String, ValueTemplate)] = []
            for entry in reader.entries("headers", diagnostics: &diagnostics) {
                if let template = compileTemplate(entry.value, roots: roots) { headers.append((entry.name, template)) }
            }
            var body = reader["body"].flatMap { compileTemplate($0, roots: roots) }
            if let schemaNode = reader["schema"], let schema = readSchema(schemaNode, context: "schema of \(name) of \(context)") {
                if body != nil {
                    diagnostics.error("a callback's 'schema' stands for its body; give one or the other", at: schemaNode.location)
                } else if let value = SchemaSampler(registry: schemas).sample(schema) {
                    // Generated once, here: the same body every time (as `body_from_schema`).
                    body = .constant(value)
                } else {
                    diagnostics.warning(
                        "no body can be generated from the schema of \(name) of \(context); it is sent without one", at: schemaNode.location)
                }
            }
            var retries = 0
            if let retriesNode = reader["retries"] {
                if case .int(let value) = retriesNode.json, (0...Self.maximumRetries).contains(value) {
                    retries = value
                } else {
                    diagnostics.error("'retries' must be a whole number from 0 to \(Self.maximumRetries)", at: retriesNode.location)
                }
            }
            func seconds(_ key: String, default value: Double, range: ClosedRange<Double>) -> Double {
                guard let node = reader[key] else { return value }
                if let duration = node.scalarText.flatMap(CalendarDuration.parse), duration.months == 0, range.contains(duration.seconds) {
                    return duration.seconds
                }
                diagnostics.error(
                    "'\(key)' must be a duration from \(Self.durationText(range.lowerBound)) to \(Self.durationText(range.upperBound))",
                    at: node.location)
                return value
            }
            let delay = readDelay(reader["delay"])
            if let delay, delay.maximum > 3600 {
                diagnostics.error("a callback waits at most 1h before it is sent", at: reader["delay"]!.location)
            }
            callbacks.append(
                CallbackDefinition(
                    name: readName(reader, default: name, context: "\(name) of \(context)"), method: method, url: url, headers: headers, body: body,
                    contentType: reader.string("content_type", diagnostics: &diagnostics), delay: delay, retries: retries,
                    retryDelay: seconds("retry_delay", default: 1, range: 0.01...3600), timeout: seconds("timeout", default: 10, range: 0.1...300),
                    location: item.location))
        }
        return callbacks
    }

    static func durationText(_ seconds: Double) -> String {
        seconds < 1 ? "\(Int(seconds * 1000))ms" : seconds >= 3600 ? "\(Int(seconds / 3600))h" : "\(Int(seconds))s"
    }
}

/// The scheme, host and port of an absolute http(s) URL, read without
/// Foundation's URL parsing (which differs between platforms); nil when it is not one.
package struct URLParts: Sendable, Equatable {
    package let secure: Bool
    /// Lowercased, without brackets around an IPv6 address.
    package let host: String
    package let port: Int
    /// The path and query, from the first `/` (or `/` when there is none).
    package let target: String

    package init?(_ text: String) {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") {
            secure = false
            rest = text.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            secure = true
            rest = text.dropFirst(8)
        } else {
            return nil
        }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        // Credentials in a URL are not sent (and a '@' would hide the real host from a reader).
        if authority.contains("@") { return nil }
        var target = String(rest[authorityEnd...])
        if let hash = target.firstIndex(of: "#") { target = String(target[..<hash]) }
        if target.isEmpty || target.first == "?" { target = "/" + target }
        // The request line is written as it is: a control character could end
        // it (and start a header of the URL's choosing); a space, a non-ASCII
        // letter or a character RFC 3986 leaves out is percent-encoded.
        var encoded: [UInt8] = []
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in target.utf8 {
            if byte < 0x20 || byte == 0x7F { return nil }
            if byte == 0x20 || byte > 0x7E || "\"<>\\^`{|}".utf8.contains(byte) {
                encoded += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            } else {
                encoded.append(byte)
            }
        }
        self.target = String(decoding: encoded, as: UTF8.self)
        var port = secure ? 443 : 80
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close].lowercased()
            let after = authority[authority.index(after: close)...]
            if after.first == ":" {
                guard let value = Int(after.dropFirst()), (1...65535).contains(value) else { return nil }
                port = value
            } else if !after.isEmpty {
                return nil
            }
        } else {
            if let colon = authority.lastIndex(of: ":") {
                guard let value = Int(authority[authority.index(after: colon)...]), (1...65535).contains(value) else { return nil }
                port = value
                authority = authority[..<colon]
            }
            host = authority.lowercased()
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "_" }) else { return nil }
        self.port = port
    }
}
