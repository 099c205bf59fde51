import DoppelCore
import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO

/// The database's tables and the contract's namespace, made or checked when a replica opens.
extension PostgresStateStore {
    func prepare() async throws {
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
        ],
        // 3: each session's version, raised by every write, so a request can
        // read its session, decide, and write only if no other wrote between
        // (two round trips, no transaction held open: PostgresStateStore+Optimistic.swift).
        ["ALTER TABLE doppel_sessions ADD COLUMN version bigint NOT NULL DEFAULT 0"],
        // 4: the message an entry took and those it sent (a stream's message, a callback's body), as the in-memory journal keeps them.
        ["ALTER TABLE doppel_journal ADD COLUMN message text, ADD COLUMN sent text NOT NULL DEFAULT ''"],
        // 5: messages between replicas too large for a notification's payload (PostgresStateStore+Pushes.swift),
        // and whether each replica follows events (the others then send it theirs).
        [
            "CREATE TABLE doppel_pushes (id bigserial PRIMARY KEY, payload text NOT NULL, at timestamptz NOT NULL DEFAULT now())",
            "ALTER TABLE doppel_replicas ADD COLUMN follows boolean NOT NULL DEFAULT false",
        ],
        // 6: a session's row written in place (a heap-only update): no index on `last_used`, which every write
        // changes, so every write made a new entry in both the table's indexes and left its old row for vacuum (2 of
        // 2 million writes were heap-only under the benchmark's load, 99.6% since); and room left on each page for
        // its rows' next versions. The sweeps read a namespace's rows through the primary key instead.
        ["DROP INDEX IF EXISTS doppel_sessions_last_used", "ALTER TABLE doppel_sessions SET (fillfactor = 70)"],
    ]

    /// What makes two contracts the same for a namespace: the contract file's bytes (FNV-1a, 64 bits).
    static func digest(of contract: Contract) -> String {
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: contract.file))) ?? Data(contract.info.title.utf8)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }
}
