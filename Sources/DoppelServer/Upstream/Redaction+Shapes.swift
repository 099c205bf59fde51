import DoppelCore
import Foundation

/// Secrets known by their value's shape, whatever name they stand under:
/// what a name-based redaction misses in an ordinary field, a path segment,
/// a redirect's `Location` or a line of text. Struck from every text a
/// recording writes, after the secrets seen by name.
///
/// Recognised: JSON Web Tokens (and base64 JSON that holds a secret-named
/// member), PEM private keys, AWS access key ids, GitHub, Slack, Stripe,
/// Google and OpenAI-style API keys, a URL's user and password, OAuth and
/// credential parameters of a URL's query or fragment (`code`,
/// `access_token`, `id_token`, `client_assertion`, …), and a `Bearer`
/// credential in text. A random string with no such shape under a name
/// that says nothing (`{"x": "q8Zr…"}`) cannot be told from an id, and is
/// kept: docs/proxy-and-record.md says so.
extension Redaction {
    enum Shapes {
        /// Each pattern with what replaces its match (`$1` keeps a prefix).
        static let rules: [(pattern: NSRegularExpression, template: String)] = [
            (#"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----[\s\S]*?-----END ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----"#, redacted),
            (#"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*(\.[A-Za-z0-9_-]*){0,2}"#, redacted),
            (#"\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"#, redacted),
            (#"\b(gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"#, redacted),
            (#"\bxox[abposr]-[A-Za-z0-9-]{10,}"#, redacted),
            (#"\b[sr]k_(live|test)_[A-Za-z0-9]{16,}"#, redacted),
            (#"\bAIza[0-9A-Za-z_-]{35}"#, redacted),
            (#"\bsk-(proj-|ant-)?[A-Za-z0-9_-]{20,}"#, redacted),
            (#"([A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@:"']*:[^\s/?#@"']+@"#, "$1\(redacted)@"),
            (
                #"([?&#;](code|access_token|id_token|refresh_token|token|client_assertion|assertion|client_secret|password|passwd|api_key|apikey|key|sig|signature|session_state)=)[^&#\s"'<>]+"#,
                "$1" + redactedEncoded
            ),
            (#"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/-]{8,}=*"#, "$1 \(redacted)"),
        ].map { (try! NSRegularExpression(pattern: $0.0), $0.1) }

        /// A base64 value that may be JSON (`{"` encodes as `eyJ`).
        static let base64JSON = try! NSRegularExpression(pattern: #"\beyJ[A-Za-z0-9+/_-]{8,}={0,2}"#)
        static let redactedEncoded = "%5Bredacted%5D"

        /// Texts that none of the shapes can be in, told cheaply.
        static func mayHold(_ text: String) -> Bool {
            let markers = [
                "eyJ", "PRIVATE KEY", "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "gh", "github_pat_", "xox",
                "k_live_", "k_test_", "AIza", "sk-", "://", "=", "earer", "asic",
            ]
            return markers.contains { text.contains($0) }
        }

        /// `text` with every secret-shaped value replaced.
        static func strike(_ text: String) -> String {
            guard text.utf8.count >= 8, mayHold(text) else { return text }
            var result = text
            for rule in rules {
                let range = NSRange(result.startIndex..., in: result)
                guard rule.pattern.firstMatch(in: result, range: range) != nil else { continue }
                result = rule.pattern.stringByReplacingMatches(in: result, range: range, withTemplate: rule.template)
            }
            return strikeBase64JSON(result)
        }

        /// Base64 (or base64url) JSON with a member whose name marks a secret, replaced whole.
        static func strikeBase64JSON(_ text: String) -> String {
            let source = text as NSString
            var result = ""
            var last = 0
            for match in base64JSON.matches(in: text, range: NSRange(location: 0, length: source.length)) {
                let token = source.substring(with: match.range)
                guard holdsSecret(decoded(token)) else { continue }
                result += source.substring(with: NSRange(location: last, length: match.range.location - last)) + redacted
                last = match.range.location + match.range.length
            }
            return last == 0 ? text : result + source.substring(from: last)
        }

        static func decoded(_ token: String) -> JSON? {
            var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            guard let data = Data(base64Encoded: base64) else { return nil }
            return try? JSONReader.parse(Array(data))
        }

        static func holdsSecret(_ value: JSON?) -> Bool {
            switch value {
            case .object(let object)?: object.pairs.contains { Redaction.isSecretName($0.key) || holdsSecret($0.value) }
            case .array(let items)?: items.contains { holdsSecret($0) }
            default: false
            }
        }
    }
}
