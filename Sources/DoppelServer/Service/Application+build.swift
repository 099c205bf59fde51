import DoppelCore
import Foundation
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
    buildApplication(
        slot: EngineSlot(engine), configuration: configuration, log: log, scenarios: scenarios, recorder: nil, onServerRunning: onServerRunning)
}

/// As `buildApplication(engine:...)`, answering with whatever engine `slot`
/// holds (`EngineSlot.replace(with:)` swaps it, as `doppel serve --watch` does).
public func buildApplication(
    slot: EngineSlot, configuration: ServerConfiguration, log: RequestLog? = nil, scenarios: ScenarioCatalog = ScenarioCatalog(),
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some Service {
    buildApplication(slot: slot, configuration: configuration, log: log, scenarios: scenarios, recorder: nil, onServerRunning: onServerRunning)
}

/// As `buildApplication(slot:...)`, with `recorder` keeping every exchange
/// forwarded to the upstream (`doppel record`).
package func buildApplication(
    slot: EngineSlot, configuration: ServerConfiguration, log: RequestLog? = nil, scenarios: ScenarioCatalog = ScenarioCatalog(),
    recorder: Recorder?, shared: (any StateStore)? = nil, agents: (any AgentDoor)? = nil,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some Service {
    buildServer(
        slot: slot, configuration: configuration, log: log, scenarios: scenarios, recorder: recorder, shared: shared, agents: agents,
        onServerRunning: onServerRunning
    ).service
}

/// As `buildApplication(slot:...recorder:...)`, with the server's own path
/// as an agent's host: `doppel mcp --port` gives it to the tools it offers
/// over standard input, so their calls take the path of the HTTP server's
/// (its event stream announces them, as it does those of `/__doppel/mcp`).
package func buildServer(
    slot: EngineSlot, configuration: ServerConfiguration, log: RequestLog? = nil, scenarios: ScenarioCatalog = ScenarioCatalog(),
    recorder: Recorder?, shared: (any StateStore)? = nil, agents: (any AgentDoor)? = nil,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> (service: some Service, host: any AgentHost) {
    var logger = Logger(label: "doppel")
    logger.logLevel = .warning
    let answerer = Answerer(
        slot: slot, log: log ?? RequestLog(format: configuration.logFormat), maxBodySize: configuration.maxBodySize,
        hangLimit: configuration.hangLimit, adminToken: configuration.adminToken, scenarios: scenarios,
        proxy: configuration.proxy, proxyTimeout: configuration.proxyTimeout, recorder: recorder, shared: shared,
        maxEventStreams: configuration.maxEventStreams, socketLimits: configuration.socketLimits,
        callbackAllow: (try? CallbackAllowList(configuration.callbackAllow)) ?? (try! CallbackAllowList([])),
        allowedHosts: configuration.allowedHosts, allowedOrigins: configuration.allowedOrigins, agents: agents)
    return (DoppelService(answerer: answerer, configuration: configuration, logger: logger, onServerRunning: onServerRunning), answerer)
}

/// The server as a service: HummingbirdCore's server (listening, TLS,
/// connection limit, graceful shutdown) running Doppel's HTTP/1 channel,
/// whose `HTTPDoor` answers every request.
struct DoppelService: Service {
    let answerer: Answerer
    let configuration: ServerConfiguration
    let logger: Logger
    let onServerRunning: @Sendable (Int) async -> Void

    func run() async throws {
        let limits = ConnectionGuard.Limits(
            header: configuration.headerTimeout, body: configuration.bodyTimeout,
            idle: configuration.idleTimeout)
        let channel = DoppelHTTP1Channel(answerer: answerer, limits: limits, maxHeaderSize: configuration.maxHeaderSize)
        let serverConfiguration = HummingbirdCore.ServerConfiguration(
            address: .hostname(configuration.host, port: configuration.port), serverName: "Doppel",
            availableConnectionsDelegate: IdleMemory(maxConnections: configuration.maxConnections, whenIdle: configuration.whenIdle))
        let running: @Sendable (any Channel) async -> Void = { [configuration, onServerRunning] channel in
            await onServerRunning(channel.localAddress?.port ?? configuration.port)
        }
        // HTTPS: TLS in front of the same channel. (Hummingbird's own HTTP/2
        // channel would bypass Doppel's limits and its one door.) A contract
        // that serves gRPC offers `h2` by ALPN, which gRPC's clients ask for;
        // others offer HTTP/1.1 alone, so browsers and curl keep to it.
        var tls = configuration.tls
        if answerer.slot.servesGRPC { tls?.applicationProtocols = ["h2", "http/1.1"] }
        let server =
            try tls.map { try TLSChannel(channel, tlsConfiguration: $0) }.map {
                $0.server(
                    configuration: serverConfiguration, onServerRunning: running, eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                    logger: logger)
            }
            ?? channel.server(
                configuration: serverConfiguration, onServerRunning: running, eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger)
        do {
            try await server.run()
        } catch {
            answerer.callbacks.cancelAll()
            await answerer.upstream?.shutdown()
            throw error
        }
        answerer.callbacks.cancelAll()
        await answerer.upstream?.shutdown()
    }
}
