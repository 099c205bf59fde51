import NIOCore
import PostgresNIO

/// A write said done only once it is committed, on connections never
/// leased again once an error closed them.
///
/// A statement outside a transaction block is committed at the Sync after
/// it, and PostgreSQL sends the statement's CommandComplete before it reads
/// that Sync: the commit can still fail after it (the backend stopped by a
/// database shutdown in between, a deferred check). PostgresNIO ends a
/// statement's rows at CommandComplete; an error after it closes the
/// connection, but reaches no query. So a write that says what it did
/// (written, inserted, sent) is followed on its connection by an empty
/// statement, which PostgresNIO sends only after the write's ReadyForQuery
/// (one statement at a time on a connection) and fails when the connection
/// was closed first: one more round trip, with no transaction and nothing
/// to plan (`Benchmarks/README.md`, "A write said done once committed").
/// A COMMIT needs none of this: PostgreSQL commits before it answers it.
///
/// Two hazards of PostgresNIO 1.33.2 are kept clear of here (written here
/// because the library has no hook for either): a statement written to a
/// connection already closed never ends (it is written with no promise),
/// and a connection released while the error that closes it is still being
/// handled goes back to the pool's idle ones, so the next lease gets it and
/// its statement never ends. The empty statement is checked and written in
/// one step on the connection's event loop, and `leasing` releases a
/// connection an error closed only once the pool has seen it close
/// (`LeasingTests.swift`: with a plain lease, the request waiting for the one
/// connection got it closed, and its statement never ended). The pool
/// then opens a connection for the requests waiting only when another
/// request asks for one, which a serving replica's traffic does. Every
/// statement the store runs while it serves goes through `leasing` (`run`,
/// `reading`, `committing`), none through the client's own `query`, which
/// releases its lease as soon as the statement fails.
extension PostgresConnection {
    /// Returns once every statement sent before on this connection was committed; throws when one was not.
    func confirmCommitted(logger: Logger) async throws {
        try await eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            guard !self.isClosed else { return self.eventLoop.makeFailedFuture(ClosedBeforeConfirmed()) }
            return self.query(PostgresQuery(unsafeSQL: ""), logger: logger).map { _ in }
        }.get()
    }

    /// Once an error is thrown: the connection asked whether it still
    /// answers (an empty statement, `confirmCommitted`); when it does not,
    /// because the error closed it or its backend is ending, waits until the
    /// close is done and seen by the pool (its close callbacks run before
    /// this one's). An error that leaves the connection open (a statement's
    /// own, such as a timeout) costs a round trip.
    func settleAfterError(logger: Logger) async {
        do {
            try await confirmCommitted(logger: logger)
        } catch {
            let closed = (try? await eventLoop.submit { self.isClosed }.get()) ?? true
            if closed { _ = try? await closeFuture.get() }
        }
    }
}

/// The connection was closed before its writes could be confirmed committed.
struct ClosedBeforeConfirmed: Error, CustomStringConvertible {
    var description: String { "the connection to the state store closed before its write was confirmed committed" }
}

extension PostgresClient {
    /// `withConnection`, releasing a connection an error closed only once the pool has seen it close (`settleAfterError`).
    func leasing<T>(logger: Logger, _ body: (PostgresConnection) async throws -> sending T) async throws -> T {
        try await withConnection { connection in
            do {
                return try await body(connection)
            } catch {
                await connection.settleAfterError(logger: logger)
                throw error
            }
        }
    }

    /// Runs `query` through `leasing`, its rows (if any) read to the end and dropped.
    func run(_ query: PostgresQuery, logger: Logger) async throws {
        try await leasing(logger: logger) { connection in
            for try await _ in try await connection.query(query, logger: logger) {}
        }
    }

    /// Runs `query` through `leasing`, and `body` on its rows, inside the lease.
    func reading<T>(_ query: PostgresQuery, logger: Logger, _ body: (PostgresRowSequence) async throws -> sending T) async throws -> T {
        try await leasing(logger: logger) { connection in
            try await body(try await connection.query(query, logger: logger))
        }
    }

    /// Runs `body`, a write outside a transaction block, on one connection,
    /// and returns its result once what it wrote is committed
    /// (`confirmCommitted`).
    func committing<T: Sendable>(logger: Logger, _ body: (PostgresConnection) async throws -> sending T) async throws -> T {
        try await leasing(logger: logger) { connection in
            let result = try await body(connection)
            try await connection.confirmCommitted(logger: logger)
            return result
        }
    }

    /// `run` for a write outside a transaction block: returns once it is committed (`confirmCommitted`).
    func committed(_ query: PostgresQuery, logger: Logger) async throws {
        try await committing(logger: logger) { connection in
            for try await _ in try await connection.query(query, logger: logger) {}
        }
    }
}
