import DoppelCore
import DoppelPostgres
import DoppelTestSupport
import Foundation
import Testing

/// A session's row is written in place (a heap-only update, schema
/// version 6): no index covers a column its writes change, and its pages
/// leave room for the next versions of their rows.
extension SharedStateTests {
    @Test("The sessions table is indexed by its primary key alone, with room on its pages, and a session's writes update its row in place")
    func sessionWritesAreInPlace() async throws {
        let url = try #require(TestDatabase.url)
        let replicas = try await SharedReplicas.start(2, contract: Self.tales, timeout: 30)
        let clients = replicas.clients()
        let indexes = try await TestDatabase.sql(
            ["SELECT indexname FROM pg_indexes WHERE tablename = 'doppel_sessions' ORDER BY indexname"], url: url)
        #expect(indexes == ["doppel_sessions_pkey"])
        let options = try await TestDatabase.sql(
            ["SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'doppel_sessions'"], url: url)
        #expect(options == ["fillfactor=70"])

        /// The table's updates, and those of them made in place, as PostgreSQL has counted them so far.
        func updates() async throws -> (all: Int, inPlace: Int) {
            let counts = try await TestDatabase.sql(
                [
                    "SELECT n_tup_upd::text || ' ' || n_tup_hot_upd::text FROM pg_stat_user_tables WHERE relname = 'doppel_sessions'"
                ], url: url)
            let parts = try #require(counts.first).split(separator: " ").compactMap { Int($0) }
            return (parts[0], parts[1])
        }
        let before = try await updates()
        // A premium session, so every generate writes: 40 over both replicas, each a write of the row.
        #expect(
            try await clients[0].send(
                "POST", "/api/v1/subscription/purchase?plan_tier=premium&billing_cycle=monthly&payment_method=card", session: "in-place"
            ).status == 200)
        let child = try await child(clients[0], session: "in-place")
        for index in 0..<40 { #expect(try await generate(clients[index % 2], session: "in-place", child: child) == 200) }
        // Backends report their counts within a second or so of going idle.
        var after = before
        let counted = try await eventually(within: 30) {
            after = try await updates()
            return after.all - before.all >= 40
        }
        #expect(counted, "\(after.all - before.all) updates counted")
        let (all, inPlace) = (after.all - before.all, after.inPlace - before.inPlace)
        // Before version 6 none were (2 of 2 million under the benchmark's load).
        #expect(inPlace * 10 >= all * 9, "\(inPlace) of \(all) updates in place")
        await replicas.stop()
    }
}
