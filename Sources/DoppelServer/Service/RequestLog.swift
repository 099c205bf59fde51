import DoppelCore
import Foundation

/// Writes one line per request (and the start-up banner) to standard output,
/// off the request path.
///
/// Requests only append to a bounded buffer; one writer thread drains it.
/// When the reader of standard output is slower than the requests (a paused
/// terminal, a full pipe), lines beyond the buffer are dropped and counted,
/// never waited for, and the writer notes how many when it catches up. A
/// dedicated thread, not a task, because the write may block for as long as
/// the reader likes, and a blocked task would hold a cooperative thread.
public final class RequestLog: Sendable {
    /// How request lines look.
    public enum Format: String, Sendable, CaseIterable {
        /// `POST /api/v1/children 200 create-child 0.41ms session=default`
        case text
        /// One JSON object per line, for log collectors.
        case json
        /// No request lines.
        case none
    }

    /// The most lines waiting to be written.
    public static let defaultCapacity = 10_000

    /// How lines are written.
    public let format: Format
    /// The most lines waiting to be written; further ones are dropped and counted.
    public let capacity: Int
    private let buffer: Buffer

    /// - Parameters:
    ///   - capacity: the most lines waiting for the writer; more are dropped and counted.
    ///   - write: where lines go (each call one or more whole lines, newlines included); standard output by default.
    public init(
        format: Format, capacity: Int = RequestLog.defaultCapacity,
        write: @escaping @Sendable (String) -> Void = RequestLog.standardOutput
    ) {
        self.format = format
        self.capacity = max(1, capacity)
        self.buffer = Buffer(capacity: max(1, capacity), write: write)
    }

    /// Writes a line to standard output, newline included.
    public static let standardOutput: @Sendable (String) -> Void = { line in
        FileHandle.standardOutput.write(Data(line.utf8))
    }

    /// Writes a line to standard error, newline included (`doppel serve --stdio`, whose standard output is the protocol's).
    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Queues a line as it is.
    public func line(_ text: String) {
        buffer.append(text + "\n")
    }

    /// Lines dropped so far because the writer could not keep up.
    public var dropped: Int { buffer.droppedTotal }

    /// Waits until every queued line is written, or `timeout` seconds pass; true when all were.
    @discardableResult
    public func flush(timeout: Double = 2) -> Bool {
        buffer.flush(timeout: timeout)
    }

    /// Logs one served request.
    public func request(method: String, path: String, status: Int, endpointID: String?, session: String, durationMicros: Int) {
        switch format {
        case .none:
            return
        case .text:
            let millis = String(format: "%.2fms", Double(durationMicros) / 1000)
            line("\(method) \(path) \(status) \(endpointID ?? "-") \(millis) session=\(session)")
        case .json:
            let object = JSON.object(
                JSONObject([
                    ("time", .string(UTCCalendar.format(epoch: Date().timeIntervalSince1970))), ("method", .string(method)),
                    ("path", .string(path)), ("status", .int(status)), ("endpoint", endpointID.map { .string($0) } ?? .null),
                    ("session", .string(session)), ("duration_ms", .double(Double(durationMicros) / 1000)),
                ]))
            line(JSONWriter.encodeString(object))
        }
    }

    /// The queue between requests and the writer thread. The writer takes
    /// every waiting line at once and writes them in one call; a request
    /// wakes it only when it sleeps (a busy writer finds the lines on its next
    /// turn), so a burst of answers costs each one an append under the lock,
    /// not a wake-up and a write of its own. (A lock and a write per line made
    /// health take seconds under a 10 ms broadcast over 48 sockets.)
    private final class Buffer: @unchecked Sendable {
        private let condition = NSCondition()
        private var lines: [String] = []
        private var droppedSinceNote = 0
        private var dropped = 0
        private var writing = false
        private var writerWaiting = false
        private var flushWaiting = 0
        private var writerStarted = false
        private let capacity: Int
        private let write: @Sendable (String) -> Void

        init(capacity: Int, write: @escaping @Sendable (String) -> Void) {
            self.capacity = capacity
            self.write = write
        }

        var droppedTotal: Int {
            condition.lock()
            defer { condition.unlock() }
            return dropped
        }

        func append(_ line: String) {
            condition.lock()
            defer { condition.unlock() }
            if !writerStarted {
                writerStarted = true
                let thread = Thread { [self] in self.drain() }
                thread.name = "doppel-request-log"
                thread.start()
            }
            if lines.count >= capacity {
                dropped += 1
                droppedSinceNote += 1
                return
            }
            lines.append(line)
            if writerWaiting { condition.broadcast() }
        }

        private func drain() {
            while true {
                condition.lock()
                while lines.isEmpty {
                    writerWaiting = true
                    condition.wait()
                    writerWaiting = false
                }
                let batch = lines
                lines.removeAll(keepingCapacity: true)
                var note = ""
                if droppedSinceNote > 0 {
                    note =
                        "doppel: \(droppedSinceNote) log line\(droppedSinceNote == 1 ? "" : "s") dropped: standard output was not read fast enough\n"
                    droppedSinceNote = 0
                }
                writing = true
                condition.unlock()
                write(batch.joined() + note)
                condition.lock()
                writing = false
                if flushWaiting > 0 { condition.broadcast() }
                condition.unlock()
            }
        }

        func flush(timeout: Double) -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            condition.lock()
            defer { condition.unlock() }
            flushWaiting += 1
            defer { flushWaiting -= 1 }
            while !lines.isEmpty || writing {
                if writerWaiting { condition.broadcast() }
                if !condition.wait(until: deadline) { return false }
            }
            return true
        }
    }
}
