/// Sessions and a journal that live outside the process, shared by
/// replicas of one contract (`doppel serve --state-store`), as storage
/// verbs only: a transaction on one session, the journal's append, read
/// and clear, a barrier, the list of sessions and their removal.
///
/// What a request or an admin call does with them is written once, in
/// DoppelServer (`SharedState.decide` and `SharedState.admin`), so a store
/// implements storage and nothing else; DoppelPostgres implements it on
/// PostgreSQL.
package protocol SharedState: Sendable {
    /// The longest a request waits for the store before its 503 (an admin
    /// call, which may run a barrier, three times this).
    var timeout: Double { get }

    /// Whether `request` must be decided in the store: its answer may read
    /// or change its session, or the store cannot rule that out now (a
    /// scenario's override may be active on its session).
    func needsStore(_ request: RecordedRequest, engine: MockEngine) -> Bool

    /// Runs `body` on the stored data of session `id` (nil: none is
    /// stored), with the session locked against every replica until the
    /// data `body` returns is written back (nil: the session is removed).
    /// `body` runs once; a store that cannot commit throws.
    func transact<T: Sendable>(session id: String, _ body: @escaping @Sendable (SessionData?) throws -> (T, SessionData?)) async throws -> T

    /// Keeps a delivered answer's journal entry (off the answer's path).
    func append(_ decision: Decision, status: Int, durationMicros: Int)

    /// Returns once every live replica has written its journal and read the
    /// sessions' overrides since it was called.
    func barrier() async throws

    /// The newest entries of every replica, at most `capacity`, in the order their answers were completed.
    func journal(capacity: Int) async throws -> Journal

    /// Empties the shared journal.
    func clearJournal() async throws

    /// Removes every session.
    func removeAllSessions() async throws

    /// Every stored session, by id, and how many were evicted and why.
    func storedSessions() async throws -> StoredSessions

    /// Notes that the store could not be used (`request`: for a request,
    /// counted in health), and says why in a few words.
    func failed(_ error: any Error, request: Bool) -> String

    /// Whether this replica reaches the store now, and what health says of it.
    func health() -> (reachable: Bool, details: JSONObject)
}

/// The sessions a shared store holds (`GET /__doppel/sessions`).
package struct StoredSessions: Sendable {
    /// Ids in order, each with its active scenario's name.
    package var sessions: [(id: String, scenario: String?)] = []
    /// Sessions evicted to make room, for being idle, and for their state's size.
    package var evictedForRoom = 0, evictedIdle = 0, evictedForState = 0

    package init() {}
}
