import DoppelCore
import DoppelTestSupport
import Foundation
import Logging
import PostgresNIO
import Testing

@testable import DoppelPostgres

/// `PostgresClient.leasing` on a real database: a connection an error
/// closed goes back to the pool only once the pool has seen it close, so
/// no lease gets it and writes a statement that never ends.
extension SharedStateTests {
    @Test("A connection closed by its write's failed commit is not handed to the lease waiting for it: that lease's statement ends")
    func aClosedConnectionIsNotLeasedAgain() async throws {
        let url = try #require(TestDatabase.url)
        let namespace = "leasing-\(UUID().uuidString.prefix(8))"
        try await TestDatabase.sql(
            ["INSERT INTO doppel_sessions (namespace, id, data, version) VALUES ('\(namespace)', 'x', 'old'::bytea, 10)"], url: url)
        let refused = try await RefusedAtCommit.install(namespace: namespace, id: "x", url: url)
        var configuration = try TestDatabase.configuration(url)
        // One connection: the lease that waits gets the one the failed commit closes, unless the pool saw it close first.
        configuration.options.maximumConnections = 1
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        let logger = Logger(label: "leasing")
        var stuck = 0
        func select(_ ended: Locked<Int>) -> Task<Void, Never> {
            Task {
                _ = try? await client.leasing(logger: logger) { connection in
                    try await connection.query("SELECT 1", logger: logger)
                    return ()
                }
                ended.withLock { $0 += 1 }
            }
        }
        for _ in 0..<100 {
            let ended = Locked(0)
            let failing = Task {
                try? await client.committed(
                    "UPDATE doppel_sessions SET version = version + 1 WHERE namespace = \(namespace) AND id = 'x'", logger: logger)
            }
            let waiting = select(ended)
            await failing.value
            // A request after the close, as a serving replica always has: PostgresNIO 1.33.2's pool opens a connection for
            // the requests waiting only when another asks (a close alone opens none below its minimum of 0).
            let later = select(ended)
            if !(try await eventually(within: 20) { ended.withLock { $0 } == 2 }) {
                stuck += 1
                waiting.cancel()
                later.cancel()
                break
            }
        }
        #expect(stuck == 0, "a lease's statement did not end in 20 s")
        running.cancel()
        try await refused.drop()
    }
}
