import DoppelCore
import Foundation
import PostgresNIO

/// A request's session in two round trips (one when this replica holds a
/// current copy of the row, `+Copies.swift`): its row read (no lock, no
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

    /// The result of `body` when its write was kept; nil when other writes
    /// came between the read and it `maximumUnlockedWrites` times. `body` is
    /// decided on this replica's copy of the row when it has one
    /// (`+Copies.swift`), else on the row read. The read and the common write
    /// (over a row read) go in rounds with other sessions' (`+Rounds.swift`).
    func optimistically<T: Sendable>(
        session id: String, started: ContinuousClock.Instant, _ body: @Sendable (SessionData?) throws -> (T, SessionData?)
    ) async throws -> T? {
        // This replica's copy of the row when it has one (`+Copies.swift`), else the row as read.
        let copy = copies.withLock { $0.copy(of: id) }
        var fromCopy = copy != nil
        var row: (data: [UInt8]?, version: Int64)?
        if let copy {
            row = (copy.data, copy.version)
            status.withLock { $0.copiesUsed += 1 }
        } else {
            row = try await read(id, started: started)
        }
        // A write over a stale copy is not one of the tries: it cost what the read would have.
        var tries = Self.maximumUnlockedWrites
        while tries > 0 {
            if !fromCopy { tries -= 1 }
            let stored = try row?.data.map { try decoded($0) }
            let (result, data) = try body(stored)
            try checkTimeLeft(since: started)
            switch (row?.version, data) {
            case (nil, nil):
                // Nothing stored, nothing to keep.
                return result
            case (nil, let data?):
                let encoded = data.encoded()
                guard let made = try await insert(encoded, of: data, id: id) else { return nil }
                copies.withLock { $0.keep(id, data: encoded, version: made) }
                return result
            case (let version?, nil):
                copies.withLock { $0.forget(id) }
                return try await remove(id, at: version) ? result : nil
            case (let version?, let data?):
                let encoded = data.encoded()
                let outcome = try await write(
                    RowWrite(
                        id: id, version: version, data: Self.bytes(encoded), size: data.stateSize, scenario: Self.storable(data.scenario?.name),
                        hasOverrides: Self.hasOverrides(data)), started: started)
                switch outcome {
                case .written:
                    // Every write raises the version by one.
                    copies.withLock { $0.keep(id, data: encoded, version: version + 1) }
                    return result
                case .removed, .skipped:
                    copies.withLock { $0.forget(id) }
                    // A copy of a row removed since: read as it is now (absent, or made again), and decided on that.
                    if fromCopy {
                        fromCopy = false
                        status.withLock { $0.staleCopies += 1 }
                        row = try await read(id, started: started)
                        continue
                    }
                    // Removed since it was read (the lone write never skips): the lock's path makes it again.
                    return nil
                case .lost(let data, let seen):
                    status.withLock {
                        $0.lostWrites += 1
                        if fromCopy { $0.staleCopies += 1 }
                    }
                    // Decided again on the row as the write saw it; read again when that is the row already read.
                    row = seen > version ? remember(id, (data, seen)) : try await read(id, started: started)
                }
            }
            fromCopy = false
        }
        return nil
    }

    /// Session `id`'s first row, made unless another request made it first: its version, or nil when one did.
    private func insert(_ encoded: [UInt8], of data: SessionData, id: String) async throws -> Int64? {
        let namespace = options.namespace
        return try await client.committing(logger: logger) { connection in
            let written = try await connection.query(
                """
                INSERT INTO doppel_sessions (namespace, id, data, size, scenario, has_overrides, last_used, version)
                VALUES (\(namespace), \(id), \(Self.bytes(encoded)), \(data.stateSize), \(Self.storable(data.scenario?.name)),
                    \(Self.hasOverrides(data)), now(), \(unescaped: Self.firstVersion))
                ON CONFLICT DO NOTHING RETURNING version
                """, logger: logger)
            var made: Int64?
            for try await version in written.decode(Int64.self) { made = version }
            return made
        }
    }

    /// Session `id`'s row removed if it is still at `version`; whether it was.
    private func remove(_ id: String, at version: Int64) async throws -> Bool {
        try await client.committing(logger: logger) { connection in
            let removed = try await connection.query(
                "DELETE FROM doppel_sessions WHERE namespace = \(options.namespace) AND id = \(id) AND version = \(version) RETURNING 1",
                logger: logger)
            var found = false
            for try await _ in removed.decode(Int.self) { found = true }
            return found
        }
    }

    /// A row written over the version it was decided on: in a round with other sessions' writes, or alone, waiting for
    /// the row, when another transaction held it.
    private func write(_ write: RowWrite, started: ContinuousClock.Instant) async throws -> WriteOutcome {
        let outcome = try await writes.run(write, key: write.id, started: started)
        guard outcome == .skipped else { return outcome }
        return try await client.leasing(logger: logger) {
            try await Self.writeRow(write, namespace: self.options.namespace, on: $0, logger: self.logger)
        }
    }

    /// Session `id`'s row as stored, read in a round with other sessions' (`+Rounds.swift`), and kept as this replica's copy.
    private func read(_ id: String, started: ContinuousClock.Instant) async throws -> (data: [UInt8]?, version: Int64)? {
        remember(id, try await reads.run(id, key: id, started: started))
    }

    /// Session `id`'s row as the database gave it, as bytes, kept as this replica's copy (none kept for no row or no data).
    private func remember(_ id: String, _ row: (data: ByteBuffer?, version: Int64)?) -> (data: [UInt8]?, version: Int64)? {
        let data = row?.data.map { Array($0.readableBytesView) }
        copies.withLock { copies in
            if let row, let data { copies.keep(id, data: data, version: row.version) } else { copies.forget(id) }
        }
        return row.map { (data, $0.version) }
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
        bytes(data.encoded())
    }

    static func bytes(_ encoded: [UInt8]) -> ByteBuffer {
        ByteBuffer(bytes: encoded)
    }

    static func hasOverrides(_ data: SessionData) -> Bool {
        !(data.scenario?.overrides.isEmpty ?? true) || !data.forced.isEmpty
    }
}
