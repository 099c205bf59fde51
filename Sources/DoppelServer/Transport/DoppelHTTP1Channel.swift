import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2

/// Doppel's child channel. When the contract serves gRPC, a connection that
/// opens with HTTP/2's preface (`PrefaceSniffer`) is HTTP/2, whose streams
/// are gRPC calls (`configureHTTP2`); any other is HTTP/1: NIO's request decoder between the
/// connection guard's two handlers (`ConnectionGuard`), then `HTTPDoor`,
/// which answers every request and writes every answer as bytes. No
/// response encoder and no async hand-off: one path from bytes in to bytes
/// out. Hummingbird's server runs it (listening, TLS in front, connection
/// limits, graceful shutdown).
struct DoppelHTTP1Channel: ServerChildChannel {
    /// An accepted connection, served by its pipeline until it closes.
    struct Connection: ServerChildChannelValue {
        let channel: any Channel
    }

    let answerer: Answerer
    /// Deadlines (the idle one among them) and the body limit.
    let limits: ConnectionGuard.Limits
    /// Largest header block of a request, in bytes.
    let maxHeaderSize: Int

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Connection> {
        channel.eventLoop.makeCompletedFuture {
            var decoderLimits = NIOHTTPDecoderLimitConfiguration()
            decoderLimits.maxHeaderFieldSize = maxHeaderSize
            decoderLimits.maxHeaderListSize = maxHeaderSize
            decoderLimits.maxHeaderFieldCount = 256
            let state = ConnectionGuard.State(limits: limits)
            let sync = channel.pipeline.syncOperations
            let watcher = ConnectionGuard.ByteWatcher(state: state)
            try sync.addHandler(watcher)
            let http1 = { [answerer] (sync: ChannelPipeline.SynchronousOperations) throws in
                try sync.addHandler(
                    ByteToMessageHandler(
                        HTTPRequestDecoder(
                            leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .drop, limitConfiguration: decoderLimits)))
                try sync.addHandler(ConnectionGuard.RequestWatcher(state: state))
                try sync.addHandler(HTTPDoor(answerer: answerer, connection: state))
            }
            // A contract without gRPC is served over HTTP/1 alone, its pipeline made at once; one with
            // gRPC waits for the connection's first bytes to tell HTTP/2 from HTTP/1 (read per
            // connection, so a reload that adds or removes the section holds for the connections after it).
            guard answerer.slot.servesGRPC else {
                try http1(sync)
                return Connection(channel: channel)
            }
            let sniffer = PrefaceSniffer(
                http1: { sync, _ in try http1(sync) },
                http2: { [answerer, limits, maxHeaderSize] context in
                    // HTTP/2 keeps its own deadlines (the connection manager's idle one) and frames.
                    context.pipeline.syncOperations.removeHandler(watcher, promise: nil)
                    try Self.configureHTTP2(context.channel, answerer: answerer, idle: limits.idle, maxHeaderSize: maxHeaderSize)
                })
            try sync.addHandler(sniffer)
            return Connection(channel: channel)
        }
    }

    /// The most streams one HTTP/2 connection may have open at once (its `SETTINGS_MAX_CONCURRENT_STREAMS`).
    static let maxConcurrentStreams = 100

    /// An HTTP/2 connection: NIO's HTTP/2 handler, each stream a child
    /// channel answered by a `HTTP2StreamDoor`, and NIO's connection manager, which
    /// closes the connection after `idle` seconds without a stream and sends
    /// `GOAWAY` on a graceful shutdown.
    static func configureHTTP2(_ channel: any Channel, answerer: Answerer, idle: Double, maxHeaderSize: Int) throws {
        let manager = NIOHTTP2ServerConnectionManagementHandler(
            eventLoop: channel.eventLoop,
            configuration: .init(maxIdleTime: .nanoseconds(Int64(idle * 1e9)), maxAge: nil, maxGraceTime: nil, keepalive: nil))
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: maxHeaderSize),
        ]
        let sync = channel.pipeline.syncOperations
        let watcher = GoAwayWatcher()
        try sync.addHandler(watcher)
        _ = try sync.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: connection, streamConfiguration: .init(),
            streamDelegate: manager.http2StreamDelegate, position: .last
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(HTTP2StreamDoor(answerer: answerer, idle: idle))
            }
        }
        try sync.addHandler(manager)
        try sync.addHandler(ClosingOnError(watcher: watcher))
    }

    /// NIO's HTTP/2 handler sends `GOAWAY` for a connection error (a
    /// malformed frame, a header block past the limit) and leaves the
    /// connection open: after an error, once a `GOAWAY` went out, it is
    /// closed here, so its streams end at once. (A stream's error, which
    /// NIO reports the same way, resets that stream alone and is let be;
    /// so is a frame that reaches a stream already closed.)
    final class ClosingOnError: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        let watcher: GoAwayWatcher

        init(watcher: GoAwayWatcher) { self.watcher = watcher }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // A frame on a stream both sides closed (a client's RST_STREAM crossing the call's trailers,
            // which NIO calls a connection error): the GOAWAY stands, the calls in flight finish.
            if error is NIOHTTP2Errors.NoSuchStream { return }
            if watcher.sent { context.close(promise: nil) }
        }
    }

    /// Sees the connection's bytes as NIO's HTTP/2 handler writes them, one
    /// frame a write, and notes a `GOAWAY` (frame type 7).
    final class GoAwayWatcher: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        var sent = false

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            let bytes = unwrapOutboundIn(data)
            if bytes.readableBytes >= 9, bytes.getInteger(at: bytes.readerIndex + 3, as: UInt8.self) == 7 { sent = true }
            context.write(data, promise: promise)
        }
    }

    /// Waits for the connection to close; the pipeline does the work. A
    /// cancelled server (past `--shutdown-grace`) closes it.
    func handle(value: Connection, logger: Logger) async {
        await withTaskCancellationHandler {
            try? await value.channel.closeFuture.get()
        } onCancel: {
            value.channel.close(promise: nil)
        }
    }
}
