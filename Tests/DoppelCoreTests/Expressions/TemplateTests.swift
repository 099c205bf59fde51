import DoppelCore
import Testing

@Suite struct TemplateTests {
    let context = EvaluationContext(roots: ["state": ["used": 5, "plan": "free", "list": [1, 2]]], now: 0)

    @Test func wholeValuePlaceholderKeepsItsType() throws {
        #expect(try TemplateParser.compile("{{ state.used }}").render(in: context) == .int(5))
        #expect(try TemplateParser.compile("{{state.list}}").render(in: context) == [1, 2])
        #expect(try TemplateParser.compile("{{ state.missing }}").render(in: context) == .null)
    }

    @Test func placeholdersInsideTextAreInterpolated() throws {
        #expect(try TemplateParser.compile("used {{ state.used }}/{{ 5 }} on {{ state.plan }}").render(in: context) == "used 5/5 on free")
        #expect(try TemplateParser.compile("list {{ state.list }}").render(in: context) == "list [1,2]")
    }

    @Test func textWithoutPlaceholdersIsConstant() throws {
        #expect(try TemplateParser.compile("plain {text}").constantValue == "plain {text}")
    }

    @Test func unclosedPlaceholderIsAnError() {
        #expect(throws: TemplateParser.Failure.self) { try TemplateParser.compile("a {{ b") }
    }

    @Test func objectTemplatesKeepOrderAndAKeyOnce() throws {
        let used = try TemplateParser.compile("{{ state.used }}")
        let template = ObjectTemplate([("b", .constant(1)), ("a", used), ("b", .constant("last")), ("c", .constant(nil))])
        #expect(template.pairs.map(\.0) == ["b", "a", "c"])
        let rendered = try ValueTemplate.object(template).render(in: context)
        #expect(rendered.objectValue?.keys == ["b", "a", "c"])
        #expect(rendered == ["b": "last", "a": 5, "c": nil])
        // A rendered object is an object like any other: it can change, and the template does not.
        var changed = try #require(rendered.objectValue)
        changed["d"] = 1
        changed["a"] = nil
        #expect(changed.keys == ["b", "c", "d"])
        #expect(try ValueTemplate.object(template).render(in: context).objectValue?.keys == ["b", "a", "c"])
    }
}
