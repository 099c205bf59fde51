import DequeModule
import DoppelCore
import PostgresNIO

/// The reads and writes of many sessions sent as one statement. While
/// `lanes` statements reading session rows are on their way to the
/// database, the reads other requests on this replica ask for wait, and go
/// together as the next statement when one comes back; writes the same.
/// Under load a statement so carries the rows of every session that asked
/// meanwhile, and a stateful request costs a share of two round trips, not
/// two of its own (the database runs and commits one statement for the
/// lot). A read or write asked for while a lane is free is sent at once by
/// its caller, in a statement of its own.
///
/// A round's write locks its rows without waiting (`FOR UPDATE SKIP
/// LOCKED`): a row another transaction holds (the lock's path, an admin
/// call, another replica's write) is left out, and its request writes it
/// alone, outside the round, waiting for the row as before. So a round
/// never waits for a lock: one held row never holds up the other sessions'
/// writes queued behind it, and two replicas' rounds never wait on each
/// other in a cycle. Each write is still kept only over the version it was
/// decided on.
///
/// (Written here rather than taken from a library: no mirrored package
/// groups async callers into rounds with a leader that sends for them.)
final class SessionRounds<Item: Sendable, Outcome: Sendable>: Sendable {
    /// Sends one round: an outcome for each item, in the items' order.
    typealias Send = @Sendable ([Item]) async throws -> [Outcome]

    private struct Waiting: Sendable {
        let key: String
        let item: Item
        let started: ContinuousClock.Instant
        let continuation: CheckedContinuation<Outcome, any Error>
    }

    private struct State {
        var sending = 0
        var waiting: Deque<Waiting> = []
        /// Statements sent with more than one item, and the items they carried.
        var shared = 0
        var sharedItems = 0
    }

    /// The most statements on their way at once.
    let lanes: Int
    /// The most items in one statement, and the most bytes (by `weight`; an item heavier than that goes alone).
    let maximum: Int
    let maximumWeight: Int
    private let weight: @Sendable (Item) -> Int
    private let state = Locked(State())
    private let send: Send
    /// Throws when an item waited too long to be sent: it is refused as its round is sent.
    private let admit: @Sendable (ContinuousClock.Instant) throws -> Void
    /// Bounds a round sent by a task of its own, which no caller's deadline bounds.
    private let timeout: Double

    init(
        lanes: Int, maximum: Int, maximumWeight: Int = .max, weight: @escaping @Sendable (Item) -> Int = { _ in 0 }, timeout: Double,
        admit: @escaping @Sendable (ContinuousClock.Instant) throws -> Void, send: @escaping Send
    ) {
        self.lanes = lanes
        self.maximum = maximum
        self.maximumWeight = maximumWeight
        self.weight = weight
        self.timeout = timeout
        self.admit = admit
        self.send = send
    }

    /// Items waiting for a lane, and the statements sent with more than one item and the items they carried.
    var counts: (waiting: Int, shared: Int, sharedItems: Int) {
        state.withLock { ($0.waiting.count, $0.shared, $0.sharedItems) }
    }

    /// `item`'s outcome, sent in the next round that has a lane: at once, by
    /// this caller, when a lane is free. Items of one `key` never share a
    /// round: a later one waits for the next.
    func run(_ item: Item, key: String, started: ContinuousClock.Instant) async throws -> Outcome {
        let free = state.withLock { state in
            guard state.sending < lanes else { return false }
            state.sending += 1
            return true
        }
        if free {
            // As a session's batch does (`PostgresStateStore+Batches.swift`): cancelled at its caller's deadline, the
            // caller hands its lane on at once, so a database call that does not end when cancelled holds no round up.
            let handed = Locked(false)
            let handOverOnce: @Sendable () -> Void = { if handed.setFirst() { self.handOver() } }
            let outcome: Result<Outcome, any Error> = await withTaskCancellationHandler {
                do { return .success(try await self.checked(send([item]), count: 1)[0]) } catch { return .failure(error) }
            } onCancel: {
                handOverOnce()
            }
            handOverOnce()
            return try outcome.get()
        }
        return try await withCheckedThrowingContinuation { continuation in
            let waiting = Waiting(key: key, item: item, started: started, continuation: continuation)
            let lead = state.withLock { state in
                guard state.sending < lanes else {
                    state.waiting.append(waiting)
                    return false
                }
                state.sending += 1
                return true
            }
            // A lane came free between the two looks.
            if lead { Task { await self.drain([waiting]) } }
        }
    }

    private func checked(_ outcomes: [Outcome], count: Int) throws -> [Outcome] {
        guard outcomes.count == count else { throw MismatchedRound(sent: count, answered: outcomes.count) }
        return outcomes
    }

    /// The next round, taken from the waiting items in order (one a key, at
    /// most `maximum` and `maximumWeight`, the first whatever its weight);
    /// none, and the lane is free.
    private func take() -> [Waiting] {
        state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.sending -= 1
                return []
            }
            var round: [Waiting] = []
            var keys = Set<String>()
            var left: Deque<Waiting> = []
            var total = 0
            while let next = state.waiting.popFirst() {
                let heavy = weight(next.item)
                if round.count < maximum, round.isEmpty || total + heavy <= maximumWeight, !keys.contains(next.key) {
                    round.append(next)
                    keys.insert(next.key)
                    total += heavy
                } else {
                    left.append(next)
                }
            }
            state.waiting = left
            return round
        }
    }

    /// A caller that sent its own item hands its lane to the waiting items, sent by a task of their own.
    private func handOver() {
        let round = take()
        if !round.isEmpty { Task { await self.drain(round) } }
    }

    /// Sends rounds on one lane until none waits.
    private func drain(_ first: [Waiting]) async {
        var round = first
        while !round.isEmpty {
            await sendRound(round)
            round = take()
        }
    }

    /// One round, each item's caller resumed once: refused when it waited too long, else with its outcome or the round's error.
    private func sendRound(_ round: [Waiting]) async {
        var ready: [Waiting] = []
        for waiting in round {
            do {
                try admit(waiting.started)
                ready.append(waiting)
            } catch {
                waiting.continuation.resume(throwing: error)
            }
        }
        guard !ready.isEmpty else { return }
        if ready.count > 1 {
            state.withLock {
                $0.shared += 1
                $0.sharedItems += ready.count
            }
        }
        let items = ready.map(\.item)
        do {
            let outcomes = try await Deadline.run(timeout) { try self.checked(await self.send(items), count: items.count) }
            for (waiting, outcome) in zip(ready, outcomes) { waiting.continuation.resume(returning: outcome) }
        } catch {
            for waiting in ready { waiting.continuation.resume(throwing: error) }
        }
    }
}

extension PostgresStateStore {
    /// The most statements of each kind (reads, writes) one replica has on
    /// their way at once. One: every read (write) asked for while one is on
    /// its way goes in the next (two lanes gave rounds of 3.7 sessions
    /// rather than 4.8, and a third more of the database's CPU a request:
    /// Benchmarks/README.md).
    static let roundLanes = 1
    /// The most sessions one statement reads or writes, and the most bytes of session data one writes.
    static let maximumRound = 64
    static let maximumRoundBytes = 4 << 20

    /// A session's row to write over the version it was read at.
    struct RowWrite: Sendable {
        let id: String
        let version: Int64
        let data: ByteBuffer
        let size: Int
        let scenario: String?
        let hasOverrides: Bool
    }

    /// What came of a write.
    enum WriteOutcome: Sendable, Equatable {
        /// Written over the version it was read at.
        case written
        /// Another write came first: the row as it is now (or, when its version is the one read, as the statement saw it).
        case lost(ByteBuffer?, Int64)
        /// No row: the session was removed since it was read.
        case removed
        /// Held by another transaction, so left out of a shared statement: to be written alone.
        case skipped
    }

    /// Session rows as stored and their versions, in one statement (`ReadSession` for one).
    static func readRows(
        _ ids: [String], client: PostgresClient, namespace: String, logger: Logger
    ) async throws -> [(
        data: ByteBuffer?, version: Int64
    )?] {
        try await client.leasing(logger: logger) { connection in
            if ids.count == 1 {
                var row: (data: ByteBuffer?, version: Int64)?
                for try await (data, version) in try await connection.execute(ReadSession(namespace: namespace, id: ids[0]), logger: logger) {
                    row = (data, version)
                }
                return [row]
            }
            var found: [String: (data: ByteBuffer?, version: Int64)] = [:]
            for try await (id, data, version) in try await connection.execute(ReadSessions(namespace: namespace, ids: ids), logger: logger) {
                found[id] = (data, version)
            }
            return ids.map { found[$0] }
        }
    }

    /// Rows written over their versions, in one statement that waits for no
    /// lock (a row held elsewhere is `.skipped`): `WriteSessions`, or
    /// `WriteHeldSession` for one.
    /// Each outcome is said once the statement is committed (`confirmCommitted`).
    static func writeRows(_ writes: [RowWrite], client: PostgresClient, namespace: String, logger: Logger) async throws -> [WriteOutcome] {
        try await client.committing(logger: logger) { connection in
            if writes.count == 1 {
                var outcome: WriteOutcome?
                for try await (code, data, version) in try await connection.execute(
                    WriteHeldSession(write: writes[0], namespace: namespace), logger: logger)
                {
                    outcome = Self.outcome(code, data, version)
                }
                return [try outcome ?? { throw MismatchedRound(sent: 1, answered: 0) }()]
            }
            var outcomes: [String: WriteOutcome] = [:]
            for try await (id, outcome, data, version) in try await connection.execute(
                WriteSessions(namespace: namespace, writes: writes), logger: logger)
            {
                outcomes[id] = Self.outcome(outcome, data, version)
            }
            return try writes.map { write in
                guard let outcome = outcomes[write.id] else { throw MismatchedRound(sent: writes.count, answered: outcomes.count) }
                return outcome
            }
        }
    }

    /// A write's outcome as `WriteSessions` and `WriteHeldSession` say it.
    static func outcome(_ code: Int, _ data: ByteBuffer?, _ version: Int64?) -> WriteOutcome {
        switch code {
        case 0: .written
        case 1: .lost(data, version ?? 0)
        case 2: .removed
        default: .skipped
        }
    }

    /// One row written alone (`WriteSession`), waiting for its lock when
    /// another transaction holds it; its outcome said once it is committed.
    static func writeRow(_ write: RowWrite, namespace: String, on connection: PostgresConnection, logger: Logger) async throws -> WriteOutcome {
        let statement = WriteSession(write: write, namespace: namespace)
        var seen: (written: Bool, data: ByteBuffer?, version: Int64)?
        for try await answer in try await connection.execute(statement, logger: logger) { seen = answer }
        try await connection.confirmCommitted(logger: logger)
        guard let seen else { return .removed }
        return seen.written ? .written : .lost(seen.data, seen.version)
    }
}

/// A round's statement answered for other sessions than it was sent for.
struct MismatchedRound: Error, CustomStringConvertible {
    let sent: Int, answered: Int
    var description: String { "a statement for \(sent) sessions answered for \(answered)" }
}
