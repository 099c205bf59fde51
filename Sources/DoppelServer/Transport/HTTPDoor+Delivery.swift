import DoppelCore
import Foundation
import NIOCore
import NIOHTTP1

/// The door's delivery of a decision: whole, after its delay, as a stream
/// of parts, as a deliberate fault, or the upstream's answer; and the one
/// place an answer's last bytes are written (`writeLast`), after which the
/// connection reads again or closes.
extension HTTPDoor {
    // MARK: Delivering

    /// A decided answer: delivered after its delay, or now.
    func proceed(_ exchange: Exchange, context: ChannelHandlerContext) {
        let decision = exchange.decision
        if decision.delay > 0 {
            wait(decision.delay, context: context) { [self] in deliver(exchange, context: context) }
        } else {
            // Most answers: no closure to allocate.
            deliver(exchange, context: context)
        }
    }

    /// One request and its decision, on their way out.
    struct Exchange {
        let request: RecordedRequest
        var decision: Decision
        let engine: MockEngine
        let head: HTTPRequestHead
        let started: ContinuousClock.Instant
        var isHead: Bool { head.method == .HEAD }
    }

    func deliver(_ exchange: Exchange, context: ChannelHandlerContext) {
        switch exchange.decision.delivery {
        case .whole(let response):
            if let opening = exchange.decision.effects?.socket {
                upgrade(exchange, answered: response, opening: opening, context: context)
                return
            }
            finish(exchange, status: response.status)
            writeLast(
                ResponseBytes.encode(response, date: currentDate(), close: closing, omitBody: exchange.isHead, allocator: context.channel.allocator),
                context: context)
        case .stream(let response, let parts):
            // HTTP/1.0 has no chunked coding: the body ends where the connection does.
            let chunked = (exchange.head.version.major, exchange.head.version.minor) >= (1, 1)
            if exchange.isHead {
                // The GET's head (its framing says chunked, no length), and no body: nothing to wait for.
                finish(exchange, status: response.status)
                writeLast(
                    ResponseBytes.encode(
                        response, date: currentDate(), close: closing, framing: chunked ? .chunked : .untilClose,
                        allocator: context.channel.allocator), context: context)
                return
            }
            beginAnswering()
            if !chunked { closeAfterAnswer = true }
            write(
                ResponseBytes.encode(
                    response, date: currentDate(), close: closing, framing: chunked ? .chunked : .untilClose,
                    allocator: context.channel.allocator), context: context)
            stream(parts[...], chunked: chunked, status: response.status, exchange, context: context)
        case .fault(let response, let fault):
            beginAnswering()
            breakConnection(with: fault, of: response, exchange, context: context)
        case .forward:
            beginAnswering()
            let answerer = self.answerer
            let request = exchange.request
            let upstream = context.eventLoop.makeFutureWithTask { await answerer.forward(request) }
            upstream.assumeIsolated().whenComplete { [self] result in
                guard case .success(var answer) = result else { return }
                answer.endpointID = exchange.decision.entry?.endpointID
                finish(exchange, status: answer.status)
                writeLast(
                    ResponseBytes.encode(
                        answer, date: currentDate(), close: closing, omitBody: exchange.isHead,
                        allocator: context.channel.allocator), context: context)
            }
        }
    }

    /// A stream's parts, each after its pause; the answer is finished before its last bytes.
    func stream(_ parts: ArraySlice<StreamPart>, chunked: Bool, status: Int, _ exchange: Exchange, context: ChannelHandlerContext) {
        guard let part = parts.first else {
            finish(exchange, status: status)
            var end = context.channel.allocator.buffer(capacity: 5)
            if chunked { end.writeStaticString("0\r\n\r\n") }
            writeLast(end, context: context)
            return
        }
        wait(part.delay, context: context) { [self] in
            if !part.bytes.isEmpty {
                var buffer = context.channel.allocator.buffer(capacity: part.bytes.count + 16)
                if chunked { buffer.writeString(String(part.bytes.count, radix: 16) + "\r\n") }
                buffer.writeBytes(part.bytes)
                if chunked { buffer.writeStaticString("\r\n") }
                write(buffer, context: context)
            }
            stream(parts.dropFirst(), chunked: chunked, status: status, exchange, context: context)
        }
    }

    /// A deliberate failure: the answer is finished (journaled) as the connection breaks.
    func breakConnection(with fault: Fault, of response: MockResponse, _ exchange: Exchange, context: ChannelHandlerContext) {
        let channel = context.channel
        switch fault {
        case .connectionReset:
            finish(exchange, status: response.status)
            // Linger 0 makes close() send RST instead of FIN.
            if let socket = channel as? SocketOptionProvider {
                socket.setSoLinger(NIOLinger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
        case .emptyReply:
            finish(exchange, status: response.status)
            channel.close(promise: nil)
        case .noAnswer:
            // Held open, silent, until the hang limit, a graceful shutdown, or the client leaves.
            wait(answerer.hangLimit, context: context) { [self] in
                finish(exchange, status: response.status)
                channel.close(promise: nil)
            }
        case .truncatedBody:
            // Promise the whole body, send half, then drop the connection.
            finish(exchange, status: response.status)
            var bytes = ResponseBytes.encode(response, date: currentDate(), close: false, omitBody: true, allocator: channel.allocator)
            if !exchange.isHead { bytes.writeBytes(response.body.prefix(response.body.count / 2)) }
            connection.rawContext?.writeAndFlush(NIOAny(bytes)).whenComplete { _ in channel.close(promise: nil) }
        case .malformedJSON:
            // Rendered into the body already: the rest is an ordinary answer.
            finish(exchange, status: response.status)
            writeLast(
                ResponseBytes.encode(response, date: currentDate(), close: closing, omitBody: exchange.isHead, allocator: channel.allocator),
                context: context)
        }
    }

    /// Runs `then` after `seconds`, or at once when there is no wait (or the
    /// connection is closing or gone); the wait ends early on `hurry()`.
    func wait(_ seconds: Double, context: ChannelHandlerContext, then: @escaping () -> Void) {
        guard seconds > 0, !quiescing, !isOver else { return then() }
        beginAnswering()
        let task = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(min(seconds, 1e9) * 1e9))) { [self] in
            waiting = nil
            then()
        }
        waiting = (task, then)
    }

    /// Ends the wait in progress now (graceful shutdown, the client gone);
    /// later waits of the same answer are skipped.
    func hurry() {
        guard let (task, then) = waiting else { return }
        waiting = nil
        task.cancel()
        then()
    }

    /// Whether the answer being written is the connection's last.
    var closing: Bool { closeAfterAnswer || quiescing || (inputClosed && held.isEmpty) }

    func finish(_ exchange: Exchange, status: Int) {
        answerer.finish(exchange.decision, of: exchange.request, sent: status, engine: exchange.engine, started: exchange.started)
    }

    func write(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        connection.rawContext?.writeAndFlush(NIOAny(bytes), promise: nil)
    }

    /// An answer's last bytes: the connection is idle again (or closed), and held requests go on.
    func writeLast(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        endAnswering()
        guard let raw = connection.rawContext, !isOver else { return }
        connection.responseWritten(on: context.eventLoop)
        if closing {
            let channel = context.channel
            phase = .closed
            raw.writeAndFlush(NIOAny(bytes)).whenComplete { _ in channel.close(promise: nil) }
            return
        }
        raw.writeAndFlush(NIOAny(bytes), promise: nil)
        drain(context: context)
    }
}
