import Foundation

/// WebSockets: the upgrade's checks, and the rules of an open socket, each
/// run as a request is, in one transaction on the socket's session.
extension MockEngine {
    /// Why an upgrade request cannot be taken (RFC 6455 section 4.2.1), or nil.
    static func handshakeProblem(_ request: RecordedRequest, socket: SocketDefinition) -> Problem? {
        func hasToken(_ header: String, _ token: String) -> Bool {
            request.header(header)?.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).caseInsensitiveEquals(token) } ?? false
        }
        guard hasToken("upgrade", "websocket"), hasToken("connection", "upgrade") else {
            return .upgradeRequired(
                "send `Upgrade: websocket` and `Connection: Upgrade` (with `Sec-WebSocket-Key` and `Sec-WebSocket-Version: 13`) in an HTTP/1.1 GET")
        }
        guard request.method == "GET" else {
            return .malformedUpgrade("a WebSocket opens with GET (RFC 6455 section 4.1), not \(request.method)")
        }
        guard request.header("sec-websocket-version")?.trimmingCharacters(in: .whitespaces) == "13" else {
            return .upgradeRequired("only WebSocket version 13 is spoken; send `Sec-WebSocket-Version: 13`")
        }
        guard let key = request.header("sec-websocket-key"), Data(base64Encoded: key.trimmingCharacters(in: .whitespaces))?.count == 16 else {
            return .malformedUpgrade("`Sec-WebSocket-Key` must be 16 random bytes in base64")
        }
        let offered = offeredProtocols(request)
        if !socket.protocols.isEmpty, !offered.isEmpty, chosenProtocol(offered: offered, spoken: socket.protocols) == nil {
            return .malformedUpgrade(
                "it offers the subprotocols \(offered.joined(separator: ", ")); this endpoint speaks \(socket.protocols.joined(separator: ", "))")
        }
        return nil
    }

    /// The subprotocols an upgrade offers (`Sec-WebSocket-Protocol`), in its order.
    package static func offeredProtocols(_ request: RecordedRequest) -> [String] {
        request.headers.filter { $0.name.caseInsensitiveEquals("sec-websocket-protocol") }
            .flatMap { $0.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }.filter { !$0.isEmpty }
    }

    /// The subprotocol answered: the endpoint's most preferred one the client offers.
    package static func chosenProtocol(offered: [String], spoken: [String]) -> String? {
        spoken.first { offered.contains($0) }
    }

    /// Runs a scheduled rule of an open socket (`on_connect`, `every`);
    /// nil when its `when` does not hold (nothing is sent or changed).
    /// `session`: the socket's session as a store gives it (`StateStore.transact`); nil: the engine's own.
    package func runSocketRule(_ rule: SocketRule, of opening: SocketOpening, in session: Session? = nil) -> SocketOutcome? {
        run([rule], of: opening, message: nil, text: nil, in: session)
    }

    /// Answers a message from the client with the first `on_message` rule
    /// whose schema the message keeps and whose `when` holds, else
    /// `on_unmatched`; an outcome without a rule when none takes it.
    package func socketMessage(_ text: String, of opening: SocketOpening, in session: Session? = nil) -> SocketOutcome {
        guard let socket = rules(of: opening.endpointID) else { return SocketOutcome(rule: nil) }
        // A text that is JSON is seen as its value, any other as a string.
        let message = (try? JSONReader.parse(Array(text.utf8))) ?? .string(text)
        let validator = SchemaValidator(registry: contract.schemas)
        var refusedBySchema = 0
        let candidates = socket.onMessage.filter { rule in
            guard let schema = rule.schema else { return true }
            if validator.validate(message, against: schema).isEmpty { return true }
            refusedBySchema += 1
            return false
        }
        if let outcome = run(candidates, of: opening, message: message, text: text, in: session) { return outcome }
        let schemaNote = refusedBySchema > 0 ? ", \(refusedBySchema) of them refused it by schema" : ""
        if let unmatched = socket.onUnmatched, var outcome = run([unmatched], of: opening, message: message, text: text, in: session) {
            outcome.reason = Reason("no on_message rule took the message (\(socket.onMessage.count) checked\(schemaNote)); on_unmatched")
            return outcome
        }
        var outcome = SocketOutcome(rule: nil)
        outcome.reason = Reason("no on_message rule took the message (\(socket.onMessage.count) checked\(schemaNote)); nothing sent")
        return outcome
    }

    /// The rules of a WebSocket endpoint, or of a gRPC method's stream (`stream:`), by its id.
    package func rules(of endpointID: String) -> SocketDefinition? {
        contract.endpoint(id: endpointID)?.socket ?? contract.grpc?.streams[endpointID]
    }

    /// The client ended its half of a gRPC stream: the first `on_end` rule
    /// whose `when` holds, run; nil when none does (the door ends the call `OK`).
    package func streamEnded(of opening: SocketOpening, in session: Session? = nil) -> SocketOutcome? {
        guard let rules = rules(of: opening.endpointID)?.onEnd else { return nil }
        return run(rules, of: opening, message: nil, text: nil, in: session)
    }

    /// The first of `rules` whose `when` holds, its effects applied, its
    /// messages rendered; nil when none holds. A rule that fails (a broken
    /// template, state past its bound) changes nothing and closes the
    /// socket with 1011, its reason saying why.
    private func run(_ rules: [SocketRule], of opening: SocketOpening, message: JSON?, text: String?, in given: Session?) -> SocketOutcome? {
        guard !rules.isEmpty else { return nil }
        let session = given ?? sessions.session(opening.session)
        let real = clock()
        var context = EvaluationContext(roots: opening.roots, now: real, request: opening.request)
        if let message { context.roots[.message] = message }
        do throws(Failure) {
            return try session.transact { (data: inout SessionData) throws(Failure) -> SocketOutcome? in
                context.now = data.clock.now(real: real)
                var why = Reason()
                let chosen: ResponseDefinition
                do throws(ResponseSelector.Failure) {
                    chosen = try selector.select(
                        from: rules.map(\.definition), endpointBindings: [], context: &context, data: &data,
                        sequenceScope: opening.endpointID, why: &why)
                } catch .noResponseMatched {
                    return nil
                } catch {
                    throw .selection(error)
                }
                let rule = rules.first { $0.name == chosen.name } ?? rules[0]
                // Said of rules, not of an endpoint's responses.
                switch why.choice {
                case .first:
                    why.choice = nil
                    why.given = message == nil ? "rule '\(rule.name)' ran" : "rule '\(rule.name)' (the first, without `when`)"
                case .afterWhens(let checked):
                    why.choice = nil
                    why.given = "no earlier rule's `when` held (\(checked) checked); rule '\(rule.name)', without one"
                default: break
                }
                var outcome = SocketOutcome(rule: rule.name)
                do throws(EvaluationError) {
                    for template in rule.messages { outcome.messages.append(try Self.text(template, in: context)) }
                    outcome.pushes = try Self.render(rule.pushes, in: context)
                } catch {
                    throw .rendering(error, response: rule.name)
                }
                outcome.close = rule.close
                if let end = rule.end {
                    do throws(EvaluationError) {
                        outcome.end = try Self.render(end, in: context)
                    } catch {
                        throw .rendering(error, response: rule.name)
                    }
                }
                outcome.delay = rule.definition.delay?.sample() ?? 0
                outcome.reason = why
                outcome.changes = data.changedPaths
                return outcome
            }
        } catch {
            var outcome = SocketOutcome(rule: rules.count == 1 ? rules[0].name : nil)
            let problem = error.problem(endpointID: opening.endpointID)
            outcome.reason = Reason(problem.detail)
            outcome.close = SocketClose(code: 1011, reason: "the contract's rule failed; see the journal")
            outcome.end = RenderedEnd(code: 13, message: "The contract's rule failed: \(problem.detail)", status: nil)
            return outcome
        }
    }

    /// A message's text: a string as it is, anything else as its JSON text.
    /// `asJSON`: a string too is written as JSON (a subscription field's value).
    static func text(_ template: ValueTemplate, in context: EvaluationContext, asJSON: Bool = false) throws(EvaluationError) -> String {
        let value = try template.render(in: context)
        if !asJSON, case .string(let text) = value { return text }
        guard let encoded = JSONWriter.encode(value, limit: Expression.maximumBuild) else { throw .budget("the message") }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// A stream's `end:` rendered: its message, and its details as a whole `google.rpc.Status`.
    static func render(_ end: StreamEnd, in context: EvaluationContext) throws(EvaluationError) -> RenderedEnd {
        var message = ""
        if let template = end.message { message = try template.render(in: context).interpolationText }
        var details: JSON?
        if let template = end.details { details = try template.render(in: context) }
        guard let details, details.arrayValue?.isEmpty == false else {
            return RenderedEnd(code: end.code, message: message, status: nil)
        }
        let status = JSONObject([("code", .int(end.code)), ("message", .string(message)), ("details", details)])
        return RenderedEnd(code: end.code, message: message, status: .object(status))
    }

    /// `push` items rendered, each with its delay drawn.
    static func render(_ pushes: [SocketPush], in context: EvaluationContext) throws(EvaluationError) -> [RenderedPush] {
        var rendered: [RenderedPush] = []
        for push in pushes {
            // A subscription's value is JSON whatever its type (a string too), as the field's value.
            let text = try Self.text(push.message, in: context, asJSON: push.subscription != nil)
            rendered.append(RenderedPush(socket: push.socket, text: text, delay: push.delay?.sample() ?? 0, subscription: push.subscription))
        }
        return rendered
    }

    /// `callbacks` rendered: URL, headers and body, each delay drawn.
    static func render(_ callbacks: [CallbackDefinition], in context: EvaluationContext) throws(EvaluationError) -> [RenderedCallback] {
        var rendered: [RenderedCallback] = []
        for callback in callbacks {
            let url = try callback.url.render(in: context).interpolationText
            var headers: [(name: String, value: String)] = []
            for (name, template) in callback.headers {
                let value = try template.render(in: context)
                // A value's control characters become spaces (a line break would start a header of the request's choosing).
                if !value.isNull, HTTPToken.isValid(name) {
                    headers.append(
                        (
                            name,
                            String(
                                value.interpolationText.unicodeScalars.map { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F ? " " : Character($0) }
                            )
                        ))
                }
            }
            var body: [UInt8] = []
            if let template = callback.body {
                let value = try template.render(in: context)
                let isText = value.stringValue != nil
                body = Array(try text(.constant(value), in: context).utf8)
                if !headers.contains(where: { $0.name.caseInsensitiveEquals("content-type") }) {
                    headers.append(("Content-Type", callback.contentType ?? (isText ? "text/plain; charset=utf-8" : "application/json")))
                }
            }
            rendered.append(
                RenderedCallback(
                    name: callback.name, method: callback.method, url: url, headers: headers, body: body,
                    delay: callback.delay?.sample() ?? 0, retries: callback.retries, retryDelay: callback.retryDelay,
                    timeout: callback.timeout))
        }
        return rendered
    }

    /// Journals what happened on a socket: a message taken (`RECEIVE`),
    /// messages sent by a scheduled rule or a push (`SEND`), counted under
    /// `<endpoint>.<rule>` with status 101; or the socket closed (`CLOSE`),
    /// counted under the endpoint with the close code as its status.
    @discardableResult
    package func journalSocket(
        _ opening: SocketOpening, method: String, rule: String?, status: Int = 101, outcome: SocketOutcome? = nil,
        message: String? = nil, sent: [String] = [], reason: Reason? = nil, durationMicros: Int = 0
    ) -> Journal.Entry {
        journalMessage(
            session: opening.session, method: method, path: opening.path,
            target: method == "CLOSE" ? opening.endpointID : "\(opening.endpointID).\(rule ?? "on_unmatched")",
            responseName: method == "CLOSE" ? nil : rule, status: status, message: message,
            sent: sent.isEmpty ? outcome?.messages ?? [] : sent, reason: outcome?.reason ?? reason, changes: outcome?.changes ?? [],
            durationMicros: durationMicros)
    }

    /// Journals one message of a socket or a gRPC stream (`RECEIVE`, `SEND`,
    /// `CLOSE`): `message` the one taken, `sent` those sent, counted under
    /// `target` (never the endpoint's own id, so calls are counted apart from their messages).
    @discardableResult
    package func journalMessage(
        session: String, method: String, path: String, target: String, responseName: String?, status: Int, message: String? = nil,
        sent: [String] = [], reason: Reason?, changes: [String] = [], durationMicros: Int = 0
    ) -> Journal.Entry {
        let now = sessions.session(session).now(real: clock())
        let sequence = journal.record(
            time: now, session: session, method: method, path: path, query: nil, status: status, endpointID: target,
            responseName: responseName, durationMicros: durationMicros, reason: reason, changes: changes, message: message, sent: sent)
        var entry = Journal.Entry(
            sequence: sequence, time: now, session: session, method: method, path: path, query: nil, status: status, endpointID: target,
            responseName: responseName, durationMicros: durationMicros, why: reason, changes: changes)
        if let message { entry.message = Journal.clip(message) }
        entry.sent = sent.prefix(Journal.maximumSent).map { Journal.clip($0) }
        return entry
    }

    /// Journals one attempt of a callback (`CALLBACK`): counted under
    /// `target` (`<endpoint>.<name>`) with the receiver's status (0 for
    /// none), its URL (without the query) as the path and its body as the message.
    package func journalCallback(
        _ callback: RenderedCallback, target: String, session: String, status: Int, durationMicros: Int, reason: String
    ) -> Journal.Entry {
        let url = String(callback.url.prefix { $0 != "?" }.prefix(2048))
        let now = sessions.session(session).now(real: clock())
        let text = callback.body.isEmpty ? nil : String(decoding: callback.body, as: UTF8.self)
        let why = Reason(reason)
        let sequence = journal.record(
            time: now, session: session, method: "CALLBACK", path: url, query: nil, status: status, endpointID: target,
            responseName: callback.name, durationMicros: durationMicros, reason: why, message: text)
        var entry = Journal.Entry(
            sequence: sequence, time: now, session: session, method: "CALLBACK", path: url, query: nil, status: status,
            endpointID: target, responseName: callback.name, durationMicros: durationMicros, why: why)
        entry.message = text.map { Journal.clip($0) }
        return entry
    }
}
