import DoppelCore
import DoppelTestSupport
import Testing

@Suite("Tales contract through the engine")
struct TalesContractTests {
    let clock = TestClock("2025-03-14T10:00:00Z")
    let engine: MockEngine

    init() throws {
        let clock = self.clock
        engine = MockEngine(contract: try ContractLoader.load(file: contractPath("tales.yaml")), clock: { clock.now })
    }

    func createChild(session: String? = nil, name: String = "Эмма") -> MockResponse {
        engine.send(
            "POST", "/api/v1/children", json: ["name": .string(name), "age_category": "5-7", "gender": "female", "interests": ["феи"]],
            session: session)
    }

    func generate(childID: String, session: String? = nil) -> MockResponse {
        engine.send("POST", "/api/v1/stories/generate", json: ["language": "ru", "child_id": .string(childID)], session: session)
    }

    @Test func monthlyLimitWalk() throws {
        let child = createChild()
        #expect(child.status == 200)
        let childID = try #require(child.json?["id"]?.stringValue)
        for _ in 1...5 {
            let story = generate(childID: childID)
            #expect(story.status == 200)
            #expect(story.json?["child"]?["name"] == "Эмма")
            #expect(story.json?["title"] == "Эмма и волшебный сад")
        }
        let refused = generate(childID: childID)
        #expect(refused.status == 402)
        let body = try #require(refused.json)
        #expect(body["detail"] == "Monthly story limit exceeded. You have used 5/5 stories this month.")
        #expect(body["error_code"] == "MONTHLY_LIMIT_EXCEEDED")
        #expect(body["limit_info"] == ["current_plan": "free", "monthly_limit": 5, "stories_used": 5, "reset_date": "2025-04-01T00:00:00Z"])

        let subscription = try #require(engine.send("GET", "/api/v1/users/subscription").json)
        #expect(subscription["limits"]?["stories_used"] == 5)
        #expect(subscription["limits"]?["stories_remaining"] == 0)
        #expect(subscription["limits"]?["child_profiles_count"] == 1)

        let purchase = engine.send("POST", "/api/v1/subscription/purchase?plan_tier=premium&billing_cycle=monthly&payment_method=apple_pay")
        #expect(purchase.status == 200)
        #expect(purchase.json?["message"] == "Successfully upgraded to premium plan")
        #expect(generate(childID: childID).status == 200)
        let after = try #require(engine.send("GET", "/api/v1/users/subscription").json)
        #expect(after["limits"]?["monthly_stories"] == -1)
        #expect(after["subscription"]?["plan"] == "premium")
    }

    @Test func usageResetsInTheNextMonth() throws {
        let childID = try #require(createChild().json?["id"]?.stringValue)
        for _ in 1...5 { #expect(generate(childID: childID).status == 200) }
        #expect(generate(childID: childID).status == 402)
        clock.advance(seconds: 31 * 86400)
        #expect(generate(childID: childID).status == 200)
        #expect(engine.send("GET", "/api/v1/users/subscription").json?["limits"]?["stories_used"] == 1)
    }

    @Test func childProfileLimit() {
        #expect(createChild(name: "A").status == 200)
        #expect(createChild(name: "B").status == 200)
        let third = createChild(name: "C")
        #expect(third.status == 402)
        #expect(third.json == ["detail": "Child profile limit exceeded for your free plan. Maximum 2 child profiles allowed."])
    }

    @Test func documentedErrors() {
        let unauthenticated = engine.send("GET", "/api/v1/users/subscription", token: nil)
        #expect(unauthenticated.status == 401)
        #expect(unauthenticated.json == ["detail": "Not authenticated"])

        let badAge = engine.send(
            "POST", "/api/v1/children", json: ["name": "Эмма", "age_category": "9-12", "gender": "female", "interests": ["феи"]])
        #expect(badAge.status == 400)
        #expect(badAge.json == ["detail": "Invalid age_category: 9-12"])

        let unknownChild = generate(childID: "123e4567-e89b-12d3-a456-426614174000")
        #expect(unknownChild.status == 404)
        #expect(unknownChild.json == ["detail": "Child with ID 123e4567-e89b-12d3-a456-426614174000 not found"])

        let heroless = engine.send(
            "POST", "/api/v1/stories/generate",
            json: ["language": "ru", "child_id": "123e4567-e89b-12d3-a456-426614174000", "story_type": "combined"])
        #expect(heroless.status == 400)
        #expect(heroless.json == ["detail": "Hero ID is required for combined stories"])

        let badTier = engine.send("POST", "/api/v1/subscription/purchase?plan_tier=gold&billing_cycle=monthly&payment_method=card")
        #expect(badTier.status == 400)
        #expect(badTier.json == ["detail": "Invalid plan tier: gold"])
    }

    @Test func sessionsKeepSeparateCounts() throws {
        let a = try #require(createChild(session: "a").json?["id"]?.stringValue)
        for _ in 1...5 { #expect(generate(childID: a, session: "a").status == 200) }
        #expect(generate(childID: a, session: "a").status == 402)
        // Session b has no children and no usage of its own.
        #expect(generate(childID: a, session: "b").status == 404)
        let b = try #require(createChild(session: "b").json?["id"]?.stringValue)
        #expect(generate(childID: b, session: "b").status == 200)
        #expect(engine.send("GET", "/api/v1/users/subscription", session: "b").json?["limits"]?["stories_used"] == 1)
    }

    @Test func plansMarkTheCurrentOne() throws {
        let plans = try #require(engine.send("GET", "/api/v1/subscription/plans").json)
        #expect(plans["current_plan"] == "free")
        #expect(plans["plans"]?.arrayValue?.map { $0["is_current"] } == [true, false, false])
        #expect(plans["plans"]?.arrayValue?.first?["monthly_price"] == .double(0.0))
        _ = engine.send("POST", "/api/v1/subscription/purchase", json: ["plan_tier": "basic", "billing_cycle": "annual", "payment_method": "card"])
        let after = try #require(engine.send("GET", "/api/v1/subscription/plans").json)
        #expect(after["plans"]?.arrayValue?.map { $0["is_current"] } == [false, true, false])
    }

    @Test func purchaseHistoryFilters() throws {
        _ = engine.send("POST", "/api/v1/subscription/purchase?plan_tier=basic&billing_cycle=monthly&payment_method=apple_pay")
        _ = engine.send("POST", "/api/v1/subscription/purchase?plan_tier=premium&billing_cycle=annual&payment_method=card")
        let all = try #require(engine.send("GET", "/api/v1/subscription/purchases").json)
        #expect(all["total"] == 2)
        #expect(all["transactions"]?.arrayValue?.first?["to_plan"] == "premium")
        #expect(all["transactions"]?.arrayValue?.first?["amount"] == .double(199.99))
        let paged = try #require(engine.send("GET", "/api/v1/subscription/purchases?limit=1&offset=1").json)
        #expect(paged["transactions"]?.arrayValue?.map { $0["to_plan"] } == ["basic"])
        #expect(engine.send("GET", "/api/v1/subscription/purchases?status=refunded").json?["total"] == 0)
        // Every bad request of the purchase gets the document's 400 shape.
        #expect(
            engine.send("POST", "/api/v1/subscription/purchase?plan_tier=basic&payment_method=card").json == ["detail": "billing_cycle is required"])
        #expect(
            engine.send("POST", "/api/v1/subscription/purchase?plan_tier=basic&billing_cycle=monthly").json == [
                "detail": "payment_method is required"
            ])
        let weekly = engine.send("POST", "/api/v1/subscription/purchase?plan_tier=basic&billing_cycle=weekly&payment_method=card")
        #expect(weekly.status == 400)
        #expect(weekly.json == ["detail": "Invalid billing cycle: weekly"])
        let tooMany = engine.send("GET", "/api/v1/subscription/purchases?limit=500")
        #expect(tooMany.status == 400)
        #expect(tooMany.json == ["detail": "1 problem: /query/limit: must be at most 100, got 500"])
    }

    @Test func freeStoriesArePublicAndFiltered() throws {
        let all = engine.send("GET", "/api/v1/free-stories", token: nil)
        #expect(all.status == 200)
        #expect(all.json?.arrayValue?.count == 6)
        let filtered = try #require(engine.send("GET", "/api/v1/free-stories?age_category=5-7&language=ru&limit=10", token: nil).json?.arrayValue)
        #expect(filtered.map { $0["title"] } == ["Приключения в волшебном лесу"])
        #expect(engine.send("GET", "/api/v1/free-stories?limit=1", token: nil).json?.arrayValue?.count == 1)
    }
}
