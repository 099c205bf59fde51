import DoppelCore
import DoppelOpenAPI
import Foundation
import Testing

@testable import DoppelGraphQL

/// `doppel diff` of two GraphQL schemas: each kind of change, breaking or compatible.
@Suite("GraphQL schema diff")
struct SchemaDiffTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let kind: String
        let breaking: Bool
        let place: String
        let old: String
        let new: String
        var testDescription: String { kind + (breaking ? " (breaking)" : "") }
    }

    static let base = """
        type Query { story(id: ID!): Story, stories: [Story!]! }
        type Story implements Node { id: ID!, title: String!, language: Language!, kind: Kind }
        interface Node { id: ID! }
        union Kind = Story
        enum Language { EN RU }
        enum Sort { NEW OLD }
        input Filter { title: String, sort: Sort }
        type Mutation { add(filter: Filter): Story }
        """

    static func edit(_ replacements: [(String, String)]) -> String {
        replacements.reduce(base) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
    }

    static let cases: [Case] = [
        Case(kind: "graphql-type-removed", breaking: true, place: "Sort", old: base, new: edit([("enum Sort { NEW OLD }", ""), ("sort: Sort", "")])),
        Case(kind: "graphql-type-added", breaking: false, place: "Extra", old: base, new: base + "\ntype Extra { a: Int }"),
        Case(
            kind: "graphql-type-kind-changed", breaking: true, place: "Filter", old: base,
            new: edit([("input Filter { title: String, sort: Sort }", "scalar Filter")])),
        Case(kind: "graphql-field-removed", breaking: true, place: "Story.title", old: base, new: edit([("title: String!, language", "language")])),
        Case(
            kind: "graphql-field-added", breaking: false, place: "Story.words", old: base, new: edit([("kind: Kind }", "kind: Kind, words: Int }")])),
        Case(kind: "graphql-field-type-changed", breaking: true, place: "Story.title", old: base, new: edit([("title: String!", "title: String")])),
        Case(kind: "graphql-argument-removed", breaking: true, place: "Query.story(id)", old: base, new: edit([("story(id: ID!)", "story")])),
        Case(
            kind: "graphql-argument-added-required", breaking: true, place: "Query.story(lang)", old: base,
            new: edit([("story(id: ID!)", "story(id: ID!, lang: Language!)")])),
        Case(
            kind: "graphql-argument-added", breaking: false, place: "Query.story(lang)", old: base,
            new: edit([("story(id: ID!)", "story(id: ID!, lang: Language)")])),
        Case(
            kind: "graphql-argument-type-changed", breaking: true, place: "Mutation.add(filter)", old: base,
            new: edit([("add(filter: Filter)", "add(filter: Filter!)")])),
        Case(
            kind: "graphql-enum-value-removed", breaking: true, place: "Language", old: base,
            new: edit([("enum Language { EN RU }", "enum Language { EN }")])),
        Case(
            kind: "graphql-enum-value-added", breaking: true, place: "Language", old: base,
            new: edit([("enum Language { EN RU }", "enum Language { EN RU DE }")])),
        Case(
            kind: "graphql-enum-value-added", breaking: false, place: "Sort", old: base,
            new: edit([("enum Sort { NEW OLD }", "enum Sort { NEW OLD TOP }")])),
        Case(
            kind: "graphql-union-member-added", breaking: true, place: "Kind", old: base,
            new: edit([("union Kind = Story", "union Kind = Story | Extra")]) + "\ntype Extra { a: Int }"),
        Case(
            kind: "graphql-union-member-removed", breaking: true, place: "Kind",
            old: edit([("union Kind = Story", "union Kind = Story | Extra")]) + "\ntype Extra { a: Int }", new: base + "\ntype Extra { a: Int }"),
        Case(kind: "graphql-interface-removed", breaking: true, place: "Story", old: base, new: edit([("type Story implements Node", "type Story")])),
        Case(
            kind: "graphql-input-field-removed", breaking: true, place: "Filter.sort", old: base,
            new: edit([("title: String, sort: Sort", "title: String")])),
        Case(
            kind: "graphql-input-field-added-required", breaking: true, place: "Filter.from", old: base,
            new: edit([("sort: Sort }", "sort: Sort, from: Int! }")])),
        Case(
            kind: "graphql-input-field-added", breaking: false, place: "Filter.from", old: base,
            new: edit([("sort: Sort }", "sort: Sort, from: Int = 0 }")])),
        Case(
            kind: "graphql-input-field-type-changed", breaking: true, place: "Filter.title", old: base,
            new: edit([("title: String, sort", "title: Int, sort")])),
    ]

    @Test(arguments: cases)
    func eachKindOfChangeIsToldBreakingOrCompatible(_ change: Case) throws {
        let changes = try #require(SchemaDiff.changes(from: change.old, to: change.new))
        #expect(changes.contains { $0.kind == change.kind && $0.breaking == change.breaking && $0.place == change.place }, "\(changes)")
    }

    @Test("Safe type changes are compatible: an output made non-null, an input made nullable, a list's items made non-null")
    func safeChangesAreNotBreaking() throws {
        let changes = try #require(
            SchemaDiff.changes(
                from: Self.base,
                to: Self.edit([
                    ("story(id: ID!): Story", "story(id: ID): Story!"), ("stories: [Story!]!", "stories: [Story!]!"), ("kind: Kind", "kind: Kind!"),
                ])))
        #expect(changes.isEmpty, "\(changes)")
        #expect(try #require(SchemaDiff.changes(from: Self.base, to: Self.base)).isEmpty)
    }

    @Test("A schema that cannot be built is not compared")
    func brokenSchemasAreNotCompared() {
        #expect(SchemaDiff.changes(from: Self.base, to: "type Query {") == nil)
    }

    @Test("Two contracts' GraphQL schemas are compared by doppel diff, at the section's path")
    func contractsAreCompared() throws {
        func contract(_ sdl: String) throws -> Contract {
            let indented = sdl.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
            return try ContractLoader.load(text: "doppel: 1\ngraphql:\n  schema: |\n\(indented)\n", file: "c.yaml")
        }
        let changes = ContractDiff.changes(from: try contract(Self.base), to: try contract(Self.edit([("title: String!, language", "language")])))
        #expect(changes.map(\.kind) == ["graphql-field-removed"])
        #expect(changes.first?.endpoint == "POST /graphql" && changes.first?.place == "Story.title" && changes.first?.breaking == true)
    }
}
