/// Where a server's sessions and journal live, as storage verbs only: a
/// transaction on one session, the journal's append, read and clear, a
/// barrier, the list of sessions and their removal.
///
/// Two kinds implement it. The process's memory (DoppelServer's
/// `MemoryState`: the answering engine's own `SessionStore` and `Journal`)
/// runs a request's transaction at once, under the session's lock; a store
/// shared by replicas of one contract (`doppel serve --state-store`;
/// DoppelPostgres's `PostgresStateStore`) runs it later, when the store
/// answers. What a request or an admin call does with the verbs is written
/// once, for both, in DoppelServer (`StateStore.decide` and
/// `StateStore.admin`), so a store implements storage and nothing else.
package protocol StateStore: Sendable {
    /// The longest a request waits for the store before its 503 (an admin
    /// call, which may run a barrier, three times this).
    var timeout: Double { get }

    /// Whether the sessions are the answering engine's own, in this
    /// process: admin calls act on them in place, and a socket's rules may
    /// change them (a shared store's would change a copy).
    var isLocal: Bool { get }

    /// Whether `request` must be decided in the store: its answer may read
    /// or change its session, or the store cannot rule that out now (a
    /// scenario's override may be active on its session).
    func needsStore(_ request: RecordedRequest, engine: MockEngine) -> Bool

    /// Runs `body` on session `id` of `engine`'s contract: at once in
    /// memory, on the session the engine's store holds (each read and
    /// change `body` makes through `Session.transact` holds its lock), or
    /// later in a shared store, on a copy of its row, written back only over
    /// the row it was made from (throwing if it cannot commit). In memory
    /// `body` runs once; in a shared store it may run again on a fresh copy
    /// when another write came first, so it changes nothing but the session
    /// it is given.
    func transact<T: Sendable>(session id: String, engine: MockEngine, _ body: @escaping @Sendable (Session) -> T) -> Stored<T>

    /// Runs `body` on the stored data of session `id` (nil: none is
    /// stored); the data it returns is written back (nil: the session is
    /// removed) only over the data it was given, so every replica sees the
    /// writes in one order. `body` may run again when another write came
    /// first (PostgreSQL's store reads without a lock, then takes it), so it
    /// changes nothing but its copy; its last run's result is returned. A
    /// store that cannot commit throws.
    func transact<T: Sendable>(session id: String, _ body: @escaping @Sendable (SessionData?) throws -> (T, SessionData?)) async throws -> T

    /// Keeps a delivered answer's journal entry, decided by `engine`: its
    /// sequence number when the store numbers it at once (memory), nil when
    /// later (a shared store writes its entries off the answer's path).
    func append(_ decision: Decision, status: Int, durationMicros: Int, engine: MockEngine) -> Int?

    /// Keeps an entry the engine journaled beside the answers (a stream's
    /// message, a callback's attempt) where the store's journal is read:
    /// nothing more in memory, where the engine's journal is the store's.
    func keep(_ entry: Journal.Entry)

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

    /// Hands `message`, made on this replica, to the other replicas (in
    /// memory there are none: nothing is done). True when the store also
    /// hands it to this replica's own `receive` link, in the one order
    /// every replica delivers in (a shared store's pushes): the caller
    /// then does not deliver it here itself.
    @discardableResult
    func broadcast(_ message: ReplicaMessage) -> Bool

    /// Where the messages other replicas broadcast arrive (each once, in the
    /// order its replica made them; a shared store's pushes, this
    /// replica's own among them, in one order for every replica), and whether this replica follows
    /// events now (a dashboard or `/__doppel/events` is open on it).
    func receive(_ deliver: @escaping @Sendable (ReplicaMessage) -> Void, followsEvents: @escaping @Sendable () -> Bool)

    /// Whether another replica follows events: this replica's answers are
    /// then broadcast as events (known within one poll of the store).
    var othersFollowEvents: Bool { get }
}

/// What one replica tells the others.
package enum ReplicaMessage: Sendable, Equatable {
    /// Messages pushed to `session`'s sockets, by an answer or a rule (`from`).
    case pushes([RenderedPush], session: String, from: String)
    /// An event of `/__doppel/events` (`request`, `socket`, `state`...), for `session` (nil: for every reader), its data JSON text.
    case event(String, session: String?, json: [UInt8])
}

/// What a store gives back: now, when it holds what is asked in this
/// process, or later, when it must be asked (and may fail).
package enum Stored<T: Sendable>: Sendable {
    case now(T)
    case later(@Sendable () async throws -> T)
}

extension StateStore {
    package var isLocal: Bool { false }

    package func keep(_ entry: Journal.Entry) {}

    @discardableResult
    package func broadcast(_ message: ReplicaMessage) -> Bool { false }

    package func receive(_ deliver: @escaping @Sendable (ReplicaMessage) -> Void, followsEvents: @escaping @Sendable () -> Bool) {}

    package var othersFollowEvents: Bool { false }

    /// A store outside the process: the session's row is read and locked,
    /// `body` runs on a copy (a new session for a row not stored yet: the
    /// contract's initial state, then the `--scenario` if any), and the
    /// copy is written back.
    package func transact<T: Sendable>(session id: String, engine: MockEngine, _ body: @escaping @Sendable (Session) -> T) -> Stored<T> {
        .later {
            try await self.transact(session: id) { stored in
                let session = Session(id: id, data: stored ?? Self.newSession(id, engine: engine))
                return (body(session), session.current)
            }
        }
    }

    /// A session as a new one starts: the contract's initial state, then the `--scenario` if any.
    private static func newSession(_ id: String, engine: MockEngine) -> SessionData {
        let session = Session(id: id, data: SessionData(state: engine.contract.state.initial))
        if let scenario = engine.sessions.defaultScenario {
            session.restart(initial: engine.contract.state.initial, scenario: scenario, real: engine.realNow)
        }
        return session.current
    }
}

/// The sessions a shared store holds (`GET /__doppel/sessions`).
package struct StoredSessions: Sendable {
    /// Ids in order, each with its active scenario's name.
    package var sessions: [(id: String, scenario: String?)] = []
    /// Sessions evicted to make room, for being idle, and for their state's size.
    package var evictedForRoom = 0, evictedIdle = 0, evictedForState = 0

    package init() {}
}
