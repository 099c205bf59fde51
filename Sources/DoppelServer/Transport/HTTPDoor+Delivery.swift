import DoppelCore
import Foundation
import NIOCore
import NIOHTTP1

/// The door's HTTP/1 primitives for `AnswerDoor`'s delivery: answers as
/// bytes (`ResponseBytes`) written through the connection's guard, a
/// stream's body in chunks (or, in HTTP/1.0, until the connection closes),
/// waits on the connection's event loop; and `writeLast`, after which the
/// connection reads again or closes.
extension HTTPDoor: AnswerDoor {
    // MARK: Writing

    func writeWhole(_ response: MockResponse, omitBody: Bool) {
        guard let context = channelContext else { return }
        writeLast(ResponseBytes.encode(response, date: currentDate(), close: closing, omitBody: omitBody, allocator: context.channel.allocator))
    }

    func writeHead(ofStream response: MockResponse, bodyFollows: Bool) {
        guard let context = channelContext else { return }
        // HTTP/1.0 has no chunked coding: the body ends where the connection does.
        if bodyFollows, !answersChunked { closeAfterAnswer = true }
        let head = ResponseBytes.encode(
            response, date: currentDate(), close: closing, framing: answersChunked ? .chunked : .untilClose, allocator: context.channel.allocator)
        if bodyFollows { connection.write(head) } else { writeLast(head) }
    }

    func writePart(_ bytes: [UInt8]) {
        guard let context = channelContext else { return }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count + 16)
        if answersChunked { buffer.writeString(String(bytes.count, radix: 16) + "\r\n") }
        buffer.writeBytes(bytes)
        if answersChunked { buffer.writeStaticString("\r\n") }
        connection.write(buffer)
    }

    func writeEnd() {
        guard let context = channelContext else { return }
        var end = context.channel.allocator.buffer(capacity: 5)
        if answersChunked { end.writeStaticString("0\r\n\r\n") }
        writeLast(end)
    }

    func breakOff(_ fault: Fault, of response: MockResponse, omitBody: Bool) {
        guard let channel = channelContext?.channel else { return }
        phase = .closed
        switch fault {
        case .connectionReset:
            // Linger 0 makes close() send RST instead of FIN.
            if let socket = channel as? SocketOptionProvider {
                socket.setSoLinger(NIOLinger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
        case .truncatedBody:
            // Promise the whole body, send half, then drop the connection.
            var bytes = ResponseBytes.encode(response, date: currentDate(), close: false, omitBody: true, allocator: channel.allocator)
            if !omitBody { bytes.writeBytes(response.body.prefix(response.body.count / 2)) }
            if !connection.writeThenClose(bytes) { channel.close(promise: nil) }
        case .emptyReply, .noAnswer, .malformedJSON:
            channel.close(promise: nil)
        }
    }

    /// An answer's last bytes: the connection is idle again (or closed), and held requests go on.
    func writeLast(_ bytes: ByteBuffer) {
        endAnswering()
        guard let context = channelContext, connection.canWrite, !isOver else { return }
        if closing {
            phase = .closed
            connection.writeLast(bytes, thenClose: true)
            return
        }
        connection.writeLast(bytes, thenClose: false)
        drain(context: context)
    }

    /// Whether the answer being written is the connection's last.
    var closing: Bool { closeAfterAnswer || quiescing || (inputClosed && held.isEmpty) }

    // MARK: Waiting

    func wait(_ seconds: Double, then: @escaping () -> Void) {
        guard seconds > 0, !quiescing, !isOver, let loop else { return then() }
        beginAnswering()
        let task = loop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(min(seconds, 1e9) * 1e9))) { [self] in
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
}
