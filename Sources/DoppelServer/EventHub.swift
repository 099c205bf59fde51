import DoppelCore
import Foundation
import NIOCore
import Synchronization

/// The live feed behind `GET /__doppel/events` (Server-Sent Events) and the
/// dashboard: each answer as it is journaled (with why it was chosen, the
/// state paths it changed, and the request and response), and each change
/// an admin call makes.
///
/// It costs nothing while no one listens: `isObserved` is one atomic load,
/// and nothing is built for an answer until a reader is connected. With
/// readers, an event is encoded once and handed to each reader's event
/// loop; a reader that does not keep up is dropped with a note (its own
/// queue past `readerQueueLimit`, or all readers' queues together past
/// `totalQueueLimit`), so a slow or silent reader never slows the server
/// or grows its memory.
package final class EventHub: Sendable {
    /// One connected reader, driven on its connection's event loop.
    package protocol Reader: AnyObject, Sendable {
        /// The loop `take` is called on.
        var eventLoop: any EventLoop { get }
        /// Takes encoded events, oldest first (called on `eventLoop`).
        func take(_ frames: [ByteBuffer])
    }

    /// The most readers connected at once (`--max-event-streams`).
    package let maximumReaders: Int
    /// The most bytes of events one reader may have waiting to be written.
    package static let readerQueueLimit = 256 << 10
    /// The most bytes of events all readers together may have waiting
    /// (events on their way to an event loop included).
    package static let totalQueueLimit = 64 << 20
    /// The most bytes of a request's or response's body an event carries.
    package static let bodyLimit = 16 << 10
    /// Seconds between comments that keep a quiet stream open.
    package static let heartbeat = 15.0

    /// The readers of one event loop, and the events on their way to it.
    /// Events are handed to a loop in batches, one task per batch rather
    /// than one per reader and event: with a thousand readers, a burst of
    /// answers costs each loop a few tasks and each reader one write.
    private struct Group {
        let loop: any EventLoop
        var readers: [ObjectIdentifier: (session: String?, reader: any Reader)] = [:]
        var pending: [(session: String?, frame: ByteBuffer)] = []
        var pendingBytes = 0
        var scheduled = false
    }

    private let groups = Mutex<[ObjectIdentifier: Group]>([:])
    private let count = Atomic<Int>(0)
    /// Bytes waiting in all readers' queues and on their way to them.
    private let queued = Atomic<Int>(0)
    private let droppedReaders = Atomic<Int>(0)

    package init(maximumReaders: Int = 1_000) {
        self.maximumReaders = max(1, maximumReaders)
    }

    /// Whether any reader is connected: what every answer checks before building an event.
    package var isObserved: Bool { count.load(ordering: .relaxed) > 0 }

    /// Readers connected now.
    package var readerCount: Int { count.load(ordering: .relaxed) }

    /// Readers dropped for falling behind, since the server started.
    package var dropped: Int { droppedReaders.load(ordering: .relaxed) }

    /// Connects a reader of `session`'s events (every session's when nil);
    /// false when `maximumReaders` are connected already.
    package func subscribe(_ reader: any Reader, session: String?) -> Bool {
        groups.withLock { groups in
            guard count.load(ordering: .relaxed) < maximumReaders else { return false }
            let loop = ObjectIdentifier(reader.eventLoop)
            groups[loop, default: Group(loop: reader.eventLoop)].readers[ObjectIdentifier(reader)] = (session, reader)
            count.add(1, ordering: .relaxed)
            return true
        }
    }

    /// Disconnects a reader (its stream ended, or it was dropped).
    package func unsubscribe(_ reader: any Reader) {
        groups.withLock { groups in
            let loop = ObjectIdentifier(reader.eventLoop)
            if groups[loop]?.readers.removeValue(forKey: ObjectIdentifier(reader)) != nil { count.subtract(1, ordering: .relaxed) }
        }
    }

    /// Counts bytes into (positive) or out of (negative) a reader's queue;
    /// false when the total would pass `totalQueueLimit`, and the bytes are not counted.
    package func account(_ bytes: Int) -> Bool {
        if bytes <= 0 {
            queued.subtract(-bytes, ordering: .relaxed)
            return true
        }
        let total = queued.add(bytes, ordering: .relaxed).newValue
        guard total <= Self.totalQueueLimit else {
            queued.subtract(bytes, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Counts a reader dropped for falling behind.
    package func noteDropped() { droppedReaders.add(1, ordering: .relaxed) }

    /// Sends an event to the readers of `session` (nil: to every reader).
    package func publish(_ event: String, session: String?, data: JSON) {
        let frame = Self.frame(event, data: data)
        let size = frame.readableBytes
        let loops = groups.withLock { groups -> [any EventLoop] in
            var wake: [any EventLoop] = []
            for key in Array(groups.keys) {
                guard var group = groups[key], group.readers.values.contains(where: { session == nil || $0.session == nil || $0.session == session }) else { continue }
                // A loop so far behind that the total is spent misses the event;
                // its readers are then behind and are dropped when it catches up.
                guard account(size) else { continue }
                group.pending.append((session, frame))
                group.pendingBytes += size
                if !group.scheduled {
                    group.scheduled = true
                    wake.append(group.loop)
                }
                groups[key] = group
            }
            return wake
        }
        for loop in loops {
            loop.execute { self.deliver(on: loop) }
        }
    }

    /// On `loop`: hands its readers the events that arrived for them since the last batch.
    private func deliver(on loop: any EventLoop) {
        let key = ObjectIdentifier(loop)
        guard let (pending, bytes, readers) = groups.withLock({ groups -> ([(session: String?, frame: ByteBuffer)], Int, [(session: String?, reader: any Reader)])? in
            guard var group = groups[key] else { return nil }
            defer {
                group.pending = []
                group.pendingBytes = 0
                group.scheduled = false
                groups[key] = group
            }
            return (group.pending, group.pendingBytes, Array(group.readers.values))
        }) else { return }
        _ = account(-bytes)
        for (session, reader) in readers {
            let frames = pending.compactMap { event in session == nil || event.session == nil || event.session == session ? event.frame : nil }
            if !frames.isEmpty { reader.take(frames) }
        }
    }

    /// One Server-Sent Event (`event:` and one `data:` line: JSON has no
    /// raw line breaks), framed as an HTTP/1.1 chunk: made once, and written
    /// as it is to every reader (`unchunked` for an HTTP/1.0 reader).
    package static func frame(_ event: String, data: JSON) -> ByteBuffer {
        let json = JSONWriter.encode(data)
        let length = event.utf8.count + json.count + 16
        var buffer = ByteBufferAllocator().buffer(capacity: length + 16)
        buffer.writeString(String(length, radix: 16) + "\r\nevent: \(event)\ndata: ")
        buffer.writeBytes(json)
        buffer.writeString("\n\n\r\n")
        return buffer
    }

    /// A frame's event without its chunk's framing.
    package static func unchunked(_ chunk: ByteBuffer) -> ByteBuffer {
        let view = chunk.readableBytesView
        guard let end = view.firstIndex(of: UInt8(ascii: "\n")) else { return chunk }
        let start = end + 1 - view.startIndex
        return chunk.getSlice(at: chunk.readerIndex + start, length: chunk.readableBytes - start - 2) ?? chunk
    }

    // MARK: What an answer's event says

    /// The event for an answer just journaled: its journal entry's facts
    /// and why, then the request and the response (bodies cut to
    /// `bodyLimit`).
    package static func answer(_ decision: Decision, of request: RecordedRequest, sent status: Int, sequence: Int?, durationMicros: Int) -> (session: String, data: JSON)? {
        guard let entry = decision.entry else { return nil }
        let response = decision.response
        let forwarded = decision.delivery == .forward
        var object = JSONObject([
            ("sequence", sequence.map(JSON.int) ?? .null), ("time", .string(UTCCalendar.format(epoch: entry.time))), ("session", .string(entry.session)),
            ("method", .string(entry.method)), ("path", .string(entry.path)), ("query", entry.query.map(JSON.string) ?? .null),
            ("status", .int(status)), ("endpoint", response.endpointID.map(JSON.string) ?? .null),
            ("response", forwarded ? .null : response.responseName.map(JSON.string) ?? .null), ("duration_us", .int(durationMicros)),
            ("proxied", .bool(forwarded)), ("reason", response.reason.map(JSON.string) ?? .null),
            ("changes", .array(response.changes.map(JSON.string))),
        ])
        object["request"] = .object(message(headers: request.headers.map { header in
            // The admin token is never shown, not even to the admin.
            header.name.caseInsensitiveEquals("doppel-admin-token") ? (header.name, "***") : header
        }, body: request.body))
        if forwarded {
            object["answer"] = .object(JSONObject([("headers", .array([])), ("body", "(answered by the upstream)"), ("body_bytes", .int(0)), ("truncated", false)]))
        } else {
            var body = response.body
            var kind = "whole"
            switch decision.delivery {
            case .stream(let parts):
                kind = "stream"
                body = []
                for part in parts where body.count <= bodyLimit { body += part.bytes }
            case .fault(let fault): kind = "fault: \(fault)"
            default: break
            }
            var answer = message(headers: response.headers, body: body)
            answer["delivery"] = .string(kind)
            if decision.delay > 0 { answer["delay_ms"] = .int(Int(decision.delay * 1000)) }
            object["answer"] = .object(answer)
        }
        return (entry.session, .object(object))
    }

    /// Headers and body of a request or response; a body that is not UTF-8 is given as base64.
    private static func message(headers: [(name: String, value: String)], body: [UInt8]) -> JSONObject {
        let cut = body.count > bodyLimit
        let shown = cut ? Array(body.prefix(bodyLimit)) : body
        var object = JSONObject([("headers", .array(headers.map { .array([.string($0.name), .string($0.value)]) }))])
        // Text, allowing for a character the cut split (up to three bytes of it).
        if let text = (0...(cut ? 3 : 0)).lazy.compactMap({ String(validating: shown.dropLast($0), as: UTF8.self) }).first {
            object["body"] = .string(text)
        } else {
            object["body_base64"] = .string(Data(shown).base64EncodedString())
        }
        object["body_bytes"] = .int(body.count)
        object["truncated"] = .bool(cut)
        return object
    }
}
