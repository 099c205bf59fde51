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
/// Where the connection is, is one `Phase`; what may end it after the
/// answer in progress (`quiescing`, `closeAfterAnswer`, `inputClosed`) is
/// kept beside it.
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

    /// What arrived and waits for the answer in progress, or for the client to take its answers.
    enum Held {
        case part(HTTPServerRequestPart)
        case malformed(HTTPParserError)
    }

    var phase = Phase.idle
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
    /// The engine this connection last answered with, and the slot's version it came from.
    var engine: EngineSlot.Served?
    var remoteAddress: String??
    /// This server's port on the connection, read with `remoteAddress`.
    var localPort: Int?
    var date = (second: 0, text: "")
    /// Whether the answer in progress may be chunked: HTTP/1.0 has no chunked coding.
    var answersChunked = true
    /// The door's place in the pipeline while it is there (let go when it is
    /// removed: it holds the door); the delivery's primitives write through it.
    var channelContext: ChannelHandlerContext?
    /// The connection's event loop, kept past the door's removal: an answer
    /// decided away from it (the upstream's, the shared store's) comes back
    /// here to be journaled though its client has gone.
    var loop: (any EventLoop)?

    init(answerer: Answerer, connection: ConnectionGuard.State) {
        self.answerer = answerer
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) {
        channelContext = context
        loop = context.eventLoop
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        channelContext = nil
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if isOver { return }
        if holdsParts || !held.isEmpty || (!context.channel.isWritable && Self.isHead(part)) {
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
        if holdsParts || !held.isEmpty {
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
        stalled?.cancel()
        stalled = nil
        held.removeAll()
        endEvents()
        phase = .closed
        // A wait in progress ends now, so its answer is completed (journaled) though no one reads it.
        hurry()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent:
            quiescing = true
            if case .streamingEvents(let stream) = phase {
                // An event stream ends at once: its last chunk (or, in HTTP/1.0, nothing), then the connection.
                endEvents()
                writeLast(context.channel.allocator.buffer(string: stream.chunked ? "0\r\n\r\n" : ""))
            } else if isIdle {
                context.close(promise: nil)
            } else {
                hurry()
            }
        case ChannelEvent.inputClosed:
            inputClosed = true
            if case .streamingEvents = phase {
                // An event stream's reader that closed its side has gone: its place is freed now.
                endEvents()
                phase = .closed
                context.close(promise: nil)
            } else if isIdle {
                context.close(promise: nil)
            }
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// The held parts, in order, until an answer takes time or the answers back up.
    func drain(context: ChannelHandlerContext) {
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while !holdsParts, let next = held.first {
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
        if held.isEmpty, !holdsParts {
            if quiescing || inputClosed, case .idle = phase {
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
            closeAfterAnswer =
                !head.isKeepAlive || head.headers.contains(name: "upgrade")
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
            let incoming = Incoming(
                head: head, path: refusal == nil ? target.path : head.uri, query: refusal == nil ? target.query : nil,
                body: nil, started: .now, refusal: refusal)
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), isOverLimit(length) {
                // Refused by its declared length, before its body is read (and, with `Expect`, without `100 Continue`).
                tooLarge(incoming, context: context)
                return
            }
            phase = .reading(incoming)
            // Asked for when the request's turn comes, so it follows the answers before it.
            if (head.version.major, head.version.minor) >= (1, 1), head.headers["expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                connection.write(context.channel.allocator.buffer(string: "HTTP/1.1 100 Continue\r\n\r\n"))
            }
        case .body(let chunk):
            guard case .reading(var incoming) = phase else { break }
            // Let go of the body here first, so adding to it copies nothing.
            phase = .idle
            if isOverLimit((incoming.body?.readableBytes ?? 0) + chunk.readableBytes) {
                incoming.body = nil
                tooLarge(incoming, context: context)
            } else {
                if incoming.body == nil { incoming.body = chunk } else { incoming.body!.writeImmutableBuffer(chunk) }
                phase = .reading(incoming)
            }
        case .end:
            switch phase {
            case .reading(let incoming):
                phase = .idle
                answer(incoming, refusal: incoming.refusal, context: context)
            case .discarding:
                phase = .idle
                drain(context: context)
            case .idle, .answering, .streamingEvents, .upgraded, .closed:
                drain(context: context)
            }
        }
    }

    /// The one body-size rule (`--max-body-size`), for a declared length and for the bytes arrived.
    func isOverLimit(_ bodyBytes: Int) -> Bool { bodyBytes > answerer.maxBodySize }

    /// A body over the limit: answered 413 at once; the rest of it is read and dropped.
    func tooLarge(_ incoming: Incoming, context: ChannelHandlerContext) {
        phase = .discarding
        answer(incoming, refusal: incoming.refusal ?? .payloadTooLarge(limit: answerer.maxBodySize), context: context)
    }

    /// A request the HTTP decoder could not read: 400, and the connection
    /// closed (what follows cannot be framed).
    func refuseMalformed(_ error: HTTPParserError, context: ChannelHandlerContext) {
        guard !isOver else { return }
        let problem = Problem.malformedRequest("\(error)")
        let bytes = ResponseBytes.encode(problem.response(), date: currentDate(), close: true, allocator: context.channel.allocator)
        if !connection.writeThenClose(bytes) { context.close(promise: nil) }
        held.removeAll()
        phase = .closed
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
        var request = RecordedRequest(
            method: incoming.head.method.rawValue, path: incoming.path, query: incoming.query, headers: headers,
            body: incoming.body.map { Array($0.readableBytesView) } ?? [], remoteAddress: remoteAddress!)
        request.localPort = localPort
        let engine = currentEngine()
        answersChunked = (incoming.head.version.major, incoming.head.version.minor) >= (1, 1)
        let isHead = incoming.head.method == .HEAD
        switch answerer.decision(for: request, refusal: refusal, engine: engine) {
        case .now(let decision):
            proceed(DoorExchange(request: request, decision: decision, engine: engine, started: incoming.started, isHead: isHead))
        case .events(let session):
            openEvents(session: session, context: context)
        case .later(let pending):
            // The shared state store decides; later requests wait their turn, as behind a delay.
            beginAnswering()
            whenDone(pending) { [self] decision in
                // Delivered even to a client gone meanwhile, so the answer is journaled as any other.
                proceed(DoorExchange(request: request, decision: decision, engine: engine, started: incoming.started, isHead: isHead))
            }
        }
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
