/// An HTTP request as the engine sees it, independent of any transport.
public struct RecordedRequest: Sendable {
    /// The method, uppercased.
    public var method: String
    /// The path, still percent-encoded, without the query string.
    public var path: String
    /// The raw query string without its `?`, if any.
    public var query: String?
    /// Header fields with lowercased names, in arrival order.
    public var headers: [(name: String, value: String)]
    /// The body as received.
    public var body: [UInt8]
    /// The client's address, when known.
    public var remoteAddress: String?
    /// The port of this server the request arrived on, when known (`request.port`).
    public var localPort: Int?

    /// A request; header names are lowercased.
    public init(
        method: String, path: String, query: String? = nil, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        remoteAddress: String? = nil
    ) {
        self.method = method.uppercased()
        self.path = path
        self.query = query
        self.headers = headers.map { (name: $0.name.lowercased(), value: $0.value) }
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// Builds a request from a target like `/api/v1/children?limit=10`.
    public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        let utf8 = target.utf8
        if let mark = utf8.firstIndex(of: UInt8(ascii: "?")) {
            self.init(
                method: method, path: String(Substring(utf8[..<mark])), query: String(Substring(utf8[utf8.index(after: mark)...])),
                headers: headers, body: body)
        } else {
            self.init(method: method, path: target, headers: headers, body: body)
        }
    }

    /// The last value of a header (names are case-insensitive).
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.last { $0.name == lower }?.value
    }

    /// The session the request names (`Doppel-Session`), or `default`; the
    /// one place the header is read. Not yet checked (`SessionStore.isValid(id:)`).
    public var sessionID: String { header(MockEngine.sessionHeader) ?? SessionStore.defaultID }

    /// The query string split into decoded name/value pairs.
    public var queryItems: [(String, String)] {
        guard let query, !query.isEmpty else { return [] }
        // Read on the bytes: `&` and `=` are ASCII, and the generic `split`
        // costs a closure call per character on every request.
        let utf8 = query.utf8
        var items: [(String, String)] = []
        var start = utf8.startIndex
        while start < utf8.endIndex {
            let end = utf8[start...].firstIndex(of: UInt8(ascii: "&")) ?? utf8.endIndex
            if start < end {
                let pair = utf8[start..<end]
                if let eq = pair.firstIndex(of: UInt8(ascii: "=")) {
                    items.append(
                        (
                            PercentDecoding.decode(Substring(pair[..<eq]), plusAsSpace: true),
                            PercentDecoding.decode(Substring(pair[utf8.index(after: eq)...]), plusAsSpace: true)
                        ))
                } else {
                    items.append((PercentDecoding.decode(Substring(pair), plusAsSpace: true), ""))
                }
            }
            start = end < utf8.endIndex ? utf8.index(after: end) : end
        }
        return items
    }
}

extension RecordedRequest {
    /// The request as the roots `request`, `headers`, `client` and `query`
    /// show it: query values as text, header names lowercased (the last of
    /// a repeated one wins, in its first place).
    func root(_ slot: Roots.Slot) -> JSON {
        switch slot {
        case .request:
            return .object(
                JSONObject([
                    ("method", .string(method)), ("path", .string(path)), ("query_string", query.map { .string($0) } ?? .null),
                    ("port", localPort.map { .int($0) } ?? .null),
                ]))
        case .headers:
            var object = JSONObject()
            object.reserveCapacity(headers.count)
            for header in headers { object[header.name] = .string(header.value) }
            return .object(object)
        case .client:
            return .object(JSONObject([("address", remoteAddress.map { .string($0) } ?? .null)]))
        case .query:
            var object = JSONObject()
            for (name, value) in queryItems { object[name] = .string(value) }
            return .object(object)
        default:
            return .null
        }
    }
}

/// A response the engine decided to send (compare `ResponseDefinition`, what the contract declares).
public struct MockResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The header fields, in order.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: [UInt8]
    /// The endpoint that answered, if any.
    public var endpointID: String?
    /// The contract response chosen (`generate-story[2]`, or a shared response's name).
    public var responseName: String?
    /// Why this response was chosen (the `when` that held, the limit
    /// reached, the override or `Prefer` in force, the problem), for the
    /// journal and the dashboard.
    package var reason: Reason?
    /// The state paths the request changed (`stories_used`, `stories.s_1`), at most `maximumChanges`.
    package var changes: [String] = []
    /// The most changed paths a response lists.
    package static let maximumChanges = 16
    /// A response with `status`, `headers` and `body`.
    public init(
        status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = [], endpointID: String? = nil, responseName: String? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.endpointID = endpointID
        self.responseName = responseName
    }

    /// The first value of a header (names are case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// The body decoded as JSON, if it is JSON.
    public var json: JSON? { try? JSONReader.parse(body) }
}

extension String {
    /// Equal but for letter case. Text that is ASCII on both sides (header
    /// names always are) is compared byte by byte, without lowercased copies:
    /// this runs for headers of every response. Anything else (text beyond
    /// ASCII, or not stored contiguously) is lowercased.
    package func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        func lower(_ byte: UInt8) -> UInt8 { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte }
        // On the contiguous bytes: a zip of the two UTF-8 views is a generic
        // iterator that cost over a hundred instructions a byte.
        let ascii: Bool?? = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs -> Bool? in
                for index in 0..<mine.count {
                    let a = mine[index]
                    let b = theirs[index]
                    guard a | b < 0x80 else { return nil }
                    if a != b, lower(a) != lower(b) { return false }
                }
                return true
            } ?? nil
        }
        if let answer = ascii ?? nil { return answer }
        return lowercased() == other.lowercased()
    }
}

/// A part of a streamed body and how long to wait before sending it.
public struct StreamPart: Sendable, Equatable {
    /// Seconds to wait before sending the part.
    public var delay: Double
    /// The part's bytes.
    public var bytes: [UInt8]

    /// A part sent `delay` seconds after the one before.
    public init(delay: Double, bytes: [UInt8]) {
        self.delay = delay
        self.bytes = bytes
    }
}
