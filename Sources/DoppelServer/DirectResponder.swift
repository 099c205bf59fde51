import DoppelCore
import Foundation
import HTTPTypes
import HummingbirdCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// Answers the common request on the connection's event loop.
///
/// Hummingbird hands each request to an async task and writes the answer
/// back through an async writer: two thread hops and several allocations
/// per request, more than the engine itself costs for most endpoints. This
/// handler sits between Hummingbird's connection-state handler and its
/// async channel. A request to the engine (not the admin API, with a body
/// within the limit) whose answer is plain (no delay, fault or stream) is
/// answered here, synchronously, in the same event-loop turn that read it.
///
/// Everything else is passed on to Hummingbird and `DoppelResponder` as
/// before: admin calls, oversized bodies (its 413), and answers with a
/// delay, fault or stream, whose already-computed response goes with the
/// request through `handoff` (the engine runs once per request). While a
/// passed-on request is unanswered, later requests on the connection are
/// passed on too, so answers keep their order.
final class DirectResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Responses computed here for requests passed on, in request order; nil
    /// where `DoppelResponder` is to compute the answer itself.
    let handoff = NIOLockedValueBox<[MockResponse?]>([])

    private let responder: DoppelResponder
    private enum Mode {
        case idle
        case collecting(HTTPRequest, URI, ByteBuffer?, ContinuousClock.Instant)
        case passing
    }
    private var mode = Mode.idle
    /// Requests passed on whose answer has not been written yet.
    private var passedOn = 0
    private var date = (second: 0, text: "")

    init(responder: DoppelResponder) {
        self.responder = responder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            let uri = URI(head.path ?? "")
            if passedOn == 0, isDirect(head, uri: uri) {
                mode = .collecting(head, uri, nil, .now)
            } else {
                mode = .passing
                passOn(head, computed: nil, context: context)
            }
        case .body(let chunk):
            switch mode {
            case .collecting(let head, let uri, var body, let started):
                if (body?.readableBytes ?? 0) + chunk.readableBytes > responder.maxBodySize {
                    // Too large: Hummingbird's responder answers it with its 413.
                    mode = .passing
                    passOn(head, computed: nil, context: context)
                    if let body { context.fireChannelRead(wrapInboundOut(.body(body))) }
                    context.fireChannelRead(data)
                } else {
                    if body == nil { body = chunk } else { body!.writeImmutableBuffer(chunk) }
                    mode = .collecting(head, uri, body, started)
                }
            case .passing, .idle:
                context.fireChannelRead(data)
            }
        case .end:
            switch mode {
            case .collecting(let head, let uri, let body, let started):
                mode = .idle
                answer(head, uri: uri, body: body, started: started, context: context)
            case .passing, .idle:
                mode = .idle
                context.fireChannelRead(data)
            }
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Only Hummingbird's answers come through here; ours are written past this handler.
        if case .end = unwrapOutboundIn(data) { passedOn -= 1 }
        context.write(data, promise: promise)
    }

    /// Whether a request may be answered here: to the engine, without
    /// `Expect`, with a declared body length (if any) within the limit.
    private func isDirect(_ head: HTTPRequest, uri: URI) -> Bool {
        guard head.path != nil, !AdminAPI.handles(uri.path), head.headerFields[.expect] == nil else { return false }
        if let length = head.headerFields[.contentLength] {
            guard let length = Int(length), length <= responder.maxBodySize else { return false }
        }
        return true
    }

    private func passOn(_ head: HTTPRequest, computed: MockResponse?, context: ChannelHandlerContext) {
        handoff.withLockedValue { $0.append(computed) }
        passedOn += 1
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    private func answer(_ head: HTTPRequest, uri: URI, body: ByteBuffer?, started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        let recorded = DoppelResponder.recorded(head, uri: uri, body: body.map { Array($0.readableBytesView) } ?? [],
                                                remoteAddress: context.channel.remoteAddress?.ipAddress)
        let response = responder.engine.respond(to: recorded)
        if response.delay > 0 || response.fault != nil || response.stream != nil || response.forward {
            // Hummingbird's responder waits, breaks, streams or forwards it.
            passOn(head, computed: response, context: context)
            if let body { context.fireChannelRead(wrapInboundOut(.body(body))) }
            context.fireChannelRead(wrapInboundOut(.end(nil)))
            context.fireChannelReadComplete()
            return
        }
        var fields = HTTPFields()
        fields.reserveCapacity(response.headers.count + 3)
        for header in response.headers {
            if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
        }
        fields[.contentLength] = String(response.body.count)
        fields[.date] = currentDate()
        fields[.server] = "Doppel"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .init(code: response.status), headerFields: fields))), promise: nil)
        if !response.body.isEmpty {
            context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(bytes: response.body))), promise: nil)
        }
        if head.headerFields[.connection]?.lowercased() == "close" {
            // As Hummingbird does: no more requests on this connection.
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
        } else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        responder.logAnswer(method: recorded.method, path: recorded.path, session: head.headerFields[DoppelResponder.sessionField],
                            response: response, started: started)
    }

    /// The `Date` header (RFC 9110's IMF-fixdate), formatted once a second per connection.
    private func currentDate() -> String {
        let second = Int(Date().timeIntervalSince1970)
        if second != date.second { date = (second, HTTPDate.format(epochSecond: second)) }
        return date.text
    }
}

/// `Date` header values.
enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The current time as a header value.
    static func now() -> String { format(epochSecond: Int(Date().timeIntervalSince1970)) }

    /// `Mon, 23 Nov 2026 03:56:35 GMT` for seconds since 1970.
    static func format(epochSecond: Int) -> String {
        let c = UTCCalendar.components(epoch: Double(epochSecond))
        let weekday = days[((epochSecond / 86400) % 7 + 7) % 7]
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(weekday), \(two(c.day)) \(months[c.month - 1]) \(c.year) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) GMT"
    }
}
