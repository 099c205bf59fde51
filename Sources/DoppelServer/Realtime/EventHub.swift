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
    package static let readerQueueLimit = 4 << 20
    /// The most bytes of events all readers together may have waiting
    /// (events on their way to an event loop included).
    package static let totalQueueLimit = 64 << 20
    /// The most bytes of a request's or response's body an event carries.
    package static let bodyLimit = 16 << 10
    /// Seconds between comments that keep a quiet stream open.
    package static let heartbeat = 15.0
    /// How long an event waits for others to go with it to its readers: a
    /// busy server writes each reader one batch every 10 ms rather than one
    /// write (and one wake-up of the reader) per answer.
    package static let batchDelay = TimeAmount.milliseconds(10)

    /// The readers of one event loop, and the events on their way to it.
    /// Events are handed to a loop in batches, one task per batch (at most
    /// `batchDelay` after its first event) rather than one per reader and
    /// event: a burst of answers costs each loop a task and each reader one
    /// write every 10 ms, however many answers and readers.
    ///
    /// A class, changed in place under the hub's lock: a struct in a
    /// dictionary is copied out and back by some paths, and its pending
    /// events with it, at every event.
    private final class Group: @unchecked Sendable {
        let loop: any EventLoop
        var readers: [ObjectIdentifier: (session: String?, reader: any Reader)] = [:]
        /// Readers of every session, and of each one session: whether an event has a reader here, at once.
        var everyone = 0
        var bySession: [String: Int] = [:]
        var pending: [(session: String?, frame: ByteBuffer)] = []
        var pendingBytes = 0
        var scheduled = false

        func wants(_ session: String?) -> Bool {
            everyone > 0 || (session == nil ? !readers.isEmpty : bySession[session!] != nil)
        }

        init(loop: any EventLoop) { self.loop = loop }

        func count(_ session: String?, _ change: Int) {
            guard let session else {
                everyone += change
                return
            }
            let now = bySession[session, default: 0] + change
            bySession[session] = now > 0 ? now : nil
        }
    }

    private let groups = Mutex<[ObjectIdentifier: Group]>([:])
    private let count = Atomic<Int>(0)
    /// Readers of every session: while there is one, every event is wanted, and no lock says so.
    private let everyone = Atomic<Int>(0)
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
            let key = ObjectIdentifier(reader.eventLoop)
            let group = groups[key] ?? Group(loop: reader.eventLoop)
            groups[key] = group
            group.readers[ObjectIdentifier(reader)] = (session, reader)
            group.count(session, 1)
            count.add(1, ordering: .relaxed)
            if session == nil { everyone.add(1, ordering: .relaxed) }
            return true
        }
    }

    /// Disconnects a reader (its stream ended, or it was dropped).
    package func unsubscribe(_ reader: any Reader) {
        groups.withLock { groups in
            if let group = groups[ObjectIdentifier(reader.eventLoop)], let gone = group.readers.removeValue(forKey: ObjectIdentifier(reader)) {
                group.count(gone.session, -1)
                count.subtract(1, ordering: .relaxed)
                if gone.session == nil { everyone.subtract(1, ordering: .relaxed) }
            }
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

    /// Whether a reader would take an event of `session` (nil: of every session).
    package func wants(session: String?) -> Bool {
        guard isObserved else { return false }
        if everyone.load(ordering: .relaxed) > 0 { return true }
        return groups.withLock { groups in groups.values.contains { $0.wants(session) } }
    }

    /// Sends an event to the readers of `session` (nil: to every reader).
    package func publish(_ event: String, session: String?, data: JSON) {
        publish(event, session: session, json: JSONWriter.encode(data))
    }

    /// As `publish(_:session:data:)`, with the data already JSON text.
    package func publish(_ event: String, session: String?, json: [UInt8]) {
        let frame = Self.frame(event, json: json)
        let size = frame.readableBytes
        let loops = groups.withLock { groups -> [any EventLoop] in
            var wake: [any EventLoop] = []
            for group in groups.values where group.wants(session) {
                // A loop so far behind that the total is spent misses the event;
                // its readers are then behind and are dropped when it catches up.
                guard account(size) else { continue }
                group.pending.append((session, frame))
                group.pendingBytes += size
                if !group.scheduled {
                    group.scheduled = true
                    wake.append(group.loop)
                }
            }
            return wake
        }
        for loop in loops {
            loop.scheduleTask(in: Self.batchDelay) { self.deliver(on: loop) }
        }
    }

    /// On `loop`: hands its readers the events that arrived for them since the last batch.
    private func deliver(on loop: any EventLoop) {
        let key = ObjectIdentifier(loop)
        guard
            let (pending, bytes, readers) = groups.withLock({
                groups -> ([(session: String?, frame: ByteBuffer)], Int, [(session: String?, reader: any Reader)])? in
                guard let group = groups[key] else { return nil }
                let taken = (group.pending, group.pendingBytes, Array(group.readers.values))
                // Room for as many as this batch had: the next grows without copying itself over and over.
                group.pending = []
                group.pending.reserveCapacity(taken.0.count)
                group.pendingBytes = 0
                group.scheduled = false
                return taken
            })
        else { return }
        _ = account(-bytes)
        // Each reader's list is made once per session, not once per reader.
        let all = pending.map(\.frame)
        var bySession: [String: [ByteBuffer]] = [:]
        for (session, reader) in readers {
            var frames = all
            if let session {
                if let made = bySession[session] {
                    frames = made
                } else {
                    frames = pending.compactMap { event in event.session == nil || event.session == session ? event.frame : nil }
                    bySession[session] = frames
                }
            }
            if !frames.isEmpty { reader.take(frames) }
        }
    }

    /// One Server-Sent Event (`event:` and one `data:` line: JSON has no
    /// raw line breaks), framed as an HTTP/1.1 chunk: made once, and written
    /// as it is to every reader (`unchunked` for an HTTP/1.0 reader).
    package static func frame(_ event: String, data: JSON) -> ByteBuffer {
        frame(event, json: JSONWriter.encode(data))
    }

    /// As `frame(_:data:)`, with the data already JSON text.
    package static func frame(_ event: String, json: [UInt8]) -> ByteBuffer {
        let length = event.utf8.count + json.count + 16
        var buffer = ByteBufferAllocator().buffer(capacity: length + 16)
        buffer.writeString(String(length, radix: 16) + "\r\nevent: \(event)\ndata: ")
        buffer.writeBytes(json)
        buffer.writeString("\n\n\r\n")
        return buffer
    }

    /// A comment line (`: TEXT`), which readers ignore, framed as a chunk like an event.
    package static func comment(_ text: String) -> ByteBuffer {
        let line = ": \(text)\n\n"
        return ByteBufferAllocator().buffer(string: String(line.utf8.count, radix: 16) + "\r\n" + line + "\r\n")
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
    /// `bodyLimit`), as JSON text. Written straight into bytes rather than
    /// built as a `JSON` value first: an answer's event is made once per
    /// answer while someone follows them all, and the tree cost as much as
    /// the writing (`Benchmarks/run.sh`, "with a dashboard following").
    package static func answer(
        _ decision: Decision, of request: RecordedRequest, sent status: Int, sequence: Int?,
        durationMicros: Int
    ) -> (session: String, json: [UInt8])? {
        guard let entry = decision.entry else { return nil }
        var out = EventWriter()
        out.number("sequence", sequence, first: true)
        out.string("time", UTCCalendar.format(epoch: entry.time))
        out.string("session", entry.session)
        out.string("method", entry.method)
        out.string("path", entry.path)
        out.string("query", entry.query)
        out.number("status", status)
        out.string("endpoint", entry.endpointID)
        out.string("response", entry.responseName)
        out.number("duration_us", durationMicros)
        out.raw("proxied", decision.forwards ? "true" : "false")
        out.string("reason", entry.reason?.text)
        out.key("changes")
        out.bytes.append(UInt8(ascii: "["))
        for (index, path) in entry.changes.enumerated() {
            if index > 0 { out.bytes.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(path, into: &out.bytes)
        }
        out.bytes.append(UInt8(ascii: "]"))
        out.key("request")
        // The admin token is never shown, not even to the admin.
        message(
            headers: request.headers.map { $0.name.caseInsensitiveEquals("doppel-admin-token") ? ($0.name, "***") : $0 }, body: request.body,
            into: &out)
        out.bytes.append(UInt8(ascii: "}"))
        out.key("answer")
        let kind: String
        var body: [UInt8] = []
        switch decision.delivery {
        case .forward:
            out.bytes.append(contentsOf: #"{"headers":[],"body":"(answered by the upstream)","body_bytes":0,"truncated":false"#.utf8)
            out.bytes.append(contentsOf: "}}".utf8)
            return (entry.session, out.bytes)
        case .whole(let response):
            kind = "whole"
            body = response.body
        case .stream:
            kind = "stream"
        case .fault(let response, let fault):
            kind = "fault: \(fault)"
            body = response.body
        }
        // A HEAD's answer is sent without its body.
        if request.method == "HEAD" {
            body = []
        } else if case .stream(_, let parts) = decision.delivery {
            for part in parts where body.count <= bodyLimit { body += part.bytes }
        }
        message(headers: decision.response?.headers ?? [], body: body, into: &out)
        out.string("delivery", kind)
        if decision.delay > 0 { out.number("delay_ms", Int(decision.delay * 1000)) }
        out.bytes.append(contentsOf: "}}".utf8)
        return (entry.session, out.bytes)
    }

    /// Headers and body of a request or response, an object left open; a
    /// body that is not UTF-8 is given as base64.
    private static func message(headers: [(name: String, value: String)], body: [UInt8], into out: inout EventWriter) {
        out.bytes.append(contentsOf: #"{"headers":["#.utf8)
        for (index, header) in headers.enumerated() {
            out.bytes.append(contentsOf: index == 0 ? "[".utf8 : ",[".utf8)
            JSONWriter.writeString(header.name, into: &out.bytes)
            out.bytes.append(UInt8(ascii: ","))
            JSONWriter.writeString(header.value, into: &out.bytes)
            out.bytes.append(UInt8(ascii: "]"))
        }
        out.bytes.append(UInt8(ascii: "]"))
        let preview = BodyPreview(body, limit: bodyLimit)
        if let text = preview.text {
            out.string("body", text)
        } else {
            out.string("body_base64", preview.base64 ?? "")
        }
        out.number("body_bytes", preview.bytes)
        out.raw("truncated", preview.truncated ? "true" : "false")
    }
}

/// JSON object members written as bytes, for `EventHub.answer`.
private struct EventWriter {
    var bytes: [UInt8] = {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(1024)
        return bytes
    }()

    mutating func key(_ name: StaticString, first: Bool = false) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(contentsOf: "\":".utf8)
    }

    mutating func string(_ name: StaticString, _ value: String?) {
        key(name)
        if let value { JSONWriter.writeString(value, into: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    mutating func number(_ name: StaticString, _ value: Int?, first: Bool = false) {
        key(name, first: first)
        bytes.append(contentsOf: (value.map(String.init) ?? "null").utf8)
    }

    mutating func raw(_ name: StaticString, _ text: StaticString) {
        key(name)
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
