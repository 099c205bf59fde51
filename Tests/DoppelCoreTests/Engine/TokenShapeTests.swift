import Foundation
import Testing

@testable import DoppelCore

/// Bearer schemes that take only tokens of a shape: `format: jwt`, `pattern`.
@Suite struct TokenShapeTests {
    let clock = TestClock("2025-01-01T00:00:00Z")

    static func base64URL(_ json: String) -> String {
        Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func jwt(_ payload: String, header: String = #"{"alg":"HS256","typ":"JWT"}"#) -> String {
        base64URL(header) + "." + base64URL(payload) + ".c2lnbmF0dXJl"
    }

    func engine() throws -> MockEngine {
        let clock = self.clock
        return MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                responses:
                  unauthorized: { status: 401, body: { detail: Could not validate credentials } }
                  expired: { status: 401, body: { detail: Token has expired } }
                auth:
                  default: token
                  schemes:
                    token: { type: bearer, format: jwt, failure: unauthorized, expired: expired }
                    key: { type: api_key, header: X-Key, pattern: "^k-[0-9]{4}$" }
                endpoints:
                  me: { request: GET /me, responses: [ { status: 200, body: { user: "{{ auth.claims.sub }}" } } ] }
                  keyed: { request: GET /keyed, auth: key, responses: [ { status: 200 } ] }
                """), clock: { clock.now })
    }

    @Test func aJWTIsReadAndItsExpiryCheckedOnTheSessionsClock() throws {
        let engine = try engine()
        let soon = Int(clock.now) + 60
        let token = Self.jwt(#"{"sub":"user-1","exp":\#(soon)}"#)
        let accepted = engine.send("GET", "/me", token: token)
        #expect(accepted.status == 200)
        #expect(accepted.json == ["user": "user-1"])
        // No `exp`: no expiry.
        #expect(engine.send("GET", "/me", token: Self.jwt(#"{"sub":"forever"}"#)).status == 200)
        clock.advance(seconds: 60)
        let expired = engine.send("GET", "/me", token: token)
        #expect(expired.status == 401)
        #expect(expired.json == ["detail": "Token has expired"])
    }

    @Test(arguments: [
        "not-a-jwt", "a.b", "a.b.c.d",
        "\(TokenShapeTests.base64URL("[1]")).\(TokenShapeTests.base64URL(#"{"sub":"x"}"#)).sig",
        "\(TokenShapeTests.base64URL(#"{"alg":"none"}"#)).\(TokenShapeTests.base64URL("not json")).sig",
        "\(TokenShapeTests.base64URL(#"{"alg":"none"}"#)).\(TokenShapeTests.base64URL(#"{"sub":"x"}"#)).s+g",
    ])
    func aTokenThatIsNotAJWTGetsTheSchemesFailure(token: String) throws {
        let refused = try engine().send("GET", "/me", token: token)
        #expect(refused.status == 401)
        #expect(refused.json == ["detail": "Could not validate credentials"])
    }

    @Test func aKeyMustMatchItsPattern() throws {
        let engine = try engine()
        #expect(engine.send("GET", "/keyed", token: nil, headers: [(name: "X-Key", value: "k-1234")]).status == 200)
        #expect(engine.send("GET", "/keyed", token: nil, headers: [(name: "X-Key", value: "k-12345")]).status == 401)
        #expect(engine.send("GET", "/keyed", token: nil, headers: [(name: "X-Key", value: "x-1234")]).status == 401)
    }

    @Test func shapesAreCheckedWhereTheyAreWritten() {
        let text = """
            doppel: 1
            auth:
              schemes:
                a: { type: bearer, format: jwk }
                b: { type: api_key, header: X-Key, format: jwt }
                c: { type: basic, pattern: "^a" }
                d: { type: bearer, pattern: "(" }
            endpoints:
              e: { request: GET /e, auth: none, responses: [ { status: 200 } ] }
            """
        let found = diagnostics(of: text, file: "t.yaml").map(\.description)
        #expect(found.count == 4)
        #expect(found[0] == "t.yaml:4:32: error: unknown token format 'jwk' in auth scheme 'a' (did you mean 'jwt'?); Doppel knows jwt")
        #expect(found[1] == "t.yaml:5:48: error: 'format' of auth scheme 'b' is for bearer tokens")
        #expect(found[2] == "t.yaml:6:32: error: 'pattern' of auth scheme 'c' is for bearer tokens and API keys")
        #expect(found[3].hasPrefix("t.yaml:7:33: error: unusable 'pattern' in auth scheme 'd'"))
    }
}

@Suite struct Base64URLTests {
    @Test(arguments: ["", "f", "fo", "foo", "foob", "fooba", "foobar", "ёж\u{0}\u{FF}", String(repeating: "xyz?>~", count: 50)])
    func decodesWhatFoundationEncodes(text: String) {
        let encoded = Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let decoded = Authenticator.base64URLDecoded(Substring(encoded).utf8)
        #expect(decoded == (text.isEmpty ? nil : Array(text.utf8)))
    }

    @Test(arguments: ["a", "abcde", "ab+c", "ab/c", "ab=c", "ab c"])
    func refusesWhatIsNotBase64URL(text: String) {
        #expect(Authenticator.base64URLDecoded(Substring(text).utf8) == nil)
    }
}
