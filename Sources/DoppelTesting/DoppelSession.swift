import DoppelCore
import DoppelRunner
import Foundation
import Testing
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One test's session on a Doppel server: its own state, call counts,
/// sequences and clock, however many tests share the server. Every request
/// made through it carries its `Doppel-Session` header.
///
/// ```swift
/// let server = try await DoppelTestServer.shared(contract: "contracts/tales.yaml")
/// let doppel = server.session()
/// let (data, response) = try await doppel.urlSession.data(for: doppel.request("/api/v1/free-stories"))
/// doppel.verify(endpoint: "list-free-stories", status: 200, count: 1)
/// ```
public struct DoppelSession: Sendable {
    /// The server the session lives on.
    public let server: DoppelTestServer
    /// The `Doppel-Session` id.
    public let id: String

    /// The session of the test running now, when it (or its suite) has the
    /// `.doppel(...)` trait.
    @TaskLocal public static var current: DoppelSession?

    /// The session `id` on `server` (`server.session()` makes a new one).
    public init(server: DoppelTestServer, id: String) {
        self.server = server
        self.id = id
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { server.baseURL }

    /// A URL under the server: `url("/api/v1/free-stories?limit=1")`.
    public func url(_ target: String) -> URL { server.url(target) }

    /// The headers that put a request in this session.
    public var headers: [String: String] { ["Doppel-Session": id] }

    // MARK: Clients

    /// A request to `target` in this session.
    public func request(_ target: String, method: String = "GET") -> URLRequest {
        var request = URLRequest(url: url(target))
        request.httpMethod = method
        request.setValue(id, forHTTPHeaderField: "Doppel-Session")
        return request
    }

    /// `base` with this session's header added to every request, for code
    /// under test that builds its own `URLSession` from a configuration.
    /// `inProcess` answers the requests from the engine through
    /// `DoppelURLProtocol`, without a socket; it is the default (and the
    /// only way) for a server made by `DoppelTestServer.inProcess(contract:)`.
    public func configuration(_ base: URLSessionConfiguration = .ephemeral, inProcess: Bool? = nil) -> URLSessionConfiguration {
        let configuration = base
        var headers = configuration.httpAdditionalHeaders ?? [:]
        headers["Doppel-Session"] = id
        configuration.httpAdditionalHeaders = headers
        if inProcess ?? !server.isListening {
            if server.isListening { DoppelURLProtocol.register(server.engine, at: baseURL) }
            configuration.protocolClasses = [DoppelURLProtocol.self] + (configuration.protocolClasses ?? [])
        }
        return configuration
    }

    /// A `URLSession` whose every request is in this session.
    public var urlSession: URLSession { URLSession(configuration: configuration()) }

    // MARK: WebSockets

    /// `ws://127.0.0.1:<port><target>`: where the app's socket code connects.
    public func socketURL(_ target: String) -> URL {
        var components = URLComponents(url: url(target), resolvingAgainstBaseURL: false)!
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        return components.url!
    }

    /// An upgrade request for `target` in this session, for
    /// `URLSession.webSocketTask(with:)` (a listening server, not in-process:
    /// a WebSocket needs a socket).
    public func socketRequest(_ target: String, headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: socketURL(target))
        request.setValue(id, forHTTPHeaderField: "Doppel-Session")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// Opens a WebSocket at `target` in this session with Doppel's own
    /// client (it works wherever the tests run, Linux included); a refused
    /// upgrade comes back too, with its status and body in `handshake`.
    public func openSocket(_ target: String, headers: [String: String] = [:], timeout: Double = 10) async throws -> WebSocketClient {
        precondition(server.isListening, "a WebSocket needs a listening server (DoppelTestServer.start), not an in-process one")
        return try await WebSocketClient.connect(
            to: socketURL(target), headers: [("Doppel-Session", id)] + headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
            timeout: timeout)
    }

    /// Sends a request in this session: `send("POST", "/api/v1/children", json: #"{"name":"Mia"}"#)`.
    public func send(
        _ method: String, _ target: String, headers: [String: String] = [:], json: String? = nil,
        body: Data? = nil
    ) async throws -> Response {
        var request = request(target, method: method)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let json {
            request.httpBody = Data(json.utf8)
            if request.value(forHTTPHeaderField: "Content-Type") == nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        } else if let body {
            request.httpBody = body
        }
        let session = URLSession(configuration: configuration())
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw TestServerError(message: "\(method) \(target) got no HTTP response") }
        return Response(
            status: http.statusCode,
            headers: http.allHeaderFields.reduce(into: [:]) { all, field in
                if let name = field.key as? String, let value = field.value as? String { all[name.lowercased()] = value }
            }, body: data)
    }

    /// An answer to `send`.
    public struct Response: Sendable {
        /// The HTTP status.
        public let status: Int
        /// By lowercased name.
        public let headers: [String: String]
        /// The body.
        public let body: Data

        /// An answer of `status`, `headers` and `body`.
        public init(status: Int, headers: [String: String], body: Data) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// The body as text.
        public var text: String { String(decoding: body, as: UTF8.self) }

        /// The body as JSON; nil when it is not JSON.
        public var json: JSON? { try? JSONReader.parse(Array(body)) }
    }

    // MARK: State and clock

    /// The session's state: its variables, counters and collections.
    public var state: JSONObject {
        server.engine.sessions.existing(id)?.snapshot ?? server.engine.contract.state.initial
    }

    /// Starts this session over from a scenario file's `given` and
    /// overrides, as `POST /__doppel/scenarios/{name}/start` does. A relative
    /// `file` is found from `filePath` as `TestFiles.resolve` says.
    public func start(scenario file: String, filePath: String = #filePath) throws {
        let scenario = try ScenarioLoader.load(file: TestFiles.resolve(file, relativeTo: filePath), contract: server.engine.contract)
        _ = server.engine.sessions.start(id, scenario: scenario)
    }

    /// Moves the session's virtual clock by a duration as contracts write
    /// it (`"31d"`, `"1h30m"`, `"1mo"`); other sessions keep theirs.
    public func advanceClock(by duration: String) throws {
        guard let parsed = CalendarDuration.parse(duration) else {
            throw TestServerError(message: "'\(duration)' is not a duration (write it as 250ms, 40s, 5m, 2h, 31d, 1w, 1mo or 1y)")
        }
        let real = server.engine.realNow
        _ = server.engine.sessions.session(id).adjustClock { $0.advance(by: parsed, real: real) }
    }

    /// The session's virtual time, in seconds since 1970.
    public var now: Double { server.engine.sessions.session(id).now(real: server.engine.realNow) }

    // MARK: Journal, verification, coverage

    /// This session's requests the journal holds, oldest first; only those
    /// to `endpoint` and answered with `status` when given.
    public func journal(endpoint: String? = nil, status: Int? = nil) -> [Journal.Entry] {
        server.engine.journal.entries.filter { entry in
            entry.session == id && (endpoint == nil || entry.endpointID == endpoint) && (status == nil || entry.status == status)
        }
    }

    /// How often `endpoint` answered (with `status`, when given) in this
    /// session, against an expectation, without recording anything.
    public func verification(endpoint: String, status: Int? = nil, count: Int? = nil, min: Int? = nil, max: Int? = nil) -> Verification {
        let expected: Verification.Expectation = count.map { .exactly($0) } ?? .between(min: min ?? (max == nil ? 1 : 0), max: max)
        return Verification(.init(endpoint: endpoint, status: status, session: id), expected: expected, in: server.engine.journal)
    }

    /// Checks that `endpoint` answered (with `status`, when given) in this
    /// session exactly `count` times, or between `min` and `max`, or at
    /// least once. A failure is recorded as a test issue (Swift Testing) or
    /// failure (XCTest) that says what came instead: the near matches.
    @discardableResult
    public func verify(
        endpoint: String, status: Int? = nil, count: Int? = nil, min: Int? = nil, max: Int? = nil,
        fileID: String = #fileID, filePath: StaticString = #filePath, line: UInt = #line, column: UInt = #column
    ) -> Verification {
        let result = verification(endpoint: endpoint, status: status, count: count, min: min, max: max)
        if !result.passed {
            if server.engine.contract.endpoint(id: endpoint) == nil {
                let known = server.engine.contract.endpoints.map(\.id)
                TestIssue.record(
                    "the contract has no endpoint '\(endpoint)'\(Suggestion.hint(for: endpoint, in: known))",
                    fileID: fileID, filePath: filePath, line: line, column: column)
            } else {
                TestIssue.record(result.description, fileID: fileID, filePath: filePath, line: line, column: column)
            }
        }
        return result
    }

    /// Each documented endpoint × status of the contract, reached in this session or not.
    public var coverage: Coverage { Coverage(of: server.engine.contract, in: server.engine.journal, session: id) }

    // MARK: Scenarios

    /// Runs a scenario file's steps in this session over HTTP, as `doppel
    /// run` does; a failed step is recorded as a test issue with the report.
    @discardableResult
    public func run(
        scenario file: String, fileID: String = #fileID, filePath: StaticString = #filePath, line: UInt = #line,
        column: UInt = #column
    ) async throws -> ScenarioRunner.ScenarioResult {
        guard server.isListening else {
            throw TestServerError(message: "scenarios run over HTTP; start the server with DoppelTestServer.shared(contract:) to run '\(file)'")
        }
        let scenario = try ScenarioLoader.load(file: TestFiles.resolve(file, relativeTo: "\(filePath)"), contract: server.engine.contract)
        let result = await ScenarioRunner(baseURL: baseURL, isDoppel: true).run(scenario, session: id)
        if !result.passed {
            TestIssue.record(
                ScenarioReport.lines(for: result, label: file).joined(separator: "\n"),
                fileID: fileID, filePath: filePath, line: line, column: column)
        }
        return result
    }
}

/// Records a failure in whichever test framework is running the test.
enum TestIssue {
    static func record(_ message: String, fileID: String, filePath: StaticString, line: UInt, column: UInt) {
        if Test.current != nil {
            Issue.record(
                Comment(rawValue: message),
                sourceLocation: Testing.SourceLocation(fileID: fileID, filePath: "\(filePath)", line: Int(line), column: Int(column)))
        } else {
            XCTFail(message, file: filePath, line: line)
        }
    }
}
