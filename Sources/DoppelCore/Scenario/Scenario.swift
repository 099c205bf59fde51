/// A named starting state and optional overrides layered on a contract,
/// plus steps: requests with expectations, run by `doppel run`.
public struct Scenario: Sendable {
    /// The scenario file.
    public let file: String
    /// The scenario's name: its `name`, or its file name without `.yaml`.
    public var name: String
    public let description: String?
    /// The contract file it applies to, resolved from the scenario's folder.
    public let contractFile: String
    public let given: Given
    public let overrides: [Override]
    /// Headers every request step sends unless it sets them itself.
    public let defaultHeaders: [(String, ValueTemplate)]
    public let steps: [Step]
    /// `given` and `overrides` as written, to hand to a server's admin API.
    public let setup: JSONObject

    public init(file: String, name: String, description: String?, contractFile: String, given: Given, overrides: [Override],
                defaultHeaders: [(String, ValueTemplate)], steps: [Step], setup: JSONObject = JSONObject()) {
        self.setup = setup
        self.file = file
        self.name = name
        self.description = description
        self.contractFile = contractFile
        self.given = given
        self.overrides = overrides
        self.defaultHeaders = defaultHeaders
        self.steps = steps
    }
}

/// The state a scenario starts from.
public struct Given: Sendable {
    /// State names and the values they start with (collections as objects keyed by id).
    public var state: [(String, JSON)] = []
    /// Where the session's clock starts.
    public var clock: ClockChange?

    public init(state: [(String, JSON)] = [], clock: ClockChange? = nil) {
        self.state = state
        self.clock = clock
    }

    public var isEmpty: Bool { state.isEmpty && clock == nil }
}

/// A change to a session's clock, as the admin API and scenarios write it.
public struct ClockChange: Sendable, Equatable {
    public var set: Double?
    public var advance: CalendarDuration?
    public var freeze: Bool?
    public var reset = false

    public init(set: Double? = nil, advance: CalendarDuration? = nil, freeze: Bool? = nil, reset: Bool = false) {
        self.set = set
        self.advance = advance
        self.freeze = freeze
        self.reset = reset
    }

    /// Applies the change: reset, then set, then advance, then freeze.
    public func apply(to clock: inout SessionClock, real: Double) {
        if reset { clock = SessionClock() }
        if let set { clock.set(set, real: real) }
        if let advance { clock.advance(by: advance, real: real) }
        if let freeze { clock.freeze(freeze, real: real) }
    }

    /// Reads `{"set": ISO, "advance": "31d", "freeze": bool, "reset": bool}`; the error says what is wrong.
    /// The keys of a clock change.
    static let keys: Set<String> = ["set", "advance", "freeze", "reset"]

    public static func parse(_ object: JSONObject, allowing extra: Set<String> = []) -> Result<ClockChange, ClockChangeError> {
        let known = keys
        if let unknown = object.keys.first(where: { !known.contains($0) && !extra.contains($0) }) {
            return .failure(ClockChangeError(message: "unknown key '\(unknown)'\(Suggestion.hint(for: unknown, in: known)); use advance, set, freeze or reset"))
        }
        var change = ClockChange()
        if let value = object["advance"] {
            guard let text = value.stringValue, let duration = CalendarDuration.parse(text) else {
                return .failure(ClockChangeError(message: "'advance' must be a duration like 60s, 31d or 1mo"))
            }
            change.advance = duration
        }
        if let value = object["set"] {
            guard let text = value.stringValue, let instant = UTCCalendar.parse(text) else {
                return .failure(ClockChangeError(message: "'set' must be an ISO 8601 date like 2025-01-01T00:00:00Z"))
            }
            change.set = instant
        }
        if let value = object["freeze"] {
            guard case .bool(let frozen) = value else { return .failure(ClockChangeError(message: "'freeze' must be true or false")) }
            change.freeze = frozen
        }
        if let value = object["reset"] {
            guard case .bool(let reset) = value else { return .failure(ClockChangeError(message: "'reset' must be true or false")) }
            change.reset = reset
        }
        return .success(change)
    }
}

/// Why a clock change cannot be made.
public struct ClockChangeError: Error, Sendable {
    public let message: String
}

/// A forced behaviour for an endpoint, optionally only on its n-th call.
public struct Override: Sendable {
    public let endpointID: String
    /// 1-based call number in the session; nil for every call.
    public let call: Int?
    /// The response to send instead of the one the contract would choose.
    public let response: ResponseDefinition?
    public let delay: Delay?
    public let fault: Fault?

    public init(endpointID: String, call: Int?, response: ResponseDefinition?, delay: Delay?, fault: Fault?) {
        self.endpointID = endpointID
        self.call = call
        self.response = response
        self.delay = delay
        self.fault = fault
    }

    public func applies(toCall number: Int) -> Bool { call.map { $0 == number } ?? true }
}

/// One step of a scenario.
public struct Step: Sendable {
    public enum Action: Sendable {
        case request(RequestTemplate)
        /// Moves the session's clock (through the admin API); the change as parsed and as written.
        case clock(ClockChange, JSONObject)
    }

    /// What the step is called in reports: its `name`, or its request line.
    public let name: String
    public let action: Action
    public let expectation: Expectation
    /// Values taken from the response for later steps, by name.
    public let captures: [(String, Expression)]
    public let location: SourceLocation
}

/// A request a step sends; every part may use captured values.
public struct RequestTemplate: Sendable {
    public enum Body: Sendable {
        case none
        case json(ValueTemplate)
        case text(ValueTemplate, contentType: String)
        case form([(String, ValueTemplate)])
        case multipart([MultipartPart])
    }

    /// One part of a multipart step body.
    public struct MultipartPart: Sendable {
        public let name: String
        public let filename: String?
        public let contentType: String?
        public let content: ValueTemplate
    }

    public let method: String
    public let path: ValueTemplate
    public let query: [(String, ValueTemplate)]
    public let headers: [(String, ValueTemplate)]
    public let body: Body
    /// Seconds to wait for an answer.
    public let timeout: Double
}

/// What a step's response must be.
public struct Expectation: Sendable {
    public var status: Int?
    /// Expected header values (templates: they may use captured values).
    public var headers: [(String, ValueTemplate)] = []
    /// A subset of the body, with `$type`, `$regex`, `$present`, `$absent`,
    /// `$length` and `$any` matchers; a template, so it may use captured values.
    public var body: ValueTemplate?
    /// The request must fail in transport (reset, empty reply, timeout).
    public var transportError = false
}
