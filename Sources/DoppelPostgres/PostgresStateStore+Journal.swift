import DoppelCore
import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO

/// The shared journal's buffered writes, and the background work: polling for changes, the heartbeat, the sweep of idle sessions.
extension PostgresStateStore {
    // MARK: Journal

    package func append(_ decision: Decision, status: Int, durationMicros: Int, engine: MockEngine) -> Int? {
        guard let entry = decision.entry else { return nil }
        let row = Row(
            time: entry.time, session: entry.session, method: entry.method, path: entry.path, query: entry.query, status: status,
            endpointID: entry.endpointID, responseName: entry.responseName, durationMicros: durationMicros, proxied: decision.forwards,
            reason: entry.reason, changes: entry.changes, completed: engine.realNow)
        buffer.withLock { $0.add(row) }
        // Numbered by the database when the buffer is written.
        return nil
    }

    /// A message of a stream or a callback's attempt, written to the shared journal with the answers.
    package func keep(_ entry: Journal.Entry) {
        var row = Row(
            time: entry.time, session: entry.session, method: entry.method, path: entry.path, query: entry.query, status: entry.status,
            endpointID: entry.endpointID, responseName: entry.responseName, durationMicros: entry.durationMicros, proxied: false,
            reason: entry.why, changes: entry.changes, completed: engine.realNow)
        row.message = entry.message
        row.sent = entry.sent.isEmpty ? "" : JSONWriter.encodeString(.array(entry.sent.map(JSON.string)))
        buffer.withLock { $0.add(row) }
    }

    /// `text` as PostgreSQL's `text` can hold it: U+0000, which it refuses
    /// (an `invalid byte sequence` that would fail the whole statement),
    /// becomes U+FFFD. Every client-given text Doppel writes goes through
    /// here: a path, a query, a JSON key named in a reason, a state path.
    static func storable(_ text: String) -> String {
        guard text.utf8.contains(0) else { return text }
        return String(text.unicodeScalars.map { $0.value == 0 ? "\u{FFFD}" : Character($0) })
    }

    static func storable(_ text: String?) -> String? {
        text.map { storable($0) }
    }

    /// Writes the buffered entries in one statement. If the database cannot
    /// be reached they go back to the buffer; if it refuses the statement
    /// (something in a row it cannot store), each row is written on its own
    /// and the ones it still refuses are dropped and counted, so one bad
    /// row never holds up the rows behind it.
    func flush() async throws {
        let rows = buffer.withLock { buffer -> [Row] in
            defer {
                buffer.rows.removeAll(keepingCapacity: true)
                buffer.textBytes = 0
            }
            return buffer.rows
        }
        guard !rows.isEmpty else { return }
        do {
            try await insert(rows)
        } catch let error as PSQLError where error.serverInfo != nil {
            var refused: (count: Int, error: any Error) = (0, error)
            for (index, row) in rows.enumerated() {
                do {
                    try await insert([row])
                } catch let error as PSQLError where error.serverInfo != nil {
                    refused = (refused.count + 1, error)
                } catch {
                    if refused.count > 0 { note(refused: refused.count, refused.error) }
                    requeue(Array(rows[index...]))
                    throw error
                }
            }
            if refused.count > 0 { note(refused: refused.count, refused.error) }
        } catch {
            requeue(rows)
            throw error
        }
    }

    /// Rows that could not be written (the database could not be reached), back in
    /// front of what arrived meanwhile, as far as the bounds allow.
    private func requeue(_ rows: [Row]) {
        buffer.withLock { buffer in
            let newer = buffer.rows
            buffer.rows.removeAll(keepingCapacity: true)
            buffer.textBytes = 0
            for row in rows + newer { buffer.add(row) }
        }
    }

    /// Journal rows the database refused: dropped, counted, and said in health.
    private func note(refused count: Int, _ error: any Error) {
        buffer.withLock { $0.dropped += count }
        status.withLock { $0.lastError = "journal entries refused by the database: \(Self.describe(error))" }
        logger.warning("journal entries refused by the database and dropped", metadata: ["count": "\(count)", "error": "\(Self.describe(error))"])
    }

    private func insert(_ rows: [Row]) async throws {
        try await client.committed(
            """
            INSERT INTO doppel_journal (namespace, time, session, method, path, query, status, endpoint, response, duration_us, proxied,
                                        reason, changes, completed, message, sent)
            SELECT \(options.namespace), t, s, m, p, NULLIF(q, ''), st, NULLIF(e, ''), NULLIF(r, ''), d, x, NULLIF(w, ''),
                   CASE WHEN c = '' THEN '{}'::text[] ELSE string_to_array(c, E'\\n') END, a, CASE WHEN g THEN msg END, sn
            FROM unnest(\(rows.map(\.time))::float8[], \(rows.map { Self.storable($0.session) })::text[], \(rows.map { Self.storable($0.method) })::text[],
                        \(rows.map { Self.storable($0.path) })::text[], \(rows.map { Self.storable($0.query ?? "") })::text[], \(rows.map(\.status))::int8[],
                        \(rows.map { Self.storable($0.endpointID ?? "") })::text[], \(rows.map { Self.storable($0.responseName ?? "") })::text[],
                        \(rows.map(\.durationMicros))::int8[], \(rows.map(\.proxied))::bool[], \(rows.map { Self.storable($0.reason?.text ?? "") })::text[],
                        \(rows.map { Self.storable($0.changes.joined(separator: "\n")) })::text[], \(rows.map(\.completed))::float8[],
                        \(rows.map { $0.message != nil })::bool[], \(rows.map { Self.storable($0.message ?? "") })::text[],
                        \(rows.map { Self.storable($0.sent) })::text[])
                 AS j(t, s, m, p, q, st, e, r, d, x, w, c, a, g, msg, sn)
            """, logger: logger)
    }

    // MARK: Background

    /// Every `pollInterval`: the journal written, the epoch read (and the
    /// override set with it when it moved), the replica's heartbeat and
    /// acknowledgement; every few seconds, evictions and journal retention.
    func poll() async {
        var lastSweep = SessionStore.uptime()
        while !Task.isCancelled {
            do {
                try await pollTimed()
                if SessionStore.uptime() - lastSweep > 5 {
                    lastSweep = SessionStore.uptime()
                    try await Deadline.run(max(2, options.timeout)) {
                        try await self.sweep()
                        try await self.sweepPushes()
                    }
                }
            } catch {
                status.withLock { $0.lastError = Self.describe(error) }
            }
            try? await Task.sleep(for: .seconds(Self.pollInterval))
        }
    }

    /// One poll, bounded in time. What it learned is as fresh as the poll's
    /// start, when it read the epoch: `lastPoll` is that moment, not its end.
    func pollTimed() async throws {
        let started = SessionStore.uptime()
        try await Deadline.run(max(0.5, options.timeout)) { try await self.pollOnce() }
        status.withLock { $0.lastPoll = started }
    }

    private func pollOnce() async throws {
        let namespace = options.namespace
        var epoch: Int64 = 0
        try await client.reading("SELECT epoch FROM doppel_namespaces WHERE namespace = \(namespace)", logger: logger) { rows in
            for try await found in rows.decode(Int64.self) { epoch = found }
        }
        // The journal is written after the epoch is read, so the epoch this
        // replica acknowledges was raised before the write: every entry
        // buffered before a barrier began is in the table once it ends.
        // (Written first, an entry buffered between the write and the read
        // would be acknowledged unwritten.)
        do {
            try await flush()
        } catch {
            // The journal waits for the next poll; the replica still says it
            // is alive, acknowledging only the epoch it had (its journal is
            // not all written), so no barrier passes it by.
            try await heartbeat(acked: status.withLock { $0.epoch })
            throw error
        }
        if epoch != status.withLock({ $0.epoch }) {
            var overridden = Set<String>()
            try await client.reading("SELECT id FROM doppel_sessions WHERE namespace = \(namespace) AND has_overrides", logger: logger) { rows in
                for try await id in rows.decode(String.self) { overridden.insert(id) }
            }
            status.withLock {
                $0.overridden = overridden
                $0.epoch = epoch
            }
        }
        try await heartbeat(acked: epoch)
    }

    /// Says this replica is alive, having acknowledged `epoch`.
    /// It says too whether it follows events, and learns whether another does.
    private func heartbeat(acked epoch: Int64) async throws {
        let follows = link.withLock { $0?.followsEvents() } ?? false
        let live = "\(Self.liveFor) seconds"
        var others = 0
        try await client.reading(
            """
            WITH beat AS (
                INSERT INTO doppel_replicas (namespace, replica, heartbeat, acked, follows)
                VALUES (\(options.namespace), \(replica), now(), \(epoch), \(follows))
                ON CONFLICT (namespace, replica) DO UPDATE SET heartbeat = now(), acked = EXCLUDED.acked, follows = EXCLUDED.follows)
            SELECT count(*)::bigint FROM doppel_replicas WHERE namespace = \(options.namespace) AND replica <> \(replica) AND follows
                AND heartbeat > now() - \(live)::interval
            """, logger: logger
        ) { rows in
            for try await count in rows.decode(Int.self) { others = count }
        }
        status.withLock { $0.othersFollow = others > 0 }
    }

    /// Evicts sessions by the in-memory rules (idle, room, state budget),
    /// bounds the journal, and forgets replicas long gone. Each eviction
    /// deletes its rows and adds them to the namespace's count in one
    /// statement, so `GET /__doppel/sessions` never lists the sessions left
    /// with a count that misses the ones just evicted.
    private func sweep() async throws {
        let namespace = options.namespace
        let sessions = engine.sessions
        if let idle = sessions.idleLimit {
            try await client.run(
                """
                WITH gone AS (
                    DELETE FROM doppel_sessions WHERE namespace = \(namespace) AND id <> 'default' AND data IS NOT NULL
                    AND last_used < now() - make_interval(secs => \(idle)) RETURNING 1)
                UPDATE doppel_namespaces SET evicted_idle = evicted_idle + (SELECT count(*) FROM gone)
                WHERE namespace = \(namespace) AND EXISTS (SELECT 1 FROM gone)
                """, logger: logger)
        }
        try await client.run(
            """
            WITH gone AS (
                DELETE FROM doppel_sessions WHERE namespace = \(namespace) AND id IN (
                    SELECT id FROM doppel_sessions WHERE namespace = \(namespace) AND id <> 'default' AND data IS NOT NULL
                    ORDER BY last_used DESC OFFSET \(max(0, sessions.limit - 1))) RETURNING 1)
            UPDATE doppel_namespaces SET evicted_room = evicted_room + (SELECT count(*) FROM gone)
            WHERE namespace = \(namespace) AND EXISTS (SELECT 1 FROM gone)
            """, logger: logger)
        try await client.run(
            """
            WITH gone AS (
                DELETE FROM doppel_sessions WHERE namespace = \(namespace) AND id IN (
                    SELECT id FROM (SELECT id, sum(size) OVER (ORDER BY last_used DESC, id) AS running FROM doppel_sessions
                                    WHERE namespace = \(namespace) AND id <> 'default' AND data IS NOT NULL) AS t
                    WHERE running > \(sessions.budget.limit)) RETURNING 1)
            UPDATE doppel_namespaces SET evicted_state = evicted_state + (SELECT count(*) FROM gone)
            WHERE namespace = \(namespace) AND EXISTS (SELECT 1 FROM gone)
            """, logger: logger)
        try await client.run(
            """
            DELETE FROM doppel_journal WHERE namespace = \(namespace) AND seq <= (
                SELECT seq FROM doppel_journal WHERE namespace = \(namespace) ORDER BY seq DESC OFFSET \(engine.journal.capacity) LIMIT 1)
            """, logger: logger)
        try await client.run("DELETE FROM doppel_replicas WHERE namespace = \(namespace) AND heartbeat < now() - interval '1 hour'", logger: logger)
    }

    /// Raises the namespace's epoch and waits until every live replica has
    /// written its journal and read the override set since: after it, the
    /// journal holds every answer given before it began, and no replica
    /// answers from an override set older than it.
    package func barrier() async throws {
        let namespace = options.namespace
        let epoch = try await client.committing(logger: logger) { connection in
            var epoch: Int64 = 0
            for try await found in try await connection.query(
                "UPDATE doppel_namespaces SET epoch = epoch + 1 WHERE namespace = \(namespace) RETURNING epoch", logger: logger
            ).decode(Int64.self) {
                epoch = found
            }
            return epoch
        }
        let live = "\(Self.liveFor) seconds"
        while true {
            var waiting = 0
            try await client.reading(
                """
                SELECT count(*) FROM doppel_replicas WHERE namespace = \(namespace) AND acked < \(epoch)
                AND heartbeat > now() - \(live)::interval
                """, logger: logger
            ) { rows in
                for try await found in rows.decode(Int.self) { waiting = found }
            }
            if waiting == 0 { return }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
