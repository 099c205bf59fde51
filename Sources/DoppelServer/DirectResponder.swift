import DoppelCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Answers the common request on the connection's event loop.
///
/// Hummingbird hands each request to an async task and writes the answer
/// back through an async writer: two thread hops and several allocations
/// per request, more than the engine itself costs for most endpoints. This
/// handler sits right after Doppel's `RequestWatcher`, ahead of the
/// conversion to HTTP types and of Hummingbird's connection-state handler.
/// A request to the engine (not the admin API, with a body within the
/// limit) whose answer is plain (no delay, fault or stream) is answered
/// here, synchronously, in the same event-loop turn that read it, and its
/// response is written as bytes at the raw end of the pipeline
/// (`DirectResponse`).
///
/// Everything else is passed on to Hummingbird and `DoppelResponder` as
/// before: admin calls, oversized bodies (its 413), and answers with a
/// delay, fault or stream, whose already-computed response goes with the
/// request through `handoff` (the engine runs once per request). While a
/// passed-on request is unanswered, later requests on the connection are
/// passed on too, so answers keep their order.
///
/// Since Hummingbird's connection-state handler never sees the requests
/// answered here, the idle deadline is `ConnectionGuard`'s, and a graceful
/// shutdown's quiesce event is held back while a request's body is being
/// read here, then passed on once it is answered.
final class DirectResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Responses computed here for requests passed on, in request order; nil
    /// where `DoppelResponder` is to compute the answer itself.
    let handoff = NIOLockedValueBox<[MockResponse?]>([])

    private let responder: DoppelResponder
    private let connection: ConnectionGuard.State
    private enum Mode {
        case idle
        case collecting(HTTPRequestHead, Target, ByteBuffer?, ContinuousClock.Instant)
        case passing
    }
    /// A request target's path and query.
    private typealias Target = (path: String, query: String?)
    private var mode = Mode.idle
    /// Requests passed on whose answer has not been written yet.
    private var passedOn = 0
    /// The methods of requests passed on whose answer's head is not written
    /// yet, in order: an answer to a `HEAD` is written without its body.
    /// (NIO's encoder would learn each request's method from the decoder,
    /// but requests answered here never reach it, so that queue would drift
    /// and grow; `DoppelHTTP1Channel` leaves the two unpaired.)
    private var passedOnMethods = CircularBuffer<HTTPMethod>(initialCapacity: 2)
    /// Whether the answer being written now is one to a `HEAD`.
    private var answeringHead = false
    /// A graceful shutdown's request to close, held while a request is read here.
    private var heldQuiesce: Any?
    /// The engine this connection last answered with, and the slot's version it came from.
    private var engine: (version: Int, engine: MockEngine)?
    private var remoteAddress: String??
    private var date = (second: 0, text: "")
    /// Backpressure: request parts read while the connection's answers were
    /// not being written out (the channel past its high-water mark), held
    /// in order until they are; no further read is asked for meanwhile, so
    /// a client that sends and never reads holds at most one read's bytes
    /// of requests and the answers already buffered.
    private var held = CircularBuffer<HTTPServerRequestPart>()
    /// A read asked for while held back.
    private var readPending = false
    /// Closes a connection whose answers have not been taken for the idle timeout.
    private var stalled: Scheduled<Void>?

    init(responder: DoppelResponder, connection: ConnectionGuard.State) {
        self.responder = responder
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if !held.isEmpty || (!context.channel.isWritable && Self.isHead(part)) {
            held.append(part)
            watchStall(context: context)
            return
        }
        process(part, context: context)
    }

    private static func isHead(_ part: HTTPServerRequestPart) -> Bool {
        if case .head = part { return true }
        return false
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stalled?.cancel()
            stalled = nil
            // The held requests, in order, until the answers back up again.
            while let part = held.first, context.channel.isWritable || !Self.isHead(part) {
                held.removeFirst()
                process(part, context: context)
            }
            if held.isEmpty, readPending {
                readPending = false
                context.read()
            }
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
        context.fireChannelInactive()
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
        let data = wrapInboundOut(part)
        switch part {
        case .head(let head):
            if head.method == .CONNECT || head.uri.utf8.first != UInt8(ascii: "/") {
                // Refused before anything reads the target as a path: an
                // upstream URL must never be built from it (`--proxy`).
                mode = .passing
                let problem = Problem.invalidTarget(method: head.method.rawValue, target: head.uri)
                passOn(head, computed: currentEngine().respond(refusing: recorded(head, path: head.uri, query: nil, body: nil, context: context), with: problem),
                       context: context)
                return
            }
            if head.headers["host"].count > 1 {
                // Two Host fields: which host was meant cannot be known (RFC 9112 section 3.2 says 400).
                mode = .passing
                connection.closeAfterResponse = true
                let problem = Problem.invalidHeaders("The request has more than one Host header field; send one.")
                let target = Self.split(head.uri)
                var closing = head
                closing.headers.replaceOrAdd(name: "connection", value: "close")  // Hummingbird closes after answering such a request
                passOn(closing, computed: currentEngine().respond(refusing: recorded(head, path: target.path, query: target.query, body: nil, context: context), with: problem),
                       context: context)
                return
            }
            let target = Self.split(head.uri)
            if passedOn == 0, isDirect(head, path: target.path) {
                mode = .collecting(head, target, nil, .now)
            } else {
                mode = .passing
                passOn(head, computed: nil, context: context)
            }
        case .body(let chunk):
            switch mode {
            case .collecting(let head, let target, var body, let started):
                if (body?.readableBytes ?? 0) + chunk.readableBytes > responder.maxBodySize {
                    // Too large: Hummingbird's responder answers it with its 413.
                    mode = .passing
                    passOn(head, computed: nil, context: context)
                    if let body { context.fireChannelRead(wrapInboundOut(.body(body))) }
                    context.fireChannelRead(data)
                    releaseQuiesce(context: context)
                } else {
                    if body == nil { body = chunk } else { body!.writeImmutableBuffer(chunk) }
                    mode = .collecting(head, target, body, started)
                }
            case .passing, .idle:
                context.fireChannelRead(data)
            }
        case .end:
            switch mode {
            case .collecting(let head, let target, let body, let started):
                mode = .idle
                answer(head, target: target, body: body, started: started, context: context)
                releaseQuiesce(context: context)
            case .passing, .idle:
                mode = .idle
                context.fireChannelRead(data)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, case .collecting = mode {
            heldQuiesce = event
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Only Hummingbird's answers come through here; ours are written at the raw end.
        switch unwrapOutboundIn(data) {
        case .head(var head):
            answeringHead = passedOnMethods.popFirst() == .HEAD
            if answeringHead {
                // No body follows; framed by its length so that the encoder adds no chunked terminator.
                head.headers.remove(name: "transfer-encoding")
                if !head.headers.contains(name: "content-length") { head.headers.add(name: "content-length", value: "0") }
                context.write(wrapOutboundOut(.head(head)), promise: promise)
            } else {
                context.write(data, promise: promise)
            }
        case .body where answeringHead:
            promise?.succeed(())
        case .body:
            context.write(data, promise: promise)
        case .end:
            answeringHead = false
            passedOn = max(0, passedOn - 1)
            context.write(data, promise: promise)
        }
    }

    private func releaseQuiesce(context: ChannelHandlerContext) {
        guard let event = heldQuiesce else { return }
        heldQuiesce = nil
        context.fireUserInboundEventTriggered(event)
    }

    /// Whether a request (its target already known to be a path) may be
    /// answered here: to the engine, without `Expect`, with a declared body
    /// length (if any) within the limit.
    private func isDirect(_ head: HTTPRequestHead, path: String) -> Bool {
        guard !head.uri.utf8.contains(UInt8(ascii: "#")),
              !AdminAPI.handles(path), connection.rawContext != nil, !head.headers.contains(name: "expect") else { return false }
        if let length = head.headers.first(name: "content-length") {
            guard let length = Int(length), length <= responder.maxBodySize else { return false }
        }
        return true
    }

    private static func split(_ target: String) -> Target {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (target, nil) }
        return (String(target[..<mark]), String(target[target.index(after: mark)...]))
    }

    private func passOn(_ head: HTTPRequestHead, computed: MockResponse?, context: ChannelHandlerContext) {
        handoff.withLockedValue { $0.append(computed) }
        passedOn += 1
        passedOnMethods.append(head.method)
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    /// The engine answering now: the slot is read once per request, through
    /// its version number, so a connection takes its lock only after a reload.
    private func currentEngine() -> MockEngine {
        let version = responder.slot.version
        if let engine, engine.version == version { return engine.engine }
        let current = responder.slot.versioned
        engine = current
        return current.engine
    }

    /// The engine's view of a request read here.
    private func recorded(_ head: HTTPRequestHead, path: String, query: String?, body: ByteBuffer?, context: ChannelHandlerContext) -> RecordedRequest {
        if remoteAddress == nil { remoteAddress = .some(context.channel.remoteAddress?.ipAddress) }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(head.headers.count)
        for (name, value) in head.headers { headers.append((name, value)) }
        return RecordedRequest(method: head.method.rawValue, path: path, query: query, headers: headers,
                               body: body.map { Array($0.readableBytesView) } ?? [], remoteAddress: remoteAddress!)
    }

    private func answer(_ head: HTTPRequestHead, target: Target, body: ByteBuffer?, started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        let recorded = recorded(head, path: target.path, query: target.query, body: body, context: context)
        let response = currentEngine().respond(to: recorded)
        if response.delay > 0 || response.fault != nil || response.stream != nil || response.forward {
            // Hummingbird's responder waits, breaks, streams or forwards it.
            passOn(head, computed: response, context: context)
            if let body { context.fireChannelRead(wrapInboundOut(.body(body))) }
            context.fireChannelRead(wrapInboundOut(.end(nil)))
            context.fireChannelReadComplete()
            return
        }
        guard let raw = connection.rawContext else { return }
        let closing = connection.closeAfterResponse
        let bytes = DirectResponse.encode(response, date: currentDate(), close: closing, allocator: context.channel.allocator)
        connection.responseWritten(on: context.eventLoop)
        if closing {
            raw.writeAndFlush(NIOAny(bytes)).whenComplete { _ in raw.close(promise: nil) }
        } else {
            raw.writeAndFlush(NIOAny(bytes), promise: nil)
        }
        responder.logAnswer(method: recorded.method, path: recorded.path, session: recorded.header(MockEngine.sessionHeader),
                            response: response, started: started)
    }

    /// The `Date` header (RFC 9110's IMF-fixdate), formatted once a second per connection.
    private func currentDate() -> String {
        let second = Int(Date().timeIntervalSince1970)
        if second != date.second { date = (second, HTTPDate.format(epochSecond: second)) }
        return date.text
    }
}

/// A plain engine answer as HTTP/1.1 bytes: status line, the response's
/// headers, `Content-Length`, `Date`, `Server` (and `Connection: close` when
/// the connection ends with it), then the body, in one buffer.
///
/// Written here rather than by NIO's response encoder because the answer is
/// written at the raw end of the pipeline, past the encoder; the headers are
/// checked as HTTP types would check them: a name that is not a token is
/// left out, and a value's control characters become spaces.
enum DirectResponse {
    /// Headers the server sets itself, which a response's own are not to repeat (lowercase).
    private static let serverSet = ["content-length", "date", "server", "connection", "transfer-encoding", "keep-alive"]

    /// `HTTP/1.1 200 OK\r\n` and the like for every status from 100 to 599, made once.
    private static let statusLines: [[UInt8]] = (100...599).map { status in
        Array("HTTP/1.1 \(status) \(HTTPResponseStatus(statusCode: status).reasonPhrase)\r\n".utf8)
    }

    static func encode(_ response: MockResponse, date: String, close: Bool, allocator: ByteBufferAllocator) -> ByteBuffer {
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
        for header in response.headers where isToken(header.name) && !serverSet.contains(where: header.name.caseInsensitiveEquals) {
            buffer.writeString(header.name)
            buffer.writeStaticString(": ")
            writeValue(header.value, into: &buffer)
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("Content-Length: ")
        buffer.writeString(String(response.body.count))
        buffer.writeStaticString("\r\nDate: ")
        buffer.writeString(date)
        buffer.writeStaticString("\r\nServer: Doppel\r\n")
        if close { buffer.writeStaticString("Connection: close\r\n") }
        buffer.writeStaticString("\r\n")
        buffer.writeBytes(response.body)
        return buffer
    }

    /// RFC 9110's token: the characters a field name may have.
    static func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }

    /// A field value with surrounding whitespace trimmed and control characters (CR, LF, NUL among them) as spaces.
    private static func writeValue(_ value: String, into buffer: inout ByteBuffer) {
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
