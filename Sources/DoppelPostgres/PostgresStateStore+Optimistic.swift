import DoppelCore
import Foundation
import PostgresNIO

/// A request's session in two round trips: its row read (no lock, no
/// transaction), the request decided on the copy, and the copy written back
/// only if the row's version is still the one read (`UPDATE … WHERE version
/// = v`, one statement, committed by itself). When another write of the
/// session came in between, the same statement returns the row as it is
/// now, and the request is decided again on it and written over that
/// version: one more round trip, with no transaction held open.
/// After `maximumUnlockedWrites` lost writes the request is taken under the
/// row's lock (`SELECT … FOR UPDATE` in a transaction: four round trips,
/// never lost), and so is every request of that session this replica takes
/// for the next `contendedFor` seconds: a session too busy for its writes
/// to land queues on its lock rather than losing write after write.
///
/// Either way the outcomes are those of some order of the requests, one at
/// a time: a write is kept only over the state it was decided on. Every
/// writer raises the version (this path, the locked one, and the sweep's
/// deletes, which remove the row). A row is made with the database's clock
/// in microseconds as its version (`firstVersion`), so a session removed
/// and made again goes on above every version it had: a write decided on
/// the removed session's row cannot land on the new one's.
extension PostgresStateStore {
    /// A new row's version: the database's clock in microseconds, above
    /// every version of an earlier row of the session unless that row was
    /// written more than once a microsecond since it was made.
    static let firstVersion = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

    /// The most writes one request tries without the row's lock: the first,
    /// and each again over the row its lost write saw.
    static let maximumUnlockedWrites = 3

    /// Seconds a session that lost a write takes the lock at once, and the most sessions remembered so.
    static let contendedFor = 1.0
    static let maximumContended = 4_096

    func isContended(_ id: String) -> Bool {
        guard let lost = contended.withLock({ $0[id] }) else { return false }
        return SessionStore.uptime() - lost < Self.contendedFor
    }

    func noteContended(_ id: String) {
        let now = SessionStore.uptime()
        contended.withLock { sessions in
            if sessions.count >= Self.maximumContended {
                sessions = sessions.filter { now - $0.value < Self.contendedFor }
                // Still full of busy sessions: the oldest memories go; those sessions only try once more without the lock.
                if sessions.count >= Self.maximumContended { sessions.removeAll(keepingCapacity: true) }
            }
            sessions[id] = now
        }
    }

    /// Why a request was not written: too little of its time was left to be
    /// sure the write ends before its caller stops waiting.
    struct TooLate: Error, CustomStringConvertible {
        let seconds: Double
        var description: String { "no answer within \(seconds.formatted()) s (the request's write was not sent, so nothing of it was kept)" }
    }

    /// The result of `body` when its write was kept; nil when another write
    /// came between the read and it. The read and the common write (over a
    /// row read) go in rounds with other sessions' (`+Rounds.swift`).
    func optimistically<T: Sendable>(
        session id: String, started: ContinuousClock.Instant, _ body: @Sendable (SessionData?) throws -> (T, SessionData?)
    ) async throws -> T? {
        let namespace = options.namespace
        var row = try await reads.run(id, key: id, started: started)
        for _ in 0..<Self.maximumUnlockedWrites {
            let stored = try row?.data.map { try decoded($0) }
            let (result, data) = try body(stored)
            try checkTimeLeft(since: started)
            var kept = false
            switch (row?.version, data) {
            case (nil, nil):
                // Nothing stored, nothing to keep.
                return result
            case (nil, let data?):
                try await client.committing(logger: logger) { connection in
                    let written = try await connection.query(
                        """
                        INSERT INTO doppel_sessions (namespace, id, data, size, scenario, has_overrides, last_used, version)
                        VALUES (\(namespace), \(id), \(Self.bytes(data)), \(data.stateSize), \(Self.storable(data.scenario?.name)),
                            \(Self.hasOverrides(data)), now(), \(unescaped: Self.firstVersion))
                        ON CONFLICT DO NOTHING RETURNING 1
                        """, logger: logger)
                    for try await _ in written.decode(Int.self) { kept = true }
                }
                return kept ? result : nil
            case (let version?, nil):
                try await client.committing(logger: logger) { connection in
                    let written = try await connection.query(
                        "DELETE FROM doppel_sessions WHERE namespace = \(namespace) AND id = \(id) AND version = \(version) RETURNING 1",
                        logger: logger)
                    for try await _ in written.decode(Int.self) { kept = true }
                }
                return kept ? result : nil
            case (let version?, let data?):
                let write = RowWrite(
                    id: id, version: version, data: Self.bytes(data), size: data.stateSize, scenario: Self.storable(data.scenario?.name),
                    hasOverrides: Self.hasOverrides(data))
                var outcome = try await writes.run(write, key: id, started: started)
                if outcome == .skipped {
                    // Held by another transaction: written alone, waiting for the row.
                    outcome = try await client.leasing(logger: logger) {
                        try await Self.writeRow(write, namespace: namespace, on: $0, logger: self.logger)
                    }
                }
                switch outcome {
                case .written:
                    return result
                case .removed, .skipped:
                    // Removed since it was read (the lone write never skips): the lock's path makes it again.
                    return nil
                case .lost(let data, let seen):
                    status.withLock { $0.lostWrites += 1 }
                    // Decided again on the row as the write saw it; read again when that is the row already read.
                    row = seen > version ? (data, seen) : try await reads.run(id, key: id, started: started)
                }
            }
        }
        return nil
    }

    /// A write is sent only while the statement timeout and a margin are
    /// left of the request's time: the database then ends it (committed or
    /// rolled back) before the caller's deadline, so a 503 is a request
    /// that kept nothing (docs/shared-state.md).
    func checkTimeLeft(since started: ContinuousClock.Instant) throws {
        try Self.checkTimeLeft(since: started, timeout: options.timeout)
    }

    static func checkTimeLeft(since started: ContinuousClock.Instant, timeout: Double) throws {
        let elapsed = (ContinuousClock.now - started) / .seconds(1)
        // The statement timeout is half the request's; the margin a tenth more.
        guard elapsed <= timeout * 0.4 else { throw TooLate(seconds: timeout) }
    }

    static func bytes(_ data: SessionData) -> ByteBuffer {
        var bytes = ByteBuffer()
        bytes.writeBytes(data.encoded())
        return bytes
    }

    static func hasOverrides(_ data: SessionData) -> Bool {
        !(data.scenario?.overrides.isEmpty ?? true) || !data.forced.isEmpty
    }
}
