import DoppelCore
import Foundation

/// Writes one line per request (and the start-up banner) to standard output.
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

    public let format: Format
    private let lock = Locked(())
    private let write: @Sendable (String) -> Void

    /// - Parameter write: where lines go; standard output by default.
    public init(format: Format, write: @escaping @Sendable (String) -> Void = RequestLog.standardOutput) {
        self.format = format
        self.write = write
    }

    /// Writes a line to standard output and flushes, so piped output is timely.
    public static let standardOutput: @Sendable (String) -> Void = { line in
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Writes a line as it is.
    public func line(_ text: String) {
        lock.withLock { _ in write(text) }
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
            let object = JSON.object(JSONObject([
                ("time", .string(UTCCalendar.format(epoch: Date().timeIntervalSince1970))), ("method", .string(method)),
                ("path", .string(path)), ("status", .int(status)), ("endpoint", endpointID.map { .string($0) } ?? .null),
                ("session", .string(session)), ("duration_ms", .double(Double(durationMicros) / 1000)),
            ]))
            line(JSONWriter.encodeString(object))
        }
    }
}
