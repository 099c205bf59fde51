/// A named starting state and optional overrides layered on a contract,
/// plus steps: requests with expectations, run by `doppel run`.
public struct Scenario: Sendable {
    /// The scenario file.
    public let file: String
    /// The scenario's name: its `name`, or its file name without `.yaml`.
    public var name: String
    /// The scenario's description, if it has one.
    public let description: String?
    /// The contract file it applies to, resolved from the scenario's folder.
    public let contractFile: String
    package let given: Given
    package let overrides: [Override]
    /// Headers every request step sends unless it sets them itself.
    package let defaultHeaders: [(String, ValueTemplate)]
    package let steps: [Step]
    /// `given` and `overrides` as written, to hand to a server's admin API.
    package let setup: JSONObject
    /// The JSON text an inline scenario (`PUT /__doppel/scenario`) was loaded from; nil for a file.
    package var inlineSource: String?

    package init(
        file: String, name: String, description: String?, contractFile: String, given: Given, overrides: [Override],
        defaultHeaders: [(String, ValueTemplate)], steps: [Step], setup: JSONObject = JSONObject()
    ) {
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
package struct Given: Sendable {
    /// State names and the values they start with (collections as objects keyed by id).
    package var state: [(String, JSON)] = []
    /// Where the session's clock starts.
    package var clock: ClockChange?

    package init(state: [(String, JSON)] = [], clock: ClockChange? = nil) {
        self.state = state
        self.clock = clock
    }

    package var isEmpty: Bool { state.isEmpty && clock == nil }
}

/// A change to a session's clock, as the admin API and scenarios write it.
package struct ClockChange: Sendable, Equatable {
    package var set: Double?
    package var advance: CalendarDuration?
    package var freeze: Bool?
    package var reset = false

    package init(set: Double? = nil, advance: CalendarDuration? = nil, freeze: Bool? = nil, reset: Bool = false) {
        self.set = set
        self.advance = advance
        self.freeze = freeze
        self.reset = reset
    }

    /// Applies the change: reset, then set, then advance, then freeze.
    package func apply(to clock: inout SessionClock, real: Double) {
        if reset { clock = SessionClock() }
        if let set { clock.set(set, real: real) }
        if let advance { clock.advance(by: advance, real: real) }
        if let freeze { clock.freeze(freeze, real: real) }
    }

    /// Reads `{"set": ISO, "advance": "31d", "freeze": bool, "reset": bool}`; the error says what is wrong.
    /// The keys of a clock change.
    static let keys: Set<String> = ["set", "advance", "freeze", "reset"]

    package static func parse(_ object: JSONObject, allowing extra: Set<String> = []) -> Result<ClockChange, ClockChangeError> {
        let known = keys
        if let unknown = object.keys.first(where: { !known.contains($0) && !extra.contains($0) }) {
            return .failure(
                ClockChangeError(message: "unknown key '\(unknown)'\(Suggestion.hint(for: unknown, in: known)); use advance, set, freeze or reset"))
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
package struct ClockChangeError: Error, Sendable {
    package let message: String
}

/// A forced behaviour for an endpoint, optionally only on its n-th call.
package struct Override: Sendable {
    package let endpointID: String
    /// 1-based call number in the session; nil for every call.
    package let call: Int?
    /// The response to send instead of the one the contract would choose.
    package let response: ResponseDefinition?
    package let delay: Delay?
    package let fault: Fault?

    package init(endpointID: String, call: Int?, response: ResponseDefinition?, delay: Delay?, fault: Fault?) {
        self.endpointID = endpointID
        self.call = call
        self.response = response
        self.delay = delay
        self.fault = fault
    }

    package func applies(toCall number: Int) -> Bool { call.map { $0 == number } ?? true }
}

/// One step of a scenario.
package struct Step: Sendable {
    package enum Action: Sendable {
        case request(RequestTemplate)
        /// Moves the session's clock (through the admin API); the change as parsed and as written.
        case clock(ClockChange, JSONObject)
        /// Opens a WebSocket (`socket: GET /path`) under a name; the expectation is the upgrade's (101 unless it says otherwise).
        case openSocket(RequestTemplate, name: String)
        /// Sends a message on a socket (`send:`); a string as it is, anything else as JSON.
        case send(ValueTemplate, socket: String)
        /// Waits up to `within` seconds for a message that matches (`receive:`), or for the server's close frame (`closed:`).
        case receive(SocketExpectation, socket: String)
        /// Closes a socket with a code (`close:`).
        case closeSocket(String, code: Int)
        /// A gRPC call (`grpc: SERVICE/METHOD`) over HTTP/2, its expectation's
        /// status a gRPC status and its body the reply (a stream's list of
        /// them, or an error's `google.rpc.Status`).
        case grpc(GRPCCallTemplate)
    }

    /// What the step is called in reports: its `name`, or its request line.
    package let name: String
    package let action: Action
    package let expectation: Expectation
    /// Values taken from the response for later steps, by name.
    package let captures: [(String, Expression)]
    package let location: SourceLocation
}

/// What a `receive:` or `closed:` step waits for.
package struct SocketExpectation: Sendable {
    /// A message matching this (the body matchers); nil for `closed:`.
    package var message: ValueTemplate?
    /// `closed:`: the server's close frame, with this code (nil: any).
    package var closeCode: Int?
    package var waitsForClose = false
    /// Seconds to wait.
    package var within: Double = 5
}

/// A request a step sends; every part may use captured values.
package struct RequestTemplate: Sendable {
    package enum Body: Sendable {
        case none
        case json(ValueTemplate)
        case text(ValueTemplate, contentType: String)
        case form([(String, ValueTemplate)])
        case multipart([MultipartPart])
    }

    /// One part of a multipart step body.
    package struct MultipartPart: Sendable {
        package let name: String
        package let filename: String?
        package let contentType: String?
        package let content: ValueTemplate
    }

    package let method: String
    package let path: ValueTemplate
    package let query: [(String, ValueTemplate)]
    package let headers: [(String, ValueTemplate)]
    package let body: Body
    /// Seconds to wait for an answer.
    package let timeout: Double
}

/// A gRPC call a step makes: its messages in the JSON mapping, encoded by the contract's `.proto` when sent.
package struct GRPCCallTemplate: Sendable {
    /// `SERVICE/METHOD`.
    package let method: String
    /// The contract's `grpc:` section, whose `.proto` the messages are encoded by.
    package let definition: GRPCDefinition
    /// One message (`message`), or a template whose value is the list of them (`messages`, a client stream).
    package let message: ValueTemplate?
    package let messages: ValueTemplate?
    /// Metadata sent (names lower-cased), after the scenario's headers.
    package let metadata: [(String, ValueTemplate)]
    /// Seconds the whole call may take.
    package let timeout: Double
}

/// What a step's response must be.
package struct Expectation: Sendable {
    package var status: Int?
    /// Expected header values (templates: they may use captured values).
    package var headers: [(String, ValueTemplate)] = []
    /// A subset of the body, with `$type`, `$regex`, `$present`, `$absent`,
    /// `$length` and `$any` matchers; a template, so it may use captured values.
    package var body: ValueTemplate?
    /// The request must fail in transport (reset, empty reply, timeout).
    package var transportError = false
}
