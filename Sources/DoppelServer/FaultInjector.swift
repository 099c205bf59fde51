import DoppelCore
import Hummingbird
import NIOCore
import ServiceLifecycle

/// Produces a response's delay, stream and deliberate faults on the wire.
///
/// Delays and stream pauses are `Task.sleep`s, so a slow response never holds
/// up other requests. Every wait ends early at graceful shutdown (SIGTERM, or
/// stopping a test server), so a response delayed by an hour cannot keep the
/// process alive: the response is sent at once and the server stops.
struct FaultInjector: Sendable {
    /// The longest a `no_answer` fault keeps a connection waiting.
    let hangLimit: Double

    /// Waits out the response's delay.
    func delay(_ response: MockResponse) async {
        guard response.delay > 0 else { return }
        await Self.pause(seconds: response.delay)
    }

    /// Sleeps for `seconds`, or until graceful shutdown or cancellation.
    static func pause(seconds: Double) async {
        _ = try? await cancelWhenGracefulShutdown {
            try await Task.sleep(for: .seconds(min(seconds, 1e9)))
        }
    }

    /// Applies a connection-level fault; returns the response to write, if any is still to be written.
    func apply(_ fault: Fault, to response: Response, body: [UInt8], channel: any Channel) async -> Response {
        switch fault {
        case .connectionReset:
            // Linger 0 makes close() send RST instead of FIN.
            if let provider = channel as? SocketOptionProvider {
                try? await provider.setSoLinger(NIOLinger(l_onoff: 1, l_linger: 0)).get()
            }
            try? await channel.close()
        case .emptyReply:
            try? await channel.close()
        case .noAnswer:
            let deadline = ContinuousClock.now + .seconds(hangLimit)
            while channel.isActive, ContinuousClock.now < deadline, !Task.isCancelled, !Task.isShuttingDownGracefully {
                try? await Task.sleep(for: .milliseconds(50))
            }
            try? await channel.close()
        case .truncatedBody:
            // Promise the whole body, send half, then drop the connection.
            var head = response
            head.headers[.contentLength] = String(body.count)
            let half = Array(body.prefix(body.count / 2))
            head.body = ResponseBody(contentLength: body.count) { writer in
                try await writer.write(ByteBuffer(bytes: half))
                try await channel.close()
                throw ChannelError.ioOnClosedChannel
            }
            return head
        case .malformedJSON:
            break
        }
        return response
    }

    /// A body written part by part, each after its delay.
    static func streamed(_ parts: [StreamPart]) -> ResponseBody {
        ResponseBody { writer in
            for part in parts {
                if part.delay > 0 { await pause(seconds: part.delay) }
                try await writer.write(ByteBuffer(bytes: part.bytes))
            }
            try await writer.finish(nil)
        }
    }
}
