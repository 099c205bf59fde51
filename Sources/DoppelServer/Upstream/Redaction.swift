import DoppelCore
import Foundation

/// What `doppel record` keeps out of a recording: every value whose name says
/// it is a secret, wherever the name appears (a header, a query parameter, a
/// form field, a multipart part, a JSON member at any depth, an XML element),
/// and every such value again wherever it comes back (an echo, an error
/// message, a path). Redaction goes by name because a value cannot say what
/// it is; the names are deliberately broad, since a field redacted for
/// nothing costs a recording little and a secret written costs much.
package struct Redaction: Sendable {
    package static let redacted = "[redacted]"

    /// Headers whose values a recording keeps though their names look secret.
    let keep: Set<String>
    /// The secret values seen, to strike wherever they appear again.
    package private(set) var secrets: Set<String> = []

    package init(keepHeaders: Set<String> = []) {
        keep = Set(keepHeaders.map { $0.lowercased() })
    }

    /// Parts of names that mark a secret: `refresh_token`, `X-Api-Key`,
    /// `client_secret`, `newPassword`, `X-Session-Token`, `aws_access_key_id`.
    static let secretParts = [
        "token", "passw", "passphrase", "secret", "apikey", "accesskey", "privatekey", "authorization", "cookie", "session",
        "credential", "signature", "bearer", "jwt", "passcode", "sessid", "assertion",
    ]
    /// Whole names, and endings, that mark a secret: `key`, `pwd`, `sig`, `X-Amz-Sig`, `license_key`.
    static let secretNames: Set<String> = ["key", "pwd", "pw", "pass", "pin", "sig", "auth", "sid", "hmac", "otp", "cvv", "cvc", "ssn"]
    static let secretEndings = ["key", "pwd", "sig", "auth", "pass"]

    /// Whether a name (of a header, field, parameter or element) says it holds a secret.
    package static func isSecretName(_ name: String) -> Bool {
        let normalised = String(
            String.UnicodeScalarView(name.lowercased().unicodeScalars.filter { $0.properties.isAlphabetic || ("0"..."9").contains($0) }))
        guard !normalised.isEmpty else { return false }
        if secretNames.contains(normalised) { return true }
        if secretParts.contains(where: { normalised.contains($0) }) { return true }
        return secretEndings.contains { normalised.hasSuffix($0) }
    }

    // MARK: - Exchanges

    /// The exchange as a recording may show it, its secrets noted.
    package mutating func redact(_ exchange: Recorder.Exchange) -> Recorder.Exchange {
        var exchange = exchange
        exchange.request = redact(exchange.request)
        exchange.response = redact(exchange.response)
        return exchange
    }

    mutating func redact(_ request: RecordedRequest) -> RecordedRequest {
        var request = request
        request.headers = request.headers.compactMap { header in
            guard !keep.contains(header.name), header.name != "doppel-session", Self.isSecretName(header.name) else { return header }
            switch header.name {
            case "cookie": noteCookies(header.value)
            default: noteCredential(header.value)
            }
            return nil
        }
        if let query = request.query {
            request.query = redactURLEncoded(query)
        }
        request.body = redactBody(request.body, contentType: request.header("content-type"))
        return request
    }

    mutating func redact(_ response: MockResponse) -> MockResponse {
        var response = response
        response.headers = response.headers.compactMap { header in
            let name = header.name.lowercased()
            guard !keep.contains(name), Self.isSecretName(name) else { return header }
            if name == "set-cookie" {
                noteCookies(String(header.value.prefix { $0 != ";" }))
                return nil
            }
            noteCredential(header.value)
            return (header.name, Self.redacted)
        }
        response.body = redactBody(response.body, contentType: response.header("content-type"))
        return response
    }

    // MARK: - Values

    mutating func note(_ value: String) {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed != Self.redacted { secrets.insert(trimmed) }
    }

    /// `Bearer abc`: the whole value and the credential after the scheme.
    mutating func noteCredential(_ value: String) {
        note(value)
        if let space = value.firstIndex(of: " ") { note(String(value[value.index(after: space)...])) }
    }

    mutating func noteCookies(_ header: String) {
        for pair in header.split(separator: ";") {
            guard let equals = pair.firstIndex(of: "=") else {
                note(String(pair))
                continue
            }
            note(String(pair[pair.index(after: equals)...]))
        }
    }

    /// `a=1&password=x` with the secret values replaced, the rest as it was.
    mutating func redactURLEncoded(_ text: String) -> String {
        let encodedMark = "%5Bredacted%5D"
        return text.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = PercentDecoding.decode(pair[..<equals], plusAsSpace: true)
            guard Self.isSecretName(name) else { return String(pair) }
            note(PercentDecoding.decode(pair[pair.index(after: equals)...], plusAsSpace: true))
            return String(pair[..<equals]) + "=" + encodedMark
        }.joined(separator: "&")
    }

    /// A body with its secrets replaced, read by its media type: JSON, form,
    /// multipart (each part by its name and its own type) and XML.
    mutating func redactBody(_ body: [UInt8], contentType: String?) -> [UInt8] {
        guard !body.isEmpty else { return body }
        let type = (contentType ?? "").lowercased()
        if MediaTypes.isJSON(type) || (contentType == nil && (body.first == UInt8(ascii: "{") || body.first == UInt8(ascii: "["))) {
            if let json = try? JSONReader.parse(body) { return Array(JSONWriter.encodeString(redact(json)).utf8) }
            return body
        }
        if type.hasPrefix("application/x-www-form-urlencoded") {
            return Array(redactURLEncoded(String(decoding: body, as: UTF8.self)).utf8)
        }
        if type.hasPrefix("multipart/"), let contentType, let boundary = FormBody.boundary(of: contentType) {
            return redactMultipart(body, boundary: boundary)
        }
        if type.contains("xml") {
            return Array(redactXML(String(decoding: body, as: UTF8.self)).utf8)
        }
        return body
    }

    /// Secret-named members' values replaced at any depth; under a secret
    /// name, every value of a list (a list of tokens), and an object read
    /// member by member (`{"auth": {"user": …, "access_token": …}}`).
    package mutating func redact(_ value: JSON) -> JSON {
        switch value {
        case .object(let object):
            return .object(
                JSONObject(
                    object.pairs.map { pair in
                        (pair.key, Self.isSecretName(pair.key) ? redactAll(pair.value) : redact(pair.value))
                    }))
        case .array(let items):
            return .array(items.map { redact($0) })
        default:
            return value
        }
    }

    mutating func redactAll(_ value: JSON) -> JSON {
        switch value {
        case .string(let text):
            note(text)
            return .string(Self.redacted)
        case .int, .double:
            note(JSONWriter.encodeString(value))
            return .string(Self.redacted)
        case .object:
            return redact(value)
        case .array(let items):
            return .array(items.map { redactAll($0) })
        default:
            return value
        }
    }

    /// Each part by its name (a secret-named part's content replaced) and
    /// its own media type; a body that does not parse is kept, to be struck.
    mutating func redactMultipart(_ body: [UInt8], boundary: String) -> [UInt8] {
        guard let parts = try? FormBody.multipartParts(body, boundary: boundary) else { return body }
        var out: [UInt8] = []
        for part in parts {
            var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part.name)\""
            if let filename = part.filename { head += "; filename=\"\(filename)\"" }
            if let type = part.contentType { head += "\r\nContent-Type: \(type)" }
            out += Array((head + "\r\n\r\n").utf8)
            if Self.isSecretName(part.name), part.filename == nil {
                note(String(decoding: part.content, as: UTF8.self))
                out += Array(Self.redacted.utf8)
            } else {
                out += redactBody(part.content, contentType: part.contentType ?? (part.filename == nil ? "text/plain" : nil))
            }
            out += [13, 10]
        }
        out += Array("--\(boundary)--\r\n".utf8)
        return out
    }

    /// `<password>x</password>` (any prefix, any attributes) with its text replaced.
    mutating func redactXML(_ text: String) -> String {
        guard let pattern = try? NSRegularExpression(pattern: #"<([A-Za-z_][\w.:-]*)(\s[^>]*)?>([^<]*)</\1\s*>"#) else { return text }
        let source = text as NSString
        var result = ""
        var last = 0
        for match in pattern.matches(in: text, range: NSRange(location: 0, length: source.length)) {
            let name = source.substring(with: match.range(at: 1))
            let local = name.split(separator: ":").last.map(String.init) ?? name
            guard Self.isSecretName(local) else { continue }
            let value = match.range(at: 3)
            note(source.substring(with: value))
            result += source.substring(with: NSRange(location: last, length: value.location - last)) + Self.redacted
            last = value.location + value.length
        }
        return result + source.substring(from: last)
    }

    // MARK: - Striking

    /// A one-pass replacement of every secret seen (long enough not to be
    /// ordinary text) in a string: the values are indexed by their first four
    /// bytes, so a recording with thousands of credentials is written in
    /// time linear in its size, not in size times credentials.
    package func striker() -> Striker { Striker(secrets) }

    package struct Striker: Sendable {
        /// Values shorter than this are not struck from other text: they
        /// would strike ordinary words and numbers. They are still redacted
        /// where their names mark them.
        package static let shortest = 6
        private var byPrefix: [UInt32: [[UInt8]]] = [:]

        init(_ secrets: Set<String>) {
            for secret in secrets where secret.utf8.count >= Self.shortest {
                let bytes = Array(secret.utf8)
                byPrefix[Self.prefix(bytes, 0), default: []].append(bytes)
            }
            for key in byPrefix.keys { byPrefix[key]!.sort { $0.count > $1.count } }
        }

        static func prefix(_ bytes: [UInt8], _ at: Int) -> UInt32 {
            UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
        }

        /// `text` with every secret seen by name, and every value shaped as a secret (`Redaction.Shapes`), replaced.
        package func strike(_ text: String) -> String {
            Shapes.strike(strikeSeen(text))
        }

        private func strikeSeen(_ text: String) -> String {
            guard !byPrefix.isEmpty, text.utf8.count >= Self.shortest else { return text }
            let bytes = Array(text.utf8)
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count)
            var i = 0
            var changed = false
            scan: while i < bytes.count {
                if i + Self.shortest <= bytes.count, let candidates = byPrefix[Self.prefix(bytes, i)] {
                    for secret in candidates where i + secret.count <= bytes.count && bytes[i..<(i + secret.count)].elementsEqual(secret) {
                        out += Array(Redaction.redacted.utf8)
                        i += secret.count
                        changed = true
                        continue scan
                    }
                }
                out.append(bytes[i])
                i += 1
            }
            return changed ? String(decoding: out, as: UTF8.self) : text
        }
    }
}
