import DoppelCore
import Foundation
import Testing

@testable import DoppelServer

/// What `doppel record` keeps out of a recording: secrets planted in every
/// part of an exchange (headers both ways, query, form, multipart, JSON at any
/// depth and in lists, XML) and echoed back elsewhere never reach the files.
struct RedactionTests {
    /// Planted secrets, each unique and long enough to be struck wherever it recurs.
    final class Plants {
        var all: [String] = []
        func next(_ kind: String) -> String {
            let secret = "PLANTED\(all.count)\(kind)\(UUID().uuidString.prefix(8))"
            all.append(secret)
            return secret
        }
    }

    static func plantedExchanges(_ p: Plants) -> [Recorder.Exchange] {
        var exchanges: [Recorder.Exchange] = []
        func json(_ object: JSON) -> [UInt8] { Array(JSONWriter.encodeString(object).utf8) }
        let bearer = p.next("bearer")
        let apiKeyQuery = p.next("keyquery")

        // 1. Request headers of every usual kind; a query of secret names.
        let query =
            ["key", "sig", "access_token", "api_key", "signature", "password", "apiKey", "X-Amz-Signature", "token", "client_secret"]
            .map { "\($0)=\($0 == "key" ? apiKeyQuery : p.next("q"))" }.joined(separator: "&") + "&page=2&token=\(p.next("q"))%2Bplus"
        exchanges.append(
            Recorder.Exchange(
                request: RecordedRequest(
                    method: "GET", target: "/reports/monthly?" + query,
                    headers: [
                        ("Authorization", "Bearer " + bearer), ("Proxy-Authorization", "Basic " + p.next("proxyauth")),
                        ("Cookie", "sid=\(p.next("cookie")); theme=\(p.next("cookie"))"), ("X-Api-Key", p.next("h")), ("X-Auth-Token", p.next("h")),
                        ("X-Session-Token", p.next("h")), ("Api-Key", p.next("h")), ("X-Amz-Security-Token", p.next("h")),
                        ("X-Client-Secret", p.next("h")),
                        ("Ocp-Apim-Subscription-Key", p.next("h")), ("X-Signature", p.next("h")), ("X-Access-Token", p.next("h")),
                        ("X-Request-Id", "req-visible-1"),
                    ]),
                response: MockResponse(
                    status: 200,
                    headers: [
                        ("Content-Type", "application/json"), ("Set-Cookie", "session=\(p.next("setcookie")); Path=/; HttpOnly"),
                        ("X-Api-Key", p.next("rh")), ("X-Session-Token", p.next("rh")), ("X-Csrf-Token", p.next("rh")),
                        ("X-Refresh-Token", p.next("rh")),
                        ("X-Rate-Limit-Remaining", "41"),
                    ],
                    body: json([
                        "access_token": .string(p.next("rj")), "refresh_token": .string(p.next("rj")), "id_token": .string(p.next("rj")),
                        "user": ["name": "Mia", "apiKey": .string(p.next("rj"))], "keys": [["secret": .string(p.next("rj"))]],
                        "echo": .string("your token \(bearer) and key \(apiKeyQuery) are fine"),
                    ]))))

        // 2. A form login and its form answer.
        let password = p.next("form")
        exchanges.append(
            Recorder.Exchange(
                request: RecordedRequest(
                    method: "POST", target: "/oauth/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: Array(
                        "username=mia&password=\(password)&client_secret=\(p.next("form"))&refresh_token=\(p.next("form"))&otp=\(p.next("form"))&password=\(p.next("form"))&passcode=\(p.next("form"))&grant_type=password"
                            .utf8)),
                response: MockResponse(
                    status: 401, headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: Array("error=invalid_grant&access_token=\(p.next("rform"))&hint=\(password)%20rejected".utf8))))

        // 3. A multipart upload: secret fields, a JSON part with nested secrets, a file.
        let boundary = "xYzBoundary42"
        var multipart = ""
        func part(_ name: String, _ content: String, type: String? = nil, filename: String? = nil) {
            multipart += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"" + (filename.map { "; filename=\"\($0)\"" } ?? "")
            multipart += (type.map { "\r\nContent-Type: \($0)" } ?? "") + "\r\n\r\n\(content)\r\n"
        }
        part("title", "Holiday photos")
        part("password", p.next("mp"))
        part("api_key", p.next("mp"))
        part(
            "metadata", JSONWriter.encodeString(["token": .string(p.next("mpjson")), "nested": ["secret": .string(p.next("mpjson"))]]),
            type: "application/json")
        part("settings", "mode=fast&private_key=\(p.next("mpform"))", type: "application/x-www-form-urlencoded")
        part("photo", "not-a-secret-bytes", type: "image/png", filename: "beach.png")
        multipart += "--\(boundary)--\r\n"
        exchanges.append(
            Recorder.Exchange(
                request: RecordedRequest(
                    method: "POST", target: "/uploads", headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")],
                    body: Array(multipart.utf8)),
                response: MockResponse(
                    status: 201, headers: [("Content-Type", "application/xml")],
                    body: Array(
                        "<auth><user>mia</user><password>\(p.next("xml"))</password><ns:token kind=\"a\">\(p.next("xml"))</ns:token></auth>".utf8))))

        // 4. JSON of every shape: secrets in lists, nested objects, numbers, dashed keys, a +json type.
        let pin = 987_654_321
        p.all.append(String(pin))
        let session = p.next("json")
        exchanges.append(
            Recorder.Exchange(
                request: RecordedRequest(
                    method: "PUT", target: "/accounts/12345", headers: [("Content-Type", "application/vnd.api+json")],
                    body: json([
                        "key": .string(p.next("json")), "pwd": .string(p.next("json")), "tokens": [.string(p.next("json")), .string(p.next("json"))],
                        "auth": ["access_token": .string(p.next("json")), "refresh_token": .string(p.next("json"))],
                        "user": ["password": .string(p.next("json")), "profile": ["apiSecret": .string(p.next("json")), "city": "Oslo"]],
                        "items": [["session_id": .string(session)], ["session_id": .string(p.next("json"))]], "privateKey": .string(p.next("json")),
                        "pin": .int(pin), "credentials": ["user": "mia", "pass": .string(p.next("json"))], "X-Api-Key": .string(p.next("json")),
                        "client-secret": .string(p.next("json")), "webhookSigningSecret": .string(p.next("json")),
                        "aws_secret_access_key": .string(p.next("json")),
                        "data": ["attributes": ["password": .string(p.next("json")), "name": "Mia"]],
                    ])),
                response: MockResponse(
                    status: 200, headers: [("Content-Type", "text/plain")], body: Array("Saved; session \(session) stays open".utf8))))

        // 5. An echo of a secret in a path, and a header sent again.
        exchanges.append(
            Recorder.Exchange(
                request: RecordedRequest(method: "DELETE", target: "/sessions/\(session)", headers: [("Authorization", "Bearer " + bearer)]),
                response: MockResponse(status: 204, headers: [], body: [])))
        return exchanges
    }

    @Test func aRecordingWithManyPlantedSecretsWritesNone() throws {
        let plants = Plants()
        let exchanges = Self.plantedExchanges(plants)
        #expect(plants.all.count >= 60, "planted \(plants.all.count)")
        let output = RecordingWriter.write(exchanges, target: "http://x", contractFile: "contract.yaml")
        for secret in plants.all {
            #expect(!output.contract.contains(secret), "the contract holds \(secret)")
            #expect(!output.scenario.contains(secret), "the scenario holds \(secret)")
        }
        // What is not secret is kept, and the recording still loads.
        for visible in ["req-visible-1", "X-Rate-Limit-Remaining", "Holiday photos", "beach.png", "not-a-secret-bytes", "Oslo", "grant_type", "page"]
        {
            #expect(output.contract.contains(visible) || output.scenario.contains(visible), "\(visible) was lost")
        }
        let contract = try ContractLoader.load(text: output.contract, file: "contract.yaml")
        #expect(contract.endpoints.count == 5)
        // A secret response header is kept by name, its value struck.
        let headers = contract.endpoints.flatMap { $0.responses.flatMap(\.headers) }
        #expect(headers.contains { $0.0 == "X-Session-Token" && $0.1.constantValue == "[redacted]" })
    }

    /// Secrets under names that say nothing, each known by its shape alone.
    @Test func secretsKnownByTheirShapeAreNotWritten() throws {
        func json(_ object: JSON) -> [UInt8] { Array(JSONWriter.encodeString(object).utf8) }
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkLXVzZXItNDIifQ.c2lnbmF0dXJlLXBsYW50ZWQ"
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAplantedKeyMaterialXYZ\n-----END RSA PRIVATE KEY-----"
        let aws = "AKIAPLANTED0KEY12345"
        let github = "ghp_" + String(repeating: "Pl4nt", count: 8)
        let stripe = "sk_live_PlantedStripeKey12345"
        let google = "AIza" + String(repeating: "P", count: 35)
        let openai = "sk-proj-PlantedOpenAIKey_abcdefgh"
        let code = "SplxlOBeZQQYbYS6WxSbIA"
        let fragmentToken = "2YotnFZFEjr1zCsicMWpAA"
        let assertion = "planted-client-assertion-value"
        let inner = Data(#"{"session":{"token":"PlantedInnerToken42"}}"#.utf8).base64EncodedString()
        let password = "hunter2planted"
        let bearer = "PlantedBearerInText99"
        let exchanges = [
            Recorder.Exchange(
                request: RecordedRequest(method: "GET", target: "/reset/\(jwt)/confirm", headers: []),
                response: MockResponse(
                    status: 302,
                    headers: [("Location", "https://app.example/cb?code=\(code)&state=xyz#access_token=\(fragmentToken)&token_type=bearer")])),
            Recorder.Exchange(
                request: RecordedRequest(
                    method: "POST", target: "/notes", headers: [("Content-Type", "application/json")],
                    body: json(["text": .string(pem), "ref": .string(aws), "blob": .string(inner)])),
                response: MockResponse(
                    status: 200, headers: [("Content-Type", "application/json")],
                    body: json([
                        "data": .string(jwt), "keys": [.string(github), .string(stripe), .string(google), .string(openai)],
                        "note": .string("sent with Bearer \(bearer) from the app"),
                    ]))),
            Recorder.Exchange(
                request: RecordedRequest(
                    method: "POST", target: "/oauth/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: Array("grant_type=client_credentials&client_assertion=\(assertion)".utf8)),
                response: MockResponse(
                    status: 200, headers: [("Content-Type", "text/plain")], body: Array("see http://svc:\(password)@10.0.0.1/x".utf8))),
        ]
        let output = RecordingWriter.write(exchanges, target: "http://admin:\(password)@127.0.0.1:9000", contractFile: "contract.yaml")
        let written = output.contract + output.scenario
        for secret in [
            jwt, "MIIEpAIBAAKCAQEAplantedKeyMaterialXYZ", aws, github, stripe, google, openai, code, fragmentToken, assertion, inner,
            "PlantedInnerToken42", password, bearer,
        ] {
            #expect(!written.contains(secret), "the recording holds \(secret)")
        }
        // What is not secret stays: the path's shape, the redirect's own state, the grant type.
        for visible in ["/reset/", "state=xyz", "token_type=bearer", "client_credentials", "127.0.0.1:9000"] {
            #expect(written.contains(visible), "\(visible) was lost")
        }
        _ = try ContractLoader.load(text: output.contract, file: "contract.yaml")
    }

    @Test(arguments: [
        ("X-Api-Key", true), ("X-Session-Token", true), ("client_secret", true), ("key", true), ("pwd", true), ("sig", true),
        ("Ocp-Apim-Subscription-Key", true), ("refreshToken", true), ("passcode", true), ("client_assertion", true),
        ("X-Request-Id", false), ("author", false), ("name", false), ("page", false), ("keyboard", false), ("content-type", false),
    ])
    func namesThatMarkSecrets(name: String, secret: Bool) {
        #expect(Redaction.isSecretName(name) == secret)
    }

    @Test func thousandsOfCredentialsAreStruckInOnePass() {
        // Each exchange brings its own credential and echoes the one before.
        var exchanges: [Recorder.Exchange] = []
        var previous = "none"
        for n in 0..<5_000 {
            let token = "tok-\(n)-\(UUID().uuidString)"
            exchanges.append(
                Recorder.Exchange(
                    request: RecordedRequest(method: "GET", target: "/me", headers: [("Authorization", "Bearer " + token)]),
                    response: MockResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Array("last token was \(previous)".utf8))))
            previous = token
        }
        let output = RecordingWriter.write(exchanges, target: "http://x", contractFile: "contract.yaml")
        #expect(!output.contract.contains("tok-"))
        #expect(!output.scenario.contains("tok-"))
        #expect(output.contract.contains("last token was none"))
    }

    @Test func theRecorderKeepsOneBodyPerAnswerAndStopsAtItsBudget() {
        let recorder = Recorder(limit: 100, maxBodyBytes: 2_500)
        let big = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000)
        for n in 0..<5 {
            recorder.record(RecordedRequest(method: "GET", target: "/items/\(n)"), MockResponse(status: 200, headers: [], body: big))
        }
        // Five answers of one endpoint and status keep one body.
        #expect(recorder.exchanges.map(\.response.body.count) == [1_000, 0, 0, 0, 0])
        for n in 0..<3 {
            recorder.record(RecordedRequest(method: "POST", target: "/upload/\(n)", body: big), MockResponse(status: 201, headers: [], body: []))
        }
        // 1,000 + 1,000 fit in 2,500; the third upload's body does not.
        #expect(recorder.exchanges.suffix(3).map(\.request.body.count) == [1_000, 0, 0])
        #expect(recorder.exchanges.suffix(3).map(\.requestBodyOmitted) == [false, true, true])
        #expect(recorder.omittedBodies == 2)
        let output = RecordingWriter.write(recorder.exchanges, target: "http://x", contractFile: "contract.yaml")
        #expect(output.scenario.contains("byte budget was spent"))
    }
}
