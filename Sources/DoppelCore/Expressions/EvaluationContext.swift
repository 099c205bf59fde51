/// The values an expression can see: named roots (`body`, `query`, `state`,
/// `data`, `clock`, `let` bindings, ...) and the session's clock.
package struct EvaluationContext: Sendable {
    /// Root names and their values.
    package var roots: Roots
    /// The session clock's current instant, in seconds since 1970 (UTC).
    package var now: Double
    /// The request the roots `request`, `headers`, `client` and `query` are
    /// read from while no stage has set them (validation sets `query`, and
    /// `headers` where the endpoint has a header schema). They are built
    /// where an expression reads them: most requests read none, and building
    /// four objects for each would cost more than routing it.
    package var request: RecordedRequest?

    package init(roots: Roots = [:], now: Double, request: RecordedRequest? = nil) {
        self.roots = roots
        self.now = now
        self.request = request
    }

    /// A plain dictionary of roots, as scenario steps capture them.
    package init(roots: [String: JSON], now: Double) {
        self.init(roots: Roots(roots), now: now)
    }
}

extension EvaluationContext {
    /// Makes validated request parts (typed query, headers and body) visible to expressions.
    mutating func use(_ parts: RequestValidator.ValidatedRequest) {
        if let path = parts.path { roots[.path] = path }
        roots[.query] = parts.query
        if let headers = parts.headers { roots[.headers] = headers }
        roots[.body] = parts.body
    }
}

/// The named values expressions read.
///
/// The built-in roots live in fixed slots: the parser resolves a built-in
/// name to its slot once, when the contract loads, so a request's lookups
/// never hash a name. Other names (`let` bindings, scenario captures) are
/// few per context and kept in a short list searched in order, which for a
/// handful of short names is cheaper than hashing them.
package struct Roots: Sendable, ExpressibleByDictionaryLiteral {
    /// The built-in roots, one slot each.
    package enum Slot: Int, CaseIterable, Sendable {
        case request, path, query, headers, body, auth, session, client, data, clock, state, errors, retryAfter, problem
        /// The tightest rate limit covering the endpoint, once it is counted.
        case rateLimit
        /// A WebSocket message from the client, to the socket's `on_message` rules.
        case message

        /// The name expressions use.
        package var name: String {
            switch self {
            case .retryAfter: "retry_after"
            case .rateLimit: "rate_limit"
            default: String(describing: self)
            }
        }

        /// The slot of a built-in name, resolved when an expression is parsed.
        package init?(name: String) {
            guard let slot = Self.allCases.first(where: { $0.name == name }) else { return nil }
            self = slot
        }
    }

    /// One value per slot; nil where the root is not set.
    private var slots: [JSON?]
    /// Other names, in the order they were bound; a later binding of a name replaces the earlier one.
    private var names: [String] = []
    private var values: [JSON] = []

    package init() {
        slots = Array(repeating: nil, count: Slot.allCases.count)
    }

    package init(_ dictionary: [String: JSON]) {
        self.init()
        for (name, value) in dictionary { self[name] = value }
    }

    package init(dictionaryLiteral elements: (String, JSON)...) {
        self.init()
        for (name, value) in elements { self[name] = value }
    }

    /// A built-in root.
    package subscript(slot: Slot) -> JSON? {
        get { slots[slot.rawValue] }
        set { slots[slot.rawValue] = newValue }
    }

    /// A name that is not a built-in root: a `let` binding or a scenario capture.
    package subscript(bound name: String) -> JSON? {
        get {
            guard let index = names.lastIndex(of: name) else { return nil }
            return values[index]
        }
        set {
            if let index = names.lastIndex(of: name) {
                if let newValue {
                    values[index] = newValue
                } else {
                    names.remove(at: index)
                    values.remove(at: index)
                }
            } else if let newValue {
                names.append(name)
                values.append(newValue)
            }
        }
    }

    /// Any root by name.
    package subscript(name: String) -> JSON? {
        get {
            if let slot = Slot(name: name) { return self[slot] }
            return self[bound: name]
        }
        set {
            if let slot = Slot(name: name) {
                self[slot] = newValue
            } else {
                self[bound: name] = newValue
            }
        }
    }

    /// The `clock` root at an instant: `clock.now` and `clock.epoch`.
    ///
    /// It is never stored in a slot: the evaluator derives it from the
    /// context's `now` where an expression reads it, so a request that reads
    /// no clock formats none, and the session's clock can be read inside the
    /// request's transaction, after its roots were built.
    static func clock(at now: Double) -> JSON {
        .object(JSONObject([("now", clock(member: "now", at: now)), ("epoch", clock(member: "epoch", at: now))]))
    }

    /// One member of the `clock` root, without building the rest.
    static func clock(member name: String, at now: Double) -> JSON {
        switch name {
        case "now": .string(UTCCalendar.format(epoch: now))
        case "epoch": now.rounded() == now && abs(now) < 9e15 ? .int(Int(now)) : .double(now)
        default: .null
        }
    }
}
