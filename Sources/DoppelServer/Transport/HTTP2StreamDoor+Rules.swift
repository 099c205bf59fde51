import DoppelCore
import DoppelProtobuf
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2

/// A call whose method has `stream:` rules: once its responses open it (an
/// `OK`, with the call's `SocketOpening`), each message is answered as it
/// arrives by the engine's socket rules (`socketMessage`), `on_connect`
/// and `every` rules send on their own, pushes made anywhere in the session
/// reach it, and a rule's `end` (or the client's end of its half, for a
/// client stream) ends it. Both halves are open at once: the client need
/// not finish sending to be answered.
///
/// The call's journal entry is completed when it ends, with the HTTP status
/// of the gRPC status it ended with; each message taken and each sent by a
/// scheduled rule or a push is journaled as it happens, as a WebSocket's.
extension HTTP2StreamDoor {
    /// What an open stream with rules keeps.
    struct Conversation {
        let opening: SocketOpening
        /// The call's decision, its journal entry completed when the stream ends.
        let exchange: DoorExchange
        let method: GRPCCatalog.Method
        /// The next run of each `every` rule.
        var timers: [Scheduled<Void>?] = []
        /// Sends waiting for their delay, by number; each leaves when it runs.
        var scheduled: [Int: Scheduled<Void>] = [:]
        var nextScheduled = 0
        /// The client's message rate.
        var rate: MessageRate
        /// The client ended its half, and the call ends once nothing waits to be sent.
        var endWhenIdle = false
        /// The stream's rules, run in its session one at a time.
        let rules = RuleQueue()
    }

    /// Whether a method's calls are answered by its `stream:` rules.
    static func hasRules(_ path: String, engine: MockEngine) -> Bool {
        engine.contract.grpc?.streams[String(path.dropFirst())] != nil
    }

    /// The opening answer was `OK`: the stream is held open, its rules take over.
    func converse(_ exchange: DoorExchange, answered response: MockResponse, opening: SocketOpening) {
        guard let call, let method = call.method, let loop else { return }
        let hub = answerer.sockets
        let bound = NIOLoopBound(self, eventLoop: loop)
        let member = SocketHub.Member(
            endpointID: opening.endpointID, address: opening.request.remoteAddress, loop: loop, namedOnly: true
        ) { push, from in bound.value.deliverPush(push, from: from) }
        guard hub.join(ObjectIdentifier(self), session: opening.session, member: member) else {
            finish(exchange, status: 429)
            return answerStatus(
                8, message: "Session '\(opening.session)' has \(hub.limits.perSession) sockets and streams open (--max-sockets-per-session)")
        }
        phase = .conversing(call)
        conversation = Conversation(opening: opening, exchange: exchange, method: method, rate: MessageRate(rate: hub.limits.rate))
        writeHeaders(of: response)
        channelContext?.flush()
        guard let rules = call.engine.rules(of: opening.endpointID) else { return endStream(0, message: "", status: nil) }
        for rule in rules.onConnect {
            later(rule.definition.delay?.sample() ?? 0) { [self] in runScheduled(rule) }
        }
        for (index, rule) in rules.every.enumerated() {
            conversation?.timers.append(nil)
            repeatEvery(rule.name, interval: rule.interval ?? 1, slot: index)
        }
        // What arrived while the call was being decided.
        if incoming != nil { readMessages(call) }
        if clientFinished { clientEnded() }
    }

    /// A message of the client's stream, answered by the rules.
    func take(_ message: JSON) {
        guard var conversation, let call, !ended else { return }
        let rate = answerer.sockets.limits.rate
        guard conversation.rate.take(rate: rate) else {
            return endStream(8, message: "More than \(Int(rate)) messages a second", status: nil)
        }
        self.conversation = conversation
        let started = ContinuousClock.now
        let text = JSONWriter.encodeString(message)
        let (engine, opening) = (answerer.slot.versioned.engine, conversation.opening)
        decide(
            { session in engine.socketMessage(text, of: opening, in: session) },
            then: { [self] outcome in
                let outcome = outcome ?? SocketOutcome(rule: nil)
                publish(
                    engine.journalSocket(
                        opening, method: "RECEIVE", rule: outcome.rule, status: 200, outcome: outcome, message: text,
                        durationMicros: (ContinuousClock.now - started).wholeMicroseconds))
                perform(outcome, call)
            })
    }

    /// The client ended its half: a client stream's `on_end` rule runs, and
    /// the call ends (`OK` unless the rule says otherwise) once nothing
    /// waits to be sent. A server stream's client ends its half with its
    /// one message: the stream stays open for its rules and pushes.
    func clientEnded() {
        guard let conversation, let call, !ended, conversation.method.clientStreaming else { return }
        let (engine, opening) = (answerer.slot.versioned.engine, conversation.opening)
        self.conversation?.endWhenIdle = true
        guard engine.rules(of: opening.endpointID)?.onEnd.isEmpty == false else { return endIfIdle() }
        decide(
            { session in engine.streamEnded(of: opening, in: session) },
            then: { [self] outcome in
                guard let outcome else { return }
                publish(engine.journalSocket(opening, method: "SEND", rule: outcome.rule, status: 200, outcome: outcome))
                perform(outcome, call)
            })
    }

    /// Runs a rule in the stream's session through the store (`RuleQueue`),
    /// then ends a call whose client is done if nothing more waits. A store
    /// out of reach, or falling behind, ends the call `UNAVAILABLE`.
    func decide(_ rule: @escaping @Sendable (Session) -> SocketOutcome?, then done: @escaping (SocketOutcome?) -> Void) {
        guard let conversation, let loop else { return }
        conversation.rules.run(
            rule, session: conversation.opening.session, store: answerer.store, engine: answerer.slot.versioned.engine, loop: loop,
            then: { [self, opening = conversation.opening] outcome in
                // After the stream's end too: a shared store committed the rule, so it is journaled and its pushes go;
                // its messages find no stream (`perform` sends nothing once the conversation is over).
                if self.conversation == nil, let outcome {
                    answerer.push(outcome.pushes, session: opening.session, from: opening.endpointID + "." + (outcome.rule ?? ""))
                }
                done(outcome)
                endIfIdle()
            },
            trouble: { [self] trouble in
                switch trouble {
                case .failed(let why): endStream(14, message: "The state store is out of reach: \(why)", status: nil)
                case .behind(let count):
                    endStream(14, message: "\(count) of the stream's messages and rules already wait for the state store", status: nil)
                }
            })
    }

    /// Ends a call whose client is done once no rule or delayed send waits.
    func endIfIdle() {
        guard let conversation, conversation.endWhenIdle, conversation.scheduled.isEmpty, conversation.rules.isIdle else { return }
        endStream(0, message: "", status: nil)
    }

    /// What a rule decided: its pushes now; its messages and its end after its delay.
    func perform(_ outcome: SocketOutcome, _ call: Call) {
        guard let opening = conversation?.opening else { return }
        if !outcome.pushes.isEmpty {
            answerer.push(outcome.pushes, session: opening.session, from: opening.endpointID + "." + (outcome.rule ?? ""))
        }
        guard !outcome.messages.isEmpty || outcome.end != nil else { return }
        let sendNow = { [self] in
            for message in outcome.messages { send(message, call) }
            if let end = outcome.end { endStream(end.code, message: end.message, status: end.status) }
        }
        if outcome.delay > 0 {
            if !later(outcome.delay, sendNow) {
                publish(
                    answerer.slot.versioned.engine.journalSocket(
                        opening, method: "SEND", rule: outcome.rule, status: 200,
                        reason: Reason("not sent: \(SocketConnection.maximumWaiting) delayed messages already wait on this stream")))
            }
        } else {
            sendNow()
        }
    }

    /// One message of the contract's (JSON text) written as the method's
    /// reply type; one that is not ends the call `INTERNAL`, saying why. A
    /// client that has let `maximumUnsentBytes` pile up has the stream reset.
    func send(_ text: String, _ call: Call) {
        guard let conversation, !ended else { return }
        guard unsent <= Self.maximumUnsentBytes else {
            reset(.enhanceYourCalm)
            return streamOver(status: 429, because: "the client read nothing while \(Self.maximumUnsentBytes >> 10) KiB of messages waited")
        }
        guard let message = try? JSONReader.parse(Array(text.utf8)) else {
            return endStream(13, message: "A message of the contract's stream is not JSON: \(text.prefix(80))", status: nil)
        }
        guard let bytes = encode(message, as: conversation.method.output, call) else { return streamOver(status: 500, because: nil) }
        writeMessage(bytes)
    }

    /// A push from a response or a rule anywhere in the session: sent when its delay is over.
    func deliverPush(_ push: RenderedPush, from: String) {
        guard let conversation, let call, !ended else { return }
        let sendNow = { [self] in
            guard !ended else { return }
            publish(
                answerer.slot.versioned.engine.journalSocket(
                    conversation.opening, method: "SEND", rule: "push", status: 200, sent: [push.text], reason: Reason("pushed by \(from)")))
            send(push.text, call)
        }
        if push.delay > 0 {
            later(push.delay, sendNow)
        } else {
            sendNow()
        }
    }

    /// A scheduled rule (`on_connect`, `every`): sent only if its `when` holds.
    func runScheduled(_ rule: SocketRule) {
        guard let conversation, let call, !ended else { return }
        let (engine, opening) = (answerer.slot.versioned.engine, conversation.opening)
        decide(
            { session in engine.runSocketRule(rule, of: opening, in: session) },
            then: { [self] outcome in
                guard var outcome else { return }
                publish(engine.journalSocket(opening, method: "SEND", rule: outcome.rule, status: 200, outcome: outcome))
                // Its own delay was waited already.
                outcome.delay = 0
                perform(outcome, call)
            })
    }

    /// An `every` rule, run each `interval` until the stream ends; found by
    /// name in the contract serving now (a reload's edit applies, a removed rule stops).
    func repeatEvery(_ name: String, interval: Double, slot: Int) {
        guard conversation != nil, !ended, let loop else { return }
        let task = loop.assumeIsolated().scheduleTask(in: SocketConnection.amount(interval)) { [self] in
            guard let conversation,
                let rule = answerer.slot.versioned.engine.rules(of: conversation.opening.endpointID)?.every.first(where: {
                    $0.name == name
                })
            else { return }
            runScheduled(rule)
            repeatEvery(name, interval: rule.interval ?? 1, slot: slot)
        }
        if slot < conversation?.timers.count ?? 0 { conversation?.timers[slot] = task }
    }

    /// Runs `body` after `seconds`, kept so the stream's end cancels it; false when too many wait already.
    @discardableResult
    func later(_ seconds: Double, _ body: @escaping () -> Void) -> Bool {
        guard var conversation, let loop else { return false }
        guard seconds > 0 else {
            body()
            return true
        }
        guard conversation.scheduled.count < SocketConnection.maximumWaiting else { return false }
        let id = conversation.nextScheduled
        conversation.nextScheduled += 1
        conversation.scheduled[id] = loop.assumeIsolated().scheduleTask(in: SocketConnection.amount(seconds)) { [self] in
            self.conversation?.scheduled[id] = nil
            body()
            endIfIdle()
        }
        self.conversation = conversation
        return true
    }

    /// The stream ends with a status: its trailers, and the call journaled.
    func endStream(_ code: Int, message: String, status: JSON?) {
        guard conversation != nil, !ended else { return }
        writeTrailers(code, message: message, details: status)
        streamOver(status: GRPCDefinition.codes.first { $0.code == code }?.http ?? 500, because: nil)
    }

    /// The stream is over (ended, reset, or left by its client): its timers
    /// stop, it leaves the session's streams, and the call is journaled with `status`.
    func streamOver(status: Int, because cause: String?) {
        guard let conversation else { return }
        self.conversation = nil
        conversation.rules.clear()
        for timer in conversation.timers { timer?.cancel() }
        for task in conversation.scheduled.values { task.cancel() }
        answerer.sockets.leave(ObjectIdentifier(self), session: conversation.opening.session)
        if let cause {
            // Why, beside the call's own entry: under `SERVICE/METHOD.end`, counted apart from the calls.
            let opening = conversation.opening
            publish(
                answerer.slot.versioned.engine.journalMessage(
                    session: opening.session, method: "CLOSE", path: opening.path, target: opening.endpointID + ".end", responseName: nil,
                    status: status, reason: Reason("the stream ended: \(cause)")))
        }
        finish(conversation.exchange, status: status)
    }

    /// A stream message's journal entry, published as a `stream` event and logged.
    func publish(_ entry: Journal.Entry) {
        answerer.publish(entry, as: "stream")
    }
}
