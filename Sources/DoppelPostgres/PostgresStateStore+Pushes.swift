import DoppelCore
import Foundation
import Logging
import PostgresNIO

/// Pushes and events across replicas. A push made on one replica (an
/// answer's `push`, a socket rule's) reaches every replica's sockets, this
/// one's included, through PostgreSQL's `LISTEN`/`NOTIFY`: each replica
/// sends its batches one after another from one task, so they are
/// committed in the order it made them, and PostgreSQL hands every
/// listener the notifications of all replicas once each, in the order they
/// were committed. So every socket of a session, on whichever replica,
/// gets the session's pushes in one order, the same for all. A replica
/// delivers its own batches when their notification comes back to it
/// (`OwnPushes`), and at once when it cannot wait for that (not listening,
/// the batch not sent or lost): those then keep this replica's order only.
/// Chosen over a table the replicas poll: a poll adds its interval
/// to every push and a query to every replica's every interval, and a
/// sequence read by polling skips rows committed out of their number's
/// order. The price: a notification is not kept, so a replica whose
/// listening connection dropped misses what was sent until it listens
/// again (health's `replica_messages.listening` says when it does not).
/// `docs/shared-state.md` says so. Events for `/__doppel/events` and the
/// dashboard travel the same way, sent only while another replica follows
/// them (each replica says so with its heartbeat).
extension PostgresStateStore {
    static let pushChannel = "doppel_pushes"
    /// `NOTIFY`'s payload is at most 8,000 bytes: a larger batch waits in
    /// `doppel_pushes`, and its notification names its row.
    static let maximumInlinePush = 7_900
    /// Batches waiting to be sent, and their bytes; past either a batch is lost and counted (health's `replica_messages.lost`).
    static let maximumPushesWaiting = 10_000
    package static let maximumMessageBytesWaiting = 64 << 20
    /// How long a large batch's row is kept for the replicas to read it.
    static let pushesKeptFor = 60

    @discardableResult
    package func broadcast(_ message: ReplicaMessage) -> Bool {
        let fields: [(String, JSON)] = [("namespace", .string(options.namespace)), ("replica", .string(replica))]
        switch message {
        case .pushes(let pushes, let session, let from):
            guard !pushes.isEmpty else { return true }
            let batch = fields + [("session", .string(session)), ("from", .string(from)), ("pushes", .array(pushes.map(Self.json)))]
            let deliver = link.withLock { $0?.deliver }
            // Numbered and queued under one lock, so the batches are sent in their numbers' order (which `OwnPushes` counts on).
            own.withLock { own in
                // Delivered here once its notification comes back, or at once when none will.
                let (id, awaited) = own.add(message, deliver: deliver)
                guard awaited else {
                    enqueue(batch, echo: nil)
                    return
                }
                if !enqueue(batch + [("echo", .int(id))], echo: id) { own.ready(upTo: id, only: true, deliver: deliver) }
            }
            return true
        case .event(let event, let session, let json):
            enqueue(
                fields + [
                    ("event", .string(event)), ("session", session.map(JSON.string) ?? .null),
                    ("json", .string(String(decoding: json, as: UTF8.self))),
                ], echo: nil)
            return false
        }
    }

    /// Queues a message for the other replicas; false when it is lost (counted): too many bytes or messages wait.
    @discardableResult
    private func enqueue(_ fields: [(String, JSON)], echo: Int?) -> Bool {
        let payload = JSONWriter.encodeString(.object(JSONObject(fields)))
        let size = payload.utf8.count
        let room = status.withLock { status in
            guard status.messageBytesWaiting + size <= options.messageBytesWaiting else {
                status.messagesLost += 1
                return false
            }
            status.messageBytesWaiting += size
            return true
        }
        guard room else { return false }
        if case .dropped = outgoing.continuation.yield(Outgoing(payload: payload, echo: echo)) {
            status.withLock {
                $0.messageBytesWaiting -= size
                $0.messagesLost += 1
            }
            return false
        }
        return true
    }

    /// This replica's own batch `echo` will not come back: delivered here now, after those made before it.
    private func settle(_ echo: Int?) {
        guard let echo else { return }
        deliverOwn(upTo: echo, only: true)
    }

    /// Delivers this replica's own batches up to `echo` (only that one, when `only`, once those before it are) to its sockets.
    private func deliverOwn(upTo echo: Int, only: Bool, listening: Bool? = nil) {
        let deliver = link.withLock { $0?.deliver }
        own.withLock {
            if let listening { $0.listening = listening }
            $0.ready(upTo: echo, only: only, deliver: deliver)
        }
    }

    package func receive(_ deliver: @escaping @Sendable (ReplicaMessage) -> Void, followsEvents: @escaping @Sendable () -> Bool) {
        link.withLock { $0 = (deliver, followsEvents) }
    }

    package var othersFollowEvents: Bool { status.withLock { $0.othersFollow } }

    /// Sends the batches made here, one after another, until the store stops.
    func sendPushes() async {
        for await message in outgoing.stream {
            let payload = message.payload
            do {
                try await Deadline.run(max(1, options.timeout)) { try await self.notify(payload, echo: message.echo) }
                status.withLock {
                    $0.messageBytesWaiting -= payload.utf8.count
                    $0.messagesSent += 1
                }
            } catch {
                status.withLock {
                    $0.messageBytesWaiting -= payload.utf8.count
                    $0.messagesLost += 1
                    $0.lastError = "a push could not be sent to the other replicas: \(Self.describe(error))"
                }
                // (Sent after all, its notification would come back too: it is then ignored, being delivered.)
                settle(message.echo)
            }
        }
    }

    private func notify(_ payload: String, echo: Int?) async throws {
        if payload.utf8.count <= Self.maximumInlinePush {
            try await client.committed("SELECT pg_notify(\(Self.pushChannel), \(payload))", logger: logger)
            return
        }
        // The row and its notification in one statement, so one transaction: the notification is sent when the row is there.
        try await client.committed(
            """
            WITH kept AS (INSERT INTO doppel_pushes (payload) VALUES (\(payload)) RETURNING id)
            SELECT pg_notify(\(Self.pushChannel), json_build_object(
                'row', id, 'namespace', \(options.namespace)::text, 'replica', \(replica)::text, 'echo', \(echo)::bigint)::text) FROM kept
            """, logger: logger)
    }

    /// Listens for the other replicas' batches on a connection of its own,
    /// listening again after a lost connection, until the store stops.
    func listenForPushes() async {
        while !Task.isCancelled {
            do {
                try await client.leasing(logger: logger) { connection in
                    try await connection.listen(on: Self.pushChannel) { notifications in
                        self.status.withLock { $0.listening = true }
                        self.own.withLock { $0.listening = true }
                        for try await notification in notifications { await self.received(notification.payload) }
                    }
                }
            } catch {
                if !Task.isCancelled {
                    status.withLock { $0.lastError = "listening for the other replicas' pushes: \(Self.describe(error))" }
                }
            }
            status.withLock { $0.listening = false }
            // What this replica sent and has not heard back will not come back on a new connection: delivered here now.
            deliverOwn(upTo: .max, only: false, listening: false)
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    private func received(_ payload: String) async {
        guard var batch = try? JSONReader.parse(Array(payload.utf8)), batch["namespace"]?.stringValue == options.namespace else { return }
        if batch["replica"]?.stringValue == replica {
            // One of this replica's own batches, back in the order every replica gets it (a large one's row need not be read).
            if let echo = batch["echo"]?.intValue { deliverOwn(upTo: echo, only: false) }
            return
        }
        if let row = batch["row"]?.intValue {
            var text: String?
            do {
                try await client.reading("SELECT payload FROM doppel_pushes WHERE id = \(row)", logger: logger) { rows in
                    for try await found in rows.decode(String.self) { text = found }
                }
            } catch {
                status.withLock {
                    $0.messagesLost += 1
                    $0.lastError = "a large batch of pushes could not be read: \(Self.describe(error))"
                }
                return
            }
            // Gone (swept after `pushesKeptFor`, read that late) or unreadable: lost, and counted.
            guard let text, let read = try? JSONReader.parse(Array(text.utf8)) else {
                status.withLock { $0.messagesLost += 1 }
                return
            }
            batch = read
        }
        guard batch["replica"]?.stringValue != replica, let deliver = link.withLock({ $0?.deliver }) else { return }
        if let event = batch["event"]?.stringValue, let json = batch["json"]?.stringValue {
            status.withLock { $0.messagesReceived += 1 }
            deliver(.event(event, session: batch["session"]?.stringValue, json: Array(json.utf8)))
            return
        }
        guard let session = batch["session"]?.stringValue, let from = batch["from"]?.stringValue,
            let pushes = batch["pushes"]?.arrayValue?.compactMap(Self.push)
        else { return }
        status.withLock { $0.messagesReceived += 1 }
        deliver(.pushes(pushes, session: session, from: from))
    }

    /// Deletes large batches' rows past their time.
    func sweepPushes() async throws {
        try await client.run("DELETE FROM doppel_pushes WHERE at < now() - make_interval(secs => \(Self.pushesKeptFor))", logger: logger)
    }

    private static func json(_ push: RenderedPush) -> JSON {
        .object(
            JSONObject([
                ("socket", push.socket.map(JSON.string) ?? .null), ("text", .string(push.text)), ("delay", .double(push.delay)),
                ("subscription", push.subscription.map(JSON.string) ?? .null),
            ]))
    }

    private static func push(_ json: JSON) -> RenderedPush? {
        guard let text = json["text"]?.stringValue else { return nil }
        return RenderedPush(
            socket: json["socket"]?.stringValue, text: text, delay: json["delay"]?.numberValue ?? 0, subscription: json["subscription"]?.stringValue)
    }
}

/// A message on its way to the other replicas: its notification's text,
/// and for this replica's own push batch the number it comes back under.
struct Outgoing: Sendable {
    let payload: String
    let echo: Int?
}

/// This replica's own push batches, in the order they were made, until
/// each is delivered to the sockets held here: when its notification
/// comes back (it is then where PostgreSQL put it among every replica's),
/// or, when none will come, at once after those made before it. At most
/// `PostgresStateStore.maximumPushesWaiting` wait; past that the oldest is
/// delivered without waiting.
struct OwnPushes {
    /// Whether this replica listens, so its notifications come back to it.
    var listening = false
    private var next = 0
    /// In the order made (so by number); those before `head` are delivered.
    private var waiting: [(id: Int, message: ReplicaMessage, ready: Bool)] = []
    private var head = 0

    /// Adds a batch made here: its number, and whether its notification is awaited.
    mutating func add(_ message: ReplicaMessage, deliver: (@Sendable (ReplicaMessage) -> Void)?) -> (Int, Bool) {
        next += 1
        waiting.append((next, message, !listening))
        if waiting.count - head > PostgresStateStore.maximumPushesWaiting { waiting[head].ready = true }
        drain(deliver)
        return (next, listening)
    }

    /// Batches up to `id` (only `id` itself when `only`) come back or will
    /// not: delivered, with every ready one before the first still awaited.
    /// (One batch's notification coming back means every earlier one's did
    /// or will not: a replica's notifications are committed in order.)
    mutating func ready(upTo id: Int, only: Bool, deliver: (@Sendable (ReplicaMessage) -> Void)?) {
        for index in waiting.indices.dropFirst(head) {
            guard waiting[index].id <= id else { break }
            if !only || waiting[index].id == id { waiting[index].ready = true }
        }
        drain(deliver)
    }

    private mutating func drain(_ deliver: (@Sendable (ReplicaMessage) -> Void)?) {
        while head < waiting.count, waiting[head].ready {
            deliver?(waiting[head].message)
            head += 1
        }
        // Delivered batches are dropped once they are half the array, so each is moved at most once more.
        if head > 0, head * 2 >= waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
    }
}
