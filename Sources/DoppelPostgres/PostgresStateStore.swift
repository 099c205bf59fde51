import DoppelCore
import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO

/// Sessions and the journal of one contract on PostgreSQL, shared by every
/// replica started with the same `--state-store` and namespace
/// (docs/shared-state.md).
///
/// - A request that reads or changes its session (`MockEngine.needsSession`)
///   is one database transaction: the session's row is locked
///   (`SELECT … FOR UPDATE`), decoded, decided in by the same engine code as
///   in memory, written back and committed. Row locks serialise the
///   requests of one session across replicas, so 200 parallel requests
///   against a limit of 5 get exactly 5 successes, whichever replicas take
///   them. (Serializable isolation with retries would give the same
///   outcomes; a lock never retries, so a burst on one session costs one
///   transaction per request.)
/// - Any other request is answered in the process, from a blank session:
///   its answer depends on no session. The one thing that could still
///   change it is a scenario's override, so each replica keeps the set of
///   sessions with one, and takes every request of those sessions to the
///   database.
/// - Journal entries are buffered and written in batches, off the
///   answer's path. A call that reads the journal, or changes a scenario,
///   first runs a *barrier*: it raises the namespace's epoch, and waits
///   until every live replica has written its buffer and re-read the
///   override set, then acknowledged the new epoch.
/// - The store could not be used in time (unreachable, stopped, too slow):
///   a 503 `state-store-unavailable` with `Retry-After`, and nothing of the
///   request kept; the client's pool reconnects by itself.
package final class PostgresStateStore: StateStore, Sendable {
    /// What `doppel serve --state-store …` sets.
    package struct Options: Sendable {
        /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]`.
        package var url: String
        /// The namespace replicas of one contract share (`--state-namespace`).
        package var namespace = "default"
        /// The longest a request may wait for the store before its 503.
        package var timeout: Double = 2
        /// The most connections this replica opens, as requests need them (an idle one is closed after 60 s).
        package var connections = 20
        /// The most bytes of messages (pushes, events) waiting to go to the other replicas; past it a message is lost and counted.
        package var messageBytesWaiting = PostgresStateStore.maximumMessageBytesWaiting
        /// Awaited before each transaction, for tests: a database call that does not end when its caller gives up.
        package var beforeTransaction: (@Sendable () async -> Void)?

        package init(url: String) {
            self.url = url
        }
    }

    /// Why the store could not be opened.
    package struct OpeningError: Error, CustomStringConvertible, Sendable {
        package let description: String
    }

    /// The schema version this build writes; a newer database is refused.
    package static let schemaVersion = 6
    /// Journal entries waiting to be written, at most, and the most text
    /// (paths and queries) they may hold, as the in-memory journal's; more
    /// are dropped and counted.
    package static let maximumBuffered = 100_000
    package static let maximumBufferedText = Journal.maximumTextBytes
    /// Inline scenarios kept loaded (each up to a request body's size).
    static let maximumInlineScenarios = 64
    /// A replica not heard from for this long is left out of barriers (and
    /// stops answering from its own knowledge after `trustedFor`).
    static let liveFor = 2.0
    static let trustedFor = 1.0
    /// How often each replica writes its journal, reads the epoch and says it is alive.
    static let pollInterval = 0.025

    let client: PostgresClient
    let options: Options
    let replica = UUID().uuidString.lowercased()
    let engine: MockEngine
    let use: SessionUse
    let catalog: ScenarioCatalog
    let defaultScenario: Scenario?
    let logger: Logger
    let status = Locked(Status())
    let buffer = Locked(JournalBuffer())
    private let inline = Locked([String: ActiveScenario]())
    /// Sessions whose write lost to another lately (by id, when), which take the lock at once for a while.
    let contended = Locked([String: Double]())
    /// Rows this replica last read or wrote, decided on without reading them again (`PostgresStateStore+Copies.swift`).
    let copies = Locked(RowCopies())
    /// Sessions with a batch running on this replica, and the transactions waiting for the next (`PostgresStateStore+Batches.swift`).
    let queues = Locked([String: [Job]]())
    /// Rows read, and rows written over the version read, in rounds of many sessions (`PostgresStateStore+Rounds.swift`).
    let reads: SessionRounds<String, (data: ByteBuffer?, version: Int64)?>
    let writes: SessionRounds<RowWrite, WriteOutcome>
    private let tasks = Locked([Task<Void, Never>]())
    /// Push batches on their way to the other replicas, in the order they were made (`PostgresStateStore+Pushes.swift`).
    let outgoing = AsyncStream.makeStream(of: Outgoing.self, bufferingPolicy: .bufferingOldest(PostgresStateStore.maximumPushesWaiting))
    /// This replica's own push batches until they are delivered to its sockets, in the order every replica delivers them.
    let own = Locked(OwnPushes())
    /// Where the other replicas' messages are handed (the server's sockets and event readers), and whether this replica follows events.
    let link = Locked<(deliver: @Sendable (ReplicaMessage) -> Void, followsEvents: @Sendable () -> Bool)?>(nil)

    struct Status {
        /// Sessions with an active scenario that overrides something: their requests all go to the database.
        var overridden: Set<String> = []
        /// The epoch last acknowledged (none yet: the first poll reads the override set whatever the epoch).
        var epoch: Int64 = -1
        /// Monotonic seconds of the last poll that reached the database.
        var lastPoll: Double?
        /// The last error the store gave, for health.
        var lastError: String?
        var failedRequests = 0
        /// Sessions written after a plain read (two round trips, and one more for each write lost and tried again),
        /// and under the row's lock after losing to other writes.
        var unlockedWrites = 0
        var lockedWrites = 0
        /// Unlocked writes that found another write of their session between their read and them.
        var lostWrites = 0
        /// Requests decided on this replica's copy of their row, not on a row read; and of them, those whose write over
        /// the copy lost (counted in `lostWrites` too) or found the row removed.
        var copiesUsed = 0
        var staleCopies = 0
        /// Transactions decided in one batch with others of their session (`PostgresStateStore+Batches.swift`).
        var batchedTransactions = 0
        /// Messages (push batches, events) sent to the other replicas, taken from them, and lost (the database out of reach, or too many waiting).
        var messagesSent = 0
        var messagesReceived = 0
        var messagesLost = 0
        /// Bytes of messages waiting in `outgoing`, within `Options.messageBytesWaiting`.
        var messageBytesWaiting = 0
        /// Whether this replica listens for the others' pushes now.
        var listening = false
        /// Whether another live replica follows events (its heartbeat says so).
        var othersFollow = false
    }

    struct JournalBuffer {
        var rows: [Row] = []
        var textBytes = 0
        var dropped = 0

        /// Keeps `row` if there is room for it; counts it dropped otherwise.
        mutating func add(_ row: Row) {
            let size = row.textBytes
            guard rows.count < PostgresStateStore.maximumBuffered, textBytes + size <= PostgresStateStore.maximumBufferedText else {
                dropped += 1
                return
            }
            rows.append(row)
            textBytes += size
        }
    }

    struct Row: Sendable {
        let time: Double, session: String, method: String, path: String, query: String?, status: Int
        let endpointID: String?, responseName: String?, durationMicros: Int, proxied: Bool
        let reason: Reason?, changes: [String]
        /// When the answer was completed, in real time (seconds since 1970).
        var completed: Double = 0
        /// The message the entry took, and those it sent (a JSON list; empty for none).
        var message: String? = nil
        var sent = ""
        var textBytes: Int {
            path.utf8.count + (query?.utf8.count ?? 0) + (reason?.heldBytes ?? 0) + changes.reduce(0) { $0 + $1.utf8.count }
                + (message?.utf8.count ?? 0) + sent.utf8.count
        }
    }

    private init(client: PostgresClient, options: Options, engine: MockEngine, catalog: ScenarioCatalog, logger: Logger) {
        self.client = client
        self.options = options
        self.engine = engine
        self.catalog = catalog
        self.defaultScenario = engine.sessions.defaultScenario
        var overridden = Set(catalog.names.compactMap { catalog[$0] }.flatMap { $0.overrides.map(\.endpointID) })
        for override in engine.sessions.defaultScenario?.overrides ?? [] { overridden.insert(override.endpointID) }
        self.use = SessionUse(contract: engine.contract, overridden: overridden)
        self.logger = logger
        let (namespace, timeout) = (options.namespace, options.timeout)
        let admit: @Sendable (ContinuousClock.Instant) throws -> Void = { try Self.checkTimeLeft(since: $0, timeout: timeout) }
        self.reads = SessionRounds(
            lanes: Self.roundLanes, maximum: Self.maximumRound, timeout: timeout, admit: admit,
            send: { ids in try await Self.readRows(ids, client: client, namespace: namespace, logger: logger) })
        self.writes = SessionRounds(
            lanes: Self.roundLanes, maximum: Self.maximumRound, maximumWeight: Self.maximumRoundBytes, weight: { $0.data.readableBytes },
            timeout: timeout, admit: admit,
            send: { writes in try await Self.writeRows(writes, client: client, namespace: namespace, logger: logger) })
    }

    /// Connects, creates or migrates the schema, and claims the namespace
    /// for `engine`'s contract; throws a message naming what is wrong.
    package static func open(_ options: Options, engine: MockEngine, catalog: ScenarioCatalog) async throws(OpeningError) -> PostgresStateStore {
        var logger = Logger(label: "doppel.state-store")
        logger.logLevel = .critical
        let configuration: PostgresClient.Configuration
        do { configuration = try Self.configuration(options) } catch { throw error }
        try await Self.probe(options, configuration: configuration, logger: logger)
        let store = PostgresStateStore(
            client: PostgresClient(configuration: configuration, backgroundLogger: logger), options: options,
            engine: engine, catalog: catalog, logger: logger)
        store.tasks.withLock { $0.append(Task { await store.client.run() }) }
        // Making or migrating the schema waits for other replicas doing the same: the longer of 10 s and an admin call's time.
        let opening = max(10, options.timeout * 3)
        do {
            try await Deadline.run(opening) { try await store.prepare() }
        } catch let error as OpeningError {
            store.stop()
            throw error
        } catch let error as PostgresTransactionError where error.closureError is OpeningError {
            store.stop()
            throw error.closureError as! OpeningError
        } catch is Deadline.Exceeded {
            store.stop()
            throw OpeningError(
                description:
                    "cannot use the state store \(Self.redacted(options.url)): no answer within \(opening.formatted()) s; is PostgreSQL running there, and does it accept this user?"
            )
        } catch {
            store.stop()
            throw OpeningError(description: "cannot use the state store \(Self.redacted(options.url)): \(Self.describe(error))")
        }
        // One poll before serving: the replica is in the list of live replicas (so every barrier
        // waits for it) and knows the override set before it answers anything from that knowledge.
        // (Should it fail, the replica trusts no knowledge and asks the store until a poll passes.)
        try? await store.pollTimed()
        store.tasks.withLock {
            $0.append(Task { await store.poll() })
            $0.append(Task { await store.sendPushes() })
            $0.append(Task { await store.listenForPushes() })
        }
        return store
    }

    /// Stops the background work and the client, after a last journal
    /// write; the replica leaves the namespace's list of live replicas.
    package func shutdown() async {
        let background = tasks.withLock { Array($0.dropFirst()) }
        for task in background { task.cancel() }
        try? await Deadline.run(2) {
            // The poll ends first: a heartbeat of it still on its way would
            // otherwise write the replica back after it left (and a next
            // replica of another contract would be refused, seeing it live).
            for task in background { await task.value }
            try await self.flush()
            try await self.client.run(
                "DELETE FROM doppel_replicas WHERE namespace = \(self.options.namespace) AND replica = \(self.replica)", logger: self.logger)
        }
        stop()
    }

    private func stop() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }

    // MARK: Opening

    static func configuration(_ options: Options) throws(OpeningError) -> PostgresClient.Configuration {
        guard let url = URLComponents(string: options.url), url.scheme == "postgres" || url.scheme == "postgresql",
            let host = url.host, !host.isEmpty, let user = url.user, !user.isEmpty
        else {
            throw OpeningError(description: "--state-store must be postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE, not \(redacted(options.url))")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        let mode = url.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require": tls = .require(.makeClientConfiguration())
        default: throw OpeningError(description: "--state-store's sslmode must be disable, prefer or require, not \(mode)")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: url.port ?? 5432, username: user, password: url.password,
            database: database.isEmpty ? nil : database, tls: tls)
        configuration.options.maximumConnections = options.connections
        // No keep-alive query: the pool then schedules no keep-alive timer when a connection goes back to it (a task
        // group with a sleeping task, cancelled at the next lease; Benchmarks/README.md). An idle connection is closed
        // after the pool's idle timeout (60 s) instead. `minimumConnections` stays 0: with connections kept at start
        // (a minimum of 20, which also spared the idle timer), PostgresNIO 1.33.2's pool traps (a precondition in
        // `createNewDemandConnectionIfPossible`) when a request waits for a connection while some are closing below
        // that minimum, as when the database restarts under load; the suite's restart test crashed on it in CI.
        configuration.options.keepAliveBehavior = nil
        configuration.options.connectTimeout = .milliseconds(Int64(options.timeout * 1000))
        // The server ends a lock wait or a statement at half the timeout, so
        // a transaction that got its lock has the other half to write and
        // commit before the client stops waiting: a 503 is almost always
        // for a transaction that was rolled back.
        let millis = String(max(1, Int(options.timeout * 500)))
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", millis), ("lock_timeout", millis),
            ("idle_in_transaction_session_timeout", String(Int(max(5, options.timeout * 2) * 1000))),
            ("application_name", "doppel"),
            // Every statement planned once for all its parameters, not again on each run: the statements of a round
            // (`+Rounds.swift`) would otherwise be planned anew every time (PostgreSQL keeps planning a statement with an
            // array parameter for its values), which took three times as long as running them. (PostgreSQL 12 or later.)
            ("plan_cache_mode", "force_generic_plan"),
        ]
        return configuration
    }

    /// One connection made directly, before the pool's: a refused port, a
    /// wrong password or a missing database is said at once, in the
    /// server's words (the pool retries a failing connection until its
    /// caller gives up, which would say only that no answer came).
    static func probe(_ options: Options, configuration: PostgresClient.Configuration, logger: Logger) async throws(OpeningError) {
        let tls: PostgresConnection.Configuration.TLS
        do {
            switch URLComponents(string: options.url)?.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable" {
            case "prefer": tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case "require": tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            default: tls = .disable
            }
        } catch {
            throw OpeningError(description: "cannot use the state store \(redacted(options.url)): TLS cannot be set up: \(error)")
        }
        var direct = PostgresConnection.Configuration(
            host: configuration.host ?? "127.0.0.1", port: configuration.port ?? 5432,
            username: configuration.username, password: configuration.password,
            database: configuration.database, tls: tls)
        direct.options.connectTimeout = .milliseconds(Int64(max(1, options.timeout) * 1000))
        direct.options.additionalStartupParameters = configuration.options.additionalStartupParameters
        let probing = direct
        do {
            // Closed inside the bounded work, so a connection that comes after the deadline is closed too, never dropped open.
            try await Deadline.run(max(2, options.timeout * 2)) {
                let connection = try await PostgresConnection.connect(configuration: probing, id: 0, logger: logger)
                try? await connection.close()
            }
        } catch is Deadline.Exceeded {
            throw OpeningError(
                description:
                    "cannot use the state store \(redacted(options.url)): no answer within \(max(2, options.timeout * 2).formatted()) s; is PostgreSQL running there?"
            )
        } catch {
            throw OpeningError(description: "cannot use the state store \(redacted(options.url)): \(describeConnecting(error))")
        }
    }

    /// Why a connection could not be made, as a person would say it.
    static func describeConnecting(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                return message + (error.serverInfo?[.sqlState] == "3D000" ? " (create it, or name another database in the URL)" : "")
            }
            if let underlying = error.underlying {
                let text = String(describing: underlying)
                if text.contains("connectionRefused") || text.contains("Connection refused") || text.contains("ECONNREFUSED") {
                    return "the connection was refused: is PostgreSQL listening on that host and port?"
                }
                return text
            }
            return "\(error.code)"
        }
        return describe(error)
    }

    /// The URL without its password.
    package static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }

    /// The contract file whose namespace this replica took over when it opened (its sessions started over), if any.
    package internal(set) var tookOver: String? {
        get { takenOver.withLock { $0 } }
        set { takenOver.withLock { $0 = newValue } }
    }
    private let takenOver = Locked<String?>(nil)

    // MARK: Requests

    package func needsStore(_ request: RecordedRequest, engine: MockEngine) -> Bool {
        guard engine.needsSession(request, use: use) else {
            let (overridden, lastPoll) = status.withLock { ($0.overridden.contains(request.sessionID), $0.lastPoll) }
            // Answered here only while this replica's knowledge of overrides is fresh.
            guard let lastPoll, SessionStore.uptime() - lastPoll < Self.trustedFor else { return true }
            return overridden
        }
        return true
    }

    package var timeout: Double { options.timeout }

    package func transact<T: Sendable>(
        session id: String, _ body: @escaping @Sendable (SessionData?) throws -> (T, SessionData?)
    ) async throws -> T {
        try await batched(session: id, body)
    }

    /// One transaction on session `id`'s row, for a batch that started waiting at `started`.
    func transactOnce<T: Sendable>(
        session id: String, started: ContinuousClock.Instant, _ body: @escaping @Sendable (SessionData?) throws -> (T, SessionData?)
    ) async throws -> T {
        if let stall = options.beforeTransaction { await stall() }
        // Two round trips while no other request of the session writes between them; else the row's lock.
        if !isContended(id) {
            if let result = try await optimistically(session: id, started: started, body) {
                status.withLock { $0.unlockedWrites += 1 }
                return result
            }
            noteContended(id)
        }
        status.withLock { $0.lockedWrites += 1 }
        copies.withLock { $0.forget(id) }
        // A COMMIT is answered once committed: no confirmation needed (`PostgresClient+Committed.swift`).
        return try await client.leasing(logger: logger) { connection in
            try await connection.withTransaction(logger: self.logger) { connection in
                let (result, data) = try body(try await self.lockedSession(id, on: connection))
                try self.checkTimeLeft(since: started)
                if let data {
                    try await self.write(data, of: id, on: connection)
                } else {
                    try await connection.query(
                        "DELETE FROM doppel_sessions WHERE namespace = \(self.options.namespace) AND id = \(id)", logger: self.logger)
                }
                return result
            }
        }
    }

    /// Decodes a stored session.
    func decoded(_ bytes: [UInt8]) throws -> SessionData {
        try SessionData(
            decoding: bytes,
            forced: { endpoint, name, status in
                self.engine.contract.forcibleResponse(endpointID: endpoint, name: name, status: status)
            }, scenario: { name, text in self.scenario(named: name, inline: text) })
    }

    /// The session's row, locked until the transaction ends; nil when the
    /// session is new (a row is made, locked, for it to be written into).
    func lockedSession(_ id: String, on connection: PostgresConnection) async throws -> SessionData? {
        let namespace = options.namespace
        for attempt in 0..<2 {
            var found: ByteBuffer??
            for try await data in try await connection.query(
                "SELECT data FROM doppel_sessions WHERE namespace = \(namespace) AND id = \(id) FOR UPDATE", logger: logger
            ).decode(ByteBuffer?.self) {
                found = .some(data)
            }
            if let found {
                guard let bytes = found else { return nil }
                return try decoded(Array(bytes.readableBytesView))
            }
            if attempt == 0 {
                try await connection.query(
                    "INSERT INTO doppel_sessions (namespace, id, version) VALUES (\(namespace), \(id), \(unescaped: Self.firstVersion)) ON CONFLICT DO NOTHING",
                    logger: logger)
            }
        }
        return nil
    }

    func write(_ data: SessionData, of id: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            UPDATE doppel_sessions SET data = \(Self.bytes(data)), size = \(data.stateSize), scenario = \(Self.storable(data.scenario?.name)),
                has_overrides = \(Self.hasOverrides(data)), last_used = now(), version = version + 1
            WHERE namespace = \(options.namespace) AND id = \(id)
            """, logger: logger)
    }

    /// A stored session's scenario, found again: by name in the catalogue
    /// (or `--scenario`), or loaded again from its inline JSON.
    private func scenario(named name: String, inline text: String?) -> ActiveScenario? {
        if let text {
            if let cached = inline.withLock({ $0[text] }) { return cached }
            guard var loaded = try? ScenarioLoader.inline(text, contract: engine.contract) else { return nil }
            loaded.name = name
            let active = ActiveScenario(name: name, overrides: loaded.overrides, inline: text)
            inline.withLock { cache in
                if cache.count >= Self.maximumInlineScenarios { cache.removeAll() }
                cache[text] = active
            }
            return active
        }
        if let found = catalog[name] { return ActiveScenario(name: name, overrides: found.overrides) }
        if let defaultScenario, defaultScenario.name == name { return ActiveScenario(name: name, overrides: defaultScenario.overrides) }
        return nil
    }

    // MARK: Helpers

    /// A short reason for a store error, for the 503 and for health.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            return "\(error.code)"
        }
        return "\(error)"
    }
}
