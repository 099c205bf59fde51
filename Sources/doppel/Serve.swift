import ArgumentParser
import DoppelCore
import DoppelMCP
import DoppelOpenAPI
import DoppelPostgres
import DoppelServer
import Foundation
import Logging
import ServiceLifecycle

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a contract over HTTP.",
        discussion: """
            Stops gracefully on SIGINT or SIGTERM: delayed responses are sent at once, in-flight responses get \
            --shutdown-grace, and a second signal exits at once. The admin API is under /__doppel/ on the same port. \
            Every limit and its default is in docs/limits.md.
            """
    )

    @Argument(help: "The contract file (YAML).")
    var contract: String

    @OptionGroup var listen: ListenOptions

    @Option(name: .customLong("log-format"), help: "Request log lines.")
    var logFormat: RequestLog.Format = .text

    @Option(name: .customLong("max-body-size"), help: "Largest request body accepted, like 1MiB or 64KiB; larger ones get 413.")
    var maxBodySize = Size(ServerConfiguration.defaults.maxBodySize)

    @Option(name: .customLong("journal-size"), help: "The most requests kept in the journal.")
    var journalSize: Int = ServerConfiguration.defaults.journalCapacity

    @Option(help: "Delay every response that declares none: a duration like 200ms, or a range like 100ms-300ms.")
    var delay: Delay?

    @Option(name: .customLong("hang-limit"), help: "The longest a no_answer fault keeps a connection open, like 30s.")
    var hangLimit = Seconds(ServerConfiguration.defaults.hangLimit)

    @Option(help: "A scenario every session starts from (its given state and overrides).")
    var scenario: String?

    @Option(help: "A folder of scenarios that sessions can switch to with PUT /__doppel/scenario.")
    var scenarios: String?

    @Option(name: .customLong("admin-token"), help: "Require this token (Doppel-Admin-Token or Authorization: Bearer) on every admin call.")
    var adminToken: String?

    @Option(name: .customLong("max-sessions"), help: "The most sessions held at once; a new one evicts the least recently used.")
    var maxSessions: Int = ServerConfiguration.defaults.sessionLimit

    @Option(name: .customLong("session-idle"), help: "Evict sessions unused this long, like 1h; 0 keeps them.")
    var sessionIdle = Seconds(ServerConfiguration.defaults.sessionIdleLimit ?? 0)

    @Option(name: .customLong("idle-timeout"), help: "Close connections with no request in progress after this long, like 60s.")
    var idleTimeout = Seconds(ServerConfiguration.defaults.idleTimeout)

    @Option(name: .customLong("header-timeout"), help: "Answer 408 when a request's headers take longer than this to arrive, like 10s.")
    var headerTimeout = Seconds(ServerConfiguration.defaults.headerTimeout)

    @Option(
        name: .customLong("body-timeout"),
        help: "Answer 408 when a request body pauses longer than this, like 30s, or takes longer in all than this and a second per 500 bytes.")
    var bodyTimeout = Seconds(ServerConfiguration.defaults.bodyTimeout)

    @Option(name: .customLong("max-connections"), help: "The most connections open at once; more wait to be accepted.")
    var maxConnections: Int = ServerConfiguration.defaults.maxConnections

    @Option(name: .customLong("max-event-streams"), help: "The most GET /__doppel/events streams (dashboards among them) open at once; more get 503.")
    var maxEventStreams: Int = ServerConfiguration.defaults.maxEventStreams

    @Option(name: .customLong("max-sockets-per-session"), help: "The most WebSockets one session may have open; more get 429.")
    var maxSocketsPerSession: Int = ServerConfiguration.defaults.maxSocketsPerSession

    @Option(name: .customLong("socket-idle-timeout"), help: "Close a WebSocket (1001) whose client sends no frame for this long, like 300s.")
    var socketIdleTimeout = Seconds(ServerConfiguration.defaults.socketIdleTimeout)

    @Option(
        name: .customLong("max-socket-message"),
        help: "The largest message a WebSocket client may send, like 64KiB; a larger one closes the socket (1009).")
    var maxSocketMessage = Size(ServerConfiguration.defaults.maxSocketMessage)

    @Option(
        name: .customLong("callback-allow"),
        help:
            "A host callbacks may go to: loopback (the default), a name or address, *.example.com, any of them with :PORT, or * for any; repeat for more. Others are refused and journaled, never contacted."
    )
    var callbackAllow: [String] = []

    @Option(
        name: .customLong("allow-host"),
        help:
            "A host name the admin API and dashboard answer to besides IP addresses and localhost (a name that reaches this server, like mock.internal; *.example.com; * for any); repeat for more."
    )
    var allowHost: [String] = []

    @Option(
        name: .customLong("allow-origin"),
        help:
            "A web origin (like http://app.test:3000, or *) whose pages may open the contract's WebSockets besides this server's own and loopback ones; repeat for more."
    )
    var allowOrigin: [String] = []

    @Option(help: "Forward requests no endpoint takes, and those of `proxy: true` endpoints, to this server (http or https URL).")
    var proxy: String?

    @Option(name: .customLong("proxy-timeout"), help: "How long the --proxy server may take to connect and to answer before a 504, like 30s.")
    var proxyTimeout = Seconds(ServerConfiguration.defaults.proxyTimeout)

    @Option(name: .customLong("tls-cert"), help: "Serve HTTPS with this certificate (PEM; intermediates after it), with --tls-key.")
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: "The private key (PEM) of --tls-cert.")
    var tlsKey: String?

    @Option(
        help:
            "self-signed: serve HTTPS with a certificate for localhost and this machine's names, signed by a local authority kept in --tls-dir; prints how to trust it."
    )
    var tls: String?

    @Option(name: .customLong("tls-dir"), help: "Where --tls self-signed keeps its authority and certificate (default ~/.doppel/tls).")
    var tlsDir: String?

    @Flag(
        help:
            "Reload the contract when it or a body file it reads changes; sessions keep their state. A contract with errors is reported and the last good one keeps serving."
    )
    var watch = false

    @Flag(
        help:
            "Also answer the contract's MCP server (its mcp: section) over standard input and output, one JSON-RPC message a line, in the default session; the log goes to standard error, and the server stops when standard input ends."
    )
    var stdio = false

    @Option(
        name: .customLong("state-store"),
        help:
            "Keep sessions and the journal in PostgreSQL, shared by every replica started with the same URL and namespace: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE. Default: $DOPPEL_STATE_STORE, which keeps a password out of the process list."
    )
    var stateStoreOption: String?

    /// `--state-store`, else `DOPPEL_STATE_STORE` (a URL with a password is then not on the command line, which others may read).
    var stateStore: String? {
        stateStoreOption ?? ProcessInfo.processInfo.environment["DOPPEL_STATE_STORE"].flatMap { $0.isEmpty ? nil : $0 }
    }

    @Option(name: .customLong("state-namespace"), help: "With --state-store: the namespace replicas of one contract share (default: default).")
    var stateNamespace: String = "default"

    @Option(name: .customLong("state-store-timeout"), help: "With --state-store: the longest a request waits for the store before its 503, like 2s.")
    var stateStoreTimeout = Seconds(2)

    @Option(
        name: .customLong("shutdown-grace"),
        help: "On SIGTERM or SIGINT, how long in-flight responses may take before the server stops anyway, like 5s.")
    var shutdownGrace = Seconds(5)

    func validate() throws {
        if let tls, tls != "self-signed" { throw ValidationError("--tls takes self-signed; give your own certificate with --tls-cert and --tls-key") }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        if tls != nil, tlsCert != nil { throw ValidationError("give --tls self-signed or --tls-cert and --tls-key, not both") }
        if tlsDir != nil, tls == nil { throw ValidationError("--tls-dir is for --tls self-signed") }
        if stateStore != nil {
            if watch {
                throw ValidationError(
                    "--watch cannot be used with --state-store: replicas sharing sessions must serve one contract; restart them together")
            }
            if proxy != nil { throw ValidationError("--proxy cannot be used with --state-store yet") }
        } else if stateNamespace != "default" || stateStoreTimeout.value != 2 {
            throw ValidationError("--state-namespace and --state-store-timeout are for --state-store")
        }
        guard (1...128).contains(stateNamespace.utf8.count), SessionStore.isValid(id: stateNamespace) else {
            throw ValidationError("--state-namespace must be 1 to 128 letters, digits or . _ : -")
        }
        _ = try settings()
    }

    /// What the options say, read once: the server's configuration (its
    /// TLS and idle work aside, which `run` adds) and the process's own
    /// durations. `validate` reads them to refuse bad options; `run` serves them.
    struct Settings {
        var configuration: ServerConfiguration
        var stateStoreTimeout: Double
        var shutdownGrace: Double
    }

    func settings() throws -> Settings {
        guard maxBodySize.bytes > 0 else { throw ValidationError("--max-body-size must be a size like 1MiB, 512KiB or 1048576") }
        guard journalSize > 0 else { throw ValidationError("--journal-size must be at least 1") }
        var upstream: URL?
        if let proxy {
            guard let url = upstreamURL(proxy) else {
                throw ValidationError("--proxy must be an http or https URL like http://127.0.0.1:9000 or https://staging.example.com/api")
            }
            upstream = url
        }
        guard maxSessions > 0 else { throw ValidationError("--max-sessions must be at least 1") }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be at least 1") }
        guard maxEventStreams > 0 else { throw ValidationError("--max-event-streams must be at least 1") }
        do { _ = try CallbackAllowList(callbackAllow) } catch {
            throw ValidationError(
                "--callback-allow \(error.value) is not a host: give loopback, a name or address, *.example.com, any with :PORT, or *")
        }
        guard maxSocketsPerSession > 0 else { throw ValidationError("--max-sockets-per-session must be at least 1") }
        guard (125...(16 << 20)).contains(maxSocketMessage.bytes) else {
            throw ValidationError("--max-socket-message must be a size from 125B to 16MiB, like 64KiB")
        }
        var configuration = ServerConfiguration(
            host: listen.host, port: listen.port, maxBodySize: maxBodySize.bytes, logFormat: logFormat,
            journalCapacity: journalSize, defaultDelay: delay, hangLimit: try hangLimit.positive("--hang-limit"))
        let idle = try sessionIdle.positive("--session-idle", zeroAllowed: true)
        configuration.sessionIdleLimit = idle > 0 ? idle : nil
        configuration.idleTimeout = try idleTimeout.positive("--idle-timeout")
        configuration.headerTimeout = try headerTimeout.positive("--header-timeout")
        configuration.bodyTimeout = try bodyTimeout.positive("--body-timeout")
        configuration.proxyTimeout = try proxyTimeout.positive("--proxy-timeout")
        configuration.socketIdleTimeout = try socketIdleTimeout.positive("--socket-idle-timeout")
        configuration.adminToken = adminToken
        configuration.sessionLimit = maxSessions
        configuration.maxConnections = maxConnections
        configuration.maxEventStreams = maxEventStreams
        configuration.maxSocketsPerSession = maxSocketsPerSession
        configuration.maxSocketMessage = maxSocketMessage.bytes
        if !callbackAllow.isEmpty { configuration.callbackAllow = callbackAllow }
        configuration.allowedHosts = allowHost
        configuration.allowedOrigins = allowOrigin
        configuration.proxy = upstream
        return Settings(
            configuration: configuration, stateStoreTimeout: try stateStoreTimeout.positive("--state-store-timeout"),
            shutdownGrace: try shutdownGrace.positive("--shutdown-grace", zeroAllowed: true))
    }

    /// What `--tls self-signed` prints: where the authority is and how to trust it.
    static func trustNote(files: LocalCertificates.Files, names: [String], newAuthority: Bool) -> [String] {
        let authority = files.authority.path
        return [
            "HTTPS certificate for \(names.joined(separator: ", ")): \(files.certificate.path)",
            "signed by Doppel's local authority\(newAuthority ? ", made now" : ""): \(authority). Trust that file once:",
            "  iOS simulator: xcrun simctl keychain booted add-root-cert \(authority)",
            "  iPhone or iPad: send it to the device, install the profile, then turn it on in Settings > General > About > Certificate Trust Settings",
            "  macOS: security add-trusted-cert -r trustRoot -k ~/Library/Keychains/login.keychain-db \(authority)",
            "  curl: curl --cacert \(authority) ...",
        ]
    }

    /// Reloads the contract whenever its files change (`--watch`): a good
    /// one replaces the engine, carrying sessions over; one with errors is
    /// reported, and the last good one keeps serving.
    static func watch(_ file: String, slot: EngineSlot, log: RequestLog, since baseline: [String: ContractWatcher.Stamp]) async {
        await ContractWatcher(contractFile: file).run(bodyFiles: slot.current.contract.bodyFiles, since: baseline) {
            do throws(ContractError) {
                let contract = try ContractDocument.load(file: file)
                slot.replace(with: MockEngine(contract: contract, carryingOn: slot.current))
                log.line("Reloaded \(file): \(contract.endpoints.count) endpoint\(contract.endpoints.count == 1 ? "" : "s")")
                for line in RouteTable.servingLines(for: contract, file: file) { log.line("  " + line) }
                return contract.bodyFiles
            } catch {
                printDiagnostics(error.diagnostics)
                log.line("doppel: \(file) has errors (above); still serving the last good contract")
                return nil
            }
        }
    }

    /// A duration option in seconds; nil when it is not a duration of seconds, minutes, hours or days.
    static func seconds(_ text: String) -> Double? {
        if text == "0" { return 0 }
        guard let duration = CalendarDuration.parse(text), duration.months == 0 else { return nil }
        return duration.seconds
    }

    /// The most of a document's warnings `serve` prints when it starts.
    static let warningsShown = 100

    /// Warns when the admin API is open to others: served beyond loopback without `--admin-token`.
    func warnIfUnguarded(_ configuration: ServerConfiguration) {
        if adminToken == nil, !configuration.bindsLoopbackOnly {
            FileHandle.standardError.write(
                Data(
                    """
                    doppel: warning: serving on \(listen.host) without --admin-token: anyone who can reach this address can \
                    read and change every session's state through /__doppel/; set --admin-token to guard it (the admin API \
                    answers requests addressed by IP address or localhost; name others with --allow-host)

                    """.utf8))
        }
    }

    func run() async throws {
        // Stamped before it is read: a change from then on is reloaded (`--watch`).
        let contractStamp = watch ? ContractWatcher.stamps([self.contract]) : [:]
        let contract = try loadContract()
        let mcpPath = ContractStdio.path(of: contract)
        if stdio, mcpPath == nil {
            FileHandle.standardError.write(Data("doppel: --stdio answers a contract's MCP server, and \(self.contract) has no mcp: section\n".utf8))
            throw ExitCode(1)
        }
        let settings = try settings()
        var configuration = settings.configuration
        // glibc keeps what a burst of load freed in its per-thread arenas; an idle server hands it back.
        configuration.whenIdle = { _ = GlibcHeap.trim?(0) }
        let trustNote = try setUpTLS(&configuration)
        let engine = MockEngine(contract: contract, configuration: configuration)
        let catalog = try loadScenarios(for: contract, engine: engine)
        let shared = try await openStateStore(engine: engine, catalog: catalog, timeout: settings.stateStoreTimeout)
        // With --stdio, standard output carries the protocol alone.
        let log = stdio ? RequestLog(format: configuration.logFormat, write: RequestLog.standardError) : RequestLog(format: configuration.logFormat)
        let slot = EngineSlot(engine)
        let baseline = watch ? contractStamp.merging(ContractWatcher.stamps(contract.bodyFiles)) { first, _ in first } : [:]
        let watcher = watch ? Task { [file = self.contract] in await Self.watch(file, slot: slot, log: log, since: baseline) } : nil
        defer { watcher?.cancel() }
        let agents = AgentSessions(version: Doppel.configuration.version)
        // --stdio answers once the server runs (a shutdown asked before it would be lost).
        let (running, markRunning) = AsyncStream.makeStream(of: Void.self)
        let (app, host) = buildServer(
            slot: slot, configuration: configuration, log: log, scenarios: catalog, recorder: nil, shared: shared, agents: agents
        ) {
            [listen, scenario, catalog, trustNote, configuration, stateStore, stateNamespace] port in
            defer { markRunning.finish() }
            let address = listen.urlHost
            log.line("Doppel serving \(contract.info.title) \(contract.info.version) from \(self.contract)")
            if let scenario { log.line("Every session starts from scenario \(scenario)") }
            if !catalog.names.isEmpty { log.line("Scenarios: \(catalog.names.joined(separator: ", "))") }
            if let proxy { log.line("Forwarding to \(proxy): requests no endpoint takes, and those of proxy: true endpoints") }
            if watch { log.line("Watching \(self.contract) and its body files for changes") }
            if let stateStore { log.line("Sessions and journal shared in \(PostgresStateStore.redacted(stateStore)), namespace \(stateNamespace)") }
            for line in RouteTable.servingLines(for: contract, file: self.contract) { log.line("  " + line) }
            for line in trustNote { log.line(line) }
            let scheme = configuration.scheme
            log.line(
                "Listening on \(scheme)://\(address):\(port) (dashboard: \(scheme)://\(address):\(port)/__doppel/ui/, admin API: \(scheme)://\(address):\(port)/__doppel/health)"
            )
        }
        warnIfUnguarded(configuration)
        ProcessLimits.raiseOpenFileLimit()
        let grace = settings.shutdownGrace
        ShutdownSignals.exitOnSecondSignal { log.flush(timeout: 0.5) }
        do {
            var group = ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "doppel"))
            // Delays and hangs end at the first signal; responses still being
            // written get the grace period, then are cancelled.
            group.maximumGracefulShutdownDuration = .milliseconds(Int64(grace * 1000))
            group.maximumCancellationDuration = .seconds(2)
            let serving = ServiceGroup(configuration: group)
            // --stdio: the client's lines until it closes standard input; then the server stops as on SIGTERM.
            let answering =
                stdio
                ? Task { [mcpPath] in
                    for await _ in running {}
                    await ContractStdio.serve(host: host, path: mcpPath ?? "/mcp", session: SessionStore.defaultID)
                    await serving.triggerGracefulShutdown()
                } : nil
            defer { answering?.cancel() }
            try await serving.run()
            await shared?.shutdown()
            log.flush()
        } catch {
            FileHandle.standardError.write(Data("doppel: cannot serve on \(listen.host):\(listen.port): \(ListenOptions.failure(error))\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// `ServerConfiguration.defaults` as `doppel serve`'s options spell them
/// (`30s`, `1h`, `1MiB`), so each default is written once.
enum Defaults {
    static func seconds(_ value: Double) -> String {
        let whole = Int(value)
        guard Double(whole) == value else { return "\(value)s" }
        return whole >= 3600 && whole % 3600 == 0 ? "\(whole / 3600)h" : "\(whole)s"
    }

    static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20)MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10)KiB" }
        return "\(bytes)"
    }
}
