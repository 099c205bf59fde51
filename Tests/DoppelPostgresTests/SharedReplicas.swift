import DoppelCore
import DoppelMCP
import DoppelOpenAPI
import DoppelPostgres
import DoppelServer
import DoppelTestSupport
import DoppelTesting
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The PostgreSQL the shared-state tests use: `DOPPEL_TEST_POSTGRES` (a
/// URL), and `DOPPEL_TEST_POSTGRES_CTL` (a script taking `stop` and
/// `start`) for the tests that stop the database. `.ci/run` starts a
/// throwaway cluster (`.ci/postgres.sh`) and sets both; it also fails if a
/// test of this suite was skipped.
/// Without them, where PostgreSQL is installed (`initdb` under
/// /usr/lib/postgresql), the tests start the same throwaway cluster
/// themselves, so `swift test` runs every suite there too.
enum TestDatabase {
    static let environment = ProcessInfo.processInfo.environment
    static let script = repositoryRoot.appendingPathComponent(".ci/postgres.sh").path
    static let url: String? = environment["DOPPEL_TEST_POSTGRES"] ?? startedHere
    static let control = environment["DOPPEL_TEST_POSTGRES_CTL"] ?? (startedHere != nil ? script : nil)

    /// The URL of a cluster started by `.ci/postgres.sh setup`, when PostgreSQL is installed.
    static let startedHere: String? = {
        guard environment["DOPPEL_TEST_POSTGRES"] == nil,
            let versions = try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"),
            versions.contains(where: { FileManager.default.fileExists(atPath: "/usr/lib/postgresql/\($0)/bin/initdb") }),
            system("/bin/bash '\(script)' setup </dev/null >/dev/null 2>&1") == 0
        else { return nil }
        return "postgres://doppel@127.0.0.1:\(environment["DOPPEL_PG_PORT"] ?? "55432")/doppel"
    }()

    /// Runs SQL statements on the database at `url`, in order; the first
    /// column of the last one's rows, as text.
    @discardableResult
    static func sql(_ statements: [String], url: String) async throws -> [String] {
        let client = PostgresClient(configuration: try configuration(url))
        let running = Task { await client.run() }
        defer { running.cancel() }
        var rows: [String] = []
        for statement in statements {
            rows = []
            for try await row in try await client.query(PostgresQuery(unsafeSQL: statement)) {
                if let value = try? row.decode(Int.self) {
                    rows.append(String(value))
                } else if let text = try? row.decode(String.self) {
                    rows.append(text)
                }
            }
        }
        return rows
    }

    /// A row of `doppel_sessions` locked (`SELECT … FOR UPDATE`, then changed by `change` when given) in a transaction
    /// held open until `release()`, which commits it.
    struct HeldRow {
        /// The backend holding it: `pg_blocking_pids` names it for a statement that waits for the row.
        let holder: Int
        let release: @Sendable () async throws -> Void
    }

    static func holdRow(namespace: String, session: String, url: String, changing change: String? = nil) async throws -> HeldRow {
        let client = PostgresClient(configuration: try configuration(url))
        let running = Task { await client.run() }
        let (locked, lockedSignal) = AsyncStream.makeStream(of: Int.self)
        let (released, releasedSignal) = AsyncStream.makeStream(of: Void.self)
        let holding = Task {
            defer { running.cancel() }
            try await client.withTransaction(logger: Logger(label: "held")) { connection in
                try await connection.query(
                    "SELECT 1 FROM doppel_sessions WHERE namespace = \(namespace) AND id = \(session) FOR UPDATE", logger: Logger(label: "held"))
                if let change { try await connection.query(PostgresQuery(unsafeSQL: change), logger: Logger(label: "held")) }
                var holder = 0
                for try await pid in try await connection.query("SELECT pg_backend_pid()", logger: Logger(label: "held")).decode(Int.self) {
                    holder = pid
                }
                lockedSignal.yield(holder)
                for await _ in released { break }
            }
        }
        var iterator = locked.makeAsyncIterator()
        guard let holder = await iterator.next() else {
            try await holding.value
            throw TestServerError(message: "the row was not locked")
        }
        return HeldRow(holder: holder) {
            releasedSignal.yield()
            try await holding.value
        }
    }

    static func configuration(_ url: String) throws -> PostgresClient.Configuration {
        let components = try #require(URLComponents(string: url))
        return PostgresClient.Configuration(
            host: components.host ?? "127.0.0.1", port: components.port ?? 5432,
            username: components.user ?? "doppel", password: components.password,
            database: String(components.path.dropFirst()), tls: .disable)
    }

    /// Runs the control script with `verb` (`stop`, `start`). Through
    /// the C library's `system`: Foundation's `Process` never saw
    /// `pg_ctl start` end here, its server being a grandchild that lives on.
    static func run(_ verb: String) throws {
        let status = system("/bin/bash '\(control!)' \(verb) </dev/null >/dev/null 2>&1")
        guard status == 0 else { throw TestServerError(message: "\(control!) \(verb) exited \(status)") }
    }
}

/// Replicas of one contract on one database namespace, each a whole server
/// (its own engine, store, connections and port) on loopback, as
/// `doppel serve --state-store` runs them.
struct SharedReplicas {
    struct Replica {
        let port: Int
        let store: PostgresStateStore
        let group: ServiceGroup
        let task: Task<Void, any Error>
        var base: URL { URL(string: "http://127.0.0.1:\(port)")! }
    }

    let replicas: [Replica]
    let namespace: String

    /// `count` replicas of `contract` in a namespace of their own (a new one per call). The store's timeout is a generous 10 s
    /// unless a test is about it: a request's write is sent only within 0.4 of it, and a machine busy with other work was
    /// seen taking more than 2 s × 0.4 to make a session's first row.
    static func start(
        _ count: Int, contract file: String, namespace: String = "t-\(UUID().uuidString.prefix(8))",
        timeout: Double = 10, scenario: String? = nil, sessionLimit: Int? = nil, url: String? = nil, agents: Bool = false,
        messageBytesWaiting: Int = PostgresStateStore.maximumMessageBytesWaiting, connections: Int = 8,
        beforeTransaction: (@Sendable () async -> Void)? = nil
    ) async throws -> SharedReplicas {
        var replicas: [Replica] = []
        for _ in 0..<count {
            var configuration = ServerConfiguration.testing
            if let sessionLimit { configuration.sessionLimit = sessionLimit }
            let contract = try ContractDocument.load(file: file)
            let engine = MockEngine(contract: contract, configuration: configuration)
            var catalog = ScenarioCatalog()
            if let scenario {
                let loaded = try ScenarioLoader.load(file: scenario, contract: contract)
                catalog.add(loaded, as: loaded.name)
                engine.sessions.defaultScenario = loaded
            }
            var options = PostgresStateStore.Options(url: url ?? TestDatabase.url!)
            options.namespace = namespace
            options.timeout = timeout
            options.connections = connections
            options.messageBytesWaiting = messageBytesWaiting
            options.beforeTransaction = beforeTransaction
            let store = try await PostgresStateStore.open(options, engine: engine, catalog: catalog)
            let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
            let app = buildApplication(
                slot: EngineSlot(engine), configuration: configuration, scenarios: catalog, recorder: nil, shared: store,
                agents: agents ? AgentSessions(version: "test") : nil
            ) { port in
                continuation.yield(port)
                continuation.finish()
            }
            let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: Logger(label: "replica")))
            let task = Task { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw TestServerError(message: "a replica stopped before listening") }
            replicas.append(Replica(port: port, store: store, group: group, task: task))
        }
        return SharedReplicas(replicas: replicas, namespace: namespace)
    }

    func stop() async {
        for replica in replicas {
            await replica.group.triggerGracefulShutdown()
            _ = try? await replica.task.value
            await replica.store.shutdown()
        }
    }

    /// Clients, one per replica.
    func clients(maxConnections: Int = 32) -> [TestClient] {
        replicas.map { TestClient(base: $0.base, maxConnections: maxConnections) }
    }
}
