import DoppelCore
import Hummingbird
import HummingbirdCore
import Logging

/// Builds the HTTP application serving an engine: what `doppel serve` runs
/// and what `DoppelTesting` starts in-process.
///
/// - Parameter onServerRunning: called once listening, with the bound port
///   (useful with port 0).
/// - Parameter scenarios: the scenarios sessions can switch to through the admin API.
public func buildApplication(
    engine: MockEngine, configuration: ServerConfiguration, log: RequestLog? = nil, scenarios: ScenarioCatalog = ScenarioCatalog(),
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    var logger = Logger(label: "doppel")
    logger.logLevel = .warning
    let responder = DoppelResponder(
        engine: engine, log: log ?? RequestLog(format: configuration.logFormat), maxBodySize: configuration.maxBodySize,
        hangLimit: configuration.hangLimit, adminToken: configuration.adminToken, scenarios: scenarios)
    let limits = ConnectionGuard.Limits(header: configuration.headerTimeout, body: configuration.bodyTimeout, maxBodySize: configuration.maxBodySize)
    let server = HTTPServerBuilder { handler in
        DoppelHTTP1Channel(responder: handler, limits: limits, idleTimeout: configuration.idleTimeout, maxHeaderSize: configuration.maxHeaderSize,
                           direct: responder)
    }
    return Application(
        responder: responder,
        server: server,
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "Doppel",
            availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections)),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: logger)
}
