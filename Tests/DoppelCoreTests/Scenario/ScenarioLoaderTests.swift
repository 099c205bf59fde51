import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

@Suite struct ScenarioLoaderTests {
    let tales = contractPath("tales.yaml")

    @Test func stepsThatCouldNeverPassAreLintErrors() throws {
        let text = """
            contract: \(tales)
            steps:
              - request: GET /api/v1/free-storys
                expect: { status: 200 }
              - request: DELETE /api/v1/free-stories
              - name: a 404 on purpose is fine
                request: GET /api/v1/nowhere
                expect: { status: 404 }
              - request: GET /api/v1/free-stories
                expect:
                  body: [ { id: { $type: uuid } }, { id: { $type: [string, nul] } } ]
            """
        do {
            _ = try ScenarioLoader.load(text: text, file: "s.yaml")
            Issue.record("loaded")
        } catch {
            #expect(
                error.diagnostics.map(\.description) == [
                    "s.yaml:3:14: error: no endpoint of the contract serves GET /api/v1/free-storys (the nearest is list-free-stories: GET /api/v1/free-stories)",
                    "s.yaml:5:14: error: no endpoint of the contract takes DELETE /api/v1/free-stories; it takes GET, HEAD",
                    "s.yaml:11:30: error: unknown $type 'uuid': a JSON type (string, integer, number, boolean, object, array, null); a format is checked with $regex",
                    "s.yaml:11:64: error: unknown $type 'nul' (did you mean 'null'?): a JSON type (string, integer, number, boolean, object, array, null)",
                ])
        }
    }

    @Test func aNumberExpectedOfAHeaderIsItsText() throws {
        let scenario = try ScenarioLoader.load(
            text: """
                contract: \(tales)
                steps:
                  - request: GET /api/v1/free-stories
                    expect: { headers: { X-Count: 9, X-Flag: true } }
                """, file: "s.yaml")
        let headers = scenario.steps.first?.expectation.headers.map { ($0.0, $0.1.constantValue) }
        #expect(headers?.map(\.0) == ["X-Count", "X-Flag"])
        #expect(headers?.map(\.1) == ["9", "true"])
    }

    @Test func reportsEveryProblemAgainstTheContract() throws {
        let text = """
            contract: \(tales)
            given:
              state: { stories_usd: 4, stories_used: four }
              clock: tomorrow
            overrides:
              - { endpoint: generate-stroy, status: 500 }
              - { endpoint: generate-story, status: 418 }
              - { endpoint: purchase, call: 0, fault: explode }
            steps:
              - request: FETCH /x
              - request: GET /api/v1/free-stories
                expect: { status: 200, body: { $lenght: 6 } }
                capture:
                  first: body[0].id
              - request: "GET /api/v1/x/{{ frist }}"
              - clock: { advance: soon }
            """
        do {
            _ = try ScenarioLoader.load(text: text, file: "s.yaml")
            Issue.record("loaded")
        } catch {
            #expect(
                error.diagnostics.map(\.description) == [
                    "s.yaml:3:12: error: the contract's state has no 'stories_usd' (did you mean 'stories_used'?)",
                    "s.yaml:3:42: error: counter 'stories_used' must be given an integer",
                    "s.yaml:4:10: error: clock must be an ISO 8601 date like 2025-01-01T00:00:00Z, or a mapping of set, advance, freeze",
                    "s.yaml:6:17: error: the contract has no endpoint 'generate-stroy' (did you mean 'generate-story'?)",
                    "s.yaml:7:41: error: endpoint 'generate-story' documents no 418 response; it has 400, 404, 402, 200, 500",
                    "s.yaml:8:33: error: 'call' counts from 1",
                    "s.yaml:8:43: error: unknown fault 'explode'; faults are connection_reset, empty_reply, truncated_body, malformed_json, no_answer",
                    "s.yaml:10:14: error: 'request' must be 'METHOD /path', like 'POST /api/v1/children'",
                    "s.yaml:12:36: error: unknown matcher '$lenght' (did you mean '$length'?)",
                    "s.yaml:15:32: error: unknown name 'frist' (did you mean 'first'?)",
                    "s.yaml:16:12: error: 'advance' must be a duration like 60s, 31d or 1mo",
                ])
        }
    }

    @Test func givenCollectionsAreKeyedAndOverridesResolved() throws {
        let scenario = try ScenarioLoader.load(
            text: """
                contract: \(tales)
                given:
                  clock: "2025-01-15T10:00:00Z"
                  state:
                    children: [ { id: c1, name: Эмма } ]
                overrides:
                  - { endpoint: generate-story, call: 2, status: 500, delay: 1s }
                steps:
                  - request: GET /api/v1/free-stories
                """, file: "ok.yaml")
        #expect(scenario.name == "ok")
        #expect(scenario.given.state.first?.1 == ["c1": ["id": "c1", "name": "Эмма"]])
        #expect(scenario.given.clock == ClockChange(set: UTCCalendar.parse("2025-01-15T10:00:00Z"), freeze: true))
        #expect(scenario.overrides.first?.response?.name == "generation-failed")
        #expect(scenario.overrides.first?.applies(toCall: 2) == true)
        #expect(scenario.overrides.first?.applies(toCall: 1) == false)
        #expect(scenario.setup["overrides"] != nil)
    }

    @Test func overridesForceTheNthCallOnly() throws {
        let contract = try ContractLoader.load(file: tales)
        let scenario = try ScenarioLoader.load(
            text: """
                contract: \(tales)
                overrides:
                  - { endpoint: list-free-stories, call: 2, status: 200, fault: connection_reset }
                  - { endpoint: list-plans, response: { status: 503, body: { detail: down } } }
                """, file: "o.yaml", contract: contract)
        let engine = MockEngine(contract: contract)
        engine.sessions.start("o", scenario: scenario)
        #expect(engine.decision("GET", "/api/v1/free-stories", session: "o").delivery.kind == .whole)
        #expect(engine.decision("GET", "/api/v1/free-stories", session: "o").delivery.kind == .fault(.connectionReset))
        #expect(engine.decision("GET", "/api/v1/free-stories", session: "o").delivery.kind == .whole)
        #expect(engine.send("GET", "/api/v1/subscription/plans", session: "o").json == ["detail": "down"])
        #expect(engine.send("GET", "/api/v1/subscription/plans", session: "other").status == 200)
        // Auth still comes first.
        #expect(engine.send("GET", "/api/v1/subscription/plans", token: nil, session: "o").status == 401)
    }

    @Test func bodyMatcherSaysWhatDiffers() {
        let actual: JSON = ["id": "txn_1", "items": [1, 2], "nested": ["a": 1, "b": 2], "n": 5]
        #expect(
            BodyMatcher.differences(
                expected: ["id": ["$regex": "^txn_"], "items": ["$length": 2], "nested": ["a": 1], "n": ["$type": "integer"]], actual: actual
            ).isEmpty)
        #expect(
            BodyMatcher.differences(
                expected: ["id": ["$type": "integer"], "items": [1, 3], "gone": ["$absent": true], "missing": ["$present": true], "n": 5.0],
                actual: actual) == [
                    #"body.id: expected a integer, got string "txn_1""#,
                    "body.items[1]: expected 3, got 2",
                    "body.missing: expected present, it is missing",
                ])
        #expect(BodyMatcher.differences(expected: ["nested": ["a": 1, "c": 3]], actual: actual) == ["body.nested.c: expected 3, but it is missing"])
    }

    @Test func theJournalStaysWithinItsBoundUnderLoad() async throws {
        let engine = MockEngine(contract: try loadContract("doppel: 1\nendpoints:\n  e: { request: GET /e, responses: [ { status: 204 } ] }"))
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for _ in 0..<25_000 { _ = engine.send("GET", "/e", session: "w\(worker)") }
                }
            }
        }
        #expect(engine.journal.count == 10_000)
        let entries = engine.journal.entries
        #expect(entries.count == 10_000)
        #expect(entries.last?.sequence == 100_000)
        #expect(entries.first?.sequence == 90_001)
        #expect(engine.journal.tally.count { $0.endpointID == "e" && $0.status == 204 } == 100_000)
    }
}
