import DoppelCore
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// Builds the HTTP server serving an engine: what `doppel serve` runs and
/// what `DoppelTesting` starts in-process. Run it in a `ServiceGroup`.
///
/// - Parameter onServerRunning: called once listening, with the bound port
///   (useful with port 0).
/// - Parameter scenarios: the scenarios sessions can switch to through the admin API.
public func buildApplication(
    engine: MockEngine, configuration: ServerConfiguration, log: RequestLog? = nil, scenarios: ScenarioCatalog = ScenarioCatalog(),
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some Service {
    buildApplication(slot: EngineSlot(engine), configuration: configuration, log: log, scenarios: scenarios, onServerRunning: onServerRunning)
}

/// As `buildApplication(engine:...)`, answering with whatever engine `slot` holds.
/// `recorder` keeps every exchange forwarded to the upstream (`doppel record`).
public func buildApplication(
    slot: EngineSlot, configuration: ServerConfiguration, log: RequestLog? = nil, scenarios: ScenarioCatalog = ScenarioCatalog(),
    recorder: Recorder? = nil, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some Service {
    var logger = Logger(label: "doppel")
    logger.logLevel = .warning
    let responder = DoppelResponder(
        slot: slot, log: log ?? RequestLog(format: configuration.logFormat), maxBodySize: configuration.maxBodySize,
        hangLimit: configuration.hangLimit, adminToken: configuration.adminToken, scenarios: scenarios,
        proxy: configuration.proxy, proxyTimeout: configuration.proxyTimeout, recorder: recorder)
    return DoppelService(responder: responder, configuration: configuration, logger: logger, onServerRunning: onServerRunning)
}

/// The server as a service: Doppel's HTTP/1 channel in front of its
/// responder.
///
/// Hummingbird's `Application` would do the same, but it also runs a
/// once-a-second date formatter on Foundation's ICU calendar, which costs
/// resident memory and wake-ups; Doppel writes its own `Date` header
/// (`HTTPDate`), as `DirectResponder` does.
struct DoppelService: Service {
    let responder: DoppelResponder
    let configuration: ServerConfiguration
    let logger: Logger
    let onServerRunning: @Sendable (Int) async -> Void

    func run() async throws {
        let limits = ConnectionGuard.Limits(header: configuration.headerTimeout, body: configuration.bodyTimeout, maxBodySize: configuration.maxBodySize,
                                            idle: configuration.idleTimeout)
        let builder = HTTPServerBuilder { [configuration, responder] handler -> any ServerChildChannel in
            let channel = DoppelHTTP1Channel(responder: handler, limits: limits, maxHeaderSize: configuration.maxHeaderSize, direct: responder)
            // HTTPS: TLS in front of the same channel. (HTTP/2 is Hummingbird's own
            // channel, which would bypass Doppel's limits and direct answers.)
            guard let tls = configuration.tls else { return channel }
            return try TLSChannel(channel, tlsConfiguration: tls)
        }
        let server = try builder.buildServer(
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Doppel",
                                 availableConnectionsDelegate: IdleMemory(maxConnections: configuration.maxConnections,
                                                                          returnsMemory: configuration.returnsIdleMemory)),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: logger
        ) { [responder, logger] request, responseWriter, channel in
            let context = DoppelRequestContext(source: .init(channel: channel, logger: logger))
            var response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch let error as HTTPParserError {
                throw error
            } catch {
                logger.debug("unexpected error", metadata: ["error": "\(error)"])
                response = Response(status: .internalServerError)
            }
            response.headers[.date] = HTTPDate.now()
            response.headers[.server] = "Doppel"
            do {
                try await responseWriter.write(response: response.head, body: response.body)
            } catch is HTTPParserError {
                // The channel answers a parse error with 400; one seen while
                // a response is already being written must close it instead.
                throw ParseErrorWhileWriting()
            }
        } onServerRunning: { [configuration, onServerRunning] channel in
            await onServerRunning(channel.localAddress?.port ?? configuration.port)
        }
        do {
            try await server.run()
        } catch {
            await responder.upstream?.shutdown()
            throw error
        }
        await responder.upstream?.shutdown()
    }

    struct ParseErrorWhileWriting: Error {}
}
