import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// MCP's stdio transport, bounded: one JSON-RPC message per line, read
/// from `input` only when the server asks for the next one, each at most
/// `maximumMessage` bytes.
///
/// Written here rather than taken from the MCP Swift SDK, whose
/// `StdioTransport` falls short in two ways: it keeps any line whole however
/// long it grows (an agent that writes no newline grows the process without
/// bound), and it turns the descriptors non-blocking and polls them every
/// 10 ms while idle.
/// Here a blocking read runs on a thread of its own; a line over the bound
/// is skipped to its end and answered with JSON-RPC's `-32600` error (its
/// id cannot be read, so it is null, as JSON-RPC 2.0 section 5 says).
package actor LineTransport {
    private let reader: LineReader
    private let writer: LineWriter

    /// The longest message read: 8 MiB (a `send_request` body of 1 MiB, escaped in JSON, fits).
    package static let maximumMessage = 8 << 20

    package init(input: Int32 = 0, output: Int32 = 1, maximumMessage: Int = LineTransport.maximumMessage) {
        let writer = LineWriter(descriptor: output)
        self.writer = writer
        self.reader = LineReader(descriptor: input, maximum: maximumMessage) { length in
            // Sent from the reading thread, between whole messages (the writer's lock).
            let refusal =
                #"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"The message is \#(length) bytes; the most one may be is \#(maximumMessage)."}}"#
            try? writer.write(Array(refusal.utf8))
        }
    }

    package func send(_ data: Data) async throws {
        try writer.write(Array(data))
    }

    package nonisolated func receive() -> AsyncThrowingStream<Data, any Error> {
        let reader = self.reader
        return AsyncThrowingStream { try await reader.next() }
    }
}

/// Writes whole lines to a descriptor, one at a time.
private final class LineWriter: @unchecked Sendable {
    private let descriptor: Int32
    private let lock = NSLock()

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Writes `message` and a newline, all of it (a short write or a signal goes on).
    func write(_ message: [UInt8]) throws {
        let line = message + [UInt8(ascii: "\n")]
        try lock.withLock {
            var offset = 0
            while offset < line.count {
                let written = line.withUnsafeBytes { bytes in
                    #if canImport(Darwin)
                    Darwin.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    #else
                    Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    #endif
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
                offset += written
            }
        }
    }
}

/// Reads lines from a descriptor on a thread of its own, one line each
/// time `next` asks: a blocking read never holds one of the threads Swift's
/// tasks share, nor one of Dispatch's (which other work may keep busy).
private final class LineReader: @unchecked Sendable {
    private let descriptor: Int32
    private let maximum: Int
    private let oversized: @Sendable (Int) -> Void
    /// Signalled once for each `next` waiting.
    private let asked = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    /// The `next` waiting for a line, and whether the input has ended (both under `lock`).
    private var waiting: CheckedContinuation<Data?, any Error>?
    private var finished = false
    private var started = false
    /// Read but not yet returned; touched by the reading thread only.
    private var pending: [UInt8] = []
    private var ended = false

    init(descriptor: Int32, maximum: Int, oversized: @escaping @Sendable (Int) -> Void) {
        self.descriptor = descriptor
        self.maximum = maximum
        self.oversized = oversized
    }

    /// The next non-empty line, or nil at the end of the input.
    func next() async throws -> Data? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data?, any Error>) in
            let start: Bool? = lock.withLock {
                if finished { return nil }
                waiting = continuation
                defer { started = true }
                return !started
            }
            guard let start else { return continuation.resume(returning: nil) }
            if start {
                let thread = Thread { [self] in readLoop() }
                thread.name = "doppel.mcp.stdin"
                thread.start()
            }
            asked.signal()
        }
    }

    /// Answers each `next` in turn; ends with the input (or a read that fails).
    private func readLoop() {
        while true {
            asked.wait()
            let result = Result { try readLine() }
            // The end of the input (nil) or a failed read is the last answer.
            let last = (try? result.get()) == nil
            let continuation = lock.withLock {
                defer { waiting = nil }
                if last { finished = true }
                return waiting
            }
            continuation?.resume(with: result)
            if last { return }
        }
    }

    private func readLine() throws -> Data? {
        var skipping = false
        var skipped = 0
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[..<newline]
                pending.removeSubrange(...newline)
                if skipping {
                    oversized(skipped + line.count)
                    skipping = false
                    skipped = 0
                    continue
                }
                if line.allSatisfy({ $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: " ") }) { continue }
                return Data(line)
            }
            if pending.count > maximum {
                // Past the bound with no end in sight: dropped as it comes, until its newline.
                skipping = true
                skipped += pending.count
                pending.removeAll(keepingCapacity: true)
            }
            if ended { return nil }
            let count = chunk.withUnsafeMutableBytes { bytes in
                #if canImport(Darwin)
                Darwin.read(descriptor, bytes.baseAddress!, bytes.count)
                #else
                Glibc.read(descriptor, bytes.baseAddress!, bytes.count)
                #endif
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            if count == 0 {
                ended = true
                // A last message without its newline is still a message.
                if !skipping, !pending.isEmpty { pending.append(UInt8(ascii: "\n")) } else { return nil }
                continue
            }
            pending.append(contentsOf: chunk[..<count])
        }
    }
}
