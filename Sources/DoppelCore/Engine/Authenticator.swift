import Foundation

/// Stage 3: checks an endpoint's credentials.
package struct Authenticator: Sendable {
    let schemes: [String: AuthScheme]

    package init(schemes: [String: AuthScheme]) {
        self.schemes = schemes
    }

    /// What authentication decided.
    package enum Outcome: Sendable {
        /// Credentials accepted (or none needed); the value is visible to expressions as `auth`.
        case accepted(JSON)
        /// Rejected: answer with this documented response; `why` says what was wrong.
        case rejected(ResponseDefinition, why: String)
    }

    /// An endpoint's credentials as the request presents them, one per
    /// scheme, read from the request alone (headers, query, cookies, a JWT's
    /// payload), so that it runs outside the session's lock; `authenticate`
    /// then checks them against the session's state.
    package struct Presented: Sendable {
        fileprivate var credentials: [Credential]
    }

    fileprivate struct Credential: Sendable {
        let scheme: AuthScheme
        /// What the request sent for the scheme; nil when nothing.
        let value: String?
        let user: String?
        /// Sent, but not a credential the scheme can accept (not listed, not matching, not a JWT).
        let malformed: Bool
        /// A JWT's payload.
        let payload: JSONObject?
    }

    /// Reads the credentials of each of the endpoint's schemes from the request.
    package func present(_ request: RecordedRequest, queryItems: [(String, String)], endpoint: Endpoint) -> Presented {
        Presented(
            credentials: endpoint.auth.compactMap { name in
                schemes[name].map { read(request, queryItems: queryItems, scheme: $0) }
            })
    }

    /// Checks an endpoint's credentials: any one of its schemes admits the
    /// request. When none does, the rejection is the endpoint's own
    /// `on_unauthorized`, else that of the first scheme whose credential was
    /// sent (an expired token's `expired`), else the first scheme's `failure`.
    package func authenticate(
        _ request: RecordedRequest, queryItems: [(String, String)], endpoint: Endpoint, state: JSONObject, now: Double
    ) -> Outcome {
        authenticate(present(request, queryItems: queryItems, endpoint: endpoint), endpoint: endpoint, state: state, now: now)
    }

    /// As `authenticate(_:queryItems:endpoint:state:now:)`, with the credentials already read.
    package func authenticate(_ presented: Presented, endpoint: Endpoint, state: JSONObject, now: Double) -> Outcome {
        guard !endpoint.auth.isEmpty else { return .accepted(.null) }
        var rejection: (response: ResponseDefinition, sent: Bool, why: String)?
        for credential in presented.credentials {
            switch check(credential, state: state, now: now) {
            case .accepted(let auth):
                return .accepted(auth)
            case .rejected(let response, let sent, let why):
                if rejection == nil || (sent && rejection?.sent == false) { rejection = (response, sent, why) }
            }
        }
        guard let rejection else { return .accepted(.null) }
        return .rejected(endpoint.onUnauthorized ?? rejection.response, why: rejection.why)
    }

    private enum Check {
        case accepted(JSON)
        /// `sent`: a credential for the scheme came with the request.
        case rejected(ResponseDefinition, sent: Bool, why: String)
    }

    /// Reads one scheme's credential from the request.
    private func read(_ request: RecordedRequest, queryItems: [(String, String)], scheme: AuthScheme) -> Credential {
        let credential: String?
        var user: String?
        switch scheme.kind {
        case .bearer:
            credential = Self.bearerToken(request.header("authorization"))
        case .basic:
            credential = Self.basicCredential(request.header("authorization"))
            user = credential.map { String($0.prefix { $0 != ":" }) }
        case .apiKey(let header, let query, let cookie):
            let fromHeader = header.flatMap { request.header($0) }.flatMap { $0.isEmpty ? nil : $0 }
            let fromQuery = query.flatMap { name in queryItems.last { $0.0 == name }?.1 }.flatMap { $0.isEmpty ? nil : $0 }
            let fromCookie = cookie.flatMap { name in RequestValidator.cookies(request.header("cookie")).last { $0.0 == name }?.1 }
                .flatMap { $0.isEmpty ? nil : $0 }
            credential = fromHeader ?? fromQuery ?? fromCookie
        }
        guard let credential else { return Credential(scheme: scheme, value: nil, user: nil, malformed: false, payload: nil) }
        func malformed() -> Credential { Credential(scheme: scheme, value: credential, user: user, malformed: true, payload: nil) }
        guard scheme.accepted?.contains(credential) ?? true else { return malformed() }
        if let pattern = scheme.pattern, !pattern.matches(credential) { return malformed() }
        var payload: JSONObject?
        if scheme.format == .jwt {
            guard let decoded = Self.jwtPayload(credential) else { return malformed() }
            payload = decoded
        }
        return Credential(scheme: scheme, value: credential, user: user, malformed: false, payload: payload)
    }

    /// Checks one scheme's credential. Expiry is compared with `now`, the
    /// session's clock; issued tokens are looked up in `state`.
    private func check(_ presented: Credential, state: JSONObject, now: Double) -> Check {
        let scheme = presented.scheme
        let name = "auth scheme '\(scheme.name)'"
        guard let credential = presented.value else { return .rejected(scheme.failure, sent: false, why: "\(name): no credential was sent") }
        guard !presented.malformed else {
            return .rejected(scheme.failure, sent: true, why: "\(name): the credential sent is not of the accepted form")
        }
        var claims = JSON.null
        if let payload = presented.payload {
            if let expiry = payload["exp"]?.numberValue, expiry <= now {
                return .rejected(
                    scheme.expired ?? scheme.failure, sent: true,
                    why:
                        "\(name): the token expired at \(UTCCalendar.format(epoch: expiry)) (its `exp`), the session's clock reads \(UTCCalendar.format(epoch: now))"
                )
            }
            claims = .object(payload)
        }
        if let collection = scheme.issued {
            guard let record = state[collection]?[credential] else {
                return .rejected(scheme.failure, sent: true, why: "\(name): the token is not among the issued ones (state.\(collection))")
            }
            if let expiry = Self.instant(record["expires_at"]), expiry <= now {
                return .rejected(
                    scheme.expired ?? scheme.failure, sent: true,
                    why:
                        "\(name): the issued token expired at \(UTCCalendar.format(epoch: expiry)), the session's clock reads \(UTCCalendar.format(epoch: now))"
                )
            }
            claims = record
        }
        var auth = JSONObject([("scheme", .string(scheme.name)), ("token", .string(credential)), ("claims", claims)])
        if let user = presented.user { auth["user"] = .string(user) }
        return .accepted(.object(auth))
    }

    /// `name:password` of `Basic <base64>`; nil when missing or malformed.
    package static func basicCredential(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let data = Data(base64Encoded: String(parts[1].trimmingSpaces)),
            let text = String(data: data, encoding: .utf8), text.contains(":")
        else { return nil }
        return text
    }

    /// The payload of a JSON Web Token: three base64url parts (the
    /// signature may be empty, and is not checked), the first two JSON
    /// objects; nil for anything else.
    package static func jwtPayload(_ token: String) -> JSONObject? {
        var token = token
        return token.withUTF8 { bytes -> JSONObject? in
            guard let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")),
                let secondDot = bytes[(firstDot + 1)...].firstIndex(of: UInt8(ascii: "."))
            else { return nil }
            guard bytes[(secondDot + 1)...].allSatisfy(isBase64URL),
                let header = base64URLDecoded(UnsafeBufferPointer(rebasing: bytes[..<firstDot])),
                (try? JSONReader.parse(header))?.objectValue != nil,
                let payload = base64URLDecoded(UnsafeBufferPointer(rebasing: bytes[(firstDot + 1)..<secondDot]))
            else { return nil }
            return (try? JSONReader.parse(payload))?.objectValue
        }
    }

    /// Base64url without padding, decoded byte by byte: it runs on every
    /// request to a JWT scheme, and Foundation's decoder wants a padded,
    /// standard-alphabet copy first. Nil when empty or not base64url.
    static func base64URLDecoded<Text: Collection<UInt8>>(_ text: Text) -> [UInt8]? {
        let count = text.count
        guard count > 0, count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for character in text {
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return bytes
    }

    private static func isBase64URL(_ b: UInt8) -> Bool {
        (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
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
    package static func bearerToken(_ header: String?) -> String? {
        guard var header else { return nil }
        // `Bearer`, any case, then spaces, then the token, then optional spaces: read on the contiguous UTF-8 bytes.
        return header.withUTF8 { bytes -> String? in
            var index = 0
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
            for expected in "bearer".utf8 {
                guard index < bytes.count, bytes[index] | 0x20 == expected else { return nil }
                index += 1
            }
            guard index < bytes.count, bytes[index] == UInt8(ascii: " ") else { return nil }
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
            var end = bytes.count
            while end > index, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
            let token = UnsafeBufferPointer(rebasing: bytes[index..<end])
            guard !token.isEmpty, token.allSatisfy(isToken68) else { return nil }
            return String(decoding: token, as: UTF8.self)
        }
    }

    private static func isToken68(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
            true
        default:
            false
        }
    }
}
