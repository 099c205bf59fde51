import DoppelCore
import Foundation
import Logging
import PostgresNIO

/// Pushes and events across replicas. A push made on one replica (an
/// answer's `push`, a socket rule's) reaches the sockets that replica holds
/// at once, and the other replicas' through PostgreSQL's `LISTEN`/`NOTIFY`: each replica
/// sends its batches one after another from one task, so they are committed,
/// and so delivered, in the order it made them, and each listening replica
/// gets each once (PostgreSQL delivers a notification once to each
/// listener). Chosen over a table the replicas poll: a poll adds its interval
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

    package func broadcast(_ message: ReplicaMessage) {
        var fields: [(String, JSON)] = [("namespace", .string(options.namespace)), ("replica", .string(replica))]
        switch message {
        case .pushes(let pushes, let session, let from):
            guard !pushes.isEmpty else { return }
            fields += [("session", .string(session)), ("from", .string(from)), ("pushes", .array(pushes.map(Self.json)))]
        case .event(let event, let session, let json):
            fields += [
                ("event", .string(event)), ("session", session.map(JSON.string) ?? .null), ("json", .string(String(decoding: json, as: UTF8.self))),
            ]
        }
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
        guard room else { return }
        if case .dropped = outgoing.continuation.yield(payload) {
            status.withLock {
                $0.messageBytesWaiting -= size
                $0.messagesLost += 1
            }
        }
    }

    package func receive(_ deliver: @escaping @Sendable (ReplicaMessage) -> Void, followsEvents: @escaping @Sendable () -> Bool) {
        link.withLock { $0 = (deliver, followsEvents) }
    }

    package var othersFollowEvents: Bool { status.withLock { $0.othersFollow } }

    /// Sends the batches made here, one after another, until the store stops.
    func sendPushes() async {
        for await payload in outgoing.stream {
            do {
                try await Deadline.run(max(1, options.timeout)) { try await self.notify(payload) }
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
            }
        }
    }

    private func notify(_ payload: String) async throws {
        if payload.utf8.count <= Self.maximumInlinePush {
            try await client.query("SELECT pg_notify(\(Self.pushChannel), \(payload))", logger: logger)
            return
        }
        // The row and its notification in one statement, so one transaction: the notification is sent when the row is there.
        try await client.query(
            """
            WITH kept AS (INSERT INTO doppel_pushes (payload) VALUES (\(payload)) RETURNING id)
            SELECT pg_notify(\(Self.pushChannel), json_build_object('row', id, 'namespace', \(options.namespace)::text, 'replica', \(replica)::text)::text) FROM kept
            """, logger: logger)
    }

    /// Listens for the other replicas' batches on a connection of its own,
    /// listening again after a lost connection, until the store stops.
    func listenForPushes() async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.pushChannel) { notifications in
                        self.status.withLock { $0.listening = true }
                        for try await notification in notifications { await self.received(notification.payload) }
                    }
                }
            } catch {
                if !Task.isCancelled {
                    status.withLock { $0.lastError = "listening for the other replicas' pushes: \(Self.describe(error))" }
                }
            }
            status.withLock { $0.listening = false }
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    private func received(_ payload: String) async {
        guard var batch = try? JSONReader.parse(Array(payload.utf8)), batch["namespace"]?.stringValue == options.namespace,
            batch["replica"]?.stringValue != replica
        else { return }
        if let row = batch["row"]?.intValue {
            var text: String?
            do {
                for try await found in try await client.query("SELECT payload FROM doppel_pushes WHERE id = \(row)", logger: logger).decode(
                    String.self)
                {
                    text = found
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
        try await client.query("DELETE FROM doppel_pushes WHERE at < now() - make_interval(secs => \(Self.pushesKeptFor))", logger: logger)
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
