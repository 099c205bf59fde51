import DoppelCore
import DoppelServer
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
package final class PostgresStateStore: SharedState, Sendable {
    /// What `doppel serve --state-store …` sets.
    package struct Options: Sendable {
        /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]`.
        package var url: String
        /// The namespace replicas of one contract share (`--state-namespace`).
        package var namespace = "default"
        /// The longest a request may wait for the store before its 503.
        package var timeout: Double = 2
        /// The most connections this replica opens.
        package var connections = 20

        package init(url: String) {
            self.url = url
        }
    }

    /// Why the store could not be opened.
    package struct OpeningError: Error, CustomStringConvertible, Sendable {
        package let description: String
    }

    /// The schema version this build writes; a newer database is refused.
    package static let schemaVersion = 2
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
    private let tasks = Locked([Task<Void, Never>]())

    struct Status {
        /// Sessions with an active scenario that overrides something: their requests all go to the database.
        var overridden: Set<String> = []
        /// The epoch last acknowledged.
        var epoch: Int64 = 0
        /// Monotonic seconds of the last poll that reached the database.
        var lastPoll: Double?
        /// The last error the store gave, for health.
        var lastError: String?
        var failedRequests = 0
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
        var textBytes: Int { path.utf8.count + (query?.utf8.count ?? 0) + (reason?.heldBytes ?? 0) + changes.reduce(0) { $0 + $1.utf8.count } }
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
        do {
            try await Self.deadline(10) { try await store.prepare() }
        } catch let error as OpeningError {
            store.stop()
            throw error
        } catch let error as PostgresTransactionError where error.closureError is OpeningError {
            store.stop()
            throw error.closureError as! OpeningError
        } catch is Timeout {
            store.stop()
            throw OpeningError(
                description:
                    "cannot use the state store \(Self.redacted(options.url)): no answer within 10 s; is PostgreSQL running there, and does it accept this user?"
            )
        } catch {
            store.stop()
            throw OpeningError(description: "cannot use the state store \(Self.redacted(options.url)): \(Self.describe(error))")
        }
        store.tasks.withLock { $0.append(Task { await store.poll() }) }
        return store
    }

    /// Stops the background work and the client, after a last journal
    /// write; the replica leaves the namespace's list of live replicas.
    package func shutdown() async {
        let background = tasks.withLock { Array($0.dropFirst()) }
        for task in background { task.cancel() }
        try? await Self.deadline(2) {
            // The poll ends first: a heartbeat of it still on its way would
            // otherwise write the replica back after it left (and a next
            // replica of another contract would be refused, seeing it live).
            for task in background { await task.value }
            try await self.flush()
            try await self.client.query(
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
            let connection = try await deadline(max(2, options.timeout * 2)) {
                try await PostgresConnection.connect(configuration: probing, id: 0, logger: logger)
            }
            try? await connection.close()
        } catch is Timeout {
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
    package private(set) var tookOver: String? {
        get { takenOver.withLock { $0 } }
        set { takenOver.withLock { $0 = newValue } }
    }
    private let takenOver = Locked<String?>(nil)

    private func prepare() async throws {
        try await client.withTransaction(logger: logger) { connection in
            // One replica at a time creates or migrates the schema.
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            try await connection.query("CREATE TABLE IF NOT EXISTS doppel_schema (version integer NOT NULL)", logger: logger)
            var version: Int?
            for try await found in try await connection.query("SELECT version FROM doppel_schema", logger: logger).decode(Int.self) {
                version = found
            }
            if let version, version > Self.schemaVersion {
                throw OpeningError(
                    description: "the state store's schema is version \(version), newer than this Doppel's \(Self.schemaVersion); upgrade Doppel")
            }
            if version == nil {
                for statement in Self.schema + Self.migrations.joined() {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO doppel_schema (version) VALUES (\(Self.schemaVersion))", logger: logger)
            } else if let version, version < Self.schemaVersion {
                // Each version's changes since the one found, in order.
                for statement in Self.migrations[(version - 1)...].joined() {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("UPDATE doppel_schema SET version = \(Self.schemaVersion)", logger: logger)
            }
            let contract = engine.contract.file
            let digest = Self.digest(of: engine.contract)
            try await connection.query(
                """
                INSERT INTO doppel_namespaces (namespace, contract, digest) VALUES (\(options.namespace), \(contract), \(digest))
                ON CONFLICT (namespace) DO NOTHING
                """, logger: logger)
            var served: (contract: String, digest: String)?
            for try await row in try await connection.query(
                "SELECT contract, digest FROM doppel_namespaces WHERE namespace = \(options.namespace) FOR UPDATE", logger: logger
            ).decode((String, String).self) {
                served = row
            }
            guard let served, served.digest != digest else { return }
            // Another contract, or this one edited. While a replica still serves
            // it, refuse; once none does, this contract takes the namespace over
            // and its sessions start over, as a restarted in-memory server's do.
            var live = 0
            for try await count in try await connection.query(
                """
                SELECT count(*) FROM doppel_replicas WHERE namespace = \(options.namespace) AND heartbeat > now() - \("\(Self.liveFor) seconds")::interval
                """, logger: logger
            ).decode(Int.self) {
                live = count
            }
            guard live == 0 else {
                throw OpeningError(
                    description: """
                        the state store's namespace '\(options.namespace)' is served by \(live) running replica\(live == 1 ? "" : "s") of another \
                        contract, or another version of this one (\(served.contract)); replicas of one namespace serve the same contract file. \
                        Stop them first (the namespace then passes to this contract, its sessions starting over), or start this one with \
                        --state-namespace NAME
                        """)
            }
            for statement: PostgresQuery in [
                "UPDATE doppel_namespaces SET contract = \(contract), digest = \(digest), epoch = epoch + 1 WHERE namespace = \(options.namespace)",
                "DELETE FROM doppel_sessions WHERE namespace = \(options.namespace)",
                "DELETE FROM doppel_journal WHERE namespace = \(options.namespace)",
            ] {
                try await connection.query(statement, logger: logger)
            }
            tookOver = served.contract
        }
    }

    static let migrationLock = 0x446f_7070_656c  // "Doppel"

    /// Version 1 of the schema.
    package static let schema = [
        """
        CREATE TABLE doppel_namespaces (
            namespace text PRIMARY KEY, contract text NOT NULL, digest text NOT NULL, epoch bigint NOT NULL DEFAULT 0,
            evicted_room bigint NOT NULL DEFAULT 0, evicted_idle bigint NOT NULL DEFAULT 0, evicted_state bigint NOT NULL DEFAULT 0)
        """,
        """
        CREATE TABLE doppel_sessions (
            namespace text NOT NULL, id text NOT NULL, data bytea, size integer NOT NULL DEFAULT 0, scenario text,
            has_overrides boolean NOT NULL DEFAULT false, last_used timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (namespace, id))
        """,
        "CREATE INDEX doppel_sessions_last_used ON doppel_sessions (namespace, last_used)",
        """
        CREATE TABLE doppel_journal (
            namespace text NOT NULL, seq bigserial NOT NULL, time double precision NOT NULL, session text NOT NULL,
            method text NOT NULL, path text NOT NULL, query text, status integer NOT NULL, endpoint text, response text,
            duration_us bigint NOT NULL, proxied boolean NOT NULL, PRIMARY KEY (namespace, seq))
        """,
        """
        CREATE TABLE doppel_replicas (
            namespace text NOT NULL, replica text NOT NULL, heartbeat timestamptz NOT NULL, acked bigint NOT NULL,
            PRIMARY KEY (namespace, replica))
        """,
    ]

    /// The changes from version 1 on: `migrations[n - 1]` takes version n to n + 1.
    static let migrations: [[String]] = [
        // 2: why each journal entry's response was chosen, the state paths it
        // changed, and when (real time) its answer was completed: replicas
        // write their entries in batches, so the order of the rows is not
        // the order of the answers.
        [
            "ALTER TABLE doppel_journal ADD COLUMN reason text, ADD COLUMN changes text[] NOT NULL DEFAULT '{}', ADD COLUMN completed double precision NOT NULL DEFAULT 0"
        ]
    ]

    /// What makes two contracts the same for a namespace: the contract file's bytes (FNV-1a, 64 bits).
    static func digest(of contract: Contract) -> String {
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: contract.file))) ?? Data(contract.info.title.utf8)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }

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

    package func decide(_ request: RecordedRequest, refusal: Problem?, engine: MockEngine) async -> Decision {
        do {
            return try await Self.deadline(options.timeout) { try await self.transact(request, refusal: refusal, engine: engine) }
        } catch {
            return unavailable(request, error: error, engine: engine)
        }
    }

    /// One request in its session's row: lock, decode, decide, write, commit.
    private func transact(_ request: RecordedRequest, refusal: Problem?, engine: MockEngine) async throws -> Decision {
        try await client.withTransaction(logger: logger) { connection in
            let id = request.sessionID
            let session = Session(id: id, data: try await self.lockedSession(id, on: connection) ?? self.newSession(id))
            let decision = engine.decide(request, refusing: refusal, in: session)
            try await self.write(session, on: connection)
            return decision
        }
    }

    /// The 503 for a request the store could not take in time, journaled as any answer.
    private func unavailable(_ request: RecordedRequest, error: any Error, engine: MockEngine) -> Decision {
        let reason = Self.describe(error)
        status.withLock {
            $0.lastError = reason
            $0.failedRequests += 1
        }
        let retry = max(1, Int(options.timeout.rounded(.up)))
        let problem = Problem.stateStoreUnavailable(reason, retryAfter: retry)
        return engine.decide(request, refusing: problem, in: Session(id: request.sessionID, data: SessionData(state: engine.contract.state.initial)))
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
                return try SessionData(
                    decoding: Array(bytes.readableBytesView),
                    forced: { endpoint, name, status in
                        self.engine.contract.forcibleResponse(endpointID: endpoint, name: name, status: status)
                    }, scenario: { name, text in self.scenario(named: name, inline: text) })
            }
            if attempt == 0 {
                try await connection.query(
                    "INSERT INTO doppel_sessions (namespace, id) VALUES (\(namespace), \(id)) ON CONFLICT DO NOTHING", logger: logger)
            }
        }
        return nil
    }

    /// A session as a new one starts: the contract's initial state, then the `--scenario` if any.
    private func newSession(_ id: String) -> SessionData {
        let session = Session(id: id, data: SessionData(state: engine.contract.state.initial))
        if let defaultScenario { session.restart(initial: engine.contract.state.initial, scenario: defaultScenario, real: engine.realNow) }
        return session.current
    }

    func write(_ session: Session, on connection: PostgresConnection) async throws {
        let data = session.current
        var bytes = ByteBuffer()
        bytes.writeBytes(data.encoded())
        let overrides = !(data.scenario?.overrides.isEmpty ?? true) || !data.forced.isEmpty
        try await connection.query(
            """
            UPDATE doppel_sessions SET data = \(bytes), size = \(data.stateSize), scenario = \(Self.storable(data.scenario?.name)),
                has_overrides = \(overrides), last_used = now()
            WHERE namespace = \(options.namespace) AND id = \(session.id)
            """, logger: logger)
    }

    /// A stored session's scenario, found again: by name in the catalogue
    /// (or `--scenario`), or loaded again from its inline JSON.
    private func scenario(named name: String, inline text: String?) -> ActiveScenario? {
        if let text {
            if let cached = inline.withLock({ $0[text] }) { return cached }
            guard var loaded = try? AdminAPI.inlineScenario(text, contract: engine.contract) else { return nil }
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

    // MARK: Journal

    package func complete(_ decision: Decision, status: Int, durationMicros: Int) {
        guard let entry = decision.entry else { return }
        let row = Row(
            time: entry.time, session: entry.session, method: entry.method, path: entry.path, query: entry.query, status: status,
            endpointID: entry.endpointID, responseName: entry.responseName, durationMicros: durationMicros, proxied: decision.forwards,
            reason: entry.reason, changes: entry.changes, completed: engine.realNow)
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
        try await client.query(
            """
            INSERT INTO doppel_journal (namespace, time, session, method, path, query, status, endpoint, response, duration_us, proxied,
                                        reason, changes, completed)
            SELECT \(options.namespace), t, s, m, p, NULLIF(q, ''), st, NULLIF(e, ''), NULLIF(r, ''), d, x, NULLIF(w, ''),
                   CASE WHEN c = '' THEN '{}'::text[] ELSE string_to_array(c, E'\\n') END, a
            FROM unnest(\(rows.map(\.time))::float8[], \(rows.map { Self.storable($0.session) })::text[], \(rows.map { Self.storable($0.method) })::text[],
                        \(rows.map { Self.storable($0.path) })::text[], \(rows.map { Self.storable($0.query ?? "") })::text[], \(rows.map(\.status))::int8[],
                        \(rows.map { Self.storable($0.endpointID ?? "") })::text[], \(rows.map { Self.storable($0.responseName ?? "") })::text[],
                        \(rows.map(\.durationMicros))::int8[], \(rows.map(\.proxied))::bool[], \(rows.map { Self.storable($0.reason?.text ?? "") })::text[],
                        \(rows.map { Self.storable($0.changes.joined(separator: "\n")) })::text[], \(rows.map(\.completed))::float8[])
                 AS j(t, s, m, p, q, st, e, r, d, x, w, c, a)
            """, logger: logger)
    }

    // MARK: Background

    /// Every `pollInterval`: the journal written, the epoch read (and the
    /// override set with it when it moved), the replica's heartbeat and
    /// acknowledgement; every few seconds, evictions and journal retention.
    private func poll() async {
        var lastSweep = SessionStore.uptime()
        while !Task.isCancelled {
            do {
                try await Self.deadline(max(0.5, options.timeout)) { try await self.pollOnce() }
                status.withLock { $0.lastPoll = SessionStore.uptime() }
                if SessionStore.uptime() - lastSweep > 5 {
                    lastSweep = SessionStore.uptime()
                    try await Self.deadline(max(2, options.timeout)) { try await self.sweep() }
                }
            } catch {
                status.withLock { $0.lastError = Self.describe(error) }
            }
            try? await Task.sleep(for: .seconds(Self.pollInterval))
        }
    }

    private func pollOnce() async throws {
        let namespace = options.namespace
        var epoch: Int64 = 0
        for try await found in try await client.query("SELECT epoch FROM doppel_namespaces WHERE namespace = \(namespace)", logger: logger).decode(
            Int64.self)
        {
            epoch = found
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
            for try await id in try await client.query(
                "SELECT id FROM doppel_sessions WHERE namespace = \(namespace) AND has_overrides", logger: logger
            ).decode(String.self) {
                overridden.insert(id)
            }
            status.withLock {
                $0.overridden = overridden
                $0.epoch = epoch
            }
        }
        try await heartbeat(acked: epoch)
    }

    /// Says this replica is alive, having acknowledged `epoch`.
    private func heartbeat(acked epoch: Int64) async throws {
        try await client.query(
            """
            INSERT INTO doppel_replicas (namespace, replica, heartbeat, acked) VALUES (\(options.namespace), \(replica), now(), \(epoch))
            ON CONFLICT (namespace, replica) DO UPDATE SET heartbeat = now(), acked = EXCLUDED.acked
            """, logger: logger)
    }

    /// Evicts sessions by the in-memory rules (idle, room, state budget),
    /// bounds the journal, and forgets replicas long gone.
    private func sweep() async throws {
        let namespace = options.namespace
        let sessions = engine.sessions
        if let idle = sessions.idleLimit {
            let evicted = try await count(
                client.query(
                    """
                    DELETE FROM doppel_sessions WHERE namespace = \(namespace) AND id <> 'default' AND data IS NOT NULL
                    AND last_used < now() - make_interval(secs => \(idle)) RETURNING 1
                    """, logger: logger))
            if evicted > 0 {
                try await client.query(
                    "UPDATE doppel_namespaces SET evicted_idle = evicted_idle + \(evicted) WHERE namespace = \(namespace)", logger: logger)
            }
        }
        let forRoom = try await count(
            client.query(
                """
                DELETE FROM doppel_sessions WHERE namespace = \(namespace) AND id IN (
                    SELECT id FROM doppel_sessions WHERE namespace = \(namespace) AND id <> 'default' AND data IS NOT NULL
                    ORDER BY last_used DESC OFFSET \(max(0, sessions.limit - 1))) RETURNING 1
                """, logger: logger))
        if forRoom > 0 {
            try await client.query(
                "UPDATE doppel_namespaces SET evicted_room = evicted_room + \(forRoom) WHERE namespace = \(namespace)", logger: logger)
        }
        let forState = try await count(
            client.query(
                """
                DELETE FROM doppel_sessions WHERE namespace = \(namespace) AND id IN (
                    SELECT id FROM (SELECT id, sum(size) OVER (ORDER BY last_used DESC, id) AS running FROM doppel_sessions
                                    WHERE namespace = \(namespace) AND id <> 'default' AND data IS NOT NULL) AS t
                    WHERE running > \(sessions.budget.limit)) RETURNING 1
                """, logger: logger))
        if forState > 0 {
            try await client.query(
                "UPDATE doppel_namespaces SET evicted_state = evicted_state + \(forState) WHERE namespace = \(namespace)", logger: logger)
        }
        try await client.query(
            """
            DELETE FROM doppel_journal WHERE namespace = \(namespace) AND seq <= (
                SELECT seq FROM doppel_journal WHERE namespace = \(namespace) ORDER BY seq DESC OFFSET \(engine.journal.capacity) LIMIT 1)
            """, logger: logger)
        try await client.query("DELETE FROM doppel_replicas WHERE namespace = \(namespace) AND heartbeat < now() - interval '1 hour'", logger: logger)
    }

    private func count(_ rows: PostgresRowSequence) async throws -> Int {
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }

    /// Raises the namespace's epoch and waits until every live replica has
    /// written its journal and read the override set since: after it, the
    /// journal holds every answer given before it began, and no replica
    /// answers from an override set older than it.
    func barrier() async throws {
        let namespace = options.namespace
        var epoch: Int64 = 0
        for try await found in try await client.query(
            "UPDATE doppel_namespaces SET epoch = epoch + 1 WHERE namespace = \(namespace) RETURNING epoch", logger: logger
        ).decode(Int64.self) {
            epoch = found
        }
        let live = "\(Self.liveFor) seconds"
        while true {
            var waiting = 0
            for try await found in try await client.query(
                """
                SELECT count(*) FROM doppel_replicas WHERE namespace = \(namespace) AND acked < \(epoch)
                AND heartbeat > now() - \(live)::interval
                """, logger: logger
            ).decode(Int.self) {
                waiting = found
            }
            if waiting == 0 { return }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    // MARK: Helpers

    struct Timeout: Error, CustomStringConvertible {
        let seconds: Double
        var description: String { "no answer within \(seconds.formatted()) s" }
    }

    /// `body`'s result, or `Timeout` after `seconds`: the caller never waits
    /// longer, even for work that does not end when cancelled (it is
    /// cancelled, and its result dropped).
    static func deadline<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let outcome = Locked<CheckedContinuation<T, any Error>?>(nil)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            outcome.withLock { $0 = continuation }
            let work = Locked<Task<Void, Never>?>(nil)
            let timer = Task {
                try? await Task.sleep(for: .seconds(seconds))
                guard !Task.isCancelled, let waiting = outcome.withLock({ $0.take() }) else { return }
                work.withLock { $0 }?.cancel()
                waiting.resume(throwing: Timeout(seconds: seconds))
            }
            work.withLock {
                $0 = Task {
                    let result: Result<T, any Error>
                    do { result = .success(try await body()) } catch { result = .failure(error) }
                    timer.cancel()
                    outcome.withLock { $0.take() }?.resume(with: result)
                }
            }
        }
    }

    /// A short reason for a store error, for the 503 and for health.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            return "\(error.code)"
        }
        return "\(error)"
    }
}
