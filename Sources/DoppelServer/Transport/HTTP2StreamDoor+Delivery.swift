import DoppelCore
import DoppelProtobuf
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2

/// The gRPC door's primitives for `AnswerDoor`'s delivery: an answer's
/// status read from its `grpc-status` header (set by the contract's `grpc:`
/// responses) or else from its HTTP status (Doppel's own problems: 401 is
/// `UNAUTHENTICATED`, 404 `UNIMPLEMENTED`); its messages encoded by the
/// `.proto`; waits on the stream's event loop.
extension HTTP2StreamDoor: AnswerDoor {
    /// The call being answered; nil once it is over.
    var call: Call? {
        switch phase {
        case .answering(let call), .conversing(let call): call
        default: nil
        }
    }

    /// An answer's gRPC status, message and details; `body` is its body, parsed by the caller (nil when it is not JSON).
    func status(of response: MockResponse, body parsed: JSON?) -> (code: Int, message: String, details: JSON?) {
        let given = response.headers.first { $0.name.lowercased() == "grpc-status" }.flatMap { Int($0.value) }
        let body = parsed?.objectValue
        guard let code = given else {
            let code = GRPCDefinition.code(forHTTP: response.status)
            let message = body?["detail"]?.stringValue ?? body?["title"]?.stringValue ?? (code == 0 ? "" : "HTTP status \(response.status)")
            return (code, message, nil)
        }
        guard code != 0 else { return (0, "", nil) }
        let details = body?["details"].flatMap { $0.arrayValue?.isEmpty == false ? $0 : nil }
        return (code, body?["message"]?.stringValue ?? "", details.map { _ in .object(body!) })
    }

    func writeWhole(_ response: MockResponse, omitBody: Bool) {
        guard let call, !ended else { return }
        if call.plain != nil { return writePlainHead(response, body: response.body, omitBody: omitBody, endStream: true) }
        // The body is read once: for the status's message and details, or as the reply.
        let parsed = response.body.isEmpty ? JSON.object(JSONObject()) : try? JSONReader.parse(response.body)
        let status = status(of: response, body: parsed)
        guard status.code == 0 else { return answerStatus(status.code, message: status.message, details: status.details, of: response) }
        guard let method = call.method else {
            return answerStatus(12, message: "\(call.path.dropFirst()) is not a gRPC method of the contract")
        }
        guard let reply = parsed else {
            return answerStatus(13, message: "The contract's answer is not JSON, so not a \(method.output)")
        }
        guard let bytes = encode(reply, as: method.output, call) else { return }
        writeHeaders(of: response)
        writeMessage(bytes)
        if method.serverStreaming { journalSent(reply, call) }
        writeTrailers(0, message: "", details: nil)
    }

    /// A message of a streaming call's answer, journaled once it is written (`SEND` under `SERVICE/METHOD.RESPONSE`).
    func journalSent(_ message: JSON, _ call: Call) {
        guard let endpoint = call.streamEndpoint else { return }
        sentMessages += 1
        let response = streamResponse ?? "on_unmatched"
        journalMessage(
            call, method: "SEND", target: endpoint + "." + response, response: streamResponse, message: nil, sent: [message],
            reason: "message \(sentMessages) of response '\(response)'")
    }

    func writeHead(ofStream response: MockResponse, bodyFollows: Bool) {
        guard let call, !ended else { return }
        if call.plain != nil { return writePlainHead(response, body: nil, endStream: !bodyFollows) }
        let status = status(of: response, body: try? JSONReader.parse(response.body))
        guard status.code == 0, call.method != nil else {
            return answerStatus(status.code == 0 ? 12 : status.code, message: status.message, details: status.details, of: response)
        }
        writeHeaders(of: response)
        if !bodyFollows { writeTrailers(0, message: "", details: nil) }
    }

    /// A part of a stream of JSON lines: each line one message.
    func writePart(_ bytes: [UInt8]) {
        guard let call, !ended else { return }
        if call.plain != nil { return writePlainData(bytes, endStream: false) }
        guard let method = call.method else { return }
        for line in bytes.split(separator: UInt8(ascii: "\n")) where !line.allSatisfy({ $0 == 32 || $0 == 13 }) {
            guard let message = try? JSONReader.parse(Array(line)) else {
                return writeTrailers(13, message: "A message of the contract's stream is not JSON", details: nil)
            }
            guard let encoded = encode(message, as: method.output, call) else { return }
            writeMessage(encoded)
            journalSent(message, call)
        }
    }

    func writeEnd() {
        if call?.plain != nil { return writePlainData([], endStream: true) }
        writeTrailers(0, message: "", details: nil)
    }

    func breakOff(_ fault: Fault, of response: MockResponse, omitBody: Bool) {
        guard !ended, let context = channelContext else { return }
        switch fault {
        case .truncatedBody:
            // The headers and half of the message's (or body's) bytes, then the stream reset.
            if call?.plain != nil {
                writePlainHead(response, body: nil, endStream: false)
                writePlainData(Array(response.body.prefix(response.body.count / 2)), endStream: false)
            } else if let call, let method = call.method, let catalog = call.catalog, let reply = try? JSONReader.parse(response.body),
                let bytes = try? catalog.codec.encode(reply, as: method.output)
            {
                writeHeaders(of: response)
                var frame = context.channel.allocator.buffer(capacity: 5 + bytes.count)
                frame.writeInteger(UInt8(0))
                frame.writeInteger(UInt32(bytes.count))
                frame.writeBytes(bytes)
                let half = frame.getSlice(at: frame.readerIndex, length: frame.readableBytes / 2)!
                context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(half)))), promise: nil)
            }
            reset(.internalError)
        case .emptyReply:
            // The connection closed under every call on it, as a server that went away.
            ended = true
            context.channel.parent?.close(promise: nil)
        case .connectionReset, .noAnswer, .malformedJSON:
            reset(.internalError)
        }
    }

    func upgrade(_ exchange: DoorExchange, answered response: MockResponse, opening: SocketOpening) {
        if call?.rules == true {
            // A client that left while its stream was being opened.
            guard !ended else { return finish(exchange, status: 499) }
            return converse(exchange, answered: response, opening: opening)
        }
        finish(exchange, status: 501)
        if call?.plain != nil {
            refuseHTTP(501, "WebSockets are opened over HTTP/1.1; connect without HTTP/2 to open one")
        } else {
            answerStatus(13, message: "A WebSocket is not a gRPC answer")
        }
    }

    func beginAnswering() {}

    func statusSent(_ decided: Int) -> Int { deadlineHit ? 504 : decided }

    // MARK: Frames

    /// The message encoded, or the call ended `INTERNAL` with why the contract's answer does not fit.
    func encode(_ message: JSON, as type: String, _ call: Call) -> [UInt8]? {
        guard let catalog = call.catalog else { return nil }
        do {
            return try catalog.codec.encode(message, as: type)
        } catch {
            answerStatus(13, message: "The contract's answer is not a \(type): \(error.message)")
            return nil
        }
    }

    /// The answer's headers: `:status 200`, gRPC's content type, and the answer's metadata.
    func writeHeaders(of response: MockResponse?) {
        guard !headersSent, !ended, let context = channelContext else { return }
        headersSent = true
        var headers: HPACKHeaders = [":status": "200", "content-type": "application/grpc"]
        if let response { headers.add(contentsOf: metadata(of: response)) }
        context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
    }

    /// One message, length-prefixed; the bytes the client has not taken are counted (`wait` holds the delivery on them).
    func writeMessage(_ bytes: [UInt8]) {
        guard !ended, let context = channelContext else { return }
        var frame = context.channel.allocator.buffer(capacity: 5 + bytes.count)
        frame.writeInteger(UInt8(0))
        frame.writeInteger(UInt32(bytes.count))
        frame.writeBytes(bytes)
        unsent += frame.readableBytes
        let promise = context.eventLoop.makePromise(of: Void.self)
        let size = frame.readableBytes
        promise.futureResult.assumeIsolated().whenComplete { [self] _ in
            unsent -= size
            // Half taken: the held delivery goes on.
            if unsent <= Self.maximumUnsentBytes / 2, let (then, timer) = stalled {
                stalled = nil
                timer.cancel()
                then()
            }
        }
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(frame)))), promise: promise)
    }

    /// The call's end: its status in trailers (after headers), or trailers only.
    func writeTrailers(_ code: Int, message: String, details: JSON?, metadata extra: [(String, String)] = []) {
        guard !ended, let context = channelContext else { return }
        ended = true
        deadline?.cancel()
        deadline = nil
        var trailers: HPACKHeaders = headersSent ? [:] : [":status": "200", "content-type": "application/grpc"]
        if !headersSent { trailers.add(contentsOf: extra) }
        headersSent = true
        trailers.add(name: "grpc-status", value: String(code))
        if !message.isEmpty { trailers.add(name: "grpc-message", value: Self.percentEncoded(message)) }
        if let details, let call, let bytes = try? call.catalog?.statusDetails(details) {
            trailers.add(name: "grpc-status-details-bin", value: Data(bytes).base64EncodedString())
        }
        context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: trailers, endStream: true))), promise: nil)
    }

    /// The call ended with `code` (trailers only, unless its headers went out).
    func answerStatus(_ code: Int, message: String, details: JSON? = nil, of response: MockResponse? = nil) {
        writeTrailers(code, message: message, details: details, metadata: response.map(metadata(of:)) ?? [])
    }

    /// A request that is not a gRPC call, answered as HTTP/2 with a short text.
    func refuseHTTP(_ status: Int, _ text: String) {
        guard !ended, let context = channelContext else { return }
        ended = true
        let headers: HPACKHeaders = [":status": String(status), "content-type": "text/plain; charset=utf-8"]
        context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
        let body = context.channel.allocator.buffer(string: text + "\n")
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
    }

    /// A plain answer's head: its status and headers (HTTP/1's framing left
    /// out), and its whole body when given (its length alone for a HEAD's, `omitBody`).
    func writePlainHead(_ response: MockResponse, body: [UInt8]?, omitBody: Bool = false, endStream: Bool) {
        guard !headersSent, !ended, let context = channelContext else { return }
        headersSent = true
        var headers: HPACKHeaders = [":status": String(response.status)]
        for header in response.headers where HTTPToken.isValid(header.name) {
            let name = header.name.lowercased()
            guard !Self.notMetadata.contains(name), name != "server" else { continue }
            headers.add(name: name, value: header.value)
        }
        if let body { headers.add(name: "content-length", value: String(body.count)) }
        headers.add(name: "server", value: "Doppel")
        let bodyFollows = !omitBody && !(body ?? []).isEmpty
        context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: endStream && !bodyFollows))), promise: nil)
        if bodyFollows, let body {
            writePlainData(body, endStream: endStream)
        } else {
            if endStream { ended = true }
            context.flush()
        }
    }

    /// Bytes of a plain answer's body; `endStream`, its end.
    func writePlainData(_ bytes: [UInt8], endStream: Bool) {
        guard !ended, let context = channelContext else { return }
        if endStream { ended = true }
        let buffer = context.channel.allocator.buffer(bytes: bytes)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: endStream))), promise: nil)
    }

    /// The stream reset: nothing more is sent.
    func reset(_ code: HTTP2ErrorCode) {
        guard !ended, let context = channelContext else { return }
        ended = true
        deadline?.cancel()
        context.writeAndFlush(wrapOutboundOut(.rstStream(code)), promise: nil)
    }

    /// An answer's headers that are the call's metadata: all but HTTP's framing and gRPC's own.
    func metadata(of response: MockResponse) -> [(String, String)] {
        response.headers.compactMap { header in
            let name = header.name.lowercased()
            guard !Self.notMetadata.contains(name), !name.hasPrefix("grpc-") else { return nil }
            return (name, header.value)
        }
    }

    static let notMetadata: Set<String> = ["content-type", "content-length", "transfer-encoding", "connection", "date", "keep-alive"]

    /// `grpc-message`'s encoding: bytes outside printable ASCII, and `%`, as `%XX`.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if byte >= 0x20, byte <= 0x7E, byte != UInt8(ascii: "%") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    // MARK: Waiting

    func wait(_ seconds: Double, then: @escaping () -> Void) {
        if unsent > Self.maximumUnsentBytes, !ended, let loop {
            // Backpressure: the client has not taken what was written.
            let timer = loop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(idle * 1e9))) { [self] in
                reset(.enhanceYourCalm)
                hurry()
            }
            stalled = ({ [self] in wait(seconds, then: then) }, timer)
            return
        }
        guard seconds > 0, !ended, let loop else { return then() }
        let task = loop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(min(seconds, 1e9) * 1e9))) { [self] in
            waiting = nil
            then()
        }
        waiting = (task, then)
    }

    /// Ends the wait in progress now (the deadline passed, the client gone).
    func hurry() {
        if let (then, timer) = stalled {
            stalled = nil
            timer.cancel()
            then()
        }
        guard let (task, then) = waiting else { return }
        waiting = nil
        task.cancel()
        then()
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
