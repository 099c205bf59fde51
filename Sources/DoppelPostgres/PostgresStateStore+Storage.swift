import DoppelCore
import PostgresNIO

/// The storage verbs the admin API's calls are answered with
/// (`StateStore`): the journal read and cleared, the sessions listed and
/// removed, and the store's health.
extension PostgresStateStore {
    package func clearJournal() async throws {
        try await client.committed("DELETE FROM doppel_journal WHERE namespace = \(options.namespace)", logger: logger)
    }

    package func removeAllSessions() async throws {
        copies.withLock { $0.forgetAll() }
        try await client.committed("DELETE FROM doppel_sessions WHERE namespace = \(options.namespace)", logger: logger)
    }

    /// The ids and scenarios of every replica's sessions, from the rows, and
    /// the namespace's evictions, read in one statement (one snapshot), so a
    /// sweep between two reads cannot list a session and count it evicted.
    package func storedSessions() async throws -> StoredSessions {
        var stored = StoredSessions()
        try await client.reading(
            """
            SELECT s.id, s.scenario, n.evicted_room, n.evicted_idle, n.evicted_state FROM doppel_namespaces n
            LEFT JOIN doppel_sessions s ON s.namespace = n.namespace AND s.data IS NOT NULL
            WHERE n.namespace = \(options.namespace) ORDER BY s.id
            """, logger: logger
        ) { rows in
            for try await (id, scenario, room, idle, state) in rows.decode((String?, String?, Int, Int, Int).self) {
                if let id { stored.sessions.append((id, scenario)) }
                (stored.evictedForRoom, stored.evictedIdle, stored.evictedForState) = (room, idle, state)
            }
        }
        return stored
    }

    /// The newest journal entries of every replica, as an in-memory journal,
    /// in the order their answers were completed (replicas write theirs in
    /// batches, so the rows' own order is the order they were written).
    package func journal(capacity: Int) async throws -> Journal {
        let journal = Journal(capacity: capacity)
        try await client.reading(
            """
            SELECT seq, time, session, method, path, query, status, endpoint, response, duration_us, proxied, reason, changes, message, sent FROM (
                SELECT * FROM doppel_journal WHERE namespace = \(options.namespace) ORDER BY seq DESC LIMIT \(capacity)) AS newest
            ORDER BY completed, seq
            """, logger: logger
        ) { rows in
            for try await (seq, time, session, method, path, query, status, endpoint, response, duration, proxied, reason, changes, message, sent)
                in rows.decode(
                    (Int, Double, String, String, String, String?, Int, String?, String?, Int, Bool, String?, [String], String?, String).self)
            {
                let sentList = sent.isEmpty ? [] : ((try? JSONReader.parse(Array(sent.utf8)))?.arrayValue ?? []).compactMap(\.stringValue)
                journal.record(
                    time: time, session: session, method: method, path: path, query: query, status: status, endpointID: endpoint,
                    responseName: response, durationMicros: duration, proxied: proxied, sequence: seq, reason: reason.map { Reason($0) },
                    changes: changes,
                    message: message, sent: sentList)
            }
        }
        return journal
    }

    package func failed(_ error: any Error, request: Bool) -> String {
        let reason = Self.describe(error)
        status.withLock {
            $0.lastError = reason
            if request { $0.failedRequests += 1 }
        }
        return reason
    }

    /// Reachable while this replica's last poll reached the database recently.
    package func health() -> (reachable: Bool, details: JSONObject) {
        let (state, buffered) = (status.withLock { $0 }, buffer.withLock { ($0.rows.count, $0.dropped) })
        let rounds = (reads: reads.counts, writes: writes.counts)
        let reachable = state.lastPoll.map { SessionStore.uptime() - $0 < Self.trustedFor * 2 } ?? false
        let details = JSONObject([
            ("kind", "postgres"), ("url", .string(Self.redacted(options.url))), ("namespace", .string(options.namespace)),
            ("replica", .string(replica)), ("reachable", .bool(reachable)), ("last_error", state.lastError.map(JSON.string) ?? .null),
            ("requests_refused", .int(state.failedRequests)), ("journal_buffered", .int(buffered.0)), ("journal_dropped", .int(buffered.1)),
            ("sessions_written_unlocked", .int(state.unlockedWrites)), ("sessions_written_locked", .int(state.lockedWrites)),
            ("writes_lost", .int(state.lostWrites)),
            ("sessions_decided_on_copies", .int(state.copiesUsed)), ("copies_stale", .int(state.staleCopies)),
            ("transactions_batched", .int(state.batchedTransactions)),
            ("transactions_waiting", .int(queues.withLock { $0.values.reduce(0) { $0 + $1.count } })),
            ("statements_shared", .int(rounds.reads.shared + rounds.writes.shared)),
            ("sessions_in_shared_statements", .int(rounds.reads.sharedItems + rounds.writes.sharedItems)),
            ("statements_waiting", .int(rounds.reads.waiting + rounds.writes.waiting)),
            (
                "replica_messages",
                .object(
                    JSONObject([
                        ("listening", .bool(state.listening)), ("sent", .int(state.messagesSent)), ("received", .int(state.messagesReceived)),
                        ("lost", .int(state.messagesLost)), ("waiting_bytes", .int(state.messageBytesWaiting)),
                    ]))
            ),
        ])
        return (reachable, details)
    }
}
