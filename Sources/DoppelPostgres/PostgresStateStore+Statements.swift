import DoppelCore
import PostgresNIO

/// The statements every stateful request runs, prepared once per
/// connection: the database then parses and plans each once, not on every
/// request (`Benchmarks/README.md`, "Shared state: prepared statements").
/// The rarer ones (a session's first write, its removal, the locked path)
/// stay plain queries.
extension PostgresStateStore {
    /// A session's row as stored and its version, read without a lock.
    struct ReadSession: PostgresPreparedStatement {
        static let name = "doppel_read_session"
        static let sql = "SELECT data, version FROM doppel_sessions WHERE namespace = $1 AND id = $2"
        typealias Row = (ByteBuffer?, Int64)

        let namespace: String
        let id: String

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(namespace)
            bindings.append(id)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }

    /// A session written over the version it was read at; a row comes back when it was.
    struct WriteSession: PostgresPreparedStatement {
        static let name = "doppel_write_session"
        static let sql = """
            UPDATE doppel_sessions SET data = $1, size = $2, scenario = $3, has_overrides = $4, last_used = now(), version = version + 1
            WHERE namespace = $5 AND id = $6 AND version = $7 RETURNING 1
            """
        typealias Row = Int

        let data: ByteBuffer
        let size: Int
        let scenario: String?
        let hasOverrides: Bool
        let namespace: String
        let id: String
        let version: Int64

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 7)
            bindings.append(data)
            bindings.append(size)
            bindings.append(scenario)
            bindings.append(hasOverrides)
            bindings.append(namespace)
            bindings.append(id)
            bindings.append(version)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Int.self)
        }
    }
}
