import Foundation

/// All sessions of a running contract, created on first use and evicted when
/// idle too long or when room is needed.
///
/// Bounded by construction: at most `limit` sessions are held. A request for
/// a new session when the store is full evicts the least recently used one
/// (never the default session), so one client inventing session ids cannot
/// lock others out. Sessions unused for `idleLimit` seconds are evicted as
/// the store is used. Evicted sessions start over from the initial state if
/// they come back; `evictions` counts them.
public final class SessionStore: Sendable {
    /// The session used when a request names none.
    public static let defaultID = "default"

    /// Why sessions were evicted, and how many.
    package struct Evictions: Sendable, Equatable {
        /// Evicted to make room for a new session.
        package var forRoom = 0
        /// Evicted after being idle longer than the idle limit.
        package var idle = 0
        /// Evicted because all sessions together held more state than the state budget.
        package var forState = 0

        package init(forRoom: Int = 0, idle: Int = 0, forState: Int = 0) {
            self.forRoom = forRoom
            self.idle = idle
            self.forState = forState
        }
    }

    private struct Entry {
        let session: Session
        /// Monotonic seconds of the last use.
        var lastUsed: Double
        var newer: String?
        var older: String?
    }

    /// Sessions by id, threaded on a recency list (newest first) for O(1) eviction.
    private struct Table {
        /// The contract's initial state, which a reloaded contract may change.
        var initial: JSONObject
        var entries: [String: Entry] = [:]
        var newest: String?
        var oldest: String?
        var evictions = Evictions()

        mutating func unlink(_ id: String) {
            guard let entry = entries[id] else { return }
            if let newer = entry.newer { entries[newer]!.older = entry.older } else { newest = entry.older }
            if let older = entry.older { entries[older]!.newer = entry.newer } else { oldest = entry.newer }
        }

        mutating func pushNewest(_ id: String) {
            entries[id]!.older = newest
            entries[id]!.newer = nil
            if let newest { entries[newest]!.newer = id }
            newest = id
            if oldest == nil { oldest = id }
        }

        mutating func remove(_ id: String) -> Session? {
            guard let entry = entries[id] else { return nil }
            unlink(id)
            entries.removeValue(forKey: id)
            entry.session.detach()
            return entry.session
        }

        /// The least recently used session other than the default one.
        var evictionCandidate: String? { evictionCandidate(sparing: SessionStore.defaultID) }

        /// The least recently used session other than the default one and `spared`.
        func evictionCandidate(sparing spared: String) -> String? {
            var id = oldest
            while let current = id, current == SessionStore.defaultID || current == spared { id = entries[current]?.newer }
            return id
        }
    }

    private let table: Locked<Table>
    /// The contract's initial state.
    package var initial: JSONObject { table.withLock { $0.initial } }
    /// The most sessions held at once.
    package let limit: Int
    /// Seconds a session may go unused before it is evicted; nil keeps idle sessions.
    package let idleLimit: Double?
    private let baseScenario = Locked<Scenario?>(nil)
    private let clock: @Sendable () -> Double
    private let monotonic: @Sendable () -> Double
    private let onEvict = Locked<(@Sendable (String) -> Void)?>(nil)
    /// The state all sessions hold together.
    package let budget: StateBudget

    /// The most sessions held at once by default (`--max-sessions`).
    public static let defaultLimit = 10_000
    /// Seconds after which an unused session is evicted by default (`--session-idle`).
    public static let defaultIdleLimit: Double? = 3600

    /// - Parameters:
    ///   - limit: the most sessions held at once (at least 1).
    ///   - idleLimit: seconds of disuse after which a session is evicted; nil never evicts for idleness.
    ///   - clock: real time in seconds since 1970, for session clocks.
    ///   - monotonic: seconds on a clock that only moves forward, for idleness.
    ///   - stateLimit: the most state (as JSON) all sessions may hold together.
    package init(
        initial: JSONObject, limit: Int = SessionStore.defaultLimit, idleLimit: Double? = SessionStore.defaultIdleLimit,
        stateLimit: Int = StateBudget.defaultLimit,
        clock: @escaping @Sendable () -> Double = { 0 },
        monotonic: @escaping @Sendable () -> Double = SessionStore.uptime
    ) {
        self.budget = StateBudget(limit: stateLimit)
        self.table = Locked(Table(initial: initial))
        self.limit = max(1, limit)
        self.idleLimit = idleLimit
        self.clock = clock
        self.monotonic = monotonic
    }

    /// Seconds since an arbitrary start, never going back.
    package static let uptime: @Sendable () -> Double = {
        let now = ContinuousClock.now - ContinuousClock.Instant.processStart
        return Double(now.components.seconds) + Double(now.components.attoseconds) / 1e18
    }

    /// Called with the id of each evicted session (outside the store's lock).
    package func onEviction(_ handler: @escaping @Sendable (String) -> Void) {
        onEvict.withLock { $0 = handler }
    }

    /// The scenario every new session starts from (`doppel serve --scenario`).
    package var defaultScenario: Scenario? {
        get { baseScenario.withLock { $0 } }
        set { baseScenario.withLock { $0 = newValue } }
    }

    /// Starts a session (new or existing) over from a scenario, or from the
    /// contract's initial state with `nil`.
    @discardableResult
    public func start(_ id: String, scenario: Scenario?) -> Session {
        let session = session(id)
        session.restart(initial: initial, scenario: scenario, real: clock())
        return session
    }

    /// True for ids of 1 to 128 letters, digits or `. _ : -`.
    public static func isValid(id: String) -> Bool {
        let utf8 = id.utf8
        return (1...128).contains(utf8.count)
            && utf8.allSatisfy { b in
                (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 46 || b == 95 || b == 58 || b == 45
            }
    }

    /// The session with `id`, created with the contract's initial state if
    /// new (evicting the least recently used one when the store is full).
    /// Only valid ids (`isValid(id:)`) may be passed.
    public func session(_ id: String) -> Session {
        let now = monotonic()
        var evicted: [String] = []
        let session = table.withLock { table -> Session in
            evicted = evictIdle(&table, now: now)
            evicted += evictForState(&table, keeping: id)
            if let existing = table.entries[id] {
                // Most requests come from the session that asked last: it stays where it is.
                if table.newest != id {
                    table.unlink(id)
                    table.pushNewest(id)
                }
                table.entries[id]!.lastUsed = now
                return existing.session
            }
            if table.entries.count >= limit, let victim = table.evictionCandidate {
                _ = table.remove(victim)
                table.evictions.forRoom += 1
                evicted.append(victim)
            }
            let session = Session(id: id, initial: table.initial, budget: budget)
            if let scenario = baseScenario.withLock({ $0 }) {
                session.restart(initial: table.initial, scenario: scenario, real: clock())
            }
            table.entries[id] = Entry(session: session, lastUsed: now)
            table.pushNewest(id)
            return session
        }
        notify(evicted)
        return session
    }

    /// Evicts sessions idle past the limit, oldest first; O(1) when there are none.
    private func evictIdle(_ table: inout Table, now: Double) -> [String] {
        guard let idleLimit else { return [] }
        var evicted: [String] = []
        while let candidate = table.evictionCandidate, let entry = table.entries[candidate], now - entry.lastUsed > idleLimit {
            _ = table.remove(candidate)
            table.evictions.idle += 1
            evicted.append(candidate)
        }
        return evicted
    }

    /// Evicts least recently used sessions (never `keeping`, never the default) while the budget is over.
    private func evictForState(_ table: inout Table, keeping id: String) -> [String] {
        var evicted: [String] = []
        while budget.isOver, let victim = table.evictionCandidate(sparing: id) {
            _ = table.remove(victim)
            table.evictions.forState += 1
            evicted.append(victim)
        }
        return evicted
    }

    private func notify(_ evicted: [String]) {
        guard !evicted.isEmpty, let handler = onEvict.withLock({ $0 }) else { return }
        for id in evicted { handler(id) }
    }

    /// Holds a session with `data` as `id` (a shared store's row), in
    /// place of any session with that id; evicts none.
    @discardableResult
    package func adopt(_ id: String, data: SessionData) -> Session {
        let now = monotonic()
        let session = Session(id: id, data: data)
        table.withLock { table in
            _ = table.remove(id)
            table.entries[id] = Entry(session: session, lastUsed: now)
            table.pushNewest(id)
        }
        return session
    }

    /// The session with `id` if it exists.
    public func existing(_ id: String) -> Session? {
        table.withLock { $0.entries[id]?.session }
    }

    /// Ids of all sessions, sorted.
    public var ids: [String] { table.withLock { $0.entries.keys.sorted() } }

    /// How many sessions are held.
    public var count: Int { table.withLock { $0.entries.count } }

    /// How many sessions have been evicted, and why.
    package var evictions: Evictions {
        let now = monotonic()
        var evicted: [String] = []
        let counts = table.withLock { table -> Evictions in
            evicted = evictIdle(&table, now: now)
            return table.evictions
        }
        notify(evicted)
        return counts
    }

    /// Takes a reloaded contract's state declaration: new sessions start
    /// from its initial state, and every session keeps its own value of each
    /// name the old and new declarations both have, of the same kind (and,
    /// for a collection, the same key field); other names take their new
    /// initial values, and names no longer declared are dropped. Clocks,
    /// call counts, sequences and scenarios are kept.
    package func redeclare(from old: StateDeclaration, to new: StateDeclaration) {
        let sessions = table.withLock { table -> [Session] in
            table.initial = new.initial
            return table.entries.values.map(\.session)
        }
        for session in sessions {
            session.replace { Self.migrate($0, from: old, to: new) }
        }
    }

    /// A session's state under a new declaration (see `redeclare`).
    package static func migrate(_ state: JSONObject, from old: StateDeclaration, to new: StateDeclaration) -> JSONObject {
        var migrated = JSONObject()
        for (name, initialValue) in new.initial.pairs {
            let kept = old.kinds[name] != nil && old.kinds[name] == new.kinds[name] && old.collectionKeys[name] == new.collectionKeys[name]
            migrated[name] = kept ? (state[name] ?? initialValue) : initialValue
        }
        return migrated
    }

    /// Forgets one session; its next request starts from the initial state.
    @discardableResult
    public func reset(_ id: String) -> Bool {
        table.withLock { $0.remove(id) != nil }
    }

    /// Forgets every session.
    public func resetAll() {
        table.withLock { table in
            for entry in table.entries.values { entry.session.detach() }
            let evictions = table.evictions
            table = Table(initial: table.initial)
            table.evictions = evictions
        }
    }
}

extension ContinuousClock.Instant {
    /// An instant fixed when first read, the zero of `SessionStore.uptime`.
    static let processStart = ContinuousClock.now
}
