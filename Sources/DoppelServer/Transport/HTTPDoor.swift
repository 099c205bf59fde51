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

    let answerer: Answerer
    let connection: ConnectionGuard.State

    /// A request being read.
    struct Incoming {
        let head: HTTPRequestHead
        let path: String
        let query: String?
        var body: ByteBuffer?
        let started: ContinuousClock.Instant
        /// Why the request is answered with a problem however its body reads.
        let refusal: Problem?
    }

    enum Reading {
        case idle
        case collecting(Incoming)
        /// The rest of a body already answered (413) is read and dropped.
        case discarding
    }

    /// What arrived and waits for the answer in progress, or for the client to take its answers.
    enum Held {
        case part(HTTPServerRequestPart)
        case malformed(HTTPParserError)
    }

    var reading = Reading.idle
    /// An answer is being delivered over time (delay, stream, hang, upstream).
    var answering = false
    /// The wait in progress and what follows it, ended early by a graceful shutdown or the client leaving.
    var waiting: (task: Scheduled<Void>, then: () -> Void)?
    var held = CircularBuffer<Held>()
    var draining = false
    /// A read asked for while held back.
    var readPending = false
    /// Closes a connection whose answers have not been taken for the idle timeout.
    var stalled: Scheduled<Void>?
    /// A graceful shutdown asked the connection to close.
    var quiescing = false
    /// The answer in progress is the connection's last (the request asked
    /// for it, or cannot be followed safely).
    var closeAfterAnswer = false
    /// The client closed its half of the connection.
    var inputClosed = false
    /// The channel is gone: waits end, writes go nowhere.
    var closed = false
    /// The engine this connection last answered with, and the slot's version it came from.
    var engine: (version: Int, engine: MockEngine)?
    var remoteAddress: String??
    /// This server's port on the connection, read with `remoteAddress`.
    var localPort: Int?
    var date = (second: 0, text: "")
    /// The event stream this connection carries (`GET /__doppel/events`), once opened.
    var events: EventStream?

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

    static func isHead(_ part: HTTPServerRequestPart) -> Bool {
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
    var isIdle: Bool {
        if case .idle = reading, !answering, held.isEmpty { return true }
        return false
    }

    /// The held parts, in order, until an answer takes time or the answers back up.
    func drain(context: ChannelHandlerContext) {
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
    func watchStall(context: ChannelHandlerContext) {
        guard stalled == nil else { return }
        let channel = context.channel
        stalled = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(connection.limits.idle * 1e9))) {
            if !channel.isWritable { channel.close(promise: nil) }
        }
    }

    func process(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
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
    func isOverLimit(_ bodyBytes: Int) -> Bool { bodyBytes > answerer.maxBodySize }

    /// A body over the limit: answered 413 at once; the rest of it is read and dropped.
    func tooLarge(_ incoming: Incoming, context: ChannelHandlerContext) {
        reading = .discarding
        answer(incoming, refusal: incoming.refusal ?? .payloadTooLarge(limit: answerer.maxBodySize), context: context)
    }

    /// A request the HTTP decoder could not read: 400, and the connection
    /// closed (what follows cannot be framed).
    func refuseMalformed(_ error: HTTPParserError, context: ChannelHandlerContext) {
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

    func answer(_ incoming: Incoming, refusal: Problem?, context: ChannelHandlerContext) {
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
    func proceed(_ exchange: Exchange, context: ChannelHandlerContext) {
        let decision = exchange.decision
        if decision.delay > 0 {
            wait(decision.delay, context: context) { [self] in deliver(exchange, context: context) }
        } else {
            // Most answers: no closure to allocate.
            deliver(exchange, context: context)
        }
    }

    /// One request and its decision, on their way out.
    struct Exchange {
        let request: RecordedRequest
        var decision: Decision
        let engine: MockEngine
        let head: HTTPRequestHead
        let started: ContinuousClock.Instant
        var isHead: Bool { head.method == .HEAD }
    }

    func deliver(_ exchange: Exchange, context: ChannelHandlerContext) {
        switch exchange.decision.delivery {
        case .whole(let response):
            if let opening = exchange.decision.effects?.socket {
                upgrade(exchange, answered: response, opening: opening, context: context)
                return
            }
            finish(exchange, status: response.status)
            writeLast(ResponseBytes.encode(response, date: currentDate(), close: closing, omitBody: exchange.isHead, allocator: context.channel.allocator),
                      context: context)
        case .stream(let response, let parts):
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
            stream(parts[...], chunked: chunked, status: response.status, exchange, context: context)
        case .fault(let response, let fault):
            answering = true
            breakConnection(with: fault, of: response, exchange, context: context)
        case .forward:
            answering = true
            let answerer = self.answerer, request = exchange.request
            let upstream = context.eventLoop.makeFutureWithTask { await answerer.forward(request) }
            upstream.assumeIsolated().whenComplete { [self] result in
                guard case .success(var answer) = result else { return }
                answer.endpointID = exchange.decision.entry?.endpointID
                finish(exchange, status: answer.status)
                writeLast(ResponseBytes.encode(answer, date: currentDate(), close: closing, omitBody: exchange.isHead,
                                               allocator: context.channel.allocator), context: context)
            }
        }
    }

    /// A stream's parts, each after its pause; the answer is finished before its last bytes.
    func stream(_ parts: ArraySlice<StreamPart>, chunked: Bool, status: Int, _ exchange: Exchange, context: ChannelHandlerContext) {
        guard let part = parts.first else {
            finish(exchange, status: status)
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
            stream(parts.dropFirst(), chunked: chunked, status: status, exchange, context: context)
        }
    }

    /// A deliberate failure: the answer is finished (journaled) as the connection breaks.
    func breakConnection(with fault: Fault, of response: MockResponse, _ exchange: Exchange, context: ChannelHandlerContext) {
        let channel = context.channel
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
    func wait(_ seconds: Double, context: ChannelHandlerContext, then: @escaping () -> Void) {
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
    func hurry() {
        guard let (task, then) = waiting else { return }
        waiting = nil
        task.cancel()
        then()
    }

    /// Whether the answer being written is the connection's last.
    var closing: Bool { closeAfterAnswer || quiescing || (inputClosed && held.isEmpty) }

    func finish(_ exchange: Exchange, status: Int) {
        answerer.finish(exchange.decision, of: exchange.request, sent: status, engine: exchange.engine, started: exchange.started)
    }

    func write(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        connection.rawContext?.writeAndFlush(NIOAny(bytes), promise: nil)
    }

    /// An answer's last bytes: the connection is idle again (or closed), and held requests go on.
    func writeLast(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
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

    static func split(_ target: String) -> (path: String, query: String?) {
        // A fragment is not sent by clients; one that is ends the target.
        var target = Substring(target)
        if let hash = target.utf8.firstIndex(of: UInt8(ascii: "#")) { target = target[..<hash] }
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (String(target), nil) }
        return (String(target[..<mark]), String(target[target.index(after: mark)...]))
    }

    /// The engine answering now: the slot is read once per request, through
    /// its version number, so a connection takes its lock only after a reload.
    func currentEngine() -> MockEngine {
        let version = answerer.slot.version
        if let engine, engine.version == version { return engine.engine }
        let current = answerer.slot.versioned
        engine = current
        return current.engine
    }

    /// The `Date` header (RFC 9110's IMF-fixdate), formatted once a second per connection.
    func currentDate() -> String {
        let second = Int(Date().timeIntervalSince1970)
        if second != date.second { date = (second, HTTPDate.format(epochSecond: second)) }
        return date.text
    }
}
