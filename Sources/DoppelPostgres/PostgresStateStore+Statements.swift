import DoppelCore
import PostgresNIO

/// The statements every stateful request runs, prepared once per
/// connection and planned once for all parameters (the store's connections
/// set `plan_cache_mode`): the database then parses and plans each once,
/// not on every request (`Benchmarks/README.md`, "Shared state: prepared
/// statements"). The rarer ones (a session's first write, its removal, the
/// locked path) stay plain queries.
extension PostgresStateStore {
    /// A session written over the version it was read at, alone: when a
    /// round's statement found its row held by another transaction, this
    /// one waits for the row. It says what came of it: `(true, nil,
    /// version)` when it was written; `(false, data, version)`, the row as
    /// the statement saw it, when another write of the session came between
    /// the read and this one (no row when the session was removed).
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

        let write: RowWrite
        let namespace: String

        func makeBindings() -> PostgresBindings {
            PostgresStateStore.bindings(of: write, namespace: namespace)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }

    /// The parameters of `ReadSession` and `ReadSessions`: the namespace, and the id or ids.
    static func bindings(_ namespace: String, _ ids: some PostgresNonThrowingEncodable) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(namespace)
        bindings.append(ids)
        return bindings
    }

    /// The parameters of `WriteSession` and `WriteHeldSession`: the row's
    /// data, size, scenario and overrides ($1–$4), then its namespace, id
    /// and the version it was read at ($5–$7).
    static func bindings(of write: RowWrite, namespace: String) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        bindings.append(write.data)
        bindings.append(write.size)
        bindings.append(write.scenario)
        bindings.append(write.hasOverrides)
        bindings.append(namespace)
        bindings.append(write.id)
        bindings.append(write.version)
        return bindings
    }

    /// A session's row as stored and its version, read without a lock: a round of reads of one session.
    struct ReadSession: PostgresPreparedStatement {
        static let name = "doppel_read_session"
        static let sql = "SELECT data, version FROM doppel_sessions WHERE namespace = $1 AND id = $2"
        typealias Row = (ByteBuffer?, Int64)

        let namespace: String
        let id: String

        func makeBindings() -> PostgresBindings {
            PostgresStateStore.bindings(namespace, id)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }

    /// A round of writes of one session: `WriteSessions` for one row,
    /// without its arrays (`WriteSessions` with arrays of one cost the
    /// database more than the write it replaced: Benchmarks/README.md).
    /// One row, as `WriteSessions` answers: the outcome (0 written, 1 lost,
    /// 2 removed, 3 held elsewhere), the row as it is now when lost, and its
    /// version. The row is locked without waiting, and updated only when
    /// this statement holds it.
    struct WriteHeldSession: PostgresPreparedStatement {
        static let name = "doppel_write_session_unless_held"
        static let sql = """
            WITH locked AS (
                SELECT data, version FROM doppel_sessions WHERE namespace = $5 AND id = $6 FOR UPDATE SKIP LOCKED
            ),
            written AS (
                UPDATE doppel_sessions SET data = $1, size = $2, scenario = $3, has_overrides = $4, last_used = now(), version = version + 1
                WHERE namespace = $5 AND id = $6 AND version = $7 AND EXISTS (SELECT FROM locked WHERE locked.version = $7)
                RETURNING version
            )
            SELECT CASE WHEN EXISTS (SELECT FROM written) THEN 0
                    WHEN EXISTS (SELECT FROM locked) THEN 1
                    WHEN EXISTS (SELECT FROM doppel_sessions WHERE namespace = $5 AND id = $6) THEN 3
                    ELSE 2 END::int8,
                (SELECT data FROM locked WHERE NOT EXISTS (SELECT FROM written)), (SELECT version FROM locked)
            """
        typealias Row = (Int, ByteBuffer?, Int64?)

        let write: RowWrite
        let namespace: String

        func makeBindings() -> PostgresBindings {
            PostgresStateStore.bindings(of: write, namespace: namespace)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }

    /// Sessions' rows as stored and their versions, read without a lock, for a round of reads (`PostgresStateStore+Rounds.swift`).
    /// Each row is looked up by its whole key, one id at a time (a lateral subquery the planner keeps apart): with
    /// `id = ANY($2)` the generic plan could read a namespace's rows by the namespace alone and filter the ids, when
    /// the table's statistics said namespaces were small, so a round in a namespace of 10,000 sessions read all 10,000.
    struct ReadSessions: PostgresPreparedStatement {
        static let name = "doppel_read_sessions"
        static let sql = """
            SELECT s.id, s.data, s.version FROM unnest($2::text[]) AS k(id),
                LATERAL (SELECT id, data, version FROM doppel_sessions WHERE namespace = $1 AND id = k.id OFFSET 0) s
            """
        typealias Row = (String, ByteBuffer?, Int64)

        let namespace: String
        let ids: [String]

        func makeBindings() -> PostgresBindings {
            PostgresStateStore.bindings(namespace, ids)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }

    /// Sessions written over the versions they were read at, for a round
    /// of writes (`PostgresStateStore+Rounds.swift`), each answered as
    /// `WriteOutcome`: 0 written; 1 lost, with the row as it is now; 2
    /// removed; 3 held by another transaction, so left alone.
    ///
    /// The rows are locked first, each looked up by its whole key (as in
    /// `ReadSessions`), without waiting (`FOR UPDATE SKIP
    /// LOCKED`): the statement never waits for a lock, so it can be in no
    /// cycle of waits, and the update touches only the rows it locked. A
    /// row locked so is the row as last committed (READ COMMITTED takes
    /// the newest version), so a lost write's row is the one it lost to.
    /// A row changed after the statement's snapshot is found again by the
    /// update in its newest version, which this statement holds.
    struct WriteSessions: PostgresPreparedStatement {
        static let name = "doppel_write_sessions"
        static let sql = """
            WITH input AS (
                SELECT * FROM unnest($2::text[], $3::int8[], $4::bytea[], $5::int8[], $6::text[], $7::bool[], $8::bool[])
                    AS i(id, version, data, size, scenario, named, has_overrides)
            ),
            locked AS (
                SELECT l.id, l.data, l.version FROM input k,
                    LATERAL (SELECT id, data, version FROM doppel_sessions WHERE namespace = $1 AND id = k.id FOR UPDATE SKIP LOCKED) l
            ),
            written AS (
                UPDATE doppel_sessions s SET data = i.data, size = i.size, scenario = CASE WHEN i.named THEN i.scenario END,
                    has_overrides = i.has_overrides, last_used = now(), version = s.version + 1
                FROM input i JOIN locked l ON l.id = i.id AND l.version = i.version
                WHERE s.namespace = $1 AND s.id = i.id
                RETURNING s.id
            )
            SELECT i.id,
                CASE WHEN w.id IS NOT NULL THEN 0
                    WHEN l.id IS NOT NULL THEN 1
                    WHEN (SELECT true FROM doppel_sessions p WHERE p.namespace = $1 AND p.id = i.id LIMIT 1) THEN 3
                    ELSE 2 END::int8,
                CASE WHEN w.id IS NULL THEN l.data END, l.version
            FROM input i LEFT JOIN locked l ON l.id = i.id LEFT JOIN written w ON w.id = i.id
            """
        typealias Row = (String, Int, ByteBuffer?, Int64?)

        let namespace: String
        let writes: [RowWrite]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 8)
            bindings.append(namespace)
            bindings.append(writes.map(\.id))
            bindings.append(writes.map(\.version))
            bindings.append(writes.map(\.data))
            bindings.append(writes.map(\.size))
            bindings.append(writes.map { $0.scenario ?? "" })
            bindings.append(writes.map { $0.scenario != nil })
            bindings.append(writes.map(\.hasOverrides))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }
}
