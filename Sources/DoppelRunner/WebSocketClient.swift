import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOWebSocket

/// A WebSocket client for scenario steps and test suites, over NIO: the
/// handshake written and read here (so a refused upgrade's status, headers
/// and body are kept, as a scenario expects them), then NIO's frame codec.
/// AsyncHTTPClient has no WebSocket support, and Foundation's on Linux
/// needs a libcurl built with it, which Debian's is not.
public final class WebSocketClient: Sendable {
    /// What the server answered the upgrade with.
    public struct Handshake: Sendable {
        /// 101 when the socket is open.
        public let status: Int
        /// The answer's header fields, in order.
        public let headers: [(name: String, value: String)]
        /// The body of a refusal (empty for 101).
        public let body: [UInt8]
    }

    /// Something that arrived on the socket.
    public enum Message: Sendable, Equatable {
        case text(String)
        case binary([UInt8])
        /// The server's close frame: its code (1005 for none) and reason.
        case close(code: Int, reason: String)

        /// Bytes it holds.
        var size: Int {
            switch self {
            case .text(let text): text.utf8.count
            case .binary(let bytes): bytes.count
            case .close(_, let reason): 2 + reason.utf8.count
            }
        }
    }

    /// Why a connection or a wait failed.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// The upgrade's answer.
    public let handshake: Handshake
    private let channel: (any Channel)?
    private let inbox: Inbox

    private init(handshake: Handshake, channel: (any Channel)?, inbox: Inbox) {
        self.handshake = handshake
        self.channel = channel
        self.inbox = inbox
    }

    /// Whether the upgrade was taken.
    public var isOpen: Bool { handshake.status == 101 }

    /// Opens a socket at `url` (`ws`, `wss`, `http` or `https`) with `headers`;
    /// a refusal is returned too (`handshake.status` is then not 101).
    /// `first`: text messages sent the moment the 101 is read, from the
    /// connection's event loop (a protocol's opening message, such as
    /// graphql-transport-ws's `connection_init`, which a server awaits for a
    /// bounded time however busy the caller's tasks are).
    public static func connect(
        to url: URL, headers: [(name: String, value: String)] = [], timeout: Double = 10,
        maxMessage: Int = 16 << 20, first: [String] = []
    ) async throws -> WebSocketClient {
        guard let scheme = url.scheme?.lowercased(), ["ws", "wss", "http", "https"].contains(scheme), let host = url.host else {
            throw Failure(description: "not a WebSocket URL: \(url.absoluteString)")
        }
        let secure = scheme == "wss" || scheme == "https"
        let port = url.port ?? (secure ? 443 : 80)
        var target = url.path.isEmpty ? "/" : url.path
        if let query = url.query { target += "?" + query }
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        var request =
            "GET \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        let inbox = Inbox()
        let answer = HandshakeReader(inbox: inbox, maxMessage: maxMessage, first: first)
        let tls = try secure ? NIOSSLContext(configuration: .makeClientConfiguration()) : nil
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(Int64(min(timeout, 30) * 1000)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: host)) }
                    try channel.pipeline.syncOperations.addHandler(answer)
                }
            }
        let channel = try await bootstrap.connect(host: host, port: port).get()
        try await channel.writeAndFlush(ByteBuffer(string: request))
        let handshake: Handshake
        do {
            handshake = try await inbox.handshake(timeout: timeout, on: channel.eventLoop)
        } catch {
            try? await channel.close()
            throw error
        }
        if handshake.status == 101 {
            let expected = acceptValue(for: key)
            guard handshake.headers.contains(where: { $0.name.lowercased() == "sec-websocket-accept" && $0.value == expected }) else {
                try? await channel.close()
                throw Failure(description: "the server answered 101 without the right Sec-WebSocket-Accept")
            }
        } else {
            try? await channel.close()
        }
        return WebSocketClient(handshake: handshake, channel: handshake.status == 101 ? channel : nil, inbox: inbox)
    }

    /// Sends a text message.
    public func send(_ text: String) async throws {
        guard let channel else { throw Failure(description: "the socket is not open") }
        try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(string: text)))
    }

    /// Sends a frame of any kind (masked, as a client's must be).
    public func send(opcode: WebSocketOpcode, data: [UInt8]) async throws {
        guard let channel else { throw Failure(description: "the socket is not open") }
        try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: ByteBuffer(bytes: data)))
    }

    /// The next message, or nil when none arrives within `timeout` seconds
    /// (or the connection has ended with nothing left to read).
    public func receive(within timeout: Double) async -> Message? {
        guard let channel else { return nil }
        return await inbox.next(timeout: timeout, on: channel.eventLoop)
    }

    /// Sends a close frame and ends the connection.
    public func close(code: Int = 1000) async {
        guard let channel else { return }
        var data = ByteBuffer()
        data.writeInteger(UInt16(code))
        try? await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data))
        try? await channel.close()
    }

    /// `Sec-WebSocket-Accept` for a key (RFC 6455 section 4.2.2).
    static func acceptValue(for key: String) -> String {
        Data(Insecure.SHA1.hash(data: Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
    }

    /// Messages as they arrive, and whoever waits for one.
    final class Inbox: Sendable {
        private struct State {
            var handshake: Result<Handshake, Failure>?
            var handshakeWaiter: CheckedContinuation<Handshake, any Error>?
            var messages: [Message] = []
            /// Bytes of the messages waiting to be received.
            var queuedBytes = 0
            var waiter: (id: Int, continuation: CheckedContinuation<Message?, Never>)?
            var nextID = 0
            var ended = false

            mutating func take() -> Message? {
                guard !messages.isEmpty else { return nil }
                let first = messages.removeFirst()
                queuedBytes -= first.size
                return first
            }
        }

        private let state = NIOLockedValueBox(State())

        /// The most messages, and bytes of them, kept unreceived: a server
        /// that sends faster than a scenario reads is cut off past them
        /// (the socket ends), rather than growing the runner without bound.
        static let maximumQueued = 10_000
        static let maximumQueuedBytes = 64 << 20

        /// Whether `bytes` more can wait to be received.
        func hasRoom(for bytes: Int) -> Bool {
            state.withLockedValue { $0.messages.count < Self.maximumQueued && $0.queuedBytes + bytes <= Self.maximumQueuedBytes }
        }

        func answered(_ result: Result<Handshake, Failure>) {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Handshake, any Error>? in
                guard state.handshake == nil else { return nil }
                state.handshake = result
                defer { state.handshakeWaiter = nil }
                return state.handshakeWaiter
            }
            waiter?.resume(with: result.mapError { $0 as any Error })
        }

        func handshake(timeout: Double, on loop: any EventLoop) async throws -> Handshake {
            let timer = loop.scheduleTask(in: .nanoseconds(Int64(timeout * 1e9))) { [self] in
                answered(.failure(Failure(description: "no answer to the upgrade within \(timeout) s")))
            }
            defer { timer.cancel() }
            return try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLockedValue { state -> Result<Handshake, Failure>? in
                    if let result = state.handshake { return result }
                    state.handshakeWaiter = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready.mapError { $0 as any Error }) }
            }
        }

        func arrived(_ message: Message?) {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Message?, Never>? in
                if let message {
                    state.messages.append(message)
                    state.queuedBytes += message.size
                } else {
                    state.ended = true
                }
                guard let waiter = state.waiter else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            guard let waiter else { return }
            let next = state.withLockedValue { $0.take() }
            waiter.resume(returning: next)
        }

        func next(timeout: Double, on loop: any EventLoop) async -> Message? {
            await withCheckedContinuation { continuation in
                let (ready, id): (Message??, Int) = state.withLockedValue { state in
                    if let first = state.take() { return (.some(first), 0) }
                    if state.ended { return (.some(nil), 0) }
                    state.nextID += 1
                    state.waiter = (state.nextID, continuation)
                    return (nil, state.nextID)
                }
                if let ready { return continuation.resume(returning: ready) }
                loop.scheduleTask(in: .nanoseconds(Int64(timeout * 1e9))) { [self] in
                    let expired = state.withLockedValue { state -> CheckedContinuation<Message?, Never>? in
                        guard let waiter = state.waiter, waiter.id == id else { return nil }
                        state.waiter = nil
                        return waiter.continuation
                    }
                    expired?.resume(returning: nil)
                }
            }
        }
    }

    /// Reads the upgrade's answer; on 101, hands the connection to NIO's frame codec.
    final class HandshakeReader: ChannelInboundHandler, RemovableChannelHandler, Sendable {
        typealias InboundIn = ByteBuffer
        private let inbox: Inbox
        private let maxMessage: Int
        private let first: [String]
        private let buffered = NIOLockedValueBox(ByteBuffer())

        init(inbox: Inbox, maxMessage: Int, first: [String]) {
            self.inbox = inbox
            self.maxMessage = maxMessage
            self.first = first
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var incoming = unwrapInboundIn(data)
            let bytes = buffered.withLockedValue { buffer -> ByteBuffer in
                buffer.writeBuffer(&incoming)
                return buffer
            }
            let view = Array(bytes.readableBytesView)
            guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else {
                if view.count > 64 << 10 {
                    inbox.answered(.failure(Failure(description: "the upgrade's answer has over 64 KiB of headers")))
                    context.close(promise: nil)
                }
                return
            }
            let lines = String(decoding: view[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            let statusParts = lines.first?.split(separator: " ", maxSplits: 2) ?? []
            guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
                inbox.answered(.failure(Failure(description: "the upgrade's answer is not HTTP: \(lines.first ?? "")")))
                context.close(promise: nil)
                return
            }
            let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            let rest = Array(view[end.upperBound...])
            if status == 101 {
                inbox.answered(.success(Handshake(status: 101, headers: headers, body: [])))
                let sync = context.pipeline.syncOperations
                let reader = FrameReader(inbox: inbox, maxMessage: maxMessage)
                do {
                    try sync.addHandler(WebSocketFrameEncoder(), position: .last)
                    try sync.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxMessage)), position: .last)
                    try sync.addHandler(reader, position: .last)
                    for text in first {
                        let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(string: text))
                        context.channel.writeAndFlush(frame, promise: nil)
                    }
                    // Frames that came with the 101, into the decoder before this handler goes.
                    if !rest.isEmpty { context.fireChannelRead(NIOAny(ByteBuffer(bytes: rest))) }
                    sync.removeHandler(context: context, promise: nil)
                } catch {
                    context.close(promise: nil)
                }
                return
            }
            // A refusal: its body by Content-Length, else up to the end of the connection.
            let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) }
            if let length, rest.count >= length {
                inbox.answered(.success(Handshake(status: status, headers: headers, body: Array(rest.prefix(length)))))
                context.close(promise: nil)
            } else if rest.count > 16 << 20 {
                inbox.answered(.failure(Failure(description: "the refusal's body is over 16 MiB")))
                context.close(promise: nil)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            let view = buffered.withLockedValue { Array($0.readableBytesView) }
            if let end = view.firstRange(of: Array("\r\n\r\n".utf8)) {
                let lines = String(decoding: view[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
                let parts = lines.first?.split(separator: " ", maxSplits: 2) ?? []
                if parts.count >= 2, let status = Int(parts[1]), status != 101 {
                    let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
                        guard let colon = line.firstIndex(of: ":") else { return nil }
                        return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                    }
                    inbox.answered(.success(Handshake(status: status, headers: headers, body: Array(view[end.upperBound...]))))
                }
            }
            inbox.answered(.failure(Failure(description: "the connection closed before the upgrade was answered")))
            inbox.arrived(nil)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            inbox.answered(.failure(Failure(description: "\(error)")))
            context.close(promise: nil)
        }
    }

    /// Messages of the open socket into the inbox; a ping is answered.
    final class FrameReader: ChannelInboundHandler, Sendable {
        typealias InboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame
        private let inbox: Inbox
        private let maxMessage: Int
        private let partial = NIOLockedValueBox<(opcode: WebSocketOpcode, bytes: [UInt8])?>(nil)

        init(inbox: Inbox, maxMessage: Int) {
            self.inbox = inbox
            self.maxMessage = maxMessage
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            var payload = frame.unmaskedData
            let bytes = payload.readBytes(length: payload.readableBytes) ?? []
            switch frame.opcode {
            case .text, .binary, .continuation:
                // A message of many fragments is bounded as one of a single frame is (`maxMessage`).
                let whole = partial.withLockedValue { partial -> Result<(WebSocketOpcode, [UInt8])?, Failure> in
                    var current: (opcode: WebSocketOpcode, bytes: [UInt8]) =
                        frame.opcode == .continuation ? partial ?? (.text, []) : (frame.opcode, [])
                    guard current.bytes.count + bytes.count <= maxMessage else {
                        partial = nil
                        return .failure(Failure(description: "a message over \(maxMessage) bytes"))
                    }
                    current.bytes += bytes
                    if frame.fin {
                        partial = nil
                        return .success(current)
                    }
                    partial = current
                    return .success(nil)
                }
                switch whole {
                case .failure:
                    context.close(promise: nil)
                case .success(let message?):
                    guard inbox.hasRoom(for: message.1.count) else {
                        // The scenario reads slower than the server sends: the socket ends here.
                        context.close(promise: nil)
                        return
                    }
                    inbox.arrived(message.0 == .text ? .text(String(decoding: message.1, as: UTF8.self)) : .binary(message.1))
                case .success(nil):
                    break
                }
            case .ping:
                context.writeAndFlush(
                    wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: ByteBuffer(bytes: bytes))), promise: nil)
            case .connectionClose:
                var data = ByteBuffer(bytes: bytes)
                let code = data.readInteger(as: UInt16.self).map(Int.init) ?? 1005
                inbox.arrived(.close(code: code, reason: data.readString(length: data.readableBytes) ?? ""))
                context.close(promise: nil)
            default:
                break
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            inbox.arrived(nil)
            context.fireChannelInactive()
        }
    }
}
