/// One client's state: the contract's variables, counters and collections,
/// plus what Doppel keeps for it (its clock, sequence positions, rate windows).
///
/// A session is named by the `Doppel-Session` header (absent: `default`).
/// All reads and writes go through `transact`, which holds the session's lock
/// for the whole step of a request that reads and changes it.
public final class Session: Sendable {
    /// The session's id (`Doppel-Session`).
    public let id: String
    private let data: Locked<SessionData>
    /// Where size changes are reported; nil once the session has left its store.
    private let budget: Locked<StateBudget?>

    init(id: String, initial: JSONObject, budget: StateBudget? = nil) {
        self.id = id
        let data = SessionData(state: initial)
        self.data = Locked(data)
        self.budget = Locked(budget)
        budget?.add(data.stateSize)
    }

    /// A session holding `data`, in no store: what a shared store
    /// (`doppel serve --state-store`) decides one request in, after loading
    /// the session's row, before writing it back.
    package init(id: String, data: SessionData) {
        self.id = id
        self.data = Locked(data)
        self.budget = Locked(nil)
    }

    /// Everything the session holds now, as a shared store writes it back.
    package var current: SessionData { data.withLock { $0 } }

    /// Runs `body` with exclusive access to the session; changes are kept
    /// only if `body` returns normally. They are made in place through
    /// `SessionData`'s recording methods, and undone if `body` throws.
    package func transact<T, E: Error>(_ body: (inout SessionData) throws(E) -> T) throws(E) -> T {
        try data.withLock { (current: inout SessionData) throws(E) -> T in
            let sizeBefore = current.stateSize
            current.undo.removeAll(keepingCapacity: true)
            do throws(E) {
                let result = try body(&current)
                current.undo.removeAll(keepingCapacity: true)
                report(current.stateSize - sizeBefore)
                return result
            } catch {
                current.rollBack()
                throw error
            }
        }
    }

    /// Tells the store's budget how the session's size changed (under the session's lock).
    private func report(_ delta: Int) {
        guard delta != 0 else { return }
        budget.withLock { $0?.add(delta) }
    }

    /// Leaves the store: its size is taken off the budget, and later changes
    /// (of a request still holding the session) are no longer counted.
    func detach() {
        data.withLock { data in
            budget.withLock { budget in
                budget?.add(-data.stateSize)
                budget = nil
            }
        }
    }

    /// A copy of the contract-visible state.
    public var snapshot: JSONObject { data.withLock { $0.state } }

    /// Replaces the contract-visible state.
    public func replace(with newState: JSONObject) {
        data.withLock { data in
            let before = data.stateSize
            data.state = newState
            data.stateSize = JSON.object(newState).encodedSize
            report(data.stateSize - before)
        }
    }

    /// Replaces the contract-visible state with what `transform` makes of it, in one step.
    package func replace(using transform: (JSONObject) -> JSONObject) {
        data.withLock { data in
            let before = data.stateSize
            data.state = transform(data.state)
            data.stateSize = JSON.object(data.state).encodedSize
            report(data.stateSize - before)
        }
    }

    /// The session's clock.
    public var clock: SessionClock { data.withLock { $0.clock } }

    /// The session clock's current instant, given real time.
    public func now(real: Double) -> Double { data.withLock { $0.clock.now(real: real) } }

    /// Starts the session over: the contract's initial state, then the
    /// scenario's `given` state and clock, with its overrides active.
    package func restart(initial: JSONObject, scenario: Scenario?, real: Double) {
        data.withLock { data in
            let before = data.stateSize
            defer { report(data.stateSize - before) }
            data = SessionData(state: initial)
            guard let scenario else { return }
            for (name, value) in scenario.given.state { data.state[name] = value }
            data.stateSize = JSON.object(data.state).encodedSize
            scenario.given.clock?.apply(to: &data.clock, real: real)
            data.scenario = ActiveScenario(name: scenario.name, overrides: scenario.overrides, inline: scenario.inlineSource)
        }
    }

    /// Starts sequences over: those of one endpoint (its responses' and its
    /// `per` keys'), or, for nil, every one the session has moved; the
    /// fallbacks' are `fallbacks`. Returns how many positions were dropped.
    package func resetSequences(of endpointID: String?) -> Int {
        data.withLock { data in
            let keys = data.sequencePositions.keys.filter { key in endpointID.map { key.hasPrefix($0 + "|") } ?? true }
            for key in keys { data.sequencePositions[key] = nil }
            return keys.count
        }
    }

    /// The active scenario's name, if any.
    public var scenarioName: String? { data.withLock { $0.scenario?.name } }

    /// Changes the session's clock.
    package func adjustClock(_ change: (inout SessionClock) -> Void) -> SessionClock {
        data.withLock { data in
            change(&data.clock)
            return data.clock
        }
    }
}

/// Everything a session holds.
package struct SessionData: Sendable {
    /// The contract's variables, counters and collections, by name.
    package internal(set) var state: JSONObject
    package var clock = SessionClock()
    /// How many times each sequence has answered, by sequence key (bounded: keys may come from requests).
    package internal(set) var sequencePositions = BoundedMap<Int>(capacity: SessionData.maximumKeys)
    /// Requests counted by each rate limit window, by limit and key (bounded: keys may come from requests).
    package internal(set) var rateWindows = BoundedMap<RateWindow>(capacity: SessionData.maximumKeys)
    /// The scenario the session was started from, if any.
    package var scenario: ActiveScenario?
    /// How many requests each endpoint has received, for overrides of the n-th call.
    package internal(set) var endpointCalls: [String: Int] = [:]
    /// Answers forced for endpoints' next calls (`POST /__doppel/next`),
    /// oldest first; each is used once, before the scenario's overrides.
    package internal(set) var forced: [Override] = []
    /// The most forced answers a session holds at once.
    package static let maximumForced = 100

    /// The size of `state` as JSON text, kept up to date by each effect
    /// (new value's size less the old one's, at the path it changes).
    package internal(set) var stateSize: Int
    /// How to undo what the current transaction changed (`SessionData+Changes`).
    var undo: [Undo] = []

    /// The most rate-window keys, and the most sequence keys, one session holds.
    package static let maximumKeys = 10_000
    /// The largest a session's state may grow by effects, as JSON text.
    package static let maximumStateSize = 16 << 20

    package init(state: JSONObject) {
        self.state = state
        self.stateSize = JSON.object(state).encodedSize
    }
}

/// A session's virtual clock: real time moved by an offset, or stopped at an instant.
public struct SessionClock: Sendable, Equatable {
    /// Seconds added to real time.
    public var offset: Double = 0
    /// When set, the clock stands still at this instant.
    public var frozenAt: Double?

    package init() {}

    /// The session's time when real time is `real`.
    public func now(real: Double) -> Double { frozenAt ?? real + offset }

    /// Moves the clock to `instant` (kept within the years 1 to 9999); a frozen clock stays frozen there.
    public mutating func set(_ instant: Double, real: Double) {
        let instant = instant.isFinite ? instant.clamped(to: UTCCalendar.supported) : real
        if frozenAt != nil { frozenAt = instant } else { offset = instant - real }
    }

    /// Moves the clock forward (or back) by a duration.
    package mutating func advance(by duration: CalendarDuration, real: Double) {
        set(duration.added(to: now(real: real)), real: real)
    }

    /// Stops the clock where it is, or lets it run on from there.
    public mutating func freeze(_ frozen: Bool, real: Double) {
        let current = now(real: real)
        if frozen {
            frozenAt = current
        } else {
            frozenAt = nil
            offset = current - real
        }
    }
}

/// The requests a rate limit has counted for one key.
package struct RateWindow: Sendable {
    /// Fixed windows: when the current window began, and its count.
    package var start: Double = 0
    package var count: Int = 0
    /// Sliding windows: the instants of the requests still inside the window.
    package var hits: [Double] = []
}

/// A scenario a session was started from: its name and overrides.
package struct ActiveScenario: Sendable {
    package let name: String
    package let overrides: [Override]
    /// The JSON an inline scenario was given as (`PUT /__doppel/scenario`),
    /// so a shared store can load it again; nil for a loaded scenario, found again by name.
    package var inline: String? = nil

    package init(name: String, overrides: [Override], inline: String? = nil) {
        self.name = name
        self.overrides = overrides
        self.inline = inline
    }
}
