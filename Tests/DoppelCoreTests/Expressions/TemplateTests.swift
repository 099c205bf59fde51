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
        #expect(throws: TemplateParser.Failure.self) { try TemplateParser.compile("{{ 'open }}") }
        #expect(throws: TemplateParser.Failure.self) { try TemplateParser.compile("{{ {a: 1 }}") }
    }

    /// A placeholder ends at the first `}}` outside its own strings and
    /// braces, so object literals may end one.
    @Test func objectLiteralsAndQuotedBracesStayInsideThePlaceholder() throws {
        #expect(try TemplateParser.compile("{{ {data: {n: state.used}} }}").render(in: context) == ["data": ["n": 5]])
        #expect(try TemplateParser.compile("{{ [{a: {b: 1}}] }}").render(in: context) == [["a": ["b": 1]]])
        #expect(try TemplateParser.compile("{{ '}}' + \"{{\" }}").render(in: context) == "}}{{")
        #expect(try TemplateParser.compile("{{ 'it\\'s }}' }}").render(in: context) == "it's }}")
        #expect(try TemplateParser.compile("x {{ state.used }}} y").render(in: context) == "x 5} y")
        #expect(try TemplateParser.compile("{{ state.used }}{{ state.plan }}").render(in: context) == "5free")
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
