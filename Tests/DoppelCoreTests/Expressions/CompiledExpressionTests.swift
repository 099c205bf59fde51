import Foundation
import Testing

@testable import DoppelCore

/// What is resolved once, when a contract loads, so that serving a request
/// neither hashes names nor dispatches on text nor compiles patterns.
@Suite struct CompiledExpressionTests {
    @Test func builtInNamesAreSlotsAndOtherNamesAreNot() throws {
        guard case .member(.name("body", let slot, _), "id", _) = try Expression.parse("body.id").root else {
            Issue.record("body.id is not a member of a name")
            return
        }
        #expect(slot == .body)
        guard case .name("story", let other, _) = try Expression.parse("story").root else {
            Issue.record("story is not a name")
            return
        }
        #expect(other == nil)
        for slot in Roots.Slot.allCases { #expect(Roots.Slot(name: slot.name) == slot) }
    }

    @Test func rootsKeepSlotsAndBindingsApart() throws {
        var roots: Roots = ["body": ["a": 1], "story": "x"]
        roots[.body] = ["a": 2]
        roots[bound: "story"] = "y"
        roots["retry_after"] = 30
        let context = EvaluationContext(roots: roots, now: 0)
        #expect(try Expression.parse("[body.a, story, retry_after]").evaluate(in: context) == [2, "y", 30])
        roots[bound: "story"] = nil
        #expect(roots["story"] == nil)
        #expect(roots[.retryAfter] == 30)
    }

    @Test func callsNameTheirFunctionAndLiteralPatternsAreCompiled() throws {
        guard case .call(let call) = try Expression.parse("matches(body.code, '^[A-Z]{3}$')").root else {
            Issue.record("not a call")
            return
        }
        #expect(call.function == .matches)
        #expect(call.pattern != nil)
        let context = EvaluationContext(roots: ["body": ["code": "EUR"]], now: 0)
        #expect(try Expression.parse("matches(body.code, '^[A-Z]{3}$')").test(in: context))
        #expect(try !Expression.parse("matches(body.code, '^[a-z]+$')").test(in: context))
        // A pattern that only the request supplies is compiled when it arrives.
        #expect(try Expression.parse("matches(body.code, body.code)").test(in: context))
        guard case .call(let unknown) = try Expression.parse("lenght(body)").root else {
            Issue.record("not a call")
            return
        }
        #expect(unknown.function == nil)
        for function in Function.allCases { #expect(Function(rawValue: function.rawValue) == function) }
    }

    @Test func unusableLiteralPatternsAndBuiltInLetNamesAreLoadErrors() {
        let text = """
            doppel: 1
            endpoints:
              codes:
                request: GET /codes
                let:
                  retry_after: 5
                responses:
                  - when: matches(query.code, '(a)\\\\1')
                    status: 400
                  - status: 200
            """
        let messages = diagnostics(of: text, file: "c.yaml").map(\.description)
        #expect(messages.count == 2)
        #expect(messages.contains { $0.hasPrefix("c.yaml:6:7: error: 'retry_after' is a built-in name") })
        #expect(messages.contains { $0.hasPrefix("c.yaml:8:15: error: matches(): unusable pattern") })
    }

    @Test func objectsKeepTheirOrderAndCompareWithoutIt() {
        var object = JSONObject([("b", 1), ("a", 2), ("c", 3)])
        #expect(object.keys == ["b", "a", "c"])
        object["a"] = nil
        object["d"] = 4
        #expect(object.keys == ["b", "c", "d"])
        #expect(JSONWriter.encode(.object(object)) == Array(#"{"b":1,"c":3,"d":4}"#.utf8))
        let reordered = JSONObject([("d", 4), ("c", 3), ("b", 1)])
        #expect(object == reordered)
        #expect(object.hashValue == reordered.hashValue)
        #expect(object != JSONObject([("b", 1), ("c", 3), ("d", 5)]))
        #expect(object.take("c") == 3)
        #expect(object.keys == ["b", "c", "d"])
        #expect(object["c"] == .null)
        // Past 15 members the object hashes its keys; order and lookups hold.
        let large = JSONObject((0..<1000).map { ("k\($0)", JSON.int($0)) })
        #expect(large.keys.prefix(3) == ["k0", "k1", "k2"])
        #expect(large["k777"] == 777)
    }

    @Test func instantsAreWrittenAsTheyParse() {
        for text in ["0001-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "2024-02-29T23:59:59Z", "9999-12-31T23:59:59Z"] {
            #expect(UTCCalendar.format(epoch: UTCCalendar.parse(text)!) == text)
        }
        #expect(UTCCalendar.format(epoch: 1_700_000_000.9) == "2023-11-14T22:13:20Z")
    }

    @Test func uuidsAreRandomVersionFour() throws {
        let pattern = try LinearRegex("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        let ids = (0..<1000).map { _ in Evaluator.randomUUID() }
        #expect(ids.allSatisfy(pattern.matches))
        #expect(Set(ids).count == ids.count)
    }

    @Test func uuidsFromManyThreadsAtOnceAreAllDistinctAndSpread() async {
        let batches = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<8 { group.addTask { (0..<5_000).map { _ in Evaluator.randomUUID() } } }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(batches.count == 40_000)
        #expect(Set(batches).count == 40_000)
        // Every hex digit position varies (a counter shown as it is would not):
        // each of the 30 random positions of the first 1,000 takes at least 8 values.
        let sample = batches.prefix(1_000).map { Array($0.utf8) }
        for position in [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 15, 16, 17, 20, 21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35] {
            #expect(Set(sample.map { $0[position] }).count >= 8, "position \(position)")
        }
    }
}
