import DoppelCore

/// How a Doppel server listens and behaves.
public struct ServerConfiguration: Sendable {
    /// Address to bind; loopback by default.
    public var host: String = "127.0.0.1"
    /// Port to bind; 0 picks a free one.
    public var port: Int = 8000
    /// Largest request body accepted; larger ones get 413.
    public var maxBodySize: Int = 1 << 20
    /// How each request is logged.
    public var logFormat: RequestLog.Format = .text
    /// The most journal entries kept.
    public var journalCapacity: Int = 10_000
    /// The most sessions held at once.
    public var sessionLimit: Int = 10_000
    /// The delay of responses that declare none.
    public var defaultDelay: Delay?
    /// The longest a `no_answer` fault keeps a connection waiting, in seconds.
    public var hangLimit: Double = 30
    /// When set, every admin call must carry this token.
    public var adminToken: String?

    public init(host: String = "127.0.0.1", port: Int = 8000, maxBodySize: Int = 1 << 20, logFormat: RequestLog.Format = .text,
                journalCapacity: Int = 10_000, sessionLimit: Int = 10_000, defaultDelay: Delay? = nil, hangLimit: Double = 30,
                adminToken: String? = nil) {
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
}

/// Parses sizes like `1MiB`, `512KiB`, `64kb` or `1048576` into bytes.
public enum ByteSize {
    public static func parse(_ text: String) -> Int? {
        let lower = text.lowercased().filter { !$0.isWhitespace }
        let units: [(String, Int)] = [("kib", 1024), ("mib", 1 << 20), ("gib", 1 << 30), ("kb", 1000), ("mb", 1_000_000), ("gb", 1_000_000_000), ("k", 1024), ("m", 1 << 20), ("b", 1)]
        for (suffix, factor) in units where lower.hasSuffix(suffix) {
            guard let value = Double(lower.dropLast(suffix.count)), value >= 0 else { return nil }
            return Int(value * Double(factor))
        }
        return Int(lower).flatMap { $0 >= 0 ? $0 : nil }
    }
}
