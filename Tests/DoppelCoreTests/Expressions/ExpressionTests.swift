import DoppelCore
import Testing

@Suite struct ExpressionTests {
    let context = EvaluationContext(
        roots: [
            "body": ["story_type": "combined", "hero_id": nil, "n": 4, "tags": ["a", "b"]],
            "state": ["plan": "free", "stories_used": 5, "children": ["c1": ["id": "c1", "name": "Эмма"]]],
            "data": ["plans": ["free": ["monthly_stories": 5], "premium": ["monthly_stories": -1]]],
            "items": [["s": "done", "v": 3], ["s": "open", "v": 1], ["s": "done", "v": 2]],
        ], now: UTCCalendar.parse("2025-01-31T12:00:00Z")!)

    func eval(_ text: String) throws -> JSON {
        try Expression.parse(text).evaluate(in: context)
    }

    static let cases: [(String, JSON)] = [
        ("body.story_type in ['hero', 'combined'] and body.hero_id == null", true),
        ("data.plans[state.plan].monthly_stories != -1 and state.stories_used >= data.plans[state.plan].monthly_stories", true),
        ("not (1 < 2) or 2 + 3 * 4 == 14", true),
        ("body.missing.deeper ?? 'fallback'", "fallback"),
        ("'c1' in state.children", true),
        ("'zz' not in state.children", true),
        ("state.children['c1'].name", "Эмма"),
        ("7 / 2", 3.5),
        ("8 / 2", 4),
        ("7 % 4", 3),
        ("'txn_' + 12", "txn_12"),
        ("body.tags[-1]", "b"),
        ("len(body.tags) + len('héllo')", 7),
        ("byte_len('héllo')", 6),
        ("byte_len('ёж') - len('ёж')", 2),
        ("byte_len(body.missing)", 0),
        ("round(2.345, 2)", 2.35),
        ("round(2.5)", 3),
        ("count(items, it.s == 'done')", 2),
        ("map(filter(items, it.v > 1), it.v)", [3, 2]),
        ("sum(map(items, it.v))", 6),
        ("sort_by(items, it.v)[0].v", 1),
        ("slice([1, 2, 3, 4], 1, 2)", [2, 3]),
        // A position past the end, however large, is an empty slice (a query's `offset=1000000001`), never an error.
        ("slice([1, 2, 3, 4], 1000000001, 10)", []),
        ("slice([1, 2, 3, 4], 1e300)", []),
        ("slice([1, 2, 3, 4], 2, 1e18)", [3, 4]),
        ("slice([1, 2, 3, 4], -5, 2)", [1, 2]),
        ("merge({a: 1}, {b: 2})", ["a": 1, "b": 2]),
        ("if(body.n > 3, 'big', 1 / 0)", "big"),
        ("month_start(now(), 1)", "2025-02-01T00:00:00Z"),
        ("date_add(now(), '1mo')", "2025-02-28T12:00:00Z"),
        ("date_add('2025-01-01T00:00:00Z', '1h30m')", "2025-01-01T01:30:00Z"),
        ("matches('abc-123', '^[a-z]+-[0-9]+$')", true),
        ("int('42') + number('0.5')", 42.5),
        ("map(items, i => count(items, j => j.v > i.v))", [0, 2, 1]),
        ("map_values({a: 1, b: 2}, key + '=' + it)", ["a": "a=1", "b": "b=2"]),
        ("tally(map(items, it.s))", ["done": 2, "open": 1]),
        ("unique([1, 2, 1, 1.0])", [1, 2]),
        ("flatten([[1], [2, 3], 4])", [1, 2, 3, 4]),
        ("find_index(items, it.s == 'open')", 1),
        ("find_index(items, it.s == 'gone')", nil),
        ("map(sort_by(items, it.s), it.v)", [3, 2, 1]),
    ]

    @Test(arguments: cases)
    func evaluates(text: String, expected: JSON) throws {
        #expect(try eval(text) == expected)
    }

    @Test func shortCircuitsAndCoalescesOnlyNull() throws {
        #expect(try eval("false and (1 / 0 == 1)") == false)
        #expect(try eval("0 ?? 5") == 0)
        #expect(try eval("1 == 1.0") == true)
    }

    @Test(arguments: [
        ("1 +", "expected a value but found end of expression", 3),
        ("a = 1", "'=' is not an operator here; compare with '=='", 2),
        ("'open", "unterminated string", 0),
        ("1 < 2 < 3", "comparisons do not chain; join them with 'and'", 6),
        ("f(1,", "expected a value but found end of expression", 4),
        ("a b", "unexpected 'b' after the expression", 2),
    ])
    func syntaxErrorsPointAtTheProblem(text: String, message: String, offset: Int) {
        do {
            _ = try Expression.parse(text)
            Issue.record("'\(text)' parsed")
        } catch {
            #expect(error.message == message)
            #expect(error.offset == offset)
        }
    }

    @Test func typeErrorsThrowAtRunTime() {
        #expect(throws: EvaluationError.self) { try eval("'a' - 1") }
        #expect(throws: EvaluationError.self) { try eval("1 / 0") }
        #expect(throws: EvaluationError.self) { try eval("date('not a date')") }
    }

    @Test func lambdasOnlyWhereAListFunctionBindsThem() throws {
        let checker = ExpressionChecker(roots: ["items"], stateNames: [], dataNames: [])
        #expect(
            checker.check(try Expression.parse("filter(items, x => x.v > 1 and y > 0)")).map(\.message) == ["unknown name 'y' (did you mean 'x'?)"])
        #expect(
            checker.check(try Expression.parse("len(x => 1)")).map(\.message) == [
                "'x => ...' can only be the second argument of filter(), map() and the other list functions"
            ])
    }

    /// Request data can reach any function; none of these may crash the server.
    @Test(arguments: [
        "int(1e300 * 1e300)", "int(-9999999999999999999.0)", "round(1, 1e300)", "round(2.5, -400)", "slice([1], 1e300)",
        "slice([1], 0, -1e300)", "date(1e30)", "date(-1e30)", "epoch('9999-12-31T23:59:59Z') + 1", "date_add(now(), '999999999999y')",
        "date_add(now(), '1000y')", "date_add('9999-12-31T00:00:00Z', '1mo')", "month_start(now(), 1e12)", "abs(-9223372036854775807 - 1)",
        "-(-9223372036854775807 - 1)", "(-9223372036854775807 - 1) / -1", "(-9223372036854775807 - 1) % -1",
        "9223372036854775807 * 9223372036854775807",
        "9223372036854775807 + 1", "floor(1e300)", "ceil(-1e300)", "len(1)", "byte_len([1])", "map(1, it)", "min([])", "sum(['a', 1])",
    ])
    func extremeInputsEvaluateOrFailCleanly(text: String) throws {
        let expression = try Expression.parse(text)
        do {
            let value = try expression.evaluate(in: context)
            _ = JSONWriter.encode(value)
        } catch {
            #expect(!error.message.isEmpty)
        }
    }

    @Test func uuidIsFreshEachTime() throws {
        let a = try eval("uuid()")
        let b = try eval("uuid()")
        #expect(a != b)
        #expect(a.stringValue?.count == 36)
    }

    @Test func checkerNamesUnknownRootsStateAndFunctions() throws {
        let checker = ExpressionChecker(roots: ["body", "state", "data"], stateNames: ["plan", "stories_used"], dataNames: ["plans"])
        let problems = checker.check(try Expression.parse("stae.plan == 1 or state.stories_usd > lenn(body) or len(1, 2) or it"))
        #expect(
            problems.map(\.message) == [
                "unknown name 'stae' (did you mean 'state'?)",
                "state has no 'stories_usd' (did you mean 'stories_used'?)",
                "unknown function 'lenn' (did you mean 'len'?)",
                "len() takes 1 argument, not 2",
                "'it' is only defined inside filter(), map() and the other list functions",
            ])
        #expect(problems.map(\.offset) == [0, 24, 38, 52, 65])
    }
}
