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

    /// A session written over the version it was read at, in one statement
    /// that says what came of it: `(true, nil, version)` when it was
    /// written; `(false, data, version)`, the row as the statement saw it,
    /// when another write of the session came between the read and this one
    /// (no row when the session was removed). A lost write so costs one
    /// round trip to try again on, not a read and the row's lock.
    ///
    /// All parts of the statement see one snapshot: when the other write
    /// was still uncommitted as it began (the update waited for it, then
    /// found the version changed), the row seen is the one read before, and
    /// the caller reads it again.
    struct WriteSession: PostgresPreparedStatement {
        static let name = "doppel_write_or_read_session"
        static let sql = """
            WITH written AS (
                UPDATE doppel_sessions SET data = $1, size = $2, scenario = $3, has_overrides = $4, last_used = now(), version = version + 1
                WHERE namespace = $5 AND id = $6 AND version = $7 RETURNING version
            )
            SELECT true, NULL::bytea, version FROM written
            UNION ALL
            SELECT false, data, version FROM doppel_sessions
            WHERE namespace = $5 AND id = $6 AND NOT EXISTS (SELECT FROM written)
            """
        typealias Row = (Bool, ByteBuffer?, Int64)

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
            try row.decode(Row.self)
        }
    }
}
