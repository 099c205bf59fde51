import DoppelTestSupport
import Testing

@testable import DoppelCore

/// Which places of a rendered body come from the session's state, read from
/// the templates (what `doppel verify` compares step by step), and the
/// relations an answer states between its own values.
@Suite struct StateDerivationTests {
    static func place(_ place: StateDerivation.Place, at path: [String]) -> StateDerivation.Place? {
        var current = place
        for key in path {
            guard case .object(let members) = current, let next = members[key] else { return nil }
            current = next
        }
        return current
    }

    static func describe(_ place: StateDerivation.Place?) -> String {
        switch place {
        case nil: "absent"
        case .free?: "free"
        case .derived(let plain)?: plain ? "as it is" : "computed"
        case .object?: "object"
        case .array?: "array"
        }
    }

    @Test func theTalesLimitsAnswerIsReadThroughItsLets() throws {
        let contract = try ContractLoader.load(file: contractPath("tales.yaml"))
        let generate = try #require(contract.endpoint(id: "generate-story"))
        let limit = try #require(generate.responses.first { $0.status == 402 })
        let places = try #require(StateDerivation(endpoint: generate, response: limit).places(of: limit))
        // `used` reads state through `if(...)`; `limits` through `data.plans[state.plan]`.
        #expect(Self.describe(Self.place(places, at: ["limit_info", "stories_used"])) == "as it is")
        #expect(Self.describe(Self.place(places, at: ["limit_info", "monthly_limit"])) == "as it is")
        #expect(Self.describe(Self.place(places, at: ["limit_info", "current_plan"])) == "as it is")
        #expect(Self.describe(Self.place(places, at: ["limit_info", "reset_date"])) == "computed")  // clock's
        // Text written around state values is the mock's wording; a constant is nobody's state.
        #expect(Self.describe(Self.place(places, at: ["detail"])) == "computed")
        #expect(Self.describe(Self.place(places, at: ["error_code"])) == "free")

        let created = try #require(generate.responses.first { $0.status == 200 })
        let story = try #require(StateDerivation(endpoint: generate, response: created).places(of: created))
        #expect(Self.describe(Self.place(story, at: ["id"])) == "free")  // uuid()
        #expect(Self.describe(Self.place(story, at: ["moral"])) == "free")  // the request's
        #expect(Self.describe(Self.place(story, at: ["title"])) == "computed")  // the child's name, in the mock's words
    }

    @Test func namesAndPathsAreReadFromTheSyntaxTree() throws {
        let mapped = try Expression.parse("map(state.children, it.name + suffix)")
        #expect(mapped.rootNames == ["state", "suffix"])
        let lambda = try Expression.parse("filter(values(data.plans), p => p.tier == state.plan)")
        #expect(lambda.rootNames == ["data", "state"])
        #expect(try Expression.parse("state.children[body.child_id].name").isPath)
        #expect(try !Expression.parse("len(state.children)").isPath)
        #expect(try Expression.parse("rate").isName && !Expression.parse("rate.x").isName)
    }

    @Test func aRelationIsCheckedWithTheAnswersOwnValues() throws {
        let contract = try ContractLoader.load(file: contractPath("currency.yaml"))
        let convert = try #require(contract.endpoint(id: "convert"))
        let ok = try #require(convert.responses.last)
        let engine = MockEngine(contract: contract)
        let request = RecordedRequest(method: "GET", path: "/api/convert", query: "amount=100&from=USD&to=EUR", headers: [], body: [])
        func answer(rate: Double, converted: Double) -> JSON {
            .object(
                JSONObject([
                    ("success", .bool(true)), ("amount", .int(100)), ("from", .string("USD")), ("to", .string("EUR")),
                    ("converted_amount", .double(converted)), ("rate", .double(rate)),
                ]))
        }
        // Another rate than the contract's data, the arithmetic right: no problem.
        #expect(engine.relationProblems(of: ok, for: convert, request: request, answer: answer(rate: 0.95, converted: 95)).isEmpty)
        let off = engine.relationProblems(of: ok, for: convert, request: request, answer: answer(rate: 0.95, converted: 96))
        #expect(off == ["/converted_amount: expected 95.0 (round(query.amount * rate, 2), with the answer's own rate 0.95), got 96.0"])
    }

    /// A relation inside a nested object, with the let it reads shown elsewhere in the body.
    @Test func aNestedRelationIsChecked() throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                info: { title: Prices, version: "1" }
                data: { rates: { EUR: 0.9 } }
                endpoints:
                  quote:
                    request: GET /quote
                    query: { required: [amount], properties: { amount: { type: number } } }
                    let:
                      rate: data.rates.EUR
                    responses:
                      - body:
                          meta: { rate: "{{ rate }}" }
                          result: { total: { value: "{{ query.amount * rate }}", currency: EUR } }
                """, file: "prices.yaml")
        let quote = try #require(contract.endpoint(id: "quote"))
        let engine = MockEngine(contract: contract)
        let request = RecordedRequest(method: "GET", path: "/quote", query: "amount=10", headers: [], body: [])
        func answer(rate: Double, value: Double) -> JSON {
            .object(
                JSONObject([
                    ("meta", .object(JSONObject([("rate", .double(rate))]))),
                    ("result", .object(JSONObject([("total", .object(JSONObject([("value", .double(value)), ("currency", "EUR")])))]))),
                ]))
        }
        #expect(engine.relationProblems(of: quote.responses[0], for: quote, request: request, answer: answer(rate: 0.8, value: 8)).isEmpty)
        let off = engine.relationProblems(of: quote.responses[0], for: quote, request: request, answer: answer(rate: 0.8, value: 9))
        #expect(off == ["/result/total/value: expected 8.0 (query.amount * rate, with the answer's own meta.rate 0.8), got 9.0"], "\(off)")
    }
}
