import DoppelCore
import Foundation
import Testing

/// The smaller hardening items: inputs that used to pass, echo nonsense or trap.
@Suite struct StrictInputTests {
    @Test func aJSONKeyPastYAMLsLimitIsNamedAtItsPlace() throws {
        let key = String(repeating: "k", count: 1_100)
        let text =
            "{\n  \"doppel\": 1,\n  \"endpoints\": { \"a\": { \"request\": \"GET /a\", \"responses\": [ { \"body\": { \"\(key)\": 1 } } ] } }\n}\n"
        let found = diagnostics(of: text, file: "long.json")
        #expect(
            found.map(\.description) == [
                "long.json:3:73: error: a mapping key of 1100 characters: Doppel reads JSON as YAML, whose parser takes keys of up to 1,024 characters; shorten the key, or write the document as YAML with the key after '? '"
            ])
        // Written as the message says, it loads.
        let contract = try loadContract(
            "doppel: 1\nendpoints:\n  a:\n    request: GET /a\n    responses:\n      - body:\n          ? \"\(key)\"\n          : 1\n")
        #expect(contract.endpoints.count == 1)
    }

    @Test func numbersOutOfRangeAreMalformedNotInfinity() throws {
        #expect(throws: JSONReader.SyntaxError.self) { try JSONReader.parse("1e400") }
        #expect(throws: JSONReader.SyntaxError.self) { try JSONReader.parse("[-1e999]") }
        #expect(try JSONReader.parse("1e300") == .double(1e300))
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                endpoints:
                  e: { request: POST /e, body: { schema: { type: object, properties: { n: { type: integer } } } }, responses: [ { status: 200, body: "{{ body.n }}" } ] }
                """))
        #expect(engine.send("POST", "/e", body: Array(#"{"n": 1e400}"#.utf8), contentType: "application/json").status == 400)
    }

    @Test(arguments: [
        ("2025-02-30", false), ("2024-02-29", true), ("2025-02-29", false), ("2100-02-29", false), ("2000-02-29", true),
        ("2025-04-31", false), ("2025-12-31", true),
    ])
    func datesCheckTheDaysOfTheirMonth(_ text: String, _ valid: Bool) {
        #expect((UTCCalendar.parse(text) != nil) == valid)
    }

    @Test func offsetsStayWithinADay() {
        #expect(UTCCalendar.parse("2025-01-01T10:00:00+99:99") == nil)
        #expect(UTCCalendar.parse("2025-01-01T10:00:00+24:00") == nil)
        #expect(UTCCalendar.parse("2025-01-01T10:00:00+23:59") != nil)
        #expect(UTCCalendar.parse("2025-01-01T10:00:00-05:30") == UTCCalendar.parse("2025-01-01T15:30:00Z"))
    }

    @Test func encodedSlashesStayInAPathParameter() throws {
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                endpoints:
                  file:
                    request: GET /files/{name}
                    responses: [ { status: 200, body: { name: "{{ path.name }}" } } ]
                """))
        let answer = engine.send("GET", "/files/a%2Fb%20c")
        #expect(answer.status == 200)
        #expect(try JSONReader.parse(answer.body)["name"] == "a%2Fb c")
    }

    @Test func endpointsUnderTheAdminPrefixAreLintErrors() {
        let found = diagnostics(
            of: """
                doppel: 1
                endpoints:
                  shadowed: { request: GET /__doppel/health, responses: [ { status: 200 } ] }
                """
        ).map(\.description)
        #expect(
            found == [
                "test.yaml:3:28: error: path /__doppel/health is under /__doppel/, which the admin API answers; this endpoint could never be reached"
            ])
    }

    @Test func durationsStayWithinAThousandYears() {
        #expect(CalendarDuration.parse(Array(repeating: "1000000000000w", count: 30).joined()) == nil)
        #expect(CalendarDuration.parse("999y") != nil)
        #expect(CalendarDuration.parse("1h30m")?.seconds == 5400)
    }

    @Test func aProblemWithAnEmptyTypeStillRenders() {
        let response = Problem(status: 400, type: "", title: "t", detail: "d").response()
        #expect(response.status == 400)
        #expect(response.responseName == "doppel:problem")
    }

    @Test func uniqueIsLinearAndKeepsLooseEquality() throws {
        let expression = try Expression.parse("unique(body)")
        var items: [JSON] = (0..<130_000).map { .int($0 % 1000) }
        items.append(.double(5))
        let result = try expression.evaluate(in: EvaluationContext(roots: ["body": .array(items)], now: 0))
        #expect(result.arrayValue?.count == 1000)
    }

    @Test func templatesOverRequestInputStopAtTheBudget() throws {
        let expression = try Expression.parse("join(map(body.a, body.s), '')")
        let body: JSON = ["a": .array(Array(repeating: .int(0), count: 100_000)), "s": .string(String(repeating: "x", count: 300_000))]
        do {
            _ = try expression.evaluate(in: EvaluationContext(roots: ["body": body], now: 0))
            Issue.record("the evaluation should have stopped at the budget")
        } catch {
            #expect(error.exceedsBudget)
        }
        // Sharing one string many times is cheap to hold, but not to write out: the renderer refuses it.
        let shared = try Expression.parse("map(body.a, body.s)").evaluate(in: EvaluationContext(roots: ["body": body], now: 0))
        #expect(shared.exceedsEncodedSize(Expression.maximumBuild))
    }

    @Test func repeatedMultipartNamesGatherIntoOneList() throws {
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                endpoints:
                  up: { request: POST /up, responses: [ { status: 200, body: { files: "{{ len(body.f) }}", note: "{{ body.note }}" } } ] }
                """))
        var body = ""
        for i in 0..<14_500 { body += "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"\(i).txt\"\r\n\r\nx\r\n" }
        body += "--b\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n--b--\r\n"
        let answer = engine.send("POST", "/up", body: Array(body.utf8), contentType: "multipart/form-data; boundary=b")
        #expect(answer.status == 200)
        #expect(try JSONReader.parse(answer.body) == ["files": 14_500, "note": "hi"])
    }
}

@Suite struct SessionStateBoundTests {
    static let contract = """
        doppel: 1
        state:
          collections: { notes: {} }
          variables: { log: "" }
        endpoints:
          add:
            request: POST /notes
            responses: [ { status: 201, effects: [ "state.notes[uuid()] = body" ] } ]
          append:
            request: POST /log
            responses: [ { status: 200, effects: [ "state.log += body.text" ] } ]
          clear:
            request: DELETE /notes
            responses: [ { status: 204, effects: [ "state.notes = {}" ] } ]
        """

    @Test func effectsCannotGrowASessionPastItsBudget() throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        let record: JSON = ["text": .string(String(repeating: "n", count: 500_000))]
        var statuses: [Int: Int] = [:]
        for _ in 0..<40 { statuses[engine.send("POST", "/notes", json: record, session: "s").status, default: 0] += 1 }
        // 16 MiB holds 33 records of half a megabyte; the rest are refused and change nothing.
        #expect(statuses == [201: 33, 413: 7])
        #expect(engine.sessions.existing("s")?.snapshot["notes"]?.objectValue?.count == 33)
        // The refusal names the effect once and says what to do.
        let detail = engine.send("POST", "/notes", json: record, session: "s").json?["detail"]?.stringValue ?? ""
        #expect(detail.components(separatedBy: "effect '").count == 2, "\(detail)")
        #expect(detail.contains("would grow the session's state past 16 MiB; reset the session"), "\(detail)")
        // Removing records frees the budget again.
        #expect(engine.send("DELETE", "/notes", session: "s").status == 204)
        #expect(engine.send("POST", "/notes", json: record, session: "s").status == 201)
        // Another session has a budget of its own.
        #expect(engine.send("POST", "/notes", json: record, session: "t").status == 201)
    }

    @Test func aGrowingStringIsBoundedToo() throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        let chunk: JSON = ["text": .string(String(repeating: "x", count: 1 << 20))]
        var refused = false
        for _ in 0..<20 where engine.send("POST", "/log", json: chunk, session: "s").status == 413 { refused = true }
        #expect(refused)
        #expect((engine.sessions.existing("s")?.snapshot["log"]?.stringValue?.utf8.count ?? 0) <= SessionData.maximumStateSize)
    }
}

@Suite struct StateBudgetTests {
    @Test func fullSessionsAreEvictedLeastRecentlyUsedFirstWhenTheTotalIsOver() throws {
        let engine = MockEngine(contract: try loadContract(SessionStateBoundTests.contract), stateLimit: 4 << 20)
        let record: JSON = ["text": .string(String(repeating: "n", count: 1 << 20))]
        for session in ["a", "b", "c", "d", "e", "f"] {
            #expect(engine.send("POST", "/notes", json: record, session: session).status == 201)
        }
        // Each request checks the total first: the oldest full sessions made room for the newer ones.
        _ = engine.send("POST", "/log", json: ["text": "x"], session: "g")
        #expect(engine.sessions.budget.used <= 4 << 20)
        #expect(engine.sessions.evictions.forState >= 2)
        #expect(engine.sessions.existing("a") == nil)
        #expect(engine.sessions.existing("f") != nil)
        // Reset and eviction give the budget back exactly.
        engine.sessions.resetAll()
        #expect(engine.sessions.budget.used == 0)
    }
}

@Suite struct MediaTypeTests {
    @Test(arguments: [
        ("application/json", true), ("Application/JSON; charset=utf-8", true), (" application/json ;x=y", true),
        ("application/problem+json", true), ("application/vnd.api+JSON", true), ("text/json", false),
        ("application/jsonx", false), ("xapplication/json", false), ("application/x-www-form-urlencoded", false), ("", false),
    ])
    func jsonIsRecognisedWhateverTheCaseAndParameters(_ type: String, _ expected: Bool) {
        #expect(MediaTypes.isJSON(type) == expected)
    }
}

@Suite struct ValidationPointerTests {
    @Test func pointersAreWrittenForFailuresOnlyAndEscapeTheirKeys() {
        let schema = Schema(
            types: ["object"],
            properties: [
                (
                    "list",
                    Schema(
                        types: ["array"],
                        items: Schema(
                            types: ["object"], required: ["id"], additionalProperties: .some(Schema(types: ["integer"]))))
                )
            ])
        let value: JSON = ["list": [["id": 1], ["a/b~c": "x"]]]
        let issues = SchemaValidator(registry: [:]).validate(value, against: schema, at: "/body")
        #expect(issues.map(\.description) == ["/body/list/1/id: is required", "/body/list/1/a~1b~0c: expected integer, got string"])
    }
}
