import Crypto
import DoppelCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// The rules of RFC 6455 section 5 that NIO's frame decoder leaves to its
/// user, checked on each frame as it arrives (before fragments are joined,
/// which drops the mask): a client masks every frame (5.1), sets no RSV bit
/// without an extension that defines it, none being negotiated (5.2), uses
/// no reserved opcode (5.2), and sends control frames whole and of at most
/// 125 bytes (5.5).
final class ClientFrameRules: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame

    /// A rule the client broke, in words.
    struct Broken: Error {
        let rule: String
    }

    private var broken = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !broken else { return }
        let frame = unwrapInboundIn(data)
        let rule: String?
        if frame.maskKey == nil {
            rule = "a frame from a client must be masked (RFC 6455 section 5.1)"
        } else if frame.rsv1 || frame.rsv2 || frame.rsv3 {
            rule = "a frame has an RSV bit set, and no extension was negotiated (section 5.2)"
        } else if ![.continuation, .text, .binary, .connectionClose, .ping, .pong].contains(frame.opcode) {
            rule = "opcode \(frame.opcode) is reserved (section 5.2)"
        } else if frame.opcode.isControlOpcode && (!frame.fin || frame.length > 125) {
            rule = "a control frame must be whole and at most 125 bytes (section 5.5)"
        } else {
            rule = nil
        }
        if let rule {
            broken = true
            context.fireErrorCaught(Broken(rule: rule))
            return
        }
        context.fireChannelRead(data)
    }
}
