import DoppelCore
import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// The one door of an HTTP/1 connection: every request, from its decoded
/// head to the last byte of its answer, goes through here, on the
/// connection's event loop.
///
/// A request is read once (its body collected up to the limit) and
/// converted once into the engine's `RecordedRequest`. `Answerer` decides
/// (engine or admin API), and the decision is delivered by its kind:
/// whole, after its delay, as a stream of parts, as a fault, or forwarded
/// upstream. Every answer is written as bytes at the raw end of the pipeline
/// (`ResponseBytes`), and every kind ends in `Answerer.finish`, which
/// completes its journal entry and log line just before its last bytes go
/// out (so a client that has its answer finds it in the journal).
///
/// One answer at a time: while one is being delivered over time, the parts
/// of later requests are held in order, so answers keep the order of their
/// requests. The same hold gives backpressure: while the client does not
/// take its answers (the channel past its high-water mark), no further
/// request is started and no further read asked for.
///
/// A graceful shutdown (`ChannelShouldQuiesceEvent`) closes an idle
/// connection at once, and otherwise after the answer in progress, whose
/// waits (delay, stream pauses, a hang) end at once.
final class HTTPDoor: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = Never

    private let answerer: Answerer
    private let connection: ConnectionGuard.State

    /// A request being read.
    private struct Incoming {
        let head: HTTPRequestHead
        let path: String
        let query: String?
        var body: ByteBuffer?
        let started: ContinuousClock.Instant
        /// Why the request is answered with a problem however its body reads.
        let refusal: Problem?
    }

    private enum Reading {
        case idle
        case collecting(Incoming)
        /// The rest of a body already answered (413) is read and dropped.
        case discarding
    }

    /// What arrived and waits for the answer in progress, or for the client to take its answers.
    private enum Held {
        case part(HTTPServerRequestPart)
        case malformed(HTTPParserError)
    }

    private var reading = Reading.idle
    /// An answer is being delivered over time (delay, stream, hang, upstream).
    private var answering = false
    /// The wait in progress and what follows it, ended early by a graceful shutdown or the client leaving.
    private var waiting: (task: Scheduled<Void>, then: () -> Void)?
    private var held = CircularBuffer<Held>()
    private var draining = false
    /// A read asked for while held back.
    private var readPending = false
    /// Closes a connection whose answers have not been taken for the idle timeout.
    private var stalled: Scheduled<Void>?
    /// A graceful shutdown asked the connection to close.
    private var quiescing = false
    /// The answer in progress is the connection's last (the request asked
    /// for it, or cannot be followed safely).
    private var closeAfterAnswer = false
    /// The client closed its half of the connection.
    private var inputClosed = false
    /// The channel is gone: waits end, writes go nowhere.
    private var closed = false
    /// The engine this connection last answered with, and the slot's version it came from.
    private var engine: (version: Int, engine: MockEngine)?
    private var remoteAddress: String??
    /// This server's port on the connection, read with `remoteAddress`.
    private var localPort: Int?
    private var date = (second: 0, text: "")
    /// The event stream this connection carries (`GET /__doppel/events`), once opened.
    private var events: EventStream?

    init(answerer: Answerer, connection: ConnectionGuard.State) {
        self.answerer = answerer
        self.connection = connection
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if answering || !held.isEmpty || (!context.channel.isWritable && Self.isHead(part)) {
            held.append(.part(part))
            if !context.channel.isWritable { watchStall(context: context) }
            return
        }
        process(part, context: context)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? HTTPParserError else {
            context.close(promise: nil)
            return
        }
        if answering || !held.isEmpty {
            held.append(.malformed(error))
        } else {
            refuseMalformed(error, context: context)
        }
    }

    private static func isHead(_ part: HTTPServerRequestPart) -> Bool {
        if case .head = part { return true }
        return false
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stalled?.cancel()
            stalled = nil
            flushEvents(context: context)
            drain(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if held.isEmpty, context.channel.isWritable {
            context.read()
        } else {
            readPending = true
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        stalled?.cancel()
        stalled = nil
        held.removeAll()
        endEvents()
        // A wait in progress ends now, so its answer is completed (journaled) though no one reads it.
        hurry()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent:
            quiescing = true
            if let stream = events {
                // An event stream ends at once: its last chunk (or, in HTTP/1.0, nothing), then the connection.
                endEvents()
                writeLast(context.channel.allocator.buffer(string: stream.chunked ? "0\r\n\r\n" : ""), context: context)
            } else if isIdle {
                context.close(promise: nil)
            } else {
                hurry()
            }
        case ChannelEvent.inputClosed:
            inputClosed = true
            if events != nil {
                // An event stream's reader that closed its side has gone: its place is freed now.
                endEvents()
                closed = true
                context.close(promise: nil)
            } else if isIdle {
                context.close(promise: nil)
            }
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// Nothing read, answered or held.
    private var isIdle: Bool {
        if case .idle = reading, !answering, held.isEmpty { return true }
        return false
    }

    /// The held parts, in order, until an answer takes time or the answers back up.
    private func drain(context: ChannelHandlerContext) {
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while !answering, let next = held.first {
            switch next {
            case .part(let part):
                guard context.channel.isWritable || !Self.isHead(part) else { return }
                held.removeFirst()
                process(part, context: context)
            case .malformed(let error):
                held.removeFirst()
                refuseMalformed(error, context: context)
            }
        }
        if held.isEmpty, !answering {
            if quiescing || inputClosed, case .idle = reading {
                context.close(promise: nil)
            } else if readPending, context.channel.isWritable {
                readPending = false
                context.read()
            }
        }
    }

    /// A client that takes no answer for the idle timeout is let go.
    private func watchStall(context: ChannelHandlerContext) {
        guard stalled == nil else { return }
        let channel = context.channel
        stalled = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(connection.limits.idle * 1e9))) {
            if !channel.isWritable { channel.close(promise: nil) }
        }
    }

    private func process(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let head):
            let target = Self.split(head.uri)
            var refusal: Problem?
            // HTTP/1.0 has no transfer codings: a body framed by one is
            // read, answered, and the connection closed (RFC 9112 section 6.1).
            // An `Upgrade` is not taken, and the decoder reads nothing after
            // the request that asked for one: its answer is the connection's last.
            closeAfterAnswer = !head.isKeepAlive || head.headers.contains(name: "upgrade")
                || (head.version.major == 1 && head.version.minor == 0 && head.headers.contains(name: "transfer-encoding"))
            if head.method == .CONNECT || head.uri.utf8.first != UInt8(ascii: "/") {
                // Refused before anything reads the target as a path: an
                // upstream URL must never be built from it (`--proxy`).
                refusal = .invalidTarget(method: head.method.rawValue, target: head.uri)
            } else if head.headers["host"].count > 1 {
                // Two Host fields: which host was meant cannot be known (RFC 9112 section 3.2 says 400).
                closeAfterAnswer = true
                refusal = .invalidHeaders("The request has more than one Host header field; send one.")
            }
            let incoming = Incoming(head: head, path: refusal == nil ? target.path : head.uri, query: refusal == nil ? target.query : nil,
                                    body: nil, started: .now, refusal: refusal)
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), isOverLimit(length) {
                // Refused by its declared length, before its body is read (and, with `Expect`, without `100 Continue`).
                tooLarge(incoming, context: context)
                return
            }
            reading = .collecting(incoming)
            // Asked for when the request's turn comes, so it follows the answers before it.
            if (head.version.major, head.version.minor) >= (1, 1), head.headers["expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                write(context.channel.allocator.buffer(string: "HTTP/1.1 100 Continue\r\n\r\n"), context: context)
            }
        case .body(let chunk):
            switch reading {
            case .collecting(var incoming):
                if isOverLimit((incoming.body?.readableBytes ?? 0) + chunk.readableBytes) {
                    incoming.body = nil
                    tooLarge(incoming, context: context)
                } else {
                    if incoming.body == nil { incoming.body = chunk } else { incoming.body!.writeImmutableBuffer(chunk) }
                    reading = .collecting(incoming)
                }
            case .discarding, .idle:
                break
            }
        case .end:
            let finished = reading
            reading = .idle
            switch finished {
            case .collecting(let incoming):
                answer(incoming, refusal: incoming.refusal, context: context)
            case .discarding, .idle:
                drain(context: context)
            }
        }
    }

    /// The one body-size rule (`--max-body-size`), for a declared length and for the bytes arrived.
    private func isOverLimit(_ bodyBytes: Int) -> Bool { bodyBytes > answerer.maxBodySize }

    /// A body over the limit: answered 413 at once; the rest of it is read and dropped.
    private func tooLarge(_ incoming: Incoming, context: ChannelHandlerContext) {
        reading = .discarding
        answer(incoming, refusal: incoming.refusal ?? .payloadTooLarge(limit: answerer.maxBodySize), context: context)
    }

    /// A request the HTTP decoder could not read: 400, and the connection
    /// closed (what follows cannot be framed).
    private func refuseMalformed(_ error: HTTPParserError, context: ChannelHandlerContext) {
        guard !closed else { return }
        let problem = Problem.malformedRequest("\(error)")
        let bytes = ResponseBytes.encode(problem.response(), date: currentDate(), close: true, allocator: context.channel.allocator)
        let channel = context.channel
        connection.rawContext?.writeAndFlush(NIOAny(bytes)).whenComplete { _ in channel.close(promise: nil) }
        if connection.rawContext == nil { channel.close(promise: nil) }
        held.removeAll()
        closed = true
    }

    // MARK: Answering

    private func answer(_ incoming: Incoming, refusal: Problem?, context: ChannelHandlerContext) {
        if remoteAddress == nil {
            remoteAddress = .some(context.channel.remoteAddress?.ipAddress)
            localPort = context.channel.localAddress?.port
        }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(incoming.head.headers.count)
        // An HTTP/1.0 request's Upgrade is ignored (RFC 9110 section 7.8): a WebSocket endpoint answers it 426.
        let ignoresUpgrade = incoming.head.version.minor == 0 && incoming.head.version.major == 1
        for (name, value) in incoming.head.headers where !ignoresUpgrade || name.lowercased() != "upgrade" { headers.append((name, value)) }
        // The engine's view of the request, made here and nowhere else.
        var request = RecordedRequest(method: incoming.head.method.rawValue, path: incoming.path, query: incoming.query, headers: headers,
                                      body: incoming.body.map { Array($0.readableBytesView) } ?? [], remoteAddress: remoteAddress!)
        request.localPort = localPort
        let engine = currentEngine()
        switch answerer.decision(for: request, refusal: refusal, engine: engine) {
        case .now(let decision):
            proceed(Exchange(request: request, decision: decision, engine: engine, head: incoming.head, started: incoming.started), context: context)
        case .events(let session):
            openEvents(session: session, head: incoming.head, context: context)
        case .later(let pending):
            // The shared state store decides; later requests wait their turn, as behind a delay.
            answering = true
            context.eventLoop.makeFutureWithTask { await pending() }.assumeIsolated().whenSuccess { [self] decision in
                // Delivered even to a client gone meanwhile, so the answer is journaled as any other.
                proceed(Exchange(request: request, decision: decision, engine: engine, head: incoming.head, started: incoming.started), context: context)
            }
        }
    }

    /// A decided answer: delivered after its delay, or now.
    private func proceed(_ exchange: Exchange, context: ChannelHandlerContext) {
        let decision = exchange.decision
        if decision.delay > 0 {
            wait(decision.delay, context: context) { [self] in deliver(exchange, context: context) }
        } else {
            // Most answers: no closure to allocate.
            deliver(exchange, context: context)
        }
    }

    /// One request and its decision, on their way out.
    private struct Exchange {
        let request: RecordedRequest
        let decision: Decision
        let engine: MockEngine
        let head: HTTPRequestHead
        let started: ContinuousClock.Instant
        var isHead: Bool { head.method == .HEAD }
    }

    private func deliver(_ exchange: Exchange, context: ChannelHandlerContext) {
        let response = exchange.decision.response
        switch exchange.decision.delivery {
        case .whole:
            if let opening = response.socket {
                upgrade(exchange, opening: opening, context: context)
                return
            }
            finish(exchange, status: response.status)
            writeLast(ResponseBytes.encode(response, date: currentDate(), close: closing, omitBody: exchange.isHead, allocator: context.channel.allocator),
                      context: context)
        case .stream(let parts):
            // HTTP/1.0 has no chunked coding: the body ends where the connection does.
            let chunked = (exchange.head.version.major, exchange.head.version.minor) >= (1, 1)
            if exchange.isHead {
                // The GET's head (its framing says chunked, no length), and no body: nothing to wait for.
                finish(exchange, status: response.status)
                writeLast(ResponseBytes.encode(response, date: currentDate(), close: closing, framing: chunked ? .chunked : .untilClose,
                                               allocator: context.channel.allocator), context: context)
                return
            }
            answering = true
            if !chunked { closeAfterAnswer = true }
            write(ResponseBytes.encode(response, date: currentDate(), close: closing, framing: chunked ? .chunked : .untilClose,
                                       allocator: context.channel.allocator), context: context)
            stream(parts[...], chunked: chunked, exchange, context: context)
        case .fault(let fault):
            answering = true
            breakConnection(with: fault, exchange, context: context)
        case .forward:
            answering = true
            let answerer = self.answerer, request = exchange.request
            let upstream = context.eventLoop.makeFutureWithTask { await answerer.forward(request) }
            upstream.assumeIsolated().whenComplete { [self] result in
                guard case .success(var answer) = result else { return }
                answer.endpointID = response.endpointID
                finish(exchange, status: answer.status)
                writeLast(ResponseBytes.encode(answer, date: currentDate(), close: closing, omitBody: exchange.isHead,
                                               allocator: context.channel.allocator), context: context)
            }
        }
    }

    /// A stream's parts, each after its pause; the answer is finished before its last bytes.
    private func stream(_ parts: ArraySlice<StreamPart>, chunked: Bool, _ exchange: Exchange, context: ChannelHandlerContext) {
        guard let part = parts.first else {
            finish(exchange, status: exchange.decision.response.status)
            var end = context.channel.allocator.buffer(capacity: 5)
            if chunked { end.writeStaticString("0\r\n\r\n") }
            writeLast(end, context: context)
            return
        }
        wait(part.delay, context: context) { [self] in
            if !part.bytes.isEmpty {
                var buffer = context.channel.allocator.buffer(capacity: part.bytes.count + 16)
                if chunked { buffer.writeString(String(part.bytes.count, radix: 16) + "\r\n") }
                buffer.writeBytes(part.bytes)
                if chunked { buffer.writeStaticString("\r\n") }
                write(buffer, context: context)
            }
            stream(parts.dropFirst(), chunked: chunked, exchange, context: context)
        }
    }

    /// A deliberate failure: the answer is finished (journaled) as the connection breaks.
    private func breakConnection(with fault: Fault, _ exchange: Exchange, context: ChannelHandlerContext) {
        let channel = context.channel
        let response = exchange.decision.response
        switch fault {
        case .connectionReset:
            finish(exchange, status: response.status)
            // Linger 0 makes close() send RST instead of FIN.
            if let socket = channel as? SocketOptionProvider {
                socket.setSoLinger(NIOLinger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
        case .emptyReply:
            finish(exchange, status: response.status)
            channel.close(promise: nil)
        case .noAnswer:
            // Held open, silent, until the hang limit, a graceful shutdown, or the client leaves.
            wait(answerer.hangLimit, context: context) { [self] in
                finish(exchange, status: response.status)
                channel.close(promise: nil)
            }
        case .truncatedBody:
            // Promise the whole body, send half, then drop the connection.
            finish(exchange, status: response.status)
            var bytes = ResponseBytes.encode(response, date: currentDate(), close: false, omitBody: true, allocator: channel.allocator)
            if !exchange.isHead { bytes.writeBytes(response.body.prefix(response.body.count / 2)) }
            connection.rawContext?.writeAndFlush(NIOAny(bytes)).whenComplete { _ in channel.close(promise: nil) }
        case .malformedJSON:
            // Rendered into the body already: the rest is an ordinary answer.
            finish(exchange, status: response.status)
            writeLast(ResponseBytes.encode(response, date: currentDate(), close: closing, omitBody: exchange.isHead, allocator: channel.allocator),
                      context: context)
        }
    }

    /// Runs `then` after `seconds`, or at once when there is no wait (or the
    /// connection is closing or gone); the wait ends early on `hurry()`.
    private func wait(_ seconds: Double, context: ChannelHandlerContext, then: @escaping () -> Void) {
        guard seconds > 0, !quiescing, !closed else { return then() }
        answering = true
        let task = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(min(seconds, 1e9) * 1e9))) { [self] in
            waiting = nil
            then()
        }
        waiting = (task, then)
    }

    /// Ends the wait in progress now (graceful shutdown, the client gone);
    /// later waits of the same answer are skipped.
    private func hurry() {
        guard let (task, then) = waiting else { return }
        waiting = nil
        task.cancel()
        then()
    }

    /// Whether the answer being written is the connection's last.
    private var closing: Bool { closeAfterAnswer || quiescing || (inputClosed && held.isEmpty) }

    private func finish(_ exchange: Exchange, status: Int) {
        answerer.finish(exchange.decision, of: exchange.request, sent: status, engine: exchange.engine, started: exchange.started)
    }

    private func write(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        connection.rawContext?.writeAndFlush(NIOAny(bytes), promise: nil)
    }

    /// An answer's last bytes: the connection is idle again (or closed), and held requests go on.
    private func writeLast(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        answering = false
        guard let raw = connection.rawContext, !closed else { return }
        connection.responseWritten(on: context.eventLoop)
        if closing {
            let channel = context.channel
            closed = true
            raw.writeAndFlush(NIOAny(bytes)).whenComplete { _ in channel.close(promise: nil) }
            return
        }
        raw.writeAndFlush(NIOAny(bytes), promise: nil)
        drain(context: context)
    }

    // MARK: WebSockets

    /// An upgrade the contract answered 101: the handshake's answer, then
    /// the connection's HTTP handlers give way to WebSocket frames and the
    /// socket's rules (`SocketConnection`). Done in one turn of the event
    /// loop, so no byte the client sends after the 101 reaches the HTTP
    /// decoder (a client sends none before it, RFC 6455 section 4.1). A
    /// session with as many sockets as allowed gets 429 instead.
    private func upgrade(_ exchange: Exchange, opening: SocketOpening, context: ChannelHandlerContext) {
        let socket = SocketConnection(answerer: answerer, opening: opening)
        guard !closed, let raw = connection.rawContext, let key = exchange.request.header("sec-websocket-key"),
              socket.join(loop: context.eventLoop) else {
            let refused = Exchange(request: exchange.request,
                                   decision: { var decision = exchange.decision
                                       decision.response = Problem.tooManySockets(limit: answerer.sockets.limits.perSession).response(endpointID: opening.endpointID)
                                       return decision }(),
                                   engine: exchange.engine, head: exchange.head, started: exchange.started)
            closeAfterAnswer = true
            finish(refused, status: 429)
            writeLast(ResponseBytes.encode(refused.decision.response, date: currentDate(), close: true, allocator: context.channel.allocator), context: context)
            return
        }
        finish(exchange, status: 101)
        var head = context.channel.allocator.buffer(capacity: 256)
        head.writeStaticString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ")
        head.writeString(SocketHub.accept(key: key))
        head.writeStaticString("\r\n")
        if let spoken = exchange.engine.contract.endpoint(id: opening.endpointID)?.socket?.protocols,
           let chosen = MockEngine.chosenProtocol(offered: MockEngine.offeredProtocols(exchange.request), spoken: spoken) {
            head.writeString("Sec-WebSocket-Protocol: \(chosen)\r\n")
        }
        // The contract's own headers, but none that frame a body (a 101 has none).
        for (name, value) in exchange.decision.response.headers where HTTPToken.isValid(name)
            && !["content-type", "content-length", "transfer-encoding", "connection", "upgrade", "sec-websocket-accept", "sec-websocket-protocol"].contains(name.lowercased()) {
            head.writeString("\(name): ")
            ResponseBytes.writeValue(value, into: &head)
            head.writeStaticString("\r\n")
        }
        head.writeStaticString("\r\n")
        raw.writeAndFlush(NIOAny(head), promise: nil)
        connection.stop()
        held.removeAll()
        closed = true
        let pipeline = context.pipeline.syncOperations
        let limits = answerer.sockets.limits
        do {
            try pipeline.addHandler(WebSocketFrameEncoder(), position: .last)
            try pipeline.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: limits.message)), position: .last)
            try pipeline.addHandler(ClientFrameRules(), position: .last)
            try pipeline.addHandler(NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1024,
                                                                maxAccumulatedFrameSize: limits.message), position: .last)
            try pipeline.addHandler(socket, position: .last)
            // The HTTP handlers go, this one last.
            for handler in [try pipeline.context(handlerType: ConnectionGuard.RequestWatcher.self),
                            try pipeline.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self),
                            try pipeline.context(handlerType: ConnectionGuard.ByteWatcher.self), context] {
                pipeline.removeHandler(context: handler, promise: nil)
            }
        } catch {
            socket.leave()
            context.close(promise: nil)
        }
    }

    // MARK: The event stream

    /// An open `GET /__doppel/events` stream: the reader the hub hands
    /// events to, and the events waiting while the client does not take them.
    private struct EventStream {
        let reader: EventReader
        let chunked: Bool
        var queue = CircularBuffer<ByteBuffer>()
        var queuedBytes = 0
        var heartbeat: RepeatedTask?
    }

    /// Subscribes this connection to the hub and sends the stream's head
    /// and a `ready` event; the stream is the connection's last answer. A
    /// full hub is answered 503.
    private func openEvents(session: String?, head: HTTPRequestHead, context: ChannelHandlerContext) {
        closeAfterAnswer = true
        let hub = answerer.events
        let reader = EventReader(door: NIOLoopBound(self, eventLoop: context.eventLoop), context: context)
        guard hub.subscribe(reader, session: session) else {
            writeLast(ResponseBytes.encode(Problem.tooManyEventStreams(limit: hub.maximumReaders).response(), date: currentDate(), close: true,
                                           allocator: context.channel.allocator), context: context)
            return
        }
        answering = true
        let chunked = (head.version.major, head.version.minor) >= (1, 1)
        events = EventStream(reader: reader, chunked: chunked)
        let response = MockResponse(status: 200, headers: [
            (name: "Content-Type", value: "text/event-stream; charset=utf-8"), (name: "Cache-Control", value: "no-store"),
            (name: "X-Accel-Buffering", value: "no"),
        ])
        write(ResponseBytes.encode(response, date: currentDate(), close: true, framing: chunked ? .chunked : .untilClose,
                                   allocator: context.channel.allocator), context: context)
        push([EventHub.frame("ready", data: .object(JSONObject([("session", session.map(JSON.string) ?? .null), ("readers", .int(hub.readerCount))])))],
             context: context)
        // A comment now and then keeps a quiet stream open through proxies, and finds a client that left.
        let ping = EventHub.comment("ping")
        events?.heartbeat = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(Int64(EventHub.heartbeat)),
                                                                   delay: .seconds(Int64(EventHub.heartbeat))) { _ in reader.take([ping]) }
    }

    /// Events for the client, written now (one flush for the batch), or
    /// queued while it does not take what was written; a client too far
    /// behind is dropped with a note.
    fileprivate func push(_ frames: [ByteBuffer], context: ChannelHandlerContext) {
        guard var stream = events, !closed, let raw = connection.rawContext else { return }
        var wrote = false
        for frame in frames {
            // The hub's buffer as it is: shared by every reader, never copied for one.
            let chunk = stream.chunked ? frame : EventHub.unchunked(frame)
            if stream.queue.isEmpty, context.channel.isWritable {
                raw.write(NIOAny(chunk), promise: nil)
                wrote = true
                continue
            }
            let size = chunk.readableBytes
            guard stream.queuedBytes + size <= EventHub.readerQueueLimit, answerer.events.account(size) else {
                if wrote { raw.flush() }
                events = stream
                dropEvents(context: context)
                return
            }
            stream.queue.append(chunk)
            stream.queuedBytes += size
        }
        events = stream
        if wrote { raw.flush() }
        if !stream.queue.isEmpty { watchStall(context: context) }
    }

    /// Writes queued events while the client takes them.
    private func flushEvents(context: ChannelHandlerContext) {
        guard var stream = events, !closed else { return }
        while context.channel.isWritable, let chunk = stream.queue.popFirst() {
            stream.queuedBytes -= chunk.readableBytes
            _ = answerer.events.account(-chunk.readableBytes)
            write(chunk, context: context)
        }
        events = stream
    }

    /// A reader that fell behind: a last `dropped` event says why, and the connection closes.
    private func dropEvents(context: ChannelHandlerContext) {
        guard let stream = events else { return }
        answerer.events.noteDropped()
        endEvents()
        let note = EventHub.frame("dropped", data: .object(JSONObject([
            ("reason", .string("this reader fell more than \(EventHub.readerQueueLimit >> 20) MiB of events behind (or all readers together more than \(EventHub.totalQueueLimit >> 20) MiB); reconnect, and read the journal for what was missed")),
        ])))
        var chunk = stream.chunked ? note : EventHub.unchunked(note)
        if stream.chunked { chunk.writeStaticString("0\r\n\r\n") }
        guard context.channel.isWritable else {
            // A client that reads nothing would never take the note: closed now, its buffers freed.
            write(chunk, context: context)
            closed = true
            context.close(promise: nil)
            return
        }
        writeLast(chunk, context: context)
    }

    /// Leaves the hub and lets go of the queue (the stream ended or the client left).
    private func endEvents() {
        guard let stream = events else { return }
        events = nil
        stream.heartbeat?.cancel()
        answerer.events.unsubscribe(stream.reader)
        if stream.queuedBytes > 0 { _ = answerer.events.account(-stream.queuedBytes) }
    }

    private static func split(_ target: String) -> (path: String, query: String?) {
        // A fragment is not sent by clients; one that is ends the target.
        var target = Substring(target)
        if let hash = target.utf8.firstIndex(of: UInt8(ascii: "#")) { target = target[..<hash] }
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (String(target), nil) }
        return (String(target[..<mark]), String(target[target.index(after: mark)...]))
    }

    /// The engine answering now: the slot is read once per request, through
    /// its version number, so a connection takes its lock only after a reload.
    private func currentEngine() -> MockEngine {
        let version = answerer.slot.version
        if let engine, engine.version == version { return engine.engine }
        let current = answerer.slot.versioned
        engine = current
        return current.engine
    }

    /// The `Date` header (RFC 9110's IMF-fixdate), formatted once a second per connection.
    private func currentDate() -> String {
        let second = Int(Date().timeIntervalSince1970)
        if second != date.second { date = (second, HTTPDate.format(epochSecond: second)) }
        return date.text
    }
}

/// An answer's head (and body) as HTTP/1.1 bytes: status line, the
/// response's headers, the framing (`Content-Length`, or chunked for a
/// stream), `Date`, `Server` (and `Connection: close` when the connection
/// ends with it), then the body, in one buffer.
///
/// Written here rather than by NIO's response encoder because every answer
/// is written at the raw end of the pipeline (as 408s and `100 Continue`
/// are); the headers are checked as HTTP types would check them: a name
/// that is not a token is left out, and a value's control characters
/// become spaces.
enum ResponseBytes {
    /// How the body is delimited.
    enum Framing {
        /// `Content-Length`, and the body follows.
        case length
        /// `Transfer-Encoding: chunked`; the chunks follow.
        case chunked
        /// Neither: the body ends when the connection does (HTTP/1.0).
        case untilClose
    }

    /// Headers the server sets itself, which a response's own are not to repeat (lowercase).
    private static let serverSet = ["content-length", "date", "server", "connection", "transfer-encoding", "keep-alive"]

    /// `HTTP/1.1 200 OK\r\n` and the like for every status from 100 to 599, made once.
    private static let statusLines: [[UInt8]] = (100...599).map { status in
        Array("HTTP/1.1 \(status) \(HTTPResponseStatus(statusCode: status).reasonPhrase)\r\n".utf8)
    }

    /// - Parameter omitBody: the head alone, with the body's length (an answer to `HEAD`).
    static func encode(_ response: MockResponse, date: String, close: Bool, framing: Framing = .length, omitBody: Bool = false,
                       allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 160 + response.headers.count * 48 + response.body.count)
        if (100...599).contains(response.status) {
            buffer.writeBytes(statusLines[response.status - 100])
        } else {
            buffer.writeStaticString("HTTP/1.1 ")
            buffer.writeString(String(response.status))
            buffer.writeInteger(UInt8(ascii: " "))
            buffer.writeString(HTTPResponseStatus(statusCode: response.status).reasonPhrase)
            buffer.writeStaticString("\r\n")
        }
        for header in response.headers where HTTPToken.isValid(header.name) && !serverSet.contains(where: header.name.caseInsensitiveEquals) {
            buffer.writeString(header.name)
            buffer.writeStaticString(": ")
            writeValue(header.value, into: &buffer)
            buffer.writeStaticString("\r\n")
        }
        switch framing {
        case .length:
            buffer.writeStaticString("Content-Length: ")
            buffer.writeString(String(response.body.count))
            buffer.writeStaticString("\r\n")
        case .chunked:
            buffer.writeStaticString("Transfer-Encoding: chunked\r\n")
        case .untilClose:
            break
        }
        buffer.writeStaticString("Date: ")
        buffer.writeString(date)
        buffer.writeStaticString("\r\nServer: Doppel\r\n")
        if close { buffer.writeStaticString("Connection: close\r\n") }
        buffer.writeStaticString("\r\n")
        if framing == .length, !omitBody { buffer.writeBytes(response.body) }
        return buffer
    }

    /// A field value with surrounding whitespace trimmed and control characters (CR, LF, NUL among them) as spaces.
    static func writeValue(_ value: String, into buffer: inout ByteBuffer) {
        let bytes = value.utf8
        if bytes.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }), bytes.first != 0x20, bytes.last != 0x20 {
            buffer.writeString(value)
            return
        }
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        buffer.writeBytes(trimmed.utf8.map { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F ? 0x20 : $0 })
    }
}

/// `Date` header values.
enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The current time as a header value.
    static func now() -> String { format(epochSecond: Int(Date().timeIntervalSince1970)) }

    /// `Mon, 23 Nov 2026 03:56:35 GMT` for seconds since 1970.
    static func format(epochSecond: Int) -> String {
        let c = UTCCalendar.components(epoch: Double(epochSecond))
        let weekday = days[((epochSecond / 86400) % 7 + 7) % 7]
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(weekday), \(two(c.day)) \(months[c.month - 1]) \(c.year) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) GMT"
    }
}

/// A connection's place in the event hub: the hub hands it events on the
/// connection's event loop.
private final class EventReader: EventHub.Reader {
    private let door: NIOLoopBound<HTTPDoor>
    private let context: NIOLoopBound<ChannelHandlerContext>

    init(door: NIOLoopBound<HTTPDoor>, context: ChannelHandlerContext) {
        self.door = door
        self.context = NIOLoopBound(context, eventLoop: context.eventLoop)
    }

    var eventLoop: any EventLoop { context.eventLoop }

    func take(_ frames: [ByteBuffer]) {
        door.value.push(frames, context: context.value)
    }
}
