import DoppelCore

/// What keeps web pages out of the admin API, token or not.
///
/// A page on another site can make a browser send requests to
/// `127.0.0.1:8000`; without a token the admin API would obey them (force a
/// 402, move a clock, reset every session), and a page whose host name is
/// rebound to 127.0.0.1 could read the journal, which holds clients'
/// bearer tokens. So every admin call, the dashboard's files included:
///
/// 1. **Host**: is addressed to an IP address, `localhost` (or a name under
///    `.localhost`), or a name given with `--allow-host`. A rebound name is
///    none of them. (An IP address cannot be rebound: a page is of the
///    origin it was loaded from, so it cannot read a server it reaches by
///    address.)
/// 2. **Site**: comes from no page, or from the dashboard's own origin:
///    `Sec-Fetch-Site` is `same-origin` or `none` when a browser sends it,
///    and `Origin`, when sent, is this server's. The dashboard's page itself
///    may be opened from a link anywhere: it holds no data.
/// 3. **Body**: a call with a body sends it as JSON (`Content-Type:
///    application/json`): a page cannot send that to another origin without
///    asking first (a CORS preflight, which Doppel never grants).
///
/// Clients that are not browsers (curl, test suites, `doppel run`) send
/// neither `Origin` nor `Sec-Fetch-Site` and are unaffected by 2.
extension AdminAPI {
    /// Why a call under `/__doppel/` is refused before anything else is read; nil when it may go on.
    package func browserRefusal(_ request: RecordedRequest) -> Problem? {
        let host = request.header("host")
        if let host, !Self.permits(host: host, allowed: allowedHosts) {
            return .adminHostRefused(host: host)
        }
        // Navigations to the page (a link, a bookmark) come from anywhere; its calls do not.
        if request.path.hasPrefix(Dashboard.root) || request.path == AdminAPI.prefix + "/ui", request.method == "GET" || request.method == "HEAD",
            !request.path.hasSuffix("settings.json")
        {
            return nil
        }
        if let site = request.header("sec-fetch-site")?.lowercased(), site != "same-origin", site != "none" {
            return .adminCrossSite("Sec-Fetch-Site: \(site)")
        }
        if let origin = request.header("origin"), !Self.isSameOrigin(origin, host: host) {
            return .adminCrossSite("Origin: \(origin)")
        }
        if !request.body.isEmpty, !Self.isJSON(request.header("content-type")) {
            return .adminBodyNotJSON(contentType: request.header("content-type"))
        }
        return nil
    }

    /// Whether a `Host` header names this server in a way no other site can:
    /// an IP address, `localhost`, a `.localhost` name, or one of `allowed`
    /// (`*` for any, `*.example.com` for names under it).
    package static func permits(host header: String, allowed: [String]) -> Bool {
        let name = hostName(header)
        if name.isEmpty { return false }
        if name == "localhost" || name.hasSuffix(".localhost") || isIPAddress(name) { return true }
        return allowed.contains { entry in
            let entry = entry.lowercased()
            if entry == "*" { return true }
            if entry.hasPrefix("*.") { return name.hasSuffix(entry.dropFirst(1)) && name.count > entry.count - 1 }
            return name == entry
        }
    }

    /// The host of a `Host` header or an origin's authority, lowercased, without port or brackets.
    static func hostName(_ authority: String) -> String {
        let text = authority.trimmingCharacters(in: .whitespaces).lowercased()
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return "" }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        if let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon { return String(text[..<colon]) }
        return text
    }

    /// A dotted IPv4 address or an IPv6 address (as inside brackets).
    static func isIPAddress(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4, parts.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && UInt8($0) != nil }) { return true }
        return name.contains(":") && name.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }

    /// Whether `origin` (`scheme://host[:port]`) is the origin a page of this server has, reached at `host`.
    static func isSameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, let separator = origin.range(of: "://") else { return false }
        let scheme = origin[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return false }
        let authority = origin[separator.upperBound...].lowercased()
        let given = host.trimmingCharacters(in: .whitespaces).lowercased()
        let defaultPort = scheme == "https" ? ":443" : ":80"
        return authority == given || authority + defaultPort == given || authority == given + defaultPort
    }

    /// `application/json` or any `…+json` type, parameters aside.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }
}
