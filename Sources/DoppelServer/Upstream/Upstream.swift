import DoppelCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The server behind Doppel (`doppel serve --proxy URL`): requests the
/// contract does not answer are sent to it with their method, path, query,
/// headers and body, and its answer is passed back as it came. Failures
/// become a 502 or 504 problem naming the upstream, within the timeout.
///
/// A small HTTP/1.1 client of Doppel's own on SwiftNIO's codec, rather than
/// AsyncHTTPClient: AsyncHTTPClient 1.37 traps (a `fatalError` in its
/// request state machine) when a response's status is below 100 and a body
/// follows, so any upstream could end the process; and its timeouts bound
/// the wait for the head, not a body that arrives a byte at a time. Here one
/// deadline covers the whole exchange, a status outside 200–599 is a 502,
/// and the body is refused past `maxBodySize` as it arrives.
package final class Upstream: Sendable {
    /// `http://host:port/base`, without a trailing slash: made from the
    /// upstream URL's scheme, host, port and path alone, so that nothing a
    /// request sends is read as part of the upstream's authority.
    let base: String
    let timeout: Double
    private let host: String
    private let port: Int
    /// The upstream URL's path, percent-encoded, without a trailing slash.
    private let basePath: String
    /// The `Host` header sent: the upstream's, not the client's.
    private let hostHeader: String
    /// TLS for an https upstream (the system's trust roots), or why it could not be set up.
    private let tls: Result<NIOSSLContext, any Error>?
    /// Connections the upstream kept open after an answer, for the next request.
    private let idle = NIOLockedValueBox<[any Channel]>([])

    /// The largest upstream body passed back; a larger one is a 502.
    package static let maxBodySize = 16 << 20
    /// The most bytes of upstream bodies held at once, over all exchanges in
    /// flight: 200 concurrent 16 MiB answers would otherwise hold 3 GiB. An
    /// answer that would go past it is a 502.
    package static let maxBodyBytesInFlight = 256 << 20
    /// Bytes of upstream bodies being received now (see `maxBodyBytesInFlight`).
    let inFlight: BodyBudget
    /// Idle upstream connections kept open for reuse.
    static let maxIdleConnections = 8
    /// Per-connection headers, never forwarded either way (RFC 9110 section 7.6.1).
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade", "host", "content-length",
    ]

    /// The largest body of one answer this client reads.
    let maxBodySize: Int

    /// A client of the server at `url`; its answers' bodies are held in
    /// `budget` (one of its own when nil, of `maxBodyBytesInFlight` bytes).
    package init(
        base url: URL, timeout: Double, maxBodyBytesInFlight: Int = Upstream.maxBodyBytesInFlight,
        maxBodySize: Int = Upstream.maxBodySize, budget: BodyBudget? = nil
    ) {
        inFlight = budget ?? BodyBudget(limit: maxBodyBytesInFlight)
        self.maxBodySize = maxBodySize
        let secure = url.scheme?.lowercased() == "https"
        host = url.host ?? "127.0.0.1"
        port = url.port ?? (secure ? 443 : 80)
        var path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? url.path
        while path.hasSuffix("/") { path.removeLast() }
        basePath = path
        let bracketed = host.contains(":") ? "[\(host)]" : host
        hostHeader = url.port.map { "\(bracketed):\($0)" } ?? bracketed
        base = "\(secure ? "https" : "http")://\(hostHeader)\(path)"
        self.timeout = timeout
        tls = secure ? Result { try NIOSSLContext(configuration: .makeClientConfiguration()) } : nil
    }

    /// The upstream's answer to a request, or Doppel's 502/504 problem (`answered` false).
    func forward(_ request: RecordedRequest) async -> (response: MockResponse, answered: Bool) {
        // The transport refuses other targets (`Problem.invalidTarget`); a path
        // that does not start with '/' would run into the upstream's authority.
        guard request.path.utf8.first == UInt8(ascii: "/") else {
            return (Problem.invalidTarget(method: request.method, target: request.path).response(), false)
        }
        do {
            let answer = try await exchange(head(for: request), body: request.body, deadline: NIODeadline.now() + .nanoseconds(Int64(timeout * 1e9)))
            defer { inFlight.release(answer.reserved) }
            var response = MockResponse(status: Int(answer.head.status.code), body: answer.body.map { Array($0.readableBytesView) } ?? [])
            response.headers = answer.head.headers.filter { !Self.hopByHop.contains($0.name.lowercased()) }.map { (name: $0.name, value: $0.value) }
            return (response, true)
        } catch .timedOut {
            return (Problem.gatewayTimeout(upstream: base, seconds: timeout).response(), false)
        } catch {
            return (Problem.badGateway(upstream: base, reason: error.reason).response(), false)
        }
    }

    /// One request as a client sends it, and the answer as it came, every
    /// header included: what `doppel run --target` and `doppel verify` use,
    /// so a provider's answer is read within the same bounds as a proxied
    /// one (one deadline for the whole exchange, its body by size, a status
    /// outside 200–599 refused). Throws why there is no answer.
    package func send(_ request: RecordedRequest) async throws(Failure) -> (status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        guard request.path.utf8.first == UInt8(ascii: "/") else { throw .failed("'\(request.path)' is not a path") }
        let answer = try await exchange(head(for: request), body: request.body, deadline: NIODeadline.now() + .nanoseconds(Int64(timeout * 1e9)))
        defer { inFlight.release(answer.reserved) }
        return (
            Int(answer.head.status.code), answer.head.headers.map { (name: $0.name, value: $0.value) },
            answer.body.map { Array($0.readableBytesView) } ?? []
        )
    }

    /// The head sent for `request`: its method, the upstream's base path
    /// before its path, the upstream's `Host`, and its headers but those of
    /// one connection.
    private func head(for request: RecordedRequest) -> HTTPRequestHead {
        var head = HTTPRequestHead(
            version: .http1_1, method: HTTPMethod(rawValue: request.method),
            uri: basePath + request.path + (request.query.map { "?" + $0 } ?? ""))
        head.headers.add(name: "Host", value: hostHeader)
        // Hop-by-hop headers, and those the client's `Connection` names as its own (RFC 9110 section 7.6.1), stay here.
        let named = Set(
            request.headers.filter { $0.name.lowercased() == "connection" }
                .flatMap { $0.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() } })
        for header in request.headers where !Self.hopByHop.contains(header.name.lowercased()) && !named.contains(header.name.lowercased()) {
            head.headers.add(name: header.name, value: header.value)
        }
        if !request.body.isEmpty || !["GET", "HEAD", "DELETE", "OPTIONS"].contains(request.method) {
            head.headers.add(name: "Content-Length", value: String(request.body.count))
        }
        return head
    }

    /// One request and its answer: on a kept connection if one is open (once
    /// more on a new one if that connection turns out closed before any byte
    /// of an answer), else on a new one.
    private func exchange(_ head: HTTPRequestHead, body: [UInt8], deadline: NIODeadline) async throws(Failure) -> Exchange.Answer {
        if let kept = idle.withLockedValue({ $0.popLast() }) {
            do {
                return try await run(head, body: body, on: kept, deadline: deadline)
            } catch .closedBeforeAnswer {
                // The upstream closed the kept connection meanwhile.
            }
        }
        let channel: any Channel
        do {
            channel = try await connect(deadline: deadline)
        } catch {
            // A refusal is said as one even when this task resumes past the
            // deadline (a busy machine): only the connect's own timeout is a timeout.
            if case ChannelError.connectTimeout = error { throw .timedOut }
            if let error = error as? NIOConnectionError,
                error.connectionErrors.contains(where: {
                    if case ChannelError.connectTimeout = $0.error { return true } else { return false }
                })
            {
                throw .timedOut
            }
            throw .couldNotConnect(Self.describe(error))
        }
        return try await run(head, body: body, on: channel, deadline: deadline)
    }

    private func connect(deadline: NIODeadline) async throws -> any Channel {
        let tlsContext = try tls?.get()
        let serverName = host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(max(.milliseconds(1), deadline - .now()))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tlsContext { try pipeline.addHandler(NIOSSLClientHandler(context: tlsContext, serverHostname: serverName)) }
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(Exchange(limit: self.maxBodySize, budget: self.inFlight))
                }
            }
        // An address is connected to as it is: a name's lookup (getaddrinfo,
        // on a shared pool of threads) can wait behind other work for seconds.
        if let address = try? SocketAddress(ipAddress: host, port: port) {
            return try await bootstrap.connect(to: address).get()
        }
        return try await bootstrap.connect(host: host, port: port).get()
    }

    /// Sends the request on `channel` and waits for the answer, at most until
    /// `deadline`; a connection the upstream keeps open goes back to `idle`.
    private func run(_ head: HTTPRequestHead, body: [UInt8], on channel: any Channel, deadline: NIODeadline) async throws(Failure) -> Exchange.Answer
    {
        let answer = channel.eventLoop.makePromise(of: Exchange.Answer.self)
        channel.eventLoop.execute {
            guard channel.isActive, let exchange = try? channel.pipeline.syncOperations.handler(type: Exchange.self) else {
                answer.fail(Failure.closedBeforeAnswer)
                return
            }
            exchange.start(answer, deadline: deadline, context: channel)
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            if !body.isEmpty { channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil) }
            let bound = NIOLoopBound(exchange, eventLoop: channel.eventLoop)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil)).whenFailure { _ in
                // The connection was gone before the request left (a kept one the upstream had closed).
                bound.value.finish(.failure(Failure.closedBeforeAnswer))
                channel.close(promise: nil)
            }
        }
        do {
            let result = try await answer.futureResult.get()
            if result.keepAlive, channel.isActive {
                let kept = idle.withLockedValue { idle in
                    guard idle.count < Self.maxIdleConnections else { return false }
                    idle.append(channel)
                    return true
                }
                if !kept { channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
            return result
        } catch {
            channel.close(promise: nil)
            throw error as? Failure ?? .failed(Self.describe(error))
        }
    }

    static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("connectionRefused") || text.contains("Connection refused") { return "the connection was refused" }
        return text
    }

    package func shutdown() async {
        for channel in idle.withLockedValue({ channels in
            defer { channels.removeAll() }
            return channels
        }) {
            try? await channel.close()
        }
    }

    /// Why an exchange with the upstream failed.
    package enum Failure: Error {
        case timedOut
        /// No connection could be made (refused, unreachable, no such host).
        case couldNotConnect(String)
        /// The connection closed (or was found closed) before any byte of an answer.
        case closedBeforeAnswer
        case badStatus(Int)
        case tooLarge(limit: Int)
        case overBudget(limit: Int)
        case failed(String)

        /// The reason a 502 gives.
        package var reason: String {
            switch self {
            case .couldNotConnect(let reason): reason
            case .timedOut: "it did not answer in time"
            case .closedBeforeAnswer: "it closed the connection without an answer"
            case .badStatus(let status): "its status \(status) is not one Doppel passes back (200–599)"
            case .tooLarge(let limit): "its response body is larger than \(limit) bytes"
            case .overBudget(let limit):
                "its response body does not fit in the memory for upstream answers in flight (\(limit >> 20) MiB), which other answers hold now"
            case .failed(let reason): reason
            }
        }
    }
}

/// The upstream connection's end of one exchange at a time: gathers the
/// answer's head and body, refuses a status outside 200–599 (informational
/// answers are dropped by NIO's decoder) and a body over the limit, and
/// fails at the deadline or when the connection closes first.
private final class Exchange: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    struct Answer: Sendable {
        var head: HTTPResponseHead
        var body: ByteBuffer?
        /// Whether the upstream keeps the connection open for another request.
        var keepAlive: Bool
        /// Bytes of `Upstream.inFlight` this answer holds until it is passed on.
        var reserved: Int
    }

    private let limit: Int
    private let budget: BodyBudget
    private var reserved = 0
    private var promise: EventLoopPromise<Answer>?
    private var head: HTTPResponseHead?
    private var body: ByteBuffer?
    private var timer: Scheduled<Void>?

    init(limit: Int, budget: BodyBudget) {
        self.limit = limit
        self.budget = budget
    }

    /// Starts waiting for an answer (on the channel's event loop).
    func start(_ promise: EventLoopPromise<Answer>, deadline: NIODeadline, context channel: any Channel) {
        self.promise = promise
        head = nil
        body = nil
        // The timer is cancelled when the exchange finishes, which breaks the cycle through `self`.
        let bound = NIOLoopBound(self, eventLoop: channel.eventLoop)
        timer = channel.eventLoop.scheduleTask(deadline: deadline) {
            bound.value.finish(.failure(Upstream.Failure.timedOut))
            channel.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard promise != nil else {
            // Nothing was asked: an upstream that talks out of turn is not kept.
            context.close(promise: nil)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let received):
            let status = Int(received.status.code)
            guard (200...599).contains(status) else {
                finish(.failure(Upstream.Failure.badStatus(status)))
                context.close(promise: nil)
                return
            }
            head = received
        case .body(let part):
            guard (body?.readableBytes ?? 0) + part.readableBytes <= limit else {
                finish(.failure(Upstream.Failure.tooLarge(limit: limit)))
                context.close(promise: nil)
                return
            }
            guard budget.reserve(part.readableBytes) else {
                finish(.failure(Upstream.Failure.overBudget(limit: budget.limit)))
                context.close(promise: nil)
                return
            }
            reserved += part.readableBytes
            if body == nil { body = part } else { body!.writeImmutableBuffer(part) }
        case .end:
            guard let head else { return }
            let held = reserved
            reserved = 0  // handed to the answer, released by `forward`
            finish(.success(Answer(head: head, body: body, keepAlive: head.isKeepAlive, reserved: held)))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(head == nil ? Upstream.Failure.closedBeforeAnswer : .failed("it closed the connection before the end of its answer")))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(Upstream.Failure.failed(Upstream.describe(error))))
        context.close(promise: nil)
    }

    /// Completes the exchange, once; later calls do nothing.
    func finish(_ result: Result<Answer, any Error>) {
        timer?.cancel()
        timer = nil
        budget.release(reserved)
        reserved = 0
        guard let promise else { return }
        self.promise = nil
        head = nil
        body = nil
        promise.completeWith(result)
    }
}

/// A count of bytes held, shared by every exchange, that refuses to go past its limit.
package final class BodyBudget: Sendable {
    let limit: Int
    private let held = NIOLockedValueBox(0)

    init(limit: Int) { self.limit = limit }

    /// Takes `bytes` if they fit.
    func reserve(_ bytes: Int) -> Bool {
        held.withLockedValue { held in
            guard held + bytes <= limit else { return false }
            held += bytes
            return true
        }
    }

    func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        held.withLockedValue { $0 -= bytes }
    }

    var current: Int { held.withLockedValue { $0 } }
}
