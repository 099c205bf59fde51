import Foundation
import Testing

@testable import DoppelMCP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(Glibc)
private let systemPipe = Glibc.pipe
private let systemWrite = Glibc.write
private let systemRead = Glibc.read
#elseif canImport(Darwin)
private let systemPipe = Darwin.pipe
private let systemWrite = Darwin.write
private let systemRead = Darwin.read
#endif

/// The bounded stdio transport over pipes: lines in order, an oversized one
/// dropped and answered with JSON-RPC's -32600, the end of the input the end.
@Suite("MCP line transport")
struct LineTransportTests {
    /// A pipe's two ends.
    static func pipe() -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        #expect(systemPipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    static func put(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { systemWrite(descriptor, $0.baseAddress! + offset, bytes.count - offset) }
            if written < 0, errno == EINTR { continue }
            #expect(written > 0)
            if written <= 0 { return }
            offset += written
        }
    }

    @Test("Lines arrive in order; a line over the bound is dropped and refused; the input's end ends the stream")
    func boundedLines() async throws {
        let input = Self.pipe()
        let output = Self.pipe()
        let transport = LineTransport(input: input.read, output: output.write, maximumMessage: 1_000)
        // Written from a thread of its own: the pipe holds less than what is written.
        let writer = Thread {
            Self.put(Array("{\"a\":1}\n\r\n".utf8), to: input.write)
            Self.put([UInt8](repeating: UInt8(ascii: "x"), count: 300_000) + [UInt8(ascii: "\n")], to: input.write)
            Self.put(Array("{\"b\":2}\n{\"c\":3}".utf8), to: input.write)
            close(input.write)
        }
        writer.start()

        var received: [String] = []
        for try await message in await transport.receive() { received.append(String(decoding: message, as: UTF8.self)) }
        #expect(received == [#"{"a":1}"#, #"{"b":2}"#, #"{"c":3}"#])

        try await transport.send(Data(#"{"d":4}"#.utf8))
        close(output.write)
        var answer = [UInt8](repeating: 0, count: 4_096)
        var read: [UInt8] = []
        while true {
            let count = answer.withUnsafeMutableBytes { systemRead(output.read, $0.baseAddress!, $0.count) }
            if count <= 0 { break }
            read += answer[..<count]
        }
        let lines = String(decoding: read, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.contains(#""code":-32600"#) == true)
        #expect(lines.first?.contains("300000 bytes") == true, "\(lines)")
        #expect(lines.last == #"{"d":4}"#)
        close(input.read)
        close(output.read)
    }
}
