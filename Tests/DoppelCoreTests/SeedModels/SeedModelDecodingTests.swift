import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

/// Every body the seed contracts send decodes into the Swift models their
/// documents print (same field names, types and key strategy).
@Suite("Seed contracts decode into their documents' models")
struct SeedModelDecodingTests {
    let clock = TestClock("2025-11-03T16:00:00Z")

    func engine(_ contract: String) throws -> MockEngine {
        let clock = self.clock
        return MockEngine(contract: try ContractLoader.load(file: contractPath(contract)), clock: { clock.now })
    }

    /// Decodes a response body, recording the decoding error as a test issue.
    @discardableResult
    func decode<T: Decodable>(
        _ type: T.Type, _ response: MockResponse, status: Int, with decoder: JSONDecoder = JSONDecoder(),
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) -> T? {
        #expect(response.status == status, "\(String(decoding: response.body, as: UTF8.self))", sourceLocation: sourceLocation)
        do {
            return try decoder.decode(T.self, from: Data(response.body))
        } catch {
            Issue.record("\(T.self) does not decode \(String(decoding: response.body, as: UTF8.self)): \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }

    /// Starts a session whose only override forces `status` on an endpoint.
    func forcing(_ engine: MockEngine, _ endpoint: String, status: Int, session: String) throws {
        let scenario = try ScenarioLoader.load(
            text: "contract: \(engine.contract.file)\noverrides: [ { endpoint: \(endpoint), status: \(status) } ]",
            file: "force.yaml", contract: engine.contract)
        engine.sessions.start(session, scenario: scenario)
    }

    @Test func tales() throws {
        typealias M = TalesModels
        let engine = try engine("tales.yaml")
        let child = try #require(
            decode(
                M.ChildInfo.self,
                engine.send("POST", "/api/v1/children", json: ["name": "Эмма", "age_category": "5-7", "gender": "female", "interests": ["феи"]]),
                status: 200))
        let request: JSON = [
            "language": "ru", "child_id": .string(child.id), "story_type": "combined", "hero_id": "987fcdeb-51a2-43f7-b123-9876543210ab",
            "generate_audio": true,
        ]
        let story = decode(M.GenerateStoryResponse.self, engine.send("POST", "/api/v1/stories/generate", json: request), status: 200)
        #expect(story?.hero?.name == "Капитан Чудо")
        #expect(story?.audioFileUrl != nil)
        for _ in 0..<4 { _ = engine.send("POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(child.id)]) }
        let limit = decode(
            M.APIError.self, engine.send("POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(child.id)]), status: 402)
        #expect(limit?.limitInfo?.storiesUsed == 5)
        #expect(decode(M.SubscriptionInfo.self, engine.send("GET", "/api/v1/users/subscription"), status: 200)?.limits.storiesRemaining == 0)
        #expect(
            decode(M.PlansResponse.self, engine.send("GET", "/api/v1/subscription/plans"), status: 200, with: M.snakeCase)?.plans.first?.isCurrent
                == true)
        #expect(decode([M.FreeStory].self, engine.send("GET", "/api/v1/free-stories", token: nil), status: 200, with: M.snakeCase)?.count == 6)
        decode(
            M.ChildInfo.self,
            engine.send("POST", "/api/v1/children", json: ["name": "B", "age_category": "3-5", "gender": "male", "interests": ["x"]]), status: 200)
        for (method, target, json, tokenValue, status) in [
            ("GET", "/api/v1/users/subscription", nil, nil, 401),
            ("POST", "/api/v1/children", ["name": "A", "age_category": "9", "gender": "male", "interests": ["x"]], sampleJWT, 400),
            ("POST", "/api/v1/children", ["name": "C", "age_category": "3-5", "gender": "male", "interests": ["x"]], sampleJWT, 402),
            ("POST", "/api/v1/stories/generate", ["language": "ru", "child_id": .string(child.id), "story_type": "hero"], sampleJWT, 400),
            ("POST", "/api/v1/stories/generate", ["language": "ru", "child_id": "123e4567-e89b-12d3-a456-426614174000"], sampleJWT, 404),
            ("POST", "/api/v1/subscription/purchase?plan_tier=gold&billing_cycle=monthly&payment_method=card", nil, sampleJWT, 400),
        ] as [(String, String, JSON?, String?, Int)] {
            decode(M.APIError.self, engine.send(method, target, json: json, token: tokenValue), status: status)
        }
        for (endpoint, status) in [("generate-story", 500), ("purchase", 402)] {
            try forcing(engine, endpoint, status: status, session: endpoint)
            let target =
                endpoint == "purchase"
                ? "/api/v1/subscription/purchase?plan_tier=basic&billing_cycle=monthly&payment_method=card" : "/api/v1/stories/generate"
            let body: JSON? = endpoint == "purchase" ? nil : ["language": "ru", "child_id": .string(child.id)]
            decode(M.APIError.self, engine.send("POST", target, json: body, session: endpoint), status: status)
        }
    }

    @Test func currency() throws {
        typealias M = CurrencyModels
        let engine = try engine("currency.yaml")
        let all = decode(M.ExchangeRatesResponse.self, engine.send("GET", "/api/rates?base=EUR", token: nil), status: 200)
        #expect(all?.rates?["USD"]?.rate == 1.086957)
        #expect(all?.count == all?.rates?.count)
        let pair = decode(M.ExchangeRatesResponse.self, engine.send("GET", "/api/rates?base=USD&target=EUR", token: nil), status: 200)
        #expect(pair?.rate == 0.92)
        #expect(pair?.rates == nil)
        let converted = decode(M.ConvertResponse.self, engine.send("GET", "/api/convert?amount=100&from=USD&to=EUR", token: nil), status: 200)
        #expect(converted?.convertedAmount == 92)
        let body: JSON = ["device_id": "6F9619FF", "device_name": "iPhone", "platform": "iOS", "device_type": "mobile", "app_version": "1.0.0"]
        #expect(
            decode(M.DeviceRegisterResponse.self, engine.send("POST", "/api/device/register", json: body, token: nil), status: 200)?.deviceId == 1)
        #expect(
            decode(M.DeviceRegisterResponse.self, engine.send("POST", "/api/device/register", json: body, token: nil), status: 200)?.deviceId == 1)
        decode(M.ErrorResponse.self, engine.send("GET", "/api/rates?base=XYZ", token: nil), status: 404)
        decode(M.ErrorResponse.self, engine.send("GET", "/api/rates?target=XYZ", token: nil), status: 404)
        decode(M.ErrorResponse.self, engine.send("GET", "/api/convert?amount=1&from=USD&to=XYZ", token: nil), status: 404)
        decode(M.ErrorResponse.self, engine.send("GET", "/api/convert?from=USD", token: nil), status: 400)
        decode(M.ErrorResponse.self, engine.send("POST", "/api/device/register", json: ["platform": "iOS"], token: nil), status: 400)
    }

    @Test func imagen() throws {
        typealias M = ImagenModels
        let engine = try engine("imagen.yaml")
        let key = [(name: "x-goog-api-key", value: "k")]
        let prompt: JSON = ["instances": [["prompt": "A fox"]], "parameters": ["sampleCount": 2]]
        let image = decode(
            M.PredictResponse.self, engine.send("POST", "/v1beta/models/imagen-3.0-generate-002:predict", json: prompt, token: nil, headers: key),
            status: 200)
        #expect(image?.predictions.count == 2)
        let png = try #require(image?.predictions.first.flatMap { Data(base64Encoded: $0.bytesBase64Encoded) })
        #expect(png.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        #expect(image?.predictions.first?.mimeType == "image/png")
        decode(M.ErrorResponse.self, engine.send("POST", "/v1beta/models/imagen-3.0-generate-002:predict", json: prompt, token: nil), status: 403)
        decode(
            M.ErrorResponse.self,
            engine.send("POST", "/v1beta/models/imagen-3.0-generate-002:predict", json: ["instances": []], token: nil, headers: key), status: 400)
        decode(M.ErrorResponse.self, engine.send("POST", "/v1beta/models/unknown:predict", json: prompt, token: nil, headers: key), status: 404)
        for status in [500, 503] {
            try forcing(engine, "predict", status: status, session: "s\(status)")
            decode(
                M.ErrorResponse.self,
                engine.send("POST", "/v1beta/models/imagen-3.0-generate-002:predict", json: prompt, token: nil, session: "s\(status)", headers: key),
                status: status)
        }
        for _ in 0..<5 {
            _ = engine.send("POST", "/v1beta/models/imagen-3.0-generate-002:predict", json: prompt, token: nil, session: "quota", headers: key)
        }
        let limited = engine.send("POST", "/v1beta/models/imagen-3.0-generate-002:predict", json: prompt, token: nil, session: "quota", headers: key)
        decode(M.ErrorResponse.self, limited, status: 429)
        #expect(limited.header("retry-after") != nil)
    }

    @Test func eknetworkDemo() throws {
        typealias M = EKNetworkModels
        let engine = try engine("eknetwork-demo.yaml")
        let tokens = try #require(
            decode(
                M.TokenResponse.self,
                engine.send("POST", "/v1/auth/sign-in", json: ["email": "user@example.com", "password": "password"], token: nil), status: 200))
        let refreshed = try #require(
            decode(
                M.TokenResponse.self, engine.send("POST", "/v1/auth/refresh", json: ["refreshToken": .string(tokens.refreshToken)], token: nil),
                status: 200))
        let token = refreshed.accessToken
        #expect(decode(M.Profile.self, engine.send("GET", "/v1/profile", token: token), status: 200)?.email == "user@example.com")
        let multipart =
            "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\nPNG\r\n--b\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHi\r\n--b--\r\n"
        let upload = engine.send(
            "POST", "/v1/uploads", token: token, headers: [(name: "Content-Type", value: "multipart/form-data; boundary=b")],
            body: Array(multipart.utf8))
        #expect(decode(M.UploadResponse.self, upload, status: 201)?.files.first?.size == 3)
        let form = engine.send(
            "POST", "/v1/feedback", token: nil, headers: [(name: "Content-Type", value: "application/x-www-form-urlencoded")],
            body: Array("name=A&email=a%40b.co&message=Hi".utf8))
        #expect(decode(M.FeedbackResponse.self, form, status: 200)?.rating == nil)
        let agent = "App/1.0 (com.example.app; build:1; iOS 17.0) EKNetwork/1.0.0"
        #expect(
            decode(M.ClientInfo.self, engine.send("GET", "/v1/client-info", token: nil, headers: [(name: "User-Agent", value: agent)]), status: 200)?
                .valid == true)
        _ = engine.send("GET", "/v1/flaky", token: nil)
        _ = engine.send("GET", "/v1/flaky", token: nil)
        decode(M.FlakyResponse.self, engine.send("GET", "/v1/flaky", token: nil), status: 200)

        // Status-only and empty responses: nothing to decode but the status.
        let job = engine.send("POST", "/v1/jobs", token: token)
        #expect(job.status == 202 && job.body.isEmpty && job.header("location") != nil)
        #expect(engine.send("GET", "/v1/heartbeat", token: nil).body.isEmpty)

        for (method, target, json, tokenValue, status) in [
            ("POST", "/v1/auth/sign-in", (["email": "user@example.com", "password": "nope"] as JSON), nil as String?, 401),
            ("POST", "/v1/auth/sign-in", (["email": "not-an-email", "password": "x"] as JSON), nil, 400),
            ("POST", "/v1/auth/refresh", (["refreshToken": .string(tokens.refreshToken)] as JSON), nil, 401),
            ("GET", "/v1/profile", nil, nil, 401),
            ("POST", "/v1/feedback", nil, nil, 415),
        ] as [(String, String, JSON?, String?, Int)] where status != 415 {
            decode(M.ErrorResponse.self, engine.send(method, target, json: json, token: tokenValue), status: status)
        }
        decode(M.ErrorResponse.self, engine.send("GET", "/v1/client-info", token: nil, headers: [(name: "User-Agent", value: "curl/8")]), status: 400)
        decode(M.ErrorResponse.self, engine.send("GET", "/v1/flaky", token: nil), status: 503)
        decode(M.BusinessErrorResponse.self, engine.send("POST", "/v1/payments", json: ["amount": 1], token: token), status: 409)
        #expect(engine.send("DELETE", "/v1/auth/session", token: token).status == 204)
        clock.advance(seconds: 16 * 60)
        decode(M.ErrorResponse.self, engine.send("GET", "/v1/profile", token: tokens.accessToken), status: 401)
    }

    @Test func cleveroo() throws {
        typealias M = CleverooModels
        let engine = try engine("cleveroo.yaml")
        let decoder = M.decoder
        let session = try #require(
            decode(
                M.MentalMathSession.self,
                engine.send("POST", "/api/mental-math/sessions/start", json: ["childId": "child123", "difficulty": "hard", "questionCount": 3]),
                status: 200, with: decoder))
        let question = try #require(
            decode(M.MathQuestion.self, engine.send("GET", "/api/mental-math/sessions/\(session.id)/question"), status: 200, with: decoder))
        #expect(question.difficulty == M.MathQuestion.Difficulty.hard)
        let answer = decode(
            M.SubmitAnswerResponse.self,
            engine.send(
                "POST", "/api/mental-math/sessions/submit-answer",
                json: [
                    "sessionId": .string(session.id), "questionId": .string(question.id), "answer": .int(question.correctAnswer), "timeSpent": 4.5,
                ]), status: 200, with: decoder)
        #expect(answer?.pointsEarned == 20)
        let ended = decode(
            M.MentalMathSession.self, engine.send("POST", "/api/mental-math/sessions/end", json: ["sessionId": .string(session.id)]), status: 200,
            with: decoder)
        #expect(ended?.isCompleted == true && ended?.questions.count == 1)
        let progress = decode(M.MentalMathProgress.self, engine.send("GET", "/api/mental-math/progress/child123"), status: 200, with: decoder)
        #expect(progress?.accuracyPercentage == 100)
        for period in ["daily", "weekly", "monthly"] {
            decode(M.MentalMathReport.self, engine.send("GET", "/api/mental-math/reports/child123?period=\(period)"), status: 200, with: decoder)
        }
        decode(M.MentalMathReport.self, engine.send("GET", "/api/mental-math/reports/child456?period=daily"), status: 200, with: decoder)

        let games = try #require(decode([M.AIGame].self, engine.send("GET", "/api/ai-games"), status: 200, with: decoder))
        #expect(games.count == 3)
        decode([M.AIGame].self, engine.send("GET", "/api/ai-games?gameType=memory&difficulty=medium"), status: 200, with: decoder)
        decode(M.AIGame.self, engine.send("GET", "/api/ai-games/game-story-builder"), status: 200, with: decoder)
        let generated = try #require(
            decode(
                M.AIGame.self,
                engine.send(
                    "POST", "/api/ai-games/generate",
                    json: ["childId": "child123", "gameType": "logic", "difficulty": "hard", "ageRange": ["min": 8, "max": 12]]), status: 200,
                with: decoder))
        let gameSession = try #require(
            decode(
                M.AIGameSession.self,
                engine.send("POST", "/api/ai-games/sessions/start", json: ["gameId": .string(generated.id), "childId": "child123"]), status: 200,
                with: decoder))
        let challenge = try #require(generated.content.levels.first?.challenges.first)
        let result = decode(
            M.SubmitChallengeResponse.self,
            engine.send(
                "POST", "/api/ai-games/sessions/submit-challenge",
                json: [
                    "sessionId": .string(gameSession.id), "challengeId": .string(challenge.id), "answer": .string(challenge.correctAnswer),
                    "timeSpent": 3,
                ]), status: 200, with: decoder)
        #expect(result?.nextChallenge?.id == generated.content.levels.first?.challenges.last?.id)
        #expect(
            engine.send(
                "POST", "/api/ai-games/sessions/track-event",
                json: ["sessionId": .string(gameSession.id), "eventType": "hintRequested", "data": ["challenge": .string(challenge.id)]]
            ).status == 204)
        let finished = decode(M.AIGameSession.self, engine.send("POST", "/api/ai-games/sessions/\(gameSession.id)/end"), status: 200, with: decoder)
        #expect(finished?.events.first?.eventType == .hintRequested)
        let gameProgress = decode(M.AIGameProgress.self, engine.send("GET", "/api/ai-games/progress/child123"), status: 200, with: decoder)
        #expect(gameProgress?.completionRate == 100)
        #expect(gameProgress?.favoriteGameTypes == [.logic])
        let assessments = decode([M.TraitAssessment].self, engine.send("GET", "/api/ai-games/assessments/child123"), status: 200, with: decoder)
        #expect(assessments?.first { $0.traitId == "logical-thinking" }?.level == .advanced)
        decode(M.AIGameProgress.self, engine.send("GET", "/api/ai-games/progress/child456"), status: 200, with: decoder)

        for (method, target, json, status) in [
            ("GET", "/api/mental-math/sessions/mm-x/question", nil, 404),
            ("GET", "/api/mental-math/sessions/\(session.id)/question", nil, 409),
            ("POST", "/api/mental-math/sessions/start", (["childId": "child123", "difficulty": "extreme"] as JSON), 400),
            ("GET", "/api/ai-games/none", nil, 404),
            ("GET", "/api/ai-games/progress/nobody", nil, 404),
        ] as [(String, String, JSON?, Int)] {
            decode(M.ErrorResponse.self, engine.send(method, target, json: json), status: status, with: decoder)
        }
        decode(M.ErrorResponse.self, engine.send("GET", "/api/ai-games", token: nil), status: 401, with: decoder)
        for status in [500, 503] {
            try forcing(engine, "start-math-session", status: status, session: "f\(status)")
            decode(
                M.ErrorResponse.self,
                engine.send("POST", "/api/mental-math/sessions/start", json: ["childId": "child123", "difficulty": "easy"], session: "f\(status)"),
                status: status, with: decoder)
        }
        for _ in 0..<3 {
            _ = engine.send(
                "POST", "/api/ai-games/generate",
                json: ["childId": "child123", "gameType": "math", "difficulty": "easy", "ageRange": ["min": 5, "max": 6]], session: "quota")
        }
        decode(
            M.ErrorResponse.self,
            engine.send(
                "POST", "/api/ai-games/generate",
                json: ["childId": "child123", "gameType": "math", "difficulty": "easy", "ageRange": ["min": 5, "max": 6]], session: "quota"),
            status: 429, with: decoder)
    }
}
