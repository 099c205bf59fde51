import DoppelCore
import DoppelProtobuf
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One gRPC call on a connection of its own, for scenario steps: h2c with
/// prior knowledge to an `http` target, TLS with ALPN's `h2` to an `https`
/// one. Its messages go as they are given (already encoded) and come back
/// as bytes, with the answer's headers and trailers as they were sent, so
/// a step sees a trailers-only status, a reset or a closed connection as
/// the client did.
///
/// Written on swift-nio-http2 (the server's own HTTP/2) rather than
/// grpc-swift-2's client: that client takes messages through generated
/// serializers and reports a status, where a step needs the frames' own
/// metadata and trailers, and costs every build a package more.
package enum GRPCClient {
    /// What the server answered.
    package struct Answer: Sendable {
        /// The `:status` of the answer's headers (200 for any gRPC answer).
        package var httpStatus = 0
        /// The answer's headers (without pseudo-headers); empty for a trailers-only answer.
        package var headers: [(name: String, value: String)] = []
        /// Each message's bytes, in order.
        package var messages: [[UInt8]] = []
        /// The trailers (the trailers-only answer's headers).
        package var trailers: [(name: String, value: String)] = []

        /// A trailer's value, or a header's (a trailers-only answer's are its headers).
        package func field(_ name: String) -> String? {
            (trailers + headers).first { $0.name == name }?.value
        }

        /// Headers and trailers by name, a repeated one's values joined with `, `.
        package var metadata: [String: String] {
            var joined: [String: String] = [:]
            for field in headers + trailers { joined[field.name] = joined[field.name].map { $0 + ", " + field.value } ?? field.value }
            return joined
        }
    }

    /// Each of `messages` (JSON) encoded as `type` by `catalog`; a failure
    /// names the message (`message 2 is not a tales.v1.Draft: ...`).
    package static func encode(_ messages: [JSON], as type: String, catalog: GRPCCatalog) throws(Failure) -> [[UInt8]] {
        var encoded: [[UInt8]] = []
        for (index, message) in messages.enumerated() {
            do {
                encoded.append(try catalog.codec.encode(message, as: type))
            } catch {
                throw Failure(description: "message \(index + 1) is not a \(type): \(error.message)")
            }
        }
        return encoded
    }

    /// Why a call got no complete answer, in words.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// The most bytes of messages an answer may hold.
    package static let maximumBytes = 64 << 20

    /// Calls `path` (`/SERVICE/METHOD`) at `target` with `messages` (each a
    /// message's encoded bytes, framed here) and `metadata`; the client's
    /// half ends after the last. `timeout` bounds the whole call, connection included.
    ///
    /// `untilOpened`: a stream held open by its rules (a method's `stream:`)
    /// is checked by its opening. The answer is whole once the server's
    /// headers come (the stream opened: `grpc-status` 0 is read into its
    /// trailers) or its trailers alone (refused), and the stream is then
    /// cancelled; a client stream's messages are not sent, nor its half ended.
    package static func call(
        _ target: URL, path: String, metadata: [(name: String, value: String)], messages: [[UInt8]], timeout: Double,
        untilOpened: Bool = false
    ) async throws -> Answer {
        guard let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https", let host = target.host, !host.isEmpty else {
            throw Failure(description: "not an http or https URL: \(target.absoluteString)")
        }
        let secure = scheme == "https"
        let port = target.port ?? (secure ? 443 : 80)
        let tls: NIOSSLContext?
        if secure {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.applicationProtocols = ["h2"]
            tls = try NIOSSLContext(configuration: configuration)
        } else {
            tls = nil
        }
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(Int64(min(max(timeout, 0.001), 30) * 1000)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let tls { try sync.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: host)) }
                    _ = try sync.configureHTTP2Pipeline(mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()) {
                        // A server does not open streams of its own on a call's connection.
                        $0.close()
                    }
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            throw Failure(description: "could not connect to \(host):\(port): \(error)")
        }
        defer { channel.close(promise: nil) }
        let answer = channel.eventLoop.makePromise(of: Answer.self)
        let deadline = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(min(timeout, 3600) * 1e9))) {
            answer.fail(Failure(description: "no complete answer within \(timeout)s"))
        }
        defer { deadline.cancel() }
        var headers: HPACKHeaders = [
            ":method": "POST", ":scheme": secure ? "https" : "http", ":path": path, ":authority": "\(host):\(port)",
            "content-type": "application/grpc", "te": "trailers",
        ]
        for (name, value) in metadata { headers.add(name: name.lowercased(), value: value) }
        let framed = messages.reduce(into: [UInt8]()) { bytes, message in
            bytes.append(0)
            withUnsafeBytes(of: UInt32(message.count).bigEndian) { bytes += $0 }
            bytes += message
        }
        let sent = headers
        let opened = channel.eventLoop.flatSubmit {
            do {
                let multiplexer = try channel.pipeline.syncOperations.handler(type: NIOHTTP2Handler.self).syncMultiplexer()
                return multiplexer.createStreamChannel { stream in
                    stream.eventLoop.makeCompletedFuture {
                        try stream.pipeline.syncOperations.addHandler(CallReader(answer: answer, untilOpened: untilOpened))
                    }
                }
            } catch {
                return channel.eventLoop.makeFailedFuture(error)
            }
        }
        opened.whenSuccess { stream in
            if untilOpened, messages.isEmpty {
                // A client stream's opening: its headers alone, its half left open.
                return stream.writeAndFlush(HTTP2Frame.FramePayload.headers(.init(headers: sent)), promise: nil)
            }
            stream.write(HTTP2Frame.FramePayload.headers(.init(headers: sent)), promise: nil)
            let body = stream.allocator.buffer(bytes: framed)
            stream.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(body), endStream: true)), promise: nil)
        }
        opened.whenFailure { answer.fail($0) }
        return try await answer.futureResult.get()
    }

    /// Reads one stream's answer: headers, messages' bytes, trailers.
    final class CallReader: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame.FramePayload

        let answer: EventLoopPromise<Answer>
        let untilOpened: Bool
        var read = Answer()
        var sawHeaders = false
        var data = ByteBuffer()

        init(answer: EventLoopPromise<Answer>, untilOpened: Bool = false) {
            self.answer = answer
            self.untilOpened = untilOpened
        }

        func channelRead(context: ChannelHandlerContext, data frame: NIOAny) {
            switch unwrapInboundIn(frame) {
            case .headers(let block):
                let fields = block.headers.filter { !$0.name.hasPrefix(":") }.map { (name: $0.name, value: $0.value) }
                if !sawHeaders {
                    sawHeaders = true
                    read.httpStatus = block.headers.first(name: ":status").flatMap { Int($0) } ?? 0
                    if block.endStream { read.trailers = fields } else { read.headers = fields }
                    if untilOpened, !block.endStream {
                        // Opened: what it sends next is its rules', not the opening's.
                        read.trailers = [("grpc-status", "0")]
                        answer.succeed(read)
                        context.close(promise: nil)
                        return
                    }
                } else {
                    read.trailers = fields
                }
                if block.endStream { end() }
            case .data(let payload):
                if case .byteBuffer(var bytes) = payload.data {
                    guard data.readableBytes + bytes.readableBytes <= GRPCClient.maximumBytes else {
                        answer.fail(Failure(description: "the answer's messages are larger than \(GRPCClient.maximumBytes >> 20) MiB"))
                        context.close(promise: nil)
                        return
                    }
                    data.writeBuffer(&bytes)
                }
                if payload.endStream { end() }
            case .rstStream(let code):
                answer.fail(Failure(description: "the server reset the stream (\(code))"))
            default:
                break
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            answer.fail(Failure(description: "the connection was closed before the call's trailers"))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            answer.fail(Failure(description: "\(error)"))
            context.close(promise: nil)
        }

        /// The server's half is over: its messages cut from the data, each length-prefixed.
        private func end() {
            while data.readableBytes >= 5 {
                let compressed = data.readInteger(as: UInt8.self)!
                let length = Int(data.readInteger(as: UInt32.self)!)
                guard compressed == 0 else {
                    return answer.fail(Failure(description: "the server sent a compressed message, which the call did not ask for"))
                }
                guard let message = data.readBytes(length: length) else {
                    return answer.fail(Failure(description: "the answer ended inside a message"))
                }
                read.messages.append(message)
            }
            guard data.readableBytes == 0 else { return answer.fail(Failure(description: "the answer ended inside a message")) }
            answer.succeed(read)
        }
    }
}
