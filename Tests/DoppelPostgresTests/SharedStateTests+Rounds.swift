import DoppelCore
import DoppelTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import DoppelPostgres

/// The statements of a round (`PostgresStateStore+Rounds.swift`) on a real
/// database: a round's write and a write alone agree, and a round never
/// waits for a row another transaction holds.
extension SharedStateTests {
    @Test(
        "A round's write and a write alone agree on each row: written over its version, lost to a newer one, removed; a held row is left out, not waited for"
    )
    func aRoundAndAWriteAloneAgree() async throws {
        // A store timeout of 120 s: a statement that waited for the held row would wait 60 s for it, and fail.
        let replicas = try await SharedReplicas.start(1, contract: Self.tales, timeout: 120)
        let store = replicas.replicas[0].store
        let url = try #require(TestDatabase.url)
        let namespace = replicas.namespace
        func bytes(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }
        /// Rows as given (data "old"), and no row for every other id of the test.
        func rows(_ rows: [(id: String, version: Int64)]) async throws {
            try await TestDatabase.sql(
                ["DELETE FROM doppel_sessions WHERE namespace = '\(namespace)'"]
                    + rows.map {
                        "INSERT INTO doppel_sessions (namespace, id, data, version) VALUES ('\(namespace)', '\($0.id)', 'old'::bytea, \($0.version))"
                    }, url: url)
        }
        func row(_ id: String) async throws -> String? {
            try await TestDatabase.sql(
                [
                    "SELECT convert_from(data, 'UTF8') || ' ' || version || ' ' || coalesce(scenario, '-') || ' ' || size FROM doppel_sessions WHERE namespace = '\(namespace)' AND id = '\(id)'"
                ], url: url
            ).first
        }
        func write(_ id: String, over version: Int64, scenario: String? = nil) -> PostgresStateStore.RowWrite {
            PostgresStateStore.RowWrite(id: id, version: version, data: bytes("new"), size: 3, scenario: scenario, hasOverrides: false)
        }
        func together(_ writes: [PostgresStateStore.RowWrite]) async throws -> [PostgresStateStore.WriteOutcome] {
            try await PostgresStateStore.writeRows(writes, client: store.client, namespace: namespace, logger: store.logger)
        }
        func alone(_ write: PostgresStateStore.RowWrite) async throws -> PostgresStateStore.WriteOutcome {
            try await store.client.withConnection { connection in
                try await PostgresStateStore.writeRow(write, namespace: namespace, on: connection, logger: store.logger)
            }
        }

        // Together: one statement for four sessions, one of them held by another transaction.
        try await rows([("w", 10), ("l", 20), ("h", 30)])
        let held = try await TestDatabase.holdRow(namespace: namespace, session: "h", url: url)
        let outcomes = try await together([write("w", over: 10, scenario: "trial"), write("l", over: 19), write("r", over: 5), write("h", over: 30)])
        #expect(outcomes == [.written, .lost(bytes("old"), 20), .removed, .skipped])
        #expect(try await row("w") == "new 11 trial 3")
        #expect(try await row("l") == "old 20 - 0")
        #expect(try await row("r") == nil)
        try await held.release()
        #expect(try await row("h") == "old 30 - 0", "the held row as its holder left it")

        // Read back together, in the order asked, none for a session with no row.
        let read = try await PostgresStateStore.readRows(["l", "r", "w"], client: store.client, namespace: namespace, logger: store.logger)
        #expect(read.map { $0?.version } == [20, nil, 11])
        #expect(read.map { $0?.data } == [bytes("old"), nil, bytes("new")])

        // Each alone, as a round of one and through the statement that waits: the same outcome and the same row after.
        let cases: [(PostgresStateStore.RowWrite, PostgresStateStore.WriteOutcome, String?)] = [
            (write("w", over: 10, scenario: "trial"), .written, "new 11 trial 3"), (write("l", over: 19), .lost(bytes("old"), 20), "old 20 - 0"),
            (write("r", over: 5), .removed, nil),
        ]
        for (write, expected, after) in cases {
            try await rows([("w", 10), ("l", 20)])
            #expect(try await together([write]) == [expected], "\(write.id) in a round of one")
            #expect(try await row(write.id) == after)
            try await rows([("w", 10), ("l", 20)])
            #expect(try await alone(write) == expected, "\(write.id) alone")
            #expect(try await row(write.id) == after)
        }
        // A round of one leaves a held row out as well, without waiting for it.
        try await rows([("h", 30)])
        let heldAlone = try await TestDatabase.holdRow(namespace: namespace, session: "h", url: url)
        #expect(try await together([write("h", over: 30)]) == [.skipped])
        try await heldAlone.release()
        #expect(try await row("h") == "old 30 - 0")
        await replicas.stop()
    }

    @Test("A round's read and write look each row up by its whole key whatever the table's statistics say: no namespace is read whole")
    func roundsLookRowsUpByTheirKeys() async throws {
        let url = try #require(TestDatabase.url)
        let prefix = "plan-\(UUID().uuidString.prefix(8).lowercased())"
        // Statistics that say a namespace is small (300 namespaces of 2 sessions, analysed), then one namespace of 3,000.
        try await TestDatabase.sql(
            [
                "INSERT INTO doppel_sessions (namespace, id, data, version) SELECT '\(prefix)-' || n, 's' || g, 'x'::bytea, 1 FROM generate_series(1, 300) n, generate_series(1, 2) g",
                "ANALYZE doppel_sessions",
                "INSERT INTO doppel_sessions (namespace, id, data, version) SELECT '\(prefix)', 's' || g, 'x'::bytea, 1 FROM generate_series(1, 3000) g",
            ], url: url)
        // One connection, so that the statements prepared are the ones explained; planned once for all parameters, as the store's are.
        var configuration = try TestDatabase.configuration(url)
        configuration.options.maximumConnections = 1
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        /// The text of the last statement's rows (a plan), after the ones before it.
        func plan(_ statements: [String]) async throws -> String {
            var lines: [String] = []
            for statement in statements {
                lines = []
                for try await line in try await client.query(PostgresQuery(unsafeSQL: statement)).decode(String.self) { lines.append(line) }
            }
            return lines.joined(separator: "\n")
        }
        let ids = "'{s1,s2,s3,s4,s5,s6,s7}'::text[]"
        let sevenOf = { (value: String, type: String) in "'{\(Array(repeating: value, count: 7).joined(separator: ","))}'::\(type)[]" }
        _ = try await plan(["SET plan_cache_mode = force_generic_plan"])
        let read = try await plan([
            "PREPARE doppel_plan_read(text, text[]) AS \(PostgresStateStore.ReadSessions.sql)",
            "EXPLAIN ANALYZE EXECUTE doppel_plan_read('\(prefix)', \(ids))",
        ])
        _ = try await plan([
            "PREPARE doppel_plan_write(text, text[], int8[], bytea[], int8[], text[], bool[], bool[]) AS \(PostgresStateStore.WriteSessions.sql)",
            "BEGIN",
        ])
        let write = try await plan([
            """
            EXPLAIN ANALYZE EXECUTE doppel_plan_write('\(prefix)', \(ids), \(sevenOf("1", "int8")), \(sevenOf("\\\\x00", "bytea")), \(sevenOf("1", "int8")),
                \(sevenOf("\"\"", "text")), \(sevenOf("f", "bool")), \(sevenOf("f", "bool")))
            """
        ])
        _ = try await plan(["ROLLBACK"])
        running.cancel()
        try await TestDatabase.sql(["DELETE FROM doppel_sessions WHERE namespace LIKE '\(prefix)%'"], url: url)
        #expect(read.contains("Index Cond") && write.contains("Update on doppel_sessions"), "both ran:\n\(read)\n\(write)")
        // A scan by the namespace alone filters the other 2,993 rows out; a lookup by the whole key filters none.
        #expect(!read.contains("Rows Removed by Filter"), "\(read)")
        #expect(!write.contains("Rows Removed by Filter"), "\(write)")
    }

    @Test("A session whose row another transaction holds holds up no other session's requests on the replica: 30 answered while it waits")
    func aHeldRowHoldsUpNoOtherSession() async throws {
        let replicas = try await SharedReplicas.start(1, contract: Self.tales, timeout: 120)
        let client = replicas.clients()[0]
        let url = try #require(TestDatabase.url)
        let sessions = (0..<10).map { "free-\($0)" }
        var made: [String: String] = [:]
        for session in sessions + ["held"] { made[session] = try await child(client, session: session) }
        let children = made
        func blocked(_ statement: String) async throws -> [String] {
            try await TestDatabase.sql(
                [
                    "SELECT count(*) FROM pg_stat_activity WHERE cardinality(pg_blocking_pids(pid)) > 0 AND query LIKE '\(statement)%' AND application_name = 'doppel'"
                ], url: url)
        }
        let held = try await TestDatabase.holdRow(namespace: replicas.namespace, session: "held", url: url)
        async let heldGenerate = generate(client, session: "held", child: children["held"]!)
        // Its round left the row out; the request writes it alone and waits for it (60 s at most: half the store's timeout).
        #expect(try await eventually(within: 30) { try await blocked("WITH written AS") == ["1"] }, "the held session's write waits")
        // Meanwhile, 3 generates in each of 10 other sessions, all at once: every one answered, well within the held one's wait.
        let tally = try await Deadline.run(30) {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<30 {
                    let session = sessions[index % sessions.count]
                    group.addTask { try await generate(client, session: session, child: children[session]!) }
                }
                var tally: [Int: Int] = [:]
                for try await status in group { tally[status, default: 0] += 1 }
                return tally
            }
        }
        #expect(tally == [200: 30])
        #expect(try await blocked("WITH input AS") == ["0"], "no round waits for a lock")
        #expect(try await blocked("WITH written AS") == ["1"], "the held session's write still waits")
        try await held.release()
        #expect(try await heldGenerate == 200)
        await replicas.stop()
    }
}
