/// Stage 2: checks an endpoint's credentials.
public struct Authenticator: Sendable {
    let schemes: [String: AuthScheme]

    public init(schemes: [String: AuthScheme]) {
        self.schemes = schemes
    }

    /// What authentication decided.
    public enum Outcome: Sendable {
        /// Credentials accepted (or none needed); the value is visible to expressions as `auth`.
        case accepted(JSON)
        /// Rejected: answer with this documented response.
        case rejected(ResponseDefinition)
    }

    /// Checks the credential of `scheme`. Issued tokens are looked up in
    /// `state` and compared with `now`, the session's clock.
    public func authenticate(_ request: RecordedRequest, queryItems: [(String, String)], scheme name: String?, state: JSONObject, now: Double) -> Outcome {
        guard let name, let scheme = schemes[name] else { return .accepted(.null) }
        let credential: String?
        switch scheme.kind {
        case .bearer:
            credential = Self.bearerToken(request.header("authorization"))
        case .apiKey(let header, let query):
            let fromHeader = header.flatMap { request.header($0) }.flatMap { $0.isEmpty ? nil : $0 }
            let fromQuery = query.flatMap { name in queryItems.last { $0.0 == name }?.1 }.flatMap { $0.isEmpty ? nil : $0 }
            credential = fromHeader ?? fromQuery
        }
        guard let credential, scheme.accepted?.contains(credential) ?? true else { return .rejected(scheme.failure) }
        var claims = JSON.null
        if let collection = scheme.issued {
            guard let record = state[collection]?[credential] else { return .rejected(scheme.failure) }
            if let expiry = Self.instant(record["expires_at"]), expiry <= now {
                return .rejected(scheme.expired ?? scheme.failure)
            }
            claims = record
        }
        return .accepted(.object(JSONObject([("scheme", .string(scheme.name)), ("token", .string(credential)), ("claims", claims)])))
    }

    /// An expiry written as an ISO 8601 string or as seconds since 1970.
    static func instant(_ value: JSON?) -> Double? {
        switch value {
        case .string(let text)?: UTCCalendar.parse(text)
        case .int, .double: value?.numberValue
        default: nil
        }
    }

    /// The token of `Bearer <token>`; nil when missing or malformed (RFC 6750 token68).
    public static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = String(parts[1].trimmingSpaces)
        let allowed = token.utf8.allSatisfy(isToken68)
        return token.isEmpty || !allowed ? nil : token
    }

    private static let token68Punctuation: Set<UInt8> = Set("-._~+/=".utf8)

    private static func isToken68(_ b: UInt8) -> Bool {
        if b >= 48 && b <= 57 { return true }
        if b >= 65 && b <= 90 { return true }
        if b >= 97 && b <= 122 { return true }
        return token68Punctuation.contains(b)
    }
}
