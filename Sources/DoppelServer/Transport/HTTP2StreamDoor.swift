import DoppelCore
import DoppelProtobuf
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2

/// The door of one HTTP/2 stream: one gRPC call, from its headers to its
/// trailers, or one plain HTTP request (a client that chose HTTP/2 by
/// ALPN: curl and browsers over `--tls` when the contract serves gRPC), on
/// the connection's event loop.
///
/// A plain request is answered as HTTP/1's door answers it, through the
/// same delivery: its head and body as the engine's request, the answer's
/// status, headers and body as frames. (Event streams and WebSocket
/// upgrades are HTTP/1's alone: over HTTP/2 they are answered 501.)
///
/// The call's messages are read (each length-prefixed, bounded by
/// `--max-body-size`) and decoded by the contract's `.proto` into JSON; the
/// call becomes the engine's `RecordedRequest` (`POST /SERVICE/METHOD`, its
/// metadata as headers, its message as the body, a client stream's as a
/// list) and is decided as any request is. The decision is delivered by
/// `AnswerDoor`'s one delivery, whose primitives this door writes as
/// HTTP/2 frames: an OK answer's message (or a stream's, one per JSON line)
/// encoded by the `.proto`, then trailers with `grpc-status`; an error as
/// trailers only, with `grpc-message` and `grpc-status-details-bin`.
final class HTTP2StreamDoor: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// The most messages a client stream may send in one call.
    static let maximumMessages = 10_000
    /// The most bytes of answers a stream writes ahead of its client: past
    /// this its delivery waits (its next message, its next pause) until the
    /// client has taken half of them, and a client that takes none for
    /// `--idle-timeout` has the stream reset (`ENHANCE_YOUR_CALM`).
    static let maximumUnsentBytes = 1 << 20

    /// A call whose method was found.
    struct Call {
        let path: String
        /// Nil for a method the `.proto` does not declare: the engine answers it (its 404, `UNIMPLEMENTED`).
        let method: GRPCCatalog.Method?
        let catalog: GRPCCatalog?
        let engine: MockEngine
        var headers: [(name: String, value: String)]
        /// A plain HTTP request's method and query; nil for a gRPC call.
        var plain: (method: String, query: String?)? = nil
        /// A service Doppel answers itself (reflection, health), not the contract.
        var own: GRPCCatalog.OwnService? = nil
        /// The session the call is in.
        var session: String { headers.first { $0.name == MockEngine.sessionHeader }?.value ?? SessionStore.defaultID }
        /// A streaming method's endpoint, whose messages are journaled one by one; nil for any other call.
        var streamEndpoint: String? = nil
        /// The method answers each message by its `stream:` rules (`HTTP2StreamDoor+Rules.swift`).
        var rules = false
    }

    enum Phase {
        /// Before the call's headers.
        case opening
        /// Reading the call's messages.
        case reading(Call)
        /// Answering (or answered): what arrives now is dropped (kept for a stream with rules, until it opens).
        case answering(Call)
        /// A stream with rules, open: each message answered as it arrives.
        case conversing(Call)
        /// Refused before its method was known, or over.
        case over
    }

    let answerer: Answerer
    /// How long a stream's answer may wait for its client to take any of it (`--idle-timeout`).
    let idle: Double
    var phase = Phase.opening
    var incoming: ByteBuffer?
    var messages: [JSON] = []
    var messageBytes = 0
    var started = ContinuousClock.now
    var channelContext: ChannelHandlerContext?
    var loop: (any EventLoop)?
    /// The wait in progress and what follows it, ended early by the deadline or the client leaving.
    var waiting: (task: Scheduled<Void>, then: () -> Void)?
    /// The call's deadline (`grpc-timeout`).
    var deadline: Scheduled<Void>?
    /// Whether the answer's headers went out; then whether its trailers (or a reset) did: nothing more is sent.
    var headersSent = false
    var ended = false
    /// Bytes written and not yet taken by the connection.
    var unsent = 0
    /// The call's deadline passed before its answer was sent: journaled as 504 (`DEADLINE_EXCEEDED`).
    var deadlineHit = false

    /// A stream with rules, while it is open; and whether its client ended its half before it opened.
    var conversation: Conversation?
    var clientFinished = false

    /// The response a streaming call is answered by, for its messages' journal entries; and how many it sent.
    var streamResponse: String?
    var sentMessages = 0

    /// The delivery's next step, held while the client has not taken what was written, and the timer that gives up on it.
    var stalled: (then: () -> Void, timer: Scheduled<Void>)?

    init(answerer: Answerer, idle: Double = ServerConfiguration.defaults.idleTimeout) {
        self.answerer = answerer
        self.idle = idle
    }

    func handlerAdded(context: ChannelHandlerContext) {
        channelContext = context
        loop = context.eventLoop
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        channelContext = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let headers):
            switch phase {
            case .opening:
                open(headers.headers, context: context)
                if headers.endStream { endOfCall() }
            case .reading:
                // Trailers from the client end its half.
                if headers.endStream { endOfCall() }
            case .conversing:
                if headers.endStream { clientEnded() }
            case .answering:
                if headers.endStream { clientFinished = true }
            case .over:
                break
            }
        case .data(let frame):
            let call: Call
            switch phase {
            case .reading(let reading), .conversing(let reading):
                call = reading
            case .answering(let opening) where opening.rules && !ended:
                // A stream with rules being opened: what arrives waits for it (within the body's bound).
                if case .byteBuffer(var bytes) = frame.data {
                    guard (incoming?.readableBytes ?? 0) + bytes.readableBytes <= answerer.maxBodySize else { return reset(.enhanceYourCalm) }
                    if incoming == nil { incoming = bytes } else { incoming!.writeBuffer(&bytes) }
                }
                if frame.endStream { clientFinished = true }
                return
            default:
                return
            }
            if case .byteBuffer(var bytes) = frame.data {
                if call.plain != nil, (incoming?.readableBytes ?? 0) + bytes.readableBytes > answerer.maxBodySize {
                    // Answered 413 at once; the rest of the body is dropped.
                    answer(call, refusal: .payloadTooLarge(limit: answerer.maxBodySize))
                    return
                }
                if incoming == nil { incoming = bytes } else { incoming!.writeBuffer(&bytes) }
                if call.plain == nil { readMessages(call) }
            }
            if frame.endStream {
                if case .reading = phase { endOfCall() } else if case .conversing = phase { clientEnded() }
            }
        case .rstStream:
            clientLeft()
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        clientLeft()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A graceful shutdown: an open stream with rules is ended, as a WebSocket is closed (1001); any other call finishes.
        if event is ChannelShouldQuiesceEvent, conversation != nil {
            endStream(14, message: "The server is shutting down", status: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream error (a malformed frame of this stream): the stream is over.
        clientLeft()
        context.close(promise: nil)
    }

    /// The client reset the stream or the connection went: waits end now, so
    /// the answer is journaled, and nothing more is written.
    func clientLeft() {
        ended = true
        deadline?.cancel()
        streamOver(status: 499, because: "the client cancelled the call, or its connection ended")
        hurry()
    }

    // MARK: Reading

    /// The call's headers: its method found, its deadline set; or refused at once.
    func open(_ headers: HPACKHeaders, context: ChannelHandlerContext) {
        phase = .over
        started = .now
        let served = answerer.slot.versioned
        let engine = served.engine
        let isGRPC = headers.first(name: "content-type")?.lowercased().hasPrefix("application/grpc") == true
        guard isGRPC else { return openPlain(headers, engine: engine) }
        guard headers.first(name: ":method") == "POST" else {
            refuseHTTP(405, "gRPC calls are POST requests")
            return
        }
        let path = headers.first(name: ":path") ?? ""
        guard let catalog = served.grpc else {
            answerStatus(12, message: "The contract describes no gRPC service (its 'grpc:' section)")
            return
        }
        let method = catalog.methods[path]
        if let encoding = headers.first(name: "grpc-encoding"), encoding != "identity" {
            answerStatus(12, message: "Compressed messages (grpc-encoding \(encoding)) are not supported; send them uncompressed")
            return
        }
        var forwarded: [(name: String, value: String)] = []
        for (name, value, _) in headers where !name.hasPrefix(":") && name != "content-type" && name != "content-length" {
            forwarded.append((name, value))
        }
        // The engine reads the body as the JSON it is now, and `Host` as HTTP/1's.
        forwarded.append(("content-type", "application/json"))
        if let authority = headers.first(name: ":authority") { forwarded.append(("host", authority)) }
        if let timeout = headers.first(name: "grpc-timeout"), let seconds = Self.seconds(ofTimeout: timeout) {
            deadline = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(min(seconds, 1e9) * 1e9))) { [self] in
                deadlinePassed()
            }
        }
        var call = Call(path: path, method: method, catalog: catalog, engine: engine, headers: forwarded)
        call.own = GRPCCatalog.ownService(path)
        if let method, method.clientStreaming || method.serverStreaming, call.own == nil {
            let id = String(path.dropFirst())
            call.streamEndpoint = engine.contract.endpoints.contains { $0.id == id } ? id : nil
            call.rules = call.streamEndpoint != nil && Self.hasRules(path, engine: engine)
        }
        phase = .reading(call)
        // A method the `.proto` does not declare is answered at once, its messages unread;
        // a client stream with rules is opened at once, before its messages.
        if method == nil || call.rules && method?.clientStreaming == true { answer(call, refusal: nil) }
    }

    /// Each whole length-prefixed message that has arrived, decoded.
    func readMessages(_ call: Call) {
        guard let method = call.method, let catalog = call.catalog else { return }
        // An open stream with rules bounds each message, not the call's sum: it may go on for long.
        var conversing = false
        if case .conversing = phase { conversing = true }
        while var buffer = incoming, buffer.readableBytes >= 5 {
            let compressed = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self)!
            let length = Int(buffer.getInteger(at: buffer.readerIndex + 1, as: UInt32.self)!)
            guard compressed == 0 else {
                refuse(call, .malformedRequest("A message is marked compressed, and the call named no grpc-encoding"))
                return
            }
            let counted = conversing ? length : messageBytes + length
            guard length <= answerer.maxBodySize, counted <= answerer.maxBodySize else {
                incoming = nil
                let message = "Received message larger than max (\(counted) vs. \(answerer.maxBodySize)): see --max-body-size"
                return conversing ? endStream(8, message: message, status: nil) : answerStatus(8, message: message)
            }
            guard buffer.readableBytes >= 5 + length else { return }
            buffer.moveReaderIndex(forwardBy: 5)
            let bytes = buffer.readBytes(length: length)!
            incoming = buffer.readableBytes == 0 ? nil : buffer
            messageBytes += length
            do {
                let message = try catalog.codec.decode(bytes, as: method.input)
                if conversing {
                    take(message)
                    continue
                }
                if call.own == .reflection {
                    // Each request answered as it comes: a reflection client waits for one before it sends the next.
                    answerOwn(call, catalog.reflect(message), as: method.output)
                    continue
                }
                messages.append(message)
            } catch {
                refuse(call, .malformedRequest("The message is not a valid \(method.input): \(error.message)"))
                return
            }
            guard messages.count <= (method.clientStreaming ? Self.maximumMessages : 1) else {
                let refusal =
                    method.clientStreaming
                    ? Problem.malformedRequest("More than \(Self.maximumMessages) messages in one call")
                    : Problem.malformedRequest("\(call.path.dropFirst()) takes one message; the call sent more")
                answer(call, refusal: refusal)
                return
            }
            if method.clientStreaming, let endpoint = call.streamEndpoint {
                journalMessage(
                    call, method: "RECEIVE", target: endpoint + ".received", response: nil, message: messages.last,
                    reason: "message \(messages.count) of the client's stream")
            }
        }
    }

    /// A call that sent what it may not: answered with the problem, or (an open stream with rules) ended `INVALID_ARGUMENT`.
    func refuse(_ call: Call, _ problem: Problem) {
        if case .conversing = phase {
            incoming = nil
            endStream(3, message: problem.detail, status: nil)
        } else {
            answer(call, refusal: problem)
        }
    }

    /// The client's half is over: the call is answered.
    func endOfCall() {
        guard case .reading(let call) = phase else { return }
        if let own = call.own, let method = call.method, let catalog = call.catalog {
            endOwn(own, call, method: method, catalog: catalog)
        } else if call.plain != nil {
            answer(call, refusal: nil)
        } else if let incoming, incoming.readableBytes > 0 {
            answer(call, refusal: .malformedRequest("The call ended inside a message (\(incoming.readableBytes) bytes of it)"))
        } else if let method = call.method, !method.clientStreaming, messages.isEmpty {
            answer(call, refusal: .malformedRequest("\(call.path.dropFirst()) takes one message; the call sent none"))
        } else {
            answer(call, refusal: nil)
        }
    }

    /// The call decided as any request is: `body` its message (a client stream's list of them).
    func answer(_ call: Call, refusal: Problem?) {
        phase = .answering(call)
        defer { incoming = nil }
        if let plain = call.plain {
            let body = refusal == nil ? incoming.map { Array($0.readableBytesView) } ?? [] : []
            return decide(
                RecordedRequest(method: plain.method, path: call.path, query: plain.query, headers: call.headers, body: body, remoteAddress: nil),
                call, refusal)
        }
        let body: JSON = call.method?.clientStreaming == true ? .array(messages) : (messages.first ?? .object(JSONObject()))
        messages = []
        let request = RecordedRequest(
            method: "POST", path: call.engine.contract.basePath + call.path, query: nil, headers: call.headers,
            body: call.method == nil ? [] : JSONWriter.encode(body), remoteAddress: nil)
        decide(request, call, refusal)
    }

    /// The engine's decision on `request`, delivered.
    func decide(_ request: RecordedRequest, _ call: Call, _ refusal: Problem?) {
        var request = request
        let parent = channelContext?.channel.parent
        request.remoteAddress = parent?.remoteAddress?.ipAddress
        request.localPort = parent?.localAddress?.port
        let started = self.started
        let isHead = call.plain?.method == "HEAD"
        switch answerer.decision(for: request, refusal: refusal, engine: call.engine) {
        case .now(let decision):
            streamResponse = decision.entry?.responseName
            proceed(DoorExchange(request: request, decision: decision, engine: call.engine, started: started, isHead: isHead))
        case .later(let pending):
            whenDone(pending) { [self] decision in
                streamResponse = decision.entry?.responseName
                proceed(DoorExchange(request: request, decision: decision, engine: call.engine, started: started, isHead: isHead))
            }
        case .events:
            if call.plain != nil {
                refuseHTTP(501, "Event streams are served over HTTP/1.1; connect without HTTP/2 to follow them")
            } else {
                answerStatus(13, message: "An event stream is not a gRPC answer")
            }
        }
    }

    /// A plain HTTP request's head: read as HTTP/1's door reads one.
    func openPlain(_ headers: HPACKHeaders, engine: MockEngine) {
        let method = headers.first(name: ":method") ?? "GET"
        let target = headers.first(name: ":path") ?? "/"
        guard method != "CONNECT", target.hasPrefix("/") else {
            refuseHTTP(400, "Doppel serves paths: \(method) \(target) is not a request it answers")
            return
        }
        let (path, query) = HTTPDoor.split(target)
        var forwarded: [(name: String, value: String)] = []
        for (name, value, _) in headers where !name.hasPrefix(":") { forwarded.append((name, value)) }
        if let authority = headers.first(name: ":authority"), !forwarded.contains(where: { $0.name == "host" }) {
            forwarded.append(("host", authority))
        }
        phase = .reading(Call(path: path, method: nil, catalog: nil, engine: engine, headers: forwarded, plain: (method, query)))
    }

    /// One message of a service of Doppel's own, sent now (not journaled: as admin calls, they are not the contract's).
    func answerOwn(_ call: Call, _ message: JSON, as type: String) {
        guard let bytes = encode(message, as: type, call) else { return }
        writeHeaders(of: nil)
        writeMessage(bytes)
    }

    /// The client's half of a call to a service of Doppel's own is over.
    func endOwn(_ own: GRPCCatalog.OwnService, _ call: Call, method: GRPCCatalog.Method, catalog: GRPCCatalog) {
        phase = .answering(call)
        let request = messages.first ?? .object(JSONObject())
        messages = []
        switch own {
        case .reflection:
            writeTrailers(0, message: "", details: nil)
        case .healthCheck:
            guard let status = catalog.health(request) else {
                return answerStatus(5, message: "Unknown service \(request["service"]?.stringValue ?? "")")
            }
            answerOwn(call, status, as: method.output)
            writeTrailers(0, message: "", details: nil)
        case .healthWatch:
            // The status, and the stream held open: it never changes while the server runs.
            answerOwn(call, catalog.health(request) ?? ["status": "SERVICE_UNKNOWN"], as: method.output)
        }
    }

    /// `grpc-timeout`'s value in seconds: up to 8 digits and a unit (H, M, S, m, u, n).
    static func seconds(ofTimeout text: String) -> Double? {
        guard let unit = text.last, text.count >= 2, text.count <= 9, let value = Double(text.dropLast()),
            text.dropLast().allSatisfy(\.isASCII), text.dropLast().allSatisfy(\.isNumber)
        else { return nil }
        switch unit {
        case "H": return value * 3600
        case "M": return value * 60
        case "S": return value
        case "m": return value / 1e3
        case "u": return value / 1e6
        case "n": return value / 1e9
        default: return nil
        }
    }

    /// The call's deadline passed: it ends `DEADLINE_EXCEEDED` now, and the
    /// answer in progress, journaled as decided, sends nothing more.
    func deadlinePassed() {
        deadline = nil
        guard !ended else { return }
        deadlineHit = true
        if conversation != nil { return endStream(4, message: "Deadline Exceeded", status: nil) }
        answerStatus(4, message: "Deadline Exceeded")
        hurry()
    }

    /// One message of a streaming call journaled (`RECEIVE` under `SERVICE/METHOD.received`,
    /// `SEND` under `SERVICE/METHOD.RESPONSE`), and published to the dashboard and the log.
    func journalMessage(_ call: Call, method: String, target: String, response: String?, message: JSON?, sent: [JSON] = [], reason: String) {
        let entry = call.engine.journalMessage(
            session: call.session, method: method, path: call.engine.contract.basePath + call.path, target: target,
            responseName: response, status: 200, message: message.map(JSONWriter.encodeString), sent: sent.map(JSONWriter.encodeString),
            reason: Reason(reason))
        publish(entry)
    }
}
