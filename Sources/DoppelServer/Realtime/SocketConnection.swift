import Crypto
import DoppelCore
import DoppelGraphQL
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// One open WebSocket: reads the client's frames (joined by NIO's
/// aggregator, within the size bound), answers them by the contract's
/// rules, runs its scheduled rules, takes pushes, and keeps the bounds:
/// message size (1009), message rate (1008), idle time (1001), and a client
/// that does not read (dropped once `Limits.outbound` bytes wait for it).
/// Everything runs on the connection's event loop.
final class SocketConnection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let answerer: Answerer
    let opening: SocketOpening
    private let hub: SocketHub
    var context: ChannelHandlerContext?
    /// The next run of each `every` rule.
    private var timers: [Scheduled<Void>?] = []
    /// Sends waiting for their delay (on_connect rules, delayed answers and pushes), by number; each leaves when it runs.
    var scheduled: [Int: Scheduled<Void>] = [:]
    var nextScheduled = 0
    private var idleTimer: Scheduled<Void>?
    private var lastFrame = NIODeadline.now()
    /// The client's message rate.
    private var rate: MessageRate
    /// Bytes written and not yet taken by the client's side of the connection.
    private var pendingBytes = 0
    /// A close frame was sent (or the connection dropped): nothing more is sent or answered.
    var closing = false
    /// Why and how the socket ended, journaled once.
    private var ended = false
    /// A GraphQL socket's protocol (`graphql-transport-ws`); nil for a socket the contract's rules answer.
    var graphql: GraphQLSocketSession?
    /// A GraphQL socket's operations waiting to run, in order, and whether one runs now.
    var works: [GraphQLSocketSession.Work] = []
    var working = false
    /// The socket's rules, run in its session one at a time.
    private let rules = RuleQueue()

    init(answerer: Answerer, opening: SocketOpening) {
        self.answerer = answerer
        self.opening = opening
        self.hub = answerer.sockets
        self.rate = MessageRate(rate: answerer.sockets.limits.rate)
    }

    /// The engine now: a reloaded contract's rules apply to open sockets from their next message.
    var engine: MockEngine { answerer.slot.versioned.engine }

    /// Takes a place among the session's sockets before the upgrade is
    /// answered; false when the session has as many as allowed.
    func join(loop: any EventLoop) -> Bool {
        let bound = NIOLoopBound(self, eventLoop: loop)
        return hub.join(
            ObjectIdentifier(self), session: opening.session,
            member: .init(endpointID: opening.endpointID, address: opening.request.remoteAddress, loop: loop) { push, from in
                bound.value.deliverPush(push, from: from)
            })
    }

    /// Gives the place back (an upgrade that did not happen).
    func leave() {
        hub.leave(ObjectIdentifier(self), session: opening.session)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let loop = context.eventLoop
        watchIdle()
        guard let socket = engine.contract.endpoint(id: opening.endpointID)?.socket else {
            // A reload removed the endpoint between the 101 and now.
            close(SocketClose(code: 1001, reason: "the endpoint is gone"), by: "a reload of the contract removed \(opening.endpointID)")
            return
        }
        if opening.endpointID == GraphQLDefinition.socketEndpointID, let definition = engine.contract.graphql {
            graphql = GraphQLSocketSession(
                service: answerer.graphql, definition: definition, caller: DoorCalls(answerer: answerer), upgrade: opening.request)
            // graphql-transport-ws: a client that does not say `connection_init` in time is closed with 4408.
            later(GraphQLSocketSession.initialisationTimeout, on: loop) { [self] in
                guard graphql?.acknowledged == false else { return }
                close(
                    SocketClose(code: 4408, reason: "Connection initialisation timeout"),
                    by: "no connection_init within \(Int(GraphQLSocketSession.initialisationTimeout)) s")
            }
            return
        }
        for rule in socket.onConnect {
            let delay = rule.definition.delay?.sample() ?? 0
            later(delay, on: loop) { [self] in run(rule, scheduled: true) }
        }
        for (index, rule) in socket.every.enumerated() {
            timers.append(nil)
            repeatEvery(rule.name, interval: rule.interval ?? 1, slot: index)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        lastFrame = .now()
        guard !closing else { return }
        switch frame.opcode {
        case .text:
            guard take() else {
                close(
                    SocketClose(code: 1008, reason: "more than \(Int(hub.limits.rate)) messages a second"),
                    by: "the client sent more than \(Int(hub.limits.rate)) messages a second")
                return
            }
            var data = frame.unmaskedData
            guard let text = data.readString(length: data.readableBytes),
                String(validating: frame.unmaskedData.readableBytesView, as: UTF8.self) != nil
            else {
                close(SocketClose(code: 1007, reason: "a text message must be UTF-8"), by: "the client sent a text message that is not UTF-8")
                return
            }
            answer(text)
        case .binary:
            close(
                SocketClose(code: 1003, reason: "binary messages are not taken"),
                by: "the client sent a binary message; contracts describe text (JSON) messages")
        case .ping:
            guard take() else {
                close(
                    SocketClose(code: 1008, reason: "more than \(Int(hub.limits.rate)) messages a second"),
                    by: "the client sent more than \(Int(hub.limits.rate)) messages (pings among them) a second")
                return
            }
            var pong = frame.unmaskedData
            if pong.readableBytes > 125 { pong = pong.getSlice(at: pong.readerIndex, length: 125)! }
            write(WebSocketFrame(fin: true, opcode: .pong, data: pong))
        case .connectionClose:
            var data = frame.unmaskedData
            guard data.readableBytes != 1 else {
                close(SocketClose(code: 1002, reason: "a close frame's body is a code of two bytes"), by: "the client sent a close frame of one byte")
                return
            }
            // No body means no code (1005); a code given must be one an endpoint may send.
            let hasCode = data.readableBytes >= 2
            let code = hasCode ? data.readInteger(as: UInt16.self).map(Int.init) ?? 1005 : 1005
            guard !hasCode || SocketClose.isSendable(code) else {
                close(
                    SocketClose(code: 1002, reason: "close code \(code) may not be sent"),
                    by: "the client closed with code \(code), which no endpoint may send (RFC 6455 section 7.4)")
                return
            }
            guard let reason = String(validating: data.readableBytesView, as: UTF8.self) else {
                close(SocketClose(code: 1007, reason: "a close reason must be UTF-8"), by: "the client's close reason is not UTF-8")
                return
            }
            // The close is answered with the same code (none for none), then the connection ends.
            var reply = context.channel.allocator.buffer(capacity: 2)
            if code != 1005 { reply.writeInteger(UInt16(code)) }
            closing = true
            journalClose(code: code, reason: reason.isEmpty ? "the client closed the socket" : "the client closed the socket: \(reason)")
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reply))).assumeIsolated().whenComplete {
                _ in
                context.close(promise: nil)
            }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !closing else { return }
        switch error {
        case NIOWebSocketError.invalidFrameLength, NIOWebSocketFrameAggregator.Error.accumulatedFrameSizeIsTooLarge,
            NIOWebSocketFrameAggregator.Error.tooManyFragments, NIOWebSocketFrameAggregator.Error.nonFinalFragmentSizeIsTooSmall:
            close(
                SocketClose(code: 1009, reason: "a message holds at most \(hub.limits.message) bytes"),
                by: "the client sent a message over \(hub.limits.message) bytes (--max-socket-message)")
        case let broken as ClientFrameRules.Broken:
            close(SocketClose(code: 1002, reason: "protocol error"), by: "the client broke the WebSocket protocol: \(broken.rule)")
        default:
            close(SocketClose(code: 1002, reason: "protocol error"), by: "the client broke the WebSocket protocol: \(error)")
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        // A connection that ended without a close frame: 1006 (RFC 6455 section 7.1.5).
        journalClose(code: 1006, reason: "the connection ended without a close frame")
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            close(SocketClose(code: 1001, reason: "the server is shutting down"), by: "the server shut down")
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        context.fireChannelWritabilityChanged()
    }

    // MARK: Rules

    /// A client's message, answered by the contract's rules (or by graphql-transport-ws).
    private func answer(_ text: String) {
        if let graphql {
            let acknowledged = graphql.acknowledged
            take(graphql.receive(text))
            // Acknowledged now: the idle watch becomes the ping and pong of graphql-transport-ws.
            if !acknowledged, graphql.acknowledged, !closing {
                idleTimer?.cancel()
                watchIdle()
            }
            return
        }
        let started = ContinuousClock.now
        let (engine, opening) = (self.engine, self.opening)
        decide(
            { session in engine.socketMessage(text, of: opening, in: session) },
            then: { [self] outcome in
                let outcome = outcome ?? SocketOutcome(rule: nil)
                let entry = engine.journalSocket(
                    opening, method: "RECEIVE", rule: outcome.rule, outcome: outcome, message: text,
                    durationMicros: (ContinuousClock.now - started).wholeMicroseconds)
                publish(entry)
                perform(outcome)
            })
    }

    /// A scheduled rule: sent only if its `when` holds.
    private func run(_ rule: SocketRule, scheduled: Bool) {
        guard !closing else { return }
        let (engine, opening) = (self.engine, self.opening)
        decide(
            { session in engine.runSocketRule(rule, of: opening, in: session) },
            then: { [self] outcome in
                guard var outcome else { return }
                // A shared store committed the rule while the socket closed: its change and pushes stand, its messages are not sent.
                if closing { outcome.reason = Reason("the rule ran; its messages were not sent: the socket closed while the state store answered") }
                let entry = engine.journalSocket(opening, method: "SEND", rule: outcome.rule, outcome: outcome)
                publish(entry)
                // Its own delay was waited already (on_connect); `every` has none.
                var now = outcome
                now.delay = 0
                perform(now)
            })
    }

    /// Runs a rule in the socket's session through the store (`RuleQueue`).
    /// A store out of reach, or falling `maximumWaiting` rules behind,
    /// closes the socket 1013 (try again later).
    private func decide(_ rule: @escaping @Sendable (Session) -> SocketOutcome?, then done: @escaping (SocketOutcome?) -> Void) {
        guard let loop = context?.eventLoop else { return }
        rules.run(rule, session: opening.session, store: answerer.store, engine: engine, loop: loop, then: done) { [self] trouble in
            switch trouble {
            case .failed(let why):
                close(SocketClose(code: 1013, reason: "the state store is out of reach"), by: "the state store failed: \(why)")
            case .behind(let count):
                close(
                    SocketClose(code: 1013, reason: "the state store falls behind; try again later"),
                    by: "\(count) of the socket's messages and rules already wait for the state store")
            }
        }
    }

    /// An `every` rule, run each `interval` from the last run until the
    /// socket ends. Found by name in the contract serving now at each run:
    /// after a reload the rule as edited runs, one the edit removed stops,
    /// and a socket whose endpoint the edit removed is closed (1001).
    private func repeatEvery(_ name: String, interval: Double, slot: Int) {
        guard !closing, slot < timers.count, let loop = context?.eventLoop else { return }
        timers[slot] = loop.assumeIsolated().scheduleTask(in: Self.amount(interval)) { [self] in
            guard let socket = engine.contract.endpoint(id: opening.endpointID)?.socket else {
                close(SocketClose(code: 1001, reason: "the endpoint is gone"), by: "a reload of the contract removed \(opening.endpointID)")
                return
            }
            guard let rule = socket.every.first(where: { $0.name == name }) else { return }
            run(rule, scheduled: true)
            repeatEvery(name, interval: rule.interval ?? 1, slot: slot)
        }
    }

    /// What a rule decided: its messages (after its delay), its pushes, its close.
    private func perform(_ outcome: SocketOutcome) {
        answerer.push(outcome.pushes, session: opening.session, from: opening.endpointID + "." + (outcome.rule ?? ""))
        guard !outcome.messages.isEmpty || outcome.close != nil else { return }
        let send = { [self] in
            for message in outcome.messages { sendText(message) }
            if let close = outcome.close { self.close(close, by: "rule \(outcome.rule ?? "") closed the socket") }
        }
        if outcome.delay > 0, let loop = context?.eventLoop {
            if !later(outcome.delay, on: loop, send) {
                publish(
                    engine.journalSocket(
                        opening, method: "SEND", rule: outcome.rule,
                        reason: Reason("not sent: \(Self.maximumWaiting) delayed messages already wait on this socket")))
            }
        } else {
            send()
        }
    }

    /// A push from an HTTP response or another socket's rule (for a GraphQL socket, a subscription field's value).
    private func deliverPush(_ push: RenderedPush, from: String) {
        guard !closing, let loop = context?.eventLoop else { return }
        let text = push.text
        let delay = push.delay
        let send = { [self] in
            guard !closing else { return }
            if let graphql, let field = push.subscription {
                take(graphql.event(field, value: text, from: from))
                return
            }
            let entry = engine.journalSocket(opening, method: "SEND", rule: "push", sent: [text], reason: Reason("pushed by \(from)"))
            publish(entry)
            sendText(text)
        }
        if delay > 0 {
            if !later(delay, on: loop, send) {
                publish(
                    engine.journalSocket(
                        opening, method: "SEND", rule: "push",
                        reason: Reason("not sent: \(Self.maximumWaiting) delayed messages already wait on this socket (pushed by \(from))")))
            }
        } else {
            send()
        }
    }

    // MARK: Writing

    func sendText(_ text: String) {
        guard !closing, let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        write(WebSocketFrame(fin: true, opcode: .text, data: buffer))
    }

    /// Writes a frame; a client that has let `Limits.outbound` bytes pile up is dropped.
    private func write(_ frame: WebSocketFrame) {
        guard let context else { return }
        let size = frame.data.readableBytes
        // A client that takes what it is sent may get a message of any size; one that has let the bound pile up is dropped.
        if pendingBytes > 0, pendingBytes + size > hub.limits.outbound {
            hub.noteDropped()
            closing = true
            journalClose(code: 1008, reason: "dropped: the client read nothing while \(hub.limits.outbound >> 10) KiB of messages waited for it")
            stop()
            context.close(promise: nil)
            return
        }
        pendingBytes += size
        context.writeAndFlush(wrapOutboundOut(frame)).assumeIsolated().whenComplete { [self] _ in pendingBytes -= size }
    }

    /// Sends a close frame and ends the connection (the client's close frame is not waited for).
    func close(_ close: SocketClose, by cause: String) {
        guard !closing, let context else { return }
        closing = true
        stop()
        journalClose(code: close.code, reason: cause)
        var data = context.channel.allocator.buffer(capacity: 2 + close.reason.utf8.count)
        data.writeInteger(UInt16(close.code))
        data.writeString(close.reason)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))).whenComplete { _ in
            channel.close(promise: nil)
        }
        // A client that never reads the close frame is not waited for past a second.
        context.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }

    // MARK: Bounds and bookkeeping

    private func take() -> Bool {
        rate.take(rate: hub.limits.rate)
    }

    private func watchIdle() {
        guard let loop = context?.eventLoop else { return }
        let idle = hub.limits.idle
        if graphql?.acknowledged == true {
            watchGraphQLIdle(on: loop, idle: idle)
            return
        }
        let due = lastFrame + Self.amount(idle)
        idleTimer = loop.assumeIsolated().scheduleTask(deadline: due) { [self] in
            if NIODeadline.now() >= lastFrame + Self.amount(idle) {
                close(
                    SocketClose(code: 1001, reason: "idle for \(Int(idle)) s"),
                    by: "no frame from the client for \(Int(idle)) s (--socket-idle-timeout)")
            } else {
                watchIdle()
            }
        }
    }

    /// When the server last asked a GraphQL client for a `pong`.
    private var pinged: NIODeadline?

    /// A GraphQL socket waiting for events may be quiet for long: once it
    /// has been quiet half the idle time the server sends graphql-transport-ws's
    /// `ping`, which clients answer with `pong`; one that does not answer
    /// within another half is closed as idle (1001).
    private func watchGraphQLIdle(on loop: any EventLoop, idle: Double) {
        let half = Self.amount(idle / 2)
        idleTimer = loop.assumeIsolated().scheduleTask(in: half) { [self] in
            let now = NIODeadline.now()
            if let pinged, pinged > lastFrame, now >= pinged + half {
                close(
                    SocketClose(code: 1001, reason: "idle for \(Int(idle)) s"),
                    by: "no frame from the client for \(Int(idle)) s, nor a pong to the server's ping (--socket-idle-timeout)")
                return
            }
            if now >= lastFrame + half, pinged.map({ $0 <= lastFrame }) ?? true {
                pinged = now
                sendText(#"{"type":"ping"}"#)
            }
            watchGraphQLIdle(on: loop, idle: idle)
        }
    }

    private func stop() {
        closing = true
        for timer in timers { timer?.cancel() }
        timers = []
        for task in scheduled.values { task.cancel() }
        scheduled = [:]
        idleTimer?.cancel()
        idleTimer = nil
        rules.clear()
        hub.leave(ObjectIdentifier(self), session: opening.session)
    }

    private func journalClose(code: Int, reason: String) {
        guard !ended else { return }
        ended = true
        publish(engine.journalSocket(opening, method: "CLOSE", rule: nil, status: code, reason: Reason(reason)))
    }

    func publish(_ entry: Journal.Entry) {
        answerer.publish(entry, as: "socket")
    }

    static func amount(_ seconds: Double) -> TimeAmount {
        .nanoseconds(Int64(min(max(seconds, 0), 1e9) * 1e9))
    }
}
