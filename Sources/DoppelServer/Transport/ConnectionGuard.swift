import DoppelCore
import NIOCore
import NIOHTTP1

/// Deadlines and HTTP/1 manners for one connection, which Hummingbird's own
/// HTTP/1 channel does not have: a header deadline, a body deadline, closing
/// and the
/// idle deadline (with no request in progress, after an answer `HTTPDoor`
/// wrote).
///
/// Two handlers share one `ConnectionGuard.State`, both on the connection's
/// event loop: `ByteWatcher` sits first in the pipeline and sees raw bytes (so
/// it knows when a request has *started* arriving, and can write raw refusals),
/// `RequestWatcher` sits after the HTTP decoder and sees whole heads and
/// bodies. Slow or silent clients are answered 408 and closed, so neither
/// half-sent headers nor held-open bodies can pin memory or file descriptors.
enum ConnectionGuard {
    /// The slowest a request body may arrive on the whole, in bytes a second,
    /// past its first `body` seconds: a body dripped a byte at a time, each
    /// within the pause deadline, would otherwise hold its connection (and a
    /// `--max-connections` slot) for as long as it likes. The same rule as
    /// Apache's `mod_reqtimeout` (`body=…,MinRate=500`).
    static let minimumBodyRate = 500.0

    /// The time limits, in seconds.
    struct Limits: Sendable {
        /// From the first byte of a request to the end of its headers.
        var header: Double
        /// Between two parts of a request body (and from the headers to the first part).
        /// The whole body has this long too, plus a second per `minimumBodyRate` bytes it brings.
        var body: Double
        /// How long a connection may sit with no request in progress.
        var idle: Double
    }

    final class State {
        let limits: Limits
        /// The raw-byte end of the pipeline. Every byte of every answer is
        /// written here, through the writing methods below and nowhere
        /// else, so the guard's books (the idle wait after an answer, the
        /// deadlines stopped at a hand-over) cannot be forgotten.
        fileprivate(set) var raw: ChannelHandlerContext?
        /// True between a request's end and the first byte of the next.
        var awaitingRequest = true
        /// When the current wait runs out; nil when nothing is awaited.
        var deadline: NIODeadline?
        /// Whether the current wait is the idle one, which ends in a quiet close rather than a 408.
        var waitingIdle = false
        /// Requests whose head was read and whose response is not written yet.
        var requestsInProgress = 0
        /// The one timer of the connection. Moving the deadline later does
        /// not reschedule it (that would cost an allocation per request
        /// part): when it fires early it sleeps again until the deadline.
        /// Moving it earlier (the idle wait ending in a request's first
        /// byte, whose header deadline is shorter) does.
        var timer: Scheduled<Void>?
        /// When `timer` fires.
        var timerAt: NIODeadline?
        /// When the current request's head was read, and the body bytes read since.
        var bodyStarted: NIODeadline?
        var bodyBytes = 0

        init(limits: Limits) { self.limits = limits }

        func arm(seconds: Double, on loop: any EventLoop, idle: Bool = false) {
            let at = NIODeadline.now() + .nanoseconds(Int64(seconds * 1e9))
            deadline = at
            waitingIdle = idle
            if let timerAt, timerAt > at {
                timer?.cancel()
                timer = nil
            }
            if timer == nil { schedule(at: at, on: loop) }
        }

        func disarm() {
            deadline = nil
        }

        /// Starts the idle wait: no request in progress.
        func armIdle(on loop: any EventLoop) {
            arm(seconds: limits.idle, on: loop, idle: true)
        }

        /// A response was written to its end: with nothing else in progress
        /// and no next request begun, the idle wait starts.
        func responseWritten(on loop: any EventLoop) {
            requestsInProgress = max(0, requestsInProgress - 1)
            if requestsInProgress == 0, awaitingRequest { armIdle(on: loop) }
        }

        func stop() {
            deadline = nil
            timer?.cancel()
            timer = nil
        }

        // MARK: Writing

        /// Whether the raw end is still there to write to.
        var canWrite: Bool { raw != nil }

        /// Bytes of an answer that is not over yet (a head, a part, an event).
        func write(_ bytes: ByteBuffer, flush: Bool = true) {
            if flush { raw?.writeAndFlush(NIOAny(bytes), promise: nil) } else { raw?.write(NIOAny(bytes), promise: nil) }
        }

        /// Sends what `write(_:flush: false)` wrote.
        func flush() {
            raw?.flush()
        }

        /// An answer's last bytes: with nothing else in progress and no next
        /// request begun, the idle wait starts; or, `thenClose`, the
        /// connection closes once they are out.
        func writeLast(_ bytes: ByteBuffer, thenClose: Bool) {
            guard let raw else { return }
            responseWritten(on: raw.eventLoop)
            guard thenClose else {
                raw.writeAndFlush(NIOAny(bytes), promise: nil)
                return
            }
            let channel = raw.channel
            raw.writeAndFlush(NIOAny(bytes)).whenComplete { _ in channel.close(promise: nil) }
        }

        /// Bytes that end the connection (a refusal, a body cut short on
        /// purpose), then the close. False when the raw end is gone, and
        /// nothing was written or closed.
        @discardableResult
        func writeThenClose(_ bytes: ByteBuffer) -> Bool {
            guard let raw else { return false }
            let channel = raw.channel
            raw.writeAndFlush(NIOAny(bytes)).whenComplete { _ in channel.close(promise: nil) }
            return true
        }

        /// The last bytes of HTTP before the connection is handed to another
        /// protocol (a WebSocket's 101): HTTP's deadlines stop with them.
        func handOver(_ bytes: ByteBuffer) {
            raw?.writeAndFlush(NIOAny(bytes), promise: nil)
            stop()
        }

        private func schedule(at instant: NIODeadline, on loop: any EventLoop) {
            timerAt = instant
            timer = loop.assumeIsolated().scheduleTask(deadline: instant) { [self] in self.fire(on: loop) }
        }

        private func fire(on loop: any EventLoop) {
            timer = nil
            guard let deadline else { return }
            if deadline > .now() {
                schedule(at: deadline, on: loop)
            } else {
                expire()
            }
        }

        /// Answers 408 on the raw connection and closes it; an idle
        /// connection is closed without a word.
        func expire() {
            deadline = nil
            guard let context = raw, context.channel.isActive else { return }
            if waitingIdle {
                context.close(promise: nil)
                return
            }
            // Written at the raw end (a request may be half-read), as `HTTPDoor` writes its answers.
            let buffer = ResponseBytes.encode(
                Problem.requestTimeout().response(), date: HTTPDate.now(), close: true, allocator: context.channel.allocator)
            context.writeAndFlush(NIOAny(buffer), promise: nil)
            context.close(promise: nil)
        }
    }

    /// First in the pipeline: starts the header deadline at a request's first byte.
    final class ByteWatcher: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let state: State

        init(state: State) { self.state = state }

        func handlerAdded(context: ChannelHandlerContext) {
            state.raw = context
            if context.channel.isActive { state.armIdle(on: context.eventLoop) }
        }

        func channelActive(context: ChannelHandlerContext) {
            state.armIdle(on: context.eventLoop)
            context.fireChannelActive()
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            state.stop()
            state.raw = nil
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if state.awaitingRequest {
                state.awaitingRequest = false
                state.arm(seconds: state.limits.header, on: context.eventLoop)
            }
            context.fireChannelRead(data)
        }

        func channelInactive(context: ChannelHandlerContext) {
            state.stop()
            context.fireChannelInactive()
        }
    }

    /// After the HTTP decoder: ends the header deadline, runs the body deadline, handles keep-alive.
    final class RequestWatcher: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias InboundOut = HTTPServerRequestPart

        let state: State

        init(state: State) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head:
                state.requestsInProgress += 1
                state.bodyStarted = .now()
                state.bodyBytes = 0
                state.arm(seconds: state.limits.body, on: context.eventLoop)
                context.fireChannelRead(data)
            case .body(let part):
                // The next pause may last `body` seconds, but the whole body
                // no longer than `body` seconds and a second per 500 bytes.
                state.bodyBytes += part.readableBytes
                var seconds = state.limits.body
                if let started = state.bodyStarted {
                    let elapsed = Double((NIODeadline.now() - started).nanoseconds) / 1e9
                    seconds = min(seconds, state.limits.body + Double(state.bodyBytes) / ConnectionGuard.minimumBodyRate - elapsed)
                }
                state.arm(seconds: max(seconds, 0), on: context.eventLoop)
                context.fireChannelRead(data)
            case .end:
                state.bodyStarted = nil
                state.disarm()
                state.awaitingRequest = true
                // Answered before its body ended (a 413): idle from here.
                if state.requestsInProgress == 0 { state.armIdle(on: context.eventLoop) }
                context.fireChannelRead(data)
            }
        }
    }
}
