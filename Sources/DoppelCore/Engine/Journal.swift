/// Stage 7: a bounded record of the requests served, oldest dropped first.
public final class Journal: Sendable {
    /// One served request.
    public struct Entry: Sendable {
        /// Increasing number of the request since the server started.
        public internal(set) var sequence: Int
        /// When it arrived, on the session's clock (seconds since 1970).
        public let time: Double
        /// The session that sent it (`default` without `Doppel-Session`).
        public let session: String
        /// The request's method.
        public let method: String
        /// The request's path, percent-encoded as sent.
        public let path: String
        /// The request's query string, without `?`.
        public let query: String?
        /// The status sent.
        public let status: Int
        /// The endpoint that took the request; nil when none did.
        public let endpointID: String?
        /// The contract response chosen; nil for Doppel's own problems and upstream answers.
        public let responseName: String?
        /// Time spent answering, in microseconds.
        public let durationMicros: Int
        /// Answered by the upstream server (`doppel serve --proxy`), not the contract.
        public var proxied = false
        /// Why the response was chosen, as facts (`reason` is their text).
        package var why: Reason?
        /// Why the response was chosen: the `when` that held, the limit
        /// reached, the override or `Prefer` in force, the problem.
        public var reason: String? { why?.text }
        /// The state paths the request changed (`stories_used`, `stories.s_1`).
        public var changes: [String] = []
        /// What a WebSocket's or a callback's entry carries; nil for every
        /// other entry, so an HTTP entry is as small to copy and keep as before.
        var texts: Texts? = nil

        final class Texts: Sendable {
            let message: String?
            let sent: [String]

            init(message: String?, sent: [String]) {
                self.message = message
                self.sent = sent
            }
        }

        /// A WebSocket entry's message from the client (`RECEIVE`), or a callback's body, at most `maximumMessage` bytes.
        public var message: String? {
            get { texts?.message }
            set { texts = newValue == nil && sent.isEmpty ? nil : Texts(message: newValue, sent: sent) }
        }
        /// The messages a WebSocket entry sent to its socket, at most `maximumSent` of `maximumMessage` bytes.
        public var sent: [String] {
            get { texts?.sent ?? [] }
            set { texts = message == nil && newValue.isEmpty ? nil : Texts(message: message, sent: newValue) }
        }

        /// The methods of entries that carry a message: a WebSocket's message
        /// taken, messages sent, the socket closed; a callback Doppel made (its body as `message`).
        public static let socketMethods: Set<String> = ["RECEIVE", "SEND", "CLOSE", "CALLBACK"]

        /// The entry as JSON, for the admin API.
        public var json: JSON {
            .object(
                JSONObject(
                    [
                        ("sequence", .int(sequence)), ("time", .string(UTCCalendar.format(epoch: time))), ("session", .string(session)),
                        ("method", .string(method)), ("path", .string(path)), ("query", query.map { .string($0) } ?? .null),
                        ("status", .int(status)), ("endpoint", endpointID.map { .string($0) } ?? .null),
                        ("response", responseName.map { .string($0) } ?? .null), ("duration_us", .int(durationMicros)),
                        ("proxied", .bool(proxied)), ("reason", reason.map(JSON.string) ?? .null), ("changes", .array(changes.map(JSON.string))),
                    ]
                        + (Self.socketMethods.contains(method)
                            ? [("message", message.map(JSON.string) ?? .null), ("sent", .array(sent.map(JSON.string)))] : [])))
        }
    }

    /// An entry as the ring keeps it: its number, and every other field
    /// packed into one array of bytes (`Packing`). A ring of 10,000 `Entry`
    /// values held 370–500 bytes each after a load (the struct, and its path,
    /// changes and reason's text on the heap apart); packed, an entry is one
    /// allocation the size of its text plus a few bytes.
    private struct Slot {
        var sequence: Int
        var bytes: [UInt8]
    }

    private struct Ring {
        var entries: [Slot?]
        var next = 0
        var count = 0
        var sequence = 0
        /// The bytes the held entries take packed.
        var textBytes = 0
        /// Requests per session, then endpoint and status, since the last
        /// clear; kept apart from the ring so counts survive its bound, and
        /// by session so an evicted session's counts go in one step.
        var tally: [String: [Tally.Outcome: Int]] = [:]
    }

    /// How many requests each session, endpoint and status combination received.
    public struct Tally: Sendable {
        /// One combination counted.
        public struct Key: Hashable, Sendable {
            /// The session that sent it (`default` without `Doppel-Session`).
            public let session: String
            /// The endpoint that took the request; nil when none did.
            public let endpointID: String?
            /// The status sent.
            public let status: Int
        }

        /// What one session's request ended in.
        struct Outcome: Hashable, Sendable {
            let endpointID: String?
            let status: Int
        }

        /// Requests per session, endpoint and status.
        public let counts: [Key: Int]

        /// The total over keys that satisfy `include`.
        public func count(where include: (Key) -> Bool) -> Int {
            counts.reduce(0) { $0 + (include($1.key) ? $1.value : 0) }
        }
    }

    /// The most entries kept.
    public let capacity: Int
    /// The most bytes the held entries may take packed between them (their paths, queries,
    /// reasons, changes and messages, and a few dozen bytes each besides): 10,000 entries of
    /// 32 KiB targets would otherwise hold 320 MB.
    /// Past it the oldest entries go first, as past `capacity`.
    package static let maximumTextBytes = 32 << 20
    private let ring: Locked<Ring>

    /// The most entries a journal keeps by default (`--journal-size`).
    public static let defaultCapacity = 10_000

    /// A journal that keeps the newest `capacity` entries.
    public init(capacity: Int = Journal.defaultCapacity) {
        self.capacity = max(1, capacity)
        self.ring = Locked(Ring(entries: Array(repeating: nil, count: max(1, capacity))))
    }

    /// Records a request; returns its sequence number.
    @discardableResult
    package func record(
        time: Double, session: String, method: String, path: String, query: String?, status: Int,
        endpointID: String?, responseName: String?, durationMicros: Int, proxied: Bool = false, sequence: Int? = nil,
        reason: Reason? = nil, changes: [String] = [], message: String? = nil, sent: [String] = []
    ) -> Int {
        // Packed before the lock, which every event loop takes: inside it, only the number and the counts.
        let bytes = Packing.pack(
            time: time, session: session, method: method, path: path, query: query, status: status, endpointID: endpointID,
            responseName: responseName, durationMicros: durationMicros, proxied: proxied, why: reason, changes: changes,
            message: message.map { Self.clip($0) }, sent: sent.isEmpty ? [] : sent.prefix(Self.maximumSent).map { Self.clip($0) })
        let outcome = Tally.Outcome(endpointID: endpointID, status: status)
        var displaced: Slot?
        var dropped: [Slot] = []
        return ring.withLock { ring in
            // A shared store's entries keep the numbers the database gave them.
            ring.sequence = sequence ?? ring.sequence + 1
            // The entry it replaces is released after the lock.
            swap(&ring.entries[ring.next], &displaced)
            if let displaced { ring.textBytes -= displaced.bytes.count }
            ring.entries[ring.next] = Slot(sequence: ring.sequence, bytes: bytes)
            ring.next = (ring.next + 1) % capacity
            ring.count = min(ring.count + 1, capacity)
            ring.textBytes += bytes.count
            // Within the byte budget: the oldest go (the newest always stays).
            while ring.textBytes > Self.maximumTextBytes, ring.count > 1 {
                let oldest = (ring.next - ring.count + capacity) % capacity
                if let old = ring.entries[oldest] {
                    ring.textBytes -= old.bytes.count
                    dropped.append(old)
                }
                ring.entries[oldest] = nil
                ring.count -= 1
            }
            ring.tally[session, default: [:]][outcome, default: 0] += 1
            return ring.sequence
        }
    }

    /// The most bytes of a WebSocket message an entry keeps.
    package static let maximumMessage = 4096
    /// The most sent messages an entry lists.
    package static let maximumSent = 16

    /// `text` cut to `maximumMessage` bytes (at a character), marked where cut.
    package static func clip(_ text: String, to bytes: Int = maximumMessage) -> String {
        guard text.utf8.count > bytes else { return text }
        var end = text.utf8.index(text.utf8.startIndex, offsetBy: bytes - 3)
        while end > text.startIndex, !text.unicodeScalars.indices.contains(end) { end = text.utf8.index(before: end) }
        return String(text[..<end]) + "…"
    }

    /// The entries held, oldest first.
    public var entries: [Entry] {
        // The slots are taken under the lock, and unpacked after it.
        let slots = ring.withLock { ring in
            let start = (ring.next - ring.count + capacity) % capacity
            return (0..<ring.count).compactMap { ring.entries[(start + $0) % capacity] }
        }
        return slots.map { Packing.unpack($0.bytes, sequence: $0.sequence) }
    }

    /// How many entries are held.
    public var count: Int { ring.withLock { $0.count } }

    /// Counts since the last clear, beyond the entries the ring still holds.
    public var tally: Tally {
        ring.withLock { ring in
            var counts: [Tally.Key: Int] = [:]
            for (session, outcomes) in ring.tally {
                for (outcome, count) in outcomes {
                    counts[Tally.Key(session: session, endpointID: outcome.endpointID, status: outcome.status)] = count
                }
            }
            return Tally(counts: counts)
        }
    }

    /// Drops a session's counts (when the session is evicted). Its entries stay in the ring until overwritten.
    package func forget(session: String) {
        ring.withLock { _ = $0.tally.removeValue(forKey: session) }
    }

    /// The session name recorded for requests whose `Doppel-Session` was not a valid id.
    public static let invalidSession = "(invalid)"

    /// Drops every entry and count.
    public func clear() {
        ring.withLock { ring in
            ring.entries = Array(repeating: nil, count: capacity)
            ring.next = 0
            ring.count = 0
            ring.textBytes = 0
            ring.tally = [:]
        }
    }
}
