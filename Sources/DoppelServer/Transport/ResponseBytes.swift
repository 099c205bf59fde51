import DoppelCore
import NIOCore
import NIOHTTP1

/// An answer's head (and body) as HTTP/1.1 bytes: status line, the
/// response's headers, the framing (`Content-Length`, or chunked for a
/// stream), `Date`, `Server` (and `Connection: close` when the connection
/// ends with it), then the body, in one buffer.
///
/// Written here rather than by NIO's response encoder because every answer
/// is written at the raw end of the pipeline (as 408s and `100 Continue`
/// are); the headers are checked as HTTP types would check them: a name
/// that is not a token is left out, and a value's control characters
/// become spaces.
enum ResponseBytes {
    /// How the body is delimited.
    enum Framing {
        /// `Content-Length`, and the body follows.
        case length
        /// `Transfer-Encoding: chunked`; the chunks follow.
        case chunked
        /// Neither: the body ends when the connection does (HTTP/1.0).
        case untilClose
    }

    /// Headers the server sets itself, which a response's own are not to repeat (lowercase).
    private static let serverSet = ["content-length", "date", "server", "connection", "transfer-encoding", "keep-alive"]

    /// `HTTP/1.1 200 OK\r\n` and the like for every status from 100 to 599, made once.
    private static let statusLines: [[UInt8]] = (100...599).map { status in
        Array("HTTP/1.1 \(status) \(HTTPResponseStatus(statusCode: status).reasonPhrase)\r\n".utf8)
    }

    /// - Parameter omitBody: the head alone, with the body's length (an answer to `HEAD`).
    static func encode(
        _ response: MockResponse, date: String, close: Bool, framing: Framing = .length, omitBody: Bool = false,
        allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 160 + response.headers.count * 48 + response.body.count)
        if (100...599).contains(response.status) {
            buffer.writeBytes(statusLines[response.status - 100])
        } else {
            buffer.writeStaticString("HTTP/1.1 ")
            buffer.writeString(String(response.status))
            buffer.writeInteger(UInt8(ascii: " "))
            buffer.writeString(HTTPResponseStatus(statusCode: response.status).reasonPhrase)
            buffer.writeStaticString("\r\n")
        }
        for header in response.headers where HTTPToken.isValid(header.name) && !serverSet.contains(where: header.name.caseInsensitiveEquals) {
            buffer.writeString(header.name)
            buffer.writeStaticString(": ")
            writeValue(header.value, into: &buffer)
            buffer.writeStaticString("\r\n")
        }
        switch framing {
        case .length:
            buffer.writeStaticString("Content-Length: ")
            buffer.writeString(String(response.body.count))
            buffer.writeStaticString("\r\n")
        case .chunked:
            buffer.writeStaticString("Transfer-Encoding: chunked\r\n")
        case .untilClose:
            break
        }
        buffer.writeStaticString("Date: ")
        buffer.writeString(date)
        buffer.writeStaticString("\r\nServer: Doppel\r\n")
        if close { buffer.writeStaticString("Connection: close\r\n") }
        buffer.writeStaticString("\r\n")
        if framing == .length, !omitBody { buffer.writeBytes(response.body) }
        return buffer
    }

    /// A field value with surrounding whitespace trimmed and control characters (CR, LF, NUL among them) as spaces.
    static func writeValue(_ value: String, into buffer: inout ByteBuffer) {
        let bytes = value.utf8
        if bytes.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }), bytes.first != 0x20, bytes.last != 0x20 {
            buffer.writeString(value)
            return
        }
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        buffer.writeBytes(trimmed.utf8.map { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F ? 0x20 : $0 })
    }
}
