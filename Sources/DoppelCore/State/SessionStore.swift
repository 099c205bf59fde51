/// All sessions of a running contract, created on first use.
public final class SessionStore: Sendable {
    /// The session used when a request names none.
    public static let defaultID = "default"

    private let sessions = Locked<[String: Session]>([:])
    /// The contract's initial state.
    public let initial: JSONObject
    /// The most sessions held at once; a request for one more gets a 503.
    public let limit: Int
    private let baseScenario = Locked<Scenario?>(nil)
    private let clock: @Sendable () -> Double

    public init(initial: JSONObject, limit: Int = 10_000, clock: @escaping @Sendable () -> Double = { 0 }) {
        self.initial = initial
        self.limit = limit
        self.clock = clock
    }

    /// The scenario every new session starts from (`doppel serve --scenario`).
    public var defaultScenario: Scenario? {
        get { baseScenario.withLock { $0 } }
        set { baseScenario.withLock { $0 = newValue } }
    }

    /// Starts a session (new or existing) over from a scenario, or from the
    /// contract's initial state with `nil`. Nil when the store is full.
    @discardableResult
    public func start(_ id: String, scenario: Scenario?) -> Session? {
        guard let session = session(id) else { return nil }
        session.restart(initial: initial, scenario: scenario, real: clock())
        return session
    }

    /// True for ids of 1 to 128 letters, digits or `. _ : -`.
    public static func isValid(id: String) -> Bool {
        let utf8 = id.utf8
        return (1...128).contains(utf8.count) && utf8.allSatisfy { b in
            (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 46 || b == 95 || b == 58 || b == 45
        }
    }

    /// The session with `id`, created with the contract's initial state if new;
    /// nil when the store is full.
    public func session(_ id: String) -> Session? {
        sessions.withLock { all in
            if let existing = all[id] { return existing }
            guard all.count < limit else { return nil }
            let session = Session(id: id, initial: initial)
            if let scenario = baseScenario.withLock({ $0 }) {
                session.restart(initial: initial, scenario: scenario, real: clock())
            }
            all[id] = session
            return session
        }
    }

    /// The session with `id` if it exists.
    public func existing(_ id: String) -> Session? {
        sessions.withLock { $0[id] }
    }

    /// Ids of all sessions, sorted.
    public var ids: [String] { sessions.withLock { $0.keys.sorted() } }

    /// Forgets one session; its next request starts from the initial state.
    @discardableResult
    public func reset(_ id: String) -> Bool {
        sessions.withLock { $0.removeValue(forKey: id) != nil }
    }

    /// Forgets every session.
    public func resetAll() {
        sessions.withLock { $0.removeAll() }
    }
}
