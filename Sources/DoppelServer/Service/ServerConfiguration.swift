import DoppelCore
import Foundation
import NIOSSL

/// How a Doppel server listens and behaves. Every limit's default is listed
/// in `docs/limits.md`, with the `doppel serve` option that changes it.
public struct ServerConfiguration: Sendable {
    /// Address to bind; loopback by default.
    public var host: String = "127.0.0.1"
    /// Port to bind; 0 picks a free one.
    public var port: Int = 8000
    /// Largest request body accepted; larger ones get 413.
    public var maxBodySize: Int = 1 << 20
    /// Largest header block of a request, in bytes; larger ones get 400 and the connection closes.
    public var maxHeaderSize: Int = 32 << 10
    /// How each request is logged.
    public var logFormat: RequestLog.Format = .text
    /// The most journal entries kept.
    public var journalCapacity: Int = Journal.defaultCapacity
    /// The most sessions held at once; a new one evicts the least recently used.
    public var sessionLimit: Int = SessionStore.defaultLimit
    /// Seconds after which an unused session is evicted; nil keeps them.
    public var sessionIdleLimit: Double? = SessionStore.defaultIdleLimit
    /// The delay of responses that declare none.
    public var defaultDelay: Delay?
    /// The longest a `no_answer` fault keeps a connection waiting, in seconds.
    public var hangLimit: Double = 30
    /// When set, every admin call must carry this token.
    public var adminToken: String?
    /// Host names the admin API and the dashboard answer to besides IP
    /// addresses, `localhost` and names under `.localhost` (`--allow-host`):
    /// `*.example.com` for names under one, `*` for any. Keeps a page whose
    /// name is rebound to this server from reading the journal.
    public var allowedHosts: [String] = []
    /// Web origins (`scheme://host[:port]`) whose pages may open the
    /// contract's WebSockets besides this server's own and loopback ones
    /// (`--allow-origin`; `*` for any).
    public var allowedOrigins: [String] = []
    /// Seconds a connection may stay open with no request in progress.
    public var idleTimeout: Double = 60
    /// Seconds from a request's first byte to the end of its headers; slower requests get 408.
    public var headerTimeout: Double = 10
    /// Seconds a request body may pause between parts; slower bodies get 408.
    public var bodyTimeout: Double = 30
    /// The most connections open at once; more wait in the listen backlog.
    public var maxConnections: Int = 10_000
    /// The most `GET /__doppel/events` streams (the dashboard's among them)
    /// open at once; further ones get 503 `too-many-event-streams`.
    public var maxEventStreams: Int = 1_000
    /// The most WebSockets one session may have open; more get 429 `too-many-sockets`.
    public var maxSocketsPerSession: Int {
        get { socketLimits.perSession }
        set { socketLimits.perSession = newValue }
    }
    /// Seconds a WebSocket may go without a frame from its client before it is closed (1001).
    public var socketIdleTimeout: Double {
        get { socketLimits.idle }
        set { socketLimits.idle = newValue }
    }
    /// The largest message a WebSocket client may send, in bytes; a larger one closes the socket (1009).
    public var maxSocketMessage: Int {
        get { socketLimits.message }
        set { socketLimits.message = newValue }
    }
    package var socketLimits = SocketHub.Limits()
    /// The hosts callbacks may go to (`--callback-allow`): `loopback` (the
    /// default), host names or addresses, `*.example.com`, any with `:PORT`,
    /// or `*`. A list with a value that is none of these allows no host.
    public var callbackAllow: [String] = ["loopback"]
    /// Run once the server has had no connection for a quarter of a second,
    /// at most once per quiet spell, off the event loops (`IdleMemory`).
    /// `doppel serve`, the process's only server, hands its freed heap
    /// memory back to the system here (glibc's `malloc_trim`); a test process
    /// with several servers does not, since a trim of a large heap stalls
    /// every thread that allocates meanwhile, the other servers' included.
    public var whenIdle: (@Sendable () -> Void)?
    /// The upstream server requests no endpoint takes are forwarded to
    /// (`--proxy`), with `proxy: true` endpoints' requests; nil forwards nothing.
    public var proxy: URL?
    /// How long the upstream may take to connect, and to answer, in seconds.
    public var proxyTimeout: Double = 30
    /// Serve HTTPS (HTTP/1.1 over TLS) with this configuration; nil serves plain HTTP.
    public var tls: TLSConfiguration?

    /// `https` when serving TLS, else `http`.
    public var scheme: String { tls == nil ? "http" : "https" }

    /// Why a certificate or key given for HTTPS cannot be used, in words.
    public struct TLSFilesError: Error, CustomStringConvertible {
        /// What is wrong with the files, in words.
        public let description: String
    }

    /// A TLS server configuration from PEM text: the certificate (and any
    /// intermediates after it) and its private key.
    public static func tls(certificatePEM: String, keyPEM: String) throws -> TLSConfiguration {
        let certificateHoldsKey = certificatePEM.contains("PRIVATE KEY-----") && !certificatePEM.contains("BEGIN CERTIFICATE")
        let keyHoldsCertificate = keyPEM.contains("BEGIN CERTIFICATE") && !keyPEM.contains("PRIVATE KEY-----")
        if certificateHoldsKey || keyHoldsCertificate {
            throw TLSFilesError(
                description: certificateHoldsKey && keyHoldsCertificate
                    ? "--tls-cert holds a private key and --tls-key a certificate: swap them"
                    : certificateHoldsKey
                        ? "--tls-cert holds a private key, not a certificate (PEM 'BEGIN CERTIFICATE')"
                        : "--tls-key holds a certificate, not a private key (PEM 'BEGIN … PRIVATE KEY')")
        }
        let chain: [NIOSSLCertificateSource]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8)).map { NIOSSLCertificateSource.certificate($0) }
        } catch {
            throw TLSFilesError(description: "--tls-cert is not a PEM certificate ('-----BEGIN CERTIFICATE-----'): \(error)")
        }
        guard !chain.isEmpty else { throw TLSFilesError(description: "--tls-cert holds no PEM certificate ('-----BEGIN CERTIFICATE-----')") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem)
        } catch {
            throw TLSFilesError(description: "--tls-key is not a PEM private key ('-----BEGIN PRIVATE KEY-----', or an EC or RSA one): \(error)")
        }
        return TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
    }

    /// `doppel serve`'s defaults, each written once (above): the CLI's
    /// options, the in-process transport and the server read them here.
    public static let defaults = ServerConfiguration(defaults: ())

    private init(defaults: Void) {}

    /// A configuration; what is not given keeps `doppel serve`'s default.
    public init(
        host: String = defaults.host, port: Int = defaults.port, maxBodySize: Int = defaults.maxBodySize,
        logFormat: RequestLog.Format = defaults.logFormat, journalCapacity: Int = defaults.journalCapacity,
        sessionLimit: Int = defaults.sessionLimit, defaultDelay: Delay? = nil, hangLimit: Double = defaults.hangLimit,
        adminToken: String? = nil
    ) {
        self.adminToken = adminToken
        self.defaultDelay = defaultDelay
        self.hangLimit = hangLimit
        self.host = host
        self.port = port
        self.maxBodySize = maxBodySize
        self.logFormat = logFormat
        self.journalCapacity = journalCapacity
        self.sessionLimit = sessionLimit
    }

    /// True when `host` is a loopback address (`127.x.x.x`, `::1`, `localhost`).
    public var bindsLoopbackOnly: Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}

extension MockEngine {
    /// An engine for a contract with the sessions, journal and delays a server configuration asks for:
    /// what `doppel serve` and `DoppelTestServer` both build.
    public convenience init(contract: Contract, configuration: ServerConfiguration) {
        self.init(
            contract: contract, journalCapacity: configuration.journalCapacity, sessionLimit: configuration.sessionLimit,
            sessionIdleLimit: configuration.sessionIdleLimit, defaultDelay: configuration.defaultDelay,
            forwardsUnmatched: configuration.proxy != nil)
    }
}
