import DoppelCore
import DoppelOpenAPI
import DoppelServer
import Foundation
import Logging
import ServiceLifecycle

/// A Doppel server running in-process on a free loopback port, for tests.
///
/// ```swift
/// try await DoppelTestServer.with(contract: "contracts/tales.yaml") { server in
///     let url = server.baseURL.appendingPathComponent("api/v1/free-stories")
///     // ... drive a client against url ...
/// }
/// ```
public final class DoppelTestServer: Sendable {
    /// `http://127.0.0.1:<port>` (`https` when the configuration serves TLS).
    public let baseURL: URL
    /// The port it listens on.
    public let port: Int
    /// The engine behind the server: its sessions and journal.
    public let engine: MockEngine
    private let task: Task<Void, any Error>?
    private let group: ServiceGroup?
    /// False for a server made by `unlistened(engine:baseURL:)`: no socket,
    /// its engine answers only in-process.
    public var isListening: Bool { task != nil }

    private init(baseURL: URL, port: Int, engine: MockEngine, task: Task<Void, any Error>?, group: ServiceGroup?) {
        self.baseURL = baseURL
        self.port = port
        self.engine = engine
        self.task = task
        self.group = group
    }

    /// Starts a server for a contract file.
    public static func start(contract file: String, configuration: ServerConfiguration = .testing) async throws -> DoppelTestServer {
        try await start(engine: MockEngine(contract: ContractDocument.load(file: file), configuration: configuration), configuration: configuration)
    }

    /// Starts a server for an engine you built (a custom clock, a contract loaded from text).
    public static func start(
        engine: MockEngine, configuration: ServerConfiguration = .testing,
        scenarios: ScenarioCatalog = ScenarioCatalog()
    ) async throws -> DoppelTestServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = buildApplication(engine: engine, configuration: configuration, scenarios: scenarios) { port in
            continuation.yield(port)
            continuation.finish()
        }
        // A service group of our own, so stop() can shut down gracefully
        // (in-flight requests finish) rather than cancel.
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: Logger(label: "doppel-test")))
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            // The application ended before listening: surface its error.
            try await task.value
            throw TestServerError(message: "the server stopped before it started listening")
        }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return DoppelTestServer(
            baseURL: URL(string: "\(configuration.scheme)://\(host):\(port)")!, port: port, engine: engine, task: task, group: group)
    }

    /// A server that does not listen: `baseURL` only names it, and its
    /// engine answers requests in-process (DoppelTesting's URLProtocol).
    public static func unlistened(engine: MockEngine, baseURL: URL) -> DoppelTestServer {
        DoppelTestServer(baseURL: baseURL, port: baseURL.port ?? 80, engine: engine, task: nil, group: nil)
    }

    /// Runs `body` with a started server and stops it afterwards, even on error.
    public static func with<T: Sendable>(
        contract file: String, configuration: ServerConfiguration = .testing,
        _ body: (DoppelTestServer) async throws -> T
    ) async throws -> T {
        try await with(server: start(contract: file, configuration: configuration), body)
    }

    /// Runs `body` with a server for an engine you built, and stops it afterwards.
    public static func with<T: Sendable>(
        engine: MockEngine, configuration: ServerConfiguration = .testing,
        _ body: (DoppelTestServer) async throws -> T
    ) async throws -> T {
        try await with(server: start(engine: engine, configuration: configuration), body)
    }

    private static func with<T: Sendable>(server: DoppelTestServer, _ body: (DoppelTestServer) async throws -> T) async throws -> T {
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Stops the server gracefully and waits for it to finish.
    public func stop() async {
        guard let group, let task else { return }
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// A URL under the server: `url("/api/v1/free-stories?limit=1")`.
    public func url(_ target: String) -> URL {
        URL(string: baseURL.absoluteString + target)!
    }
}

/// Why a test server could not start.
public struct TestServerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String
    public var description: String { message }

    /// An error saying `message`.
    public init(message: String) {
        self.message = message
    }
}

extension ServerConfiguration {
    /// Loopback, a free port, no request log.
    public static var testing: ServerConfiguration {
        ServerConfiguration(host: "127.0.0.1", port: 0, logFormat: .none)
    }
}
