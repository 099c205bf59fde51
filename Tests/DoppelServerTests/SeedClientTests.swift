import DoppelCore
import DoppelServer
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An illustration client like the Magical Stories app's IllustrationService:
/// up to five attempts, one second apart, retrying on network errors, API
/// failures and invalid responses; the image decoded from base64.
struct IllustrationClient {
    struct Image {
        let data: Data
        let mimeType: String
    }

    enum IllustrationError: Error {
        case apiError(status: Int, message: String)
        case invalidResponse
    }

    let endpoint: URL
    let apiKey: String
    let session: String
    /// Waits between attempts; the tests pass one that moves the server's virtual clock.
    let wait: (Double) async throws -> Void
    let maxAttempts = 5

    func generate(prompt: String) async throws -> Image {
        var lastError: Error = IllustrationError.invalidResponse
        for attempt in 1...maxAttempts {
            do {
                return try await attemptOnce(prompt: prompt)
            } catch {
                lastError = error
                if attempt < maxAttempts { try await wait(1) }
            }
        }
        throw lastError
    }

    private func attemptOnce(prompt: String) async throws -> Image {
        var request = URLRequest(url: endpoint)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(apiKey, forHTTPHeaderField: "x-goog-api-key")
        request.setValue(session, forHTTPHeaderField: "Doppel-Session")
        request.httpBody = try JSONSerialization.data(withJSONObject: ["instances": [["prompt": prompt]], "parameters": ["sampleCount": 1]])
        let (data, response) = try await URLSession.shared.dataTaskResult(for: request)
        guard response.statusCode == 200 else {
            let message = (try? JSONDecoder().decode(ImagenError.self, from: data))?.error.message ?? ""
            throw IllustrationError.apiError(status: response.statusCode, message: message)
        }
        struct Response: Decodable {
            struct Prediction: Decodable {
                let bytesBase64Encoded: String
                let mimeType: String
            }
            let predictions: [Prediction]
        }
        guard let prediction = try JSONDecoder().decode(Response.self, from: data).predictions.first,
            let image = Data(base64Encoded: prediction.bytesBase64Encoded)
        else { throw IllustrationError.invalidResponse }
        return Image(data: image, mimeType: prediction.mimeType)
    }

    struct ImagenError: Decodable {
        struct Body: Decodable {
            let code: Int
            let message: String
            let status: String
        }
        let error: Body
    }
}

/// A client like EKNetwork's NetworkManager with a TokenRefreshProvider: on
/// 401 it refreshes the token once and retries the request.
final class TokenRefreshingClient: @unchecked Sendable {
    let base: URL
    var accessToken: String?
    var refreshToken: String?
    private(set) var refreshes = 0

    init(base: URL) { self.base = base }

    struct Tokens: Decodable {
        let accessToken: String
        let refreshToken: String
    }
    struct Profile: Decodable {
        let id: Int
        let email: String
        let name: String
    }

    func signIn(email: String, password: String) async throws {
        let tokens: Tokens = try await send("POST", "/v1/auth/sign-in", json: ["email": email, "password": password], authorized: false)
        (accessToken, refreshToken) = (tokens.accessToken, tokens.refreshToken)
    }

    func profile() async throws -> Profile {
        try await send("GET", "/v1/profile", json: nil, authorized: true)
    }

    private func refreshTokenIfNeeded() async throws {
        refreshes += 1
        let tokens: Tokens = try await send(
            "POST", "/v1/auth/refresh", json: ["refreshToken": refreshToken ?? ""], authorized: false, retryOn401: false)
        (accessToken, refreshToken) = (tokens.accessToken, tokens.refreshToken)
    }

    private func send<T: Decodable>(
        _ method: String, _ path: String, json: [String: String]?, authorized: Bool, retryOn401: Bool = true
    ) async throws -> T {
        var request = URLRequest(url: base.appendingPathComponent(String(path.dropFirst())))
        request.httpMethod = method
        if let json {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONEncoder().encode(json)
        }
        if authorized, let accessToken { request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.dataTaskResult(for: request)
        if response.statusCode == 401, authorized, retryOn401 {
            try await refreshTokenIfNeeded()
            return try await send(method, path, json: json, authorized: authorized, retryOn401: false)
        }
        guard (200..<300).contains(response.statusCode) else { throw URLError(.badServerResponse) }
        return try JSONDecoder().decode(T.self, from: data)
    }
}

extension URLSession {
    /// `data(for:)` that works on every platform's Foundation.
    func dataTaskResult(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await withCheckedThrowingContinuation { continuation in
            dataTask(with: request) { data, response, error in
                if let error { return continuation.resume(throwing: error) }
                guard let http = response as? HTTPURLResponse else { return continuation.resume(throwing: URLError(.badServerResponse)) }
                continuation.resume(returning: (data ?? Data(), http))
            }.resume()
        }
    }
}

@Suite("Seed clients against their contracts")
struct SeedClientTests {
    func server(_ contract: String) async throws -> (DoppelTestServer, TestClient) {
        let loaded = try ContractLoader.load(file: contractPath(contract))
        let catalog = try ScenarioCatalog.load(directory: repositoryRoot.appendingPathComponent("scenarios").path, contract: loaded)
        let server = try await DoppelTestServer.start(engine: MockEngine(contract: loaded), scenarios: catalog)
        return (server, TestClient(base: server.baseURL))
    }

    /// A wait that moves the session's virtual clock instead of sleeping.
    func virtualWait(_ admin: TestClient, session: String) -> (Double) async throws -> Void {
        { seconds in _ = try await admin.send("POST", "/__doppel/clock?session=\(session)", json: ["advance": .string("\(Int(seconds))s")]) }
    }

    @Test func illustrationClientGetsItsImageAfterFourOverloads() async throws {
        let (server, admin) = try await server("imagen.yaml")
        #expect(try await admin.send("PUT", "/__doppel/scenario?session=app", json: ["name": "imagen/flaky-then-ok"]).status == 200)
        _ = try await admin.send("POST", "/__doppel/clock?session=app", json: ["set": "2025-04-01T09:00:00Z", "freeze": true])
        let client = IllustrationClient(
            endpoint: server.url("/v1beta/models/imagen-3.0-generate-002:predict"), apiKey: "app-key", session: "app",
            wait: virtualWait(admin, session: "app"))
        let image = try await client.generate(prompt: "A whimsical, child-friendly lighthouse")
        #expect(image.mimeType == "image/png")
        #expect(image.data.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        #expect(
            try await admin.send("POST", "/__doppel/verify", json: ["endpoint": "predict", "session": "app", "status": 503, "count": 4]).json?["pass"]
                == true)
        #expect(
            try await admin.send("POST", "/__doppel/verify", json: ["endpoint": "predict", "session": "app", "status": 200, "count": 1]).json?["pass"]
                == true)
        // Four waits of one second, on the virtual clock.
        #expect(try await admin.send("GET", "/__doppel/clock?session=app").json?["now"] == "2025-04-01T09:00:04Z")
        await server.stop()
    }

    @Test func illustrationClientGivesUpAfterFiveAttempts() async throws {
        let (server, admin) = try await server("imagen.yaml")
        _ = try await admin.send("PUT", "/__doppel/scenario?session=app", json: ["name": "imagen/always-fails"])
        let client = IllustrationClient(
            endpoint: server.url("/v1beta/models/imagen-3.0-generate-002:predict"), apiKey: "app-key", session: "app",
            wait: virtualWait(admin, session: "app"))
        do {
            _ = try await client.generate(prompt: "A moon")
            Issue.record("the client got an image from a service that always fails")
        } catch IllustrationClient.IllustrationError.apiError(let status, let message) {
            #expect(status == 500)
            #expect(message.hasPrefix("An internal error has occurred"))
        }
        #expect(try await admin.send("POST", "/__doppel/verify", json: ["endpoint": "predict", "session": "app", "count": 5]).json?["pass"] == true)
        await server.stop()
    }

    @Test func tokenExpiryRefreshAndRetry() async throws {
        let (server, admin) = try await server("eknetwork-demo.yaml")
        let client = TokenRefreshingClient(base: server.url("/"))
        try await client.signIn(email: "user@example.com", password: "password")
        let firstToken = client.accessToken
        #expect(try await client.profile().email == "user@example.com")
        #expect(client.refreshes == 0)

        _ = try await admin.send("POST", "/__doppel/clock", json: ["advance": "16m"])
        let profile = try await client.profile()
        #expect(profile.name == "Example User")
        #expect(client.refreshes == 1)
        #expect(client.accessToken != firstToken)
        // On the wire: the expired token's 401, one refresh, the retried request's 200.
        let journal = try #require(try await admin.send("GET", "/__doppel/journal").json?["entries"]?.arrayValue)
        #expect(
            journal.suffix(3).map { "\($0["endpoint"]!.interpolationText) \($0["status"]!.interpolationText)" } == [
                "profile 401", "refresh 200", "profile 200",
            ])
        #expect(
            try await admin.send("GET", "/__doppel/journal?endpoint=profile&status=401").json?["entries"]?.arrayValue?.first?["response"]
                == "token-expired")
        await server.stop()
    }
}
