import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Doppel's HTTP/1 child channel: NIO's request decoder between the
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
            try sync.addHandler(ConnectionGuard.ByteWatcher(state: state))
            try sync.addHandler(
                ByteToMessageHandler(
                    HTTPRequestDecoder(
                        leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .drop,
                        limitConfiguration: decoderLimits)))
            try sync.addHandler(ConnectionGuard.RequestWatcher(state: state))
            try sync.addHandler(HTTPDoor(answerer: answerer, connection: state))
            return Connection(channel: channel)
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
