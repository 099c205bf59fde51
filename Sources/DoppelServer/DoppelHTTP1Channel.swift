import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1 child channel with Doppel's connection guard added
/// (`ConnectionGuard`): the same pipeline as `HTTP1Channel`, plus handlers at
/// the raw-byte end and right after the HTTP decoder, which `HTTP1Channel`'s
/// `additionalChannelHandlers` (placed after the HTTP types codec) cannot reach.
struct DoppelHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    /// Deadlines (the idle one among them) and the body limit.
    let limits: ConnectionGuard.Limits
    /// Largest header block of a request, in bytes.
    let maxHeaderSize: Int
    /// The responder `DirectResponder` answers plain engine requests with on the event loop.
    let direct: DoppelResponder?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            var decoderLimits = NIOHTTPDecoderLimitConfiguration()
            decoderLimits.maxHeaderFieldSize = maxHeaderSize
            decoderLimits.maxHeaderListSize = maxHeaderSize
            decoderLimits.maxHeaderFieldCount = 256
            let state = ConnectionGuard.State(limits: limits)
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(ConnectionGuard.ByteWatcher(state: state))
            // NIO's HTTP/1 codec as `configureHTTPServerPipeline` adds it, but
            // with the decoder not feeding request methods to the encoder:
            // answers `DirectResponder` writes itself never pass the encoder,
            // so that queue would drift (an answer after a direct HEAD lost
            // its body) and grow by one method a direct answer.
            // `DirectResponder` writes answers to a passed-on HEAD without a body itself.
            try sync.addHandler(HTTPResponseEncoder(configuration: .init()))
            try sync.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .drop,
                                                                        limitConfiguration: decoderLimits)))
            try sync.addHandler(ConnectionGuard.RequestWatcher(state: state))
            if let direct { try sync.addHandler(DirectResponder(responder: direct, connection: state)) }
            try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            // The idle deadline is the connection guard's (see `ConnectionGuard`); this handler closes on graceful shutdown.
            try sync.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}
