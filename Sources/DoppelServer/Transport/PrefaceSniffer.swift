import DoppelCore
import NIOCore
import NIOHTTP2

/// Tells HTTP/2 from HTTP/1 on one port by the connection's first bytes:
/// HTTP/2's connection preface (`PRI * HTTP/2.0…`, sent first by a client
/// that knows the server speaks it, as gRPC's clients do over plain TCP and
/// after TLS's ALPN chose `h2`) or anything else, which is HTTP/1's.
///
/// It sits after the guard's `ByteWatcher` and decides at the first byte
/// that leaves the preface (an HTTP/1 request's first), or at its 24th;
/// it then puts that protocol's handlers after itself, hands them the bytes
/// it held, and leaves the pipeline.
final class PrefaceSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    let http1: (ChannelPipeline.SynchronousOperations, any ChannelHandler) throws -> Void
    let http2: (ChannelHandlerContext) throws -> Void
    var held: ByteBuffer?

    init(
        http1: @escaping (ChannelPipeline.SynchronousOperations, any ChannelHandler) throws -> Void,
        http2: @escaping (ChannelHandlerContext) throws -> Void
    ) {
        self.http1 = http1
        self.http2 = http2
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if held == nil { held = bytes } else { held!.writeBuffer(&bytes) }
        let seen = held!.readableBytesView
        let compared = min(seen.count, Self.preface.count)
        let isPreface = seen.prefix(compared).elementsEqual(Self.preface.prefix(compared))
        // Still a prefix of the preface, and not all of it: wait for more.
        if isPreface, compared < Self.preface.count { return }
        do {
            if isPreface { try http2(context) } else { try http1(context.pipeline.syncOperations, self) }
        } catch {
            context.close(promise: nil)
            return
        }
        let all = held!
        held = nil
        context.fireChannelRead(wrapInboundOut(all))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Held bytes wait for more; what was handed on is completed by the handlers that have it.
        if held == nil { context.fireChannelReadComplete() }
    }

    func channelInactive(context: ChannelHandlerContext) {
        held = nil
        context.fireChannelInactive()
    }
}
