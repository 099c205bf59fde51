import DoppelCore
import Foundation
import Testing

@testable import DoppelGraphQL

/// `doppel verify`'s GraphQL parts without sockets: the probes built from a
/// schema, the checks of an answer against a probe, and a schema read back
/// from introspection.
@Suite("GraphQL verify stages")
struct GraphQLVerifyStageTests {
    static let sdl = """
        schema { query: Root, mutation: Change }
        scalar Instant
        interface Node { id: ID! }
        type Book implements Node { id: ID! title: String! pages: Int published: Instant kind: Kind! author: Person }
        type Person implements Node { id: ID! name: String! }
        union Found = Book | Person
        enum Kind { NOVEL POEM }
        input Filter { kind: Kind!, minimum: Int = 1, words: [String!] }
        type Root {
          book(id: ID!): Book
          books(filter: Filter!): [Book!]!
          search(text: String!): [Found!]!
          node(id: ID!): Node
          count(limit: Int = 10): Int!
        }
        type Change { rename(id: ID!, title: String!): Book }
        """

    static func definition(_ schema: String = sdl) -> GraphQLDefinition {
        GraphQLDefinition(
            path: "/graphql", schema: schema, schemaOrigin: SourceLocation(file: "t.graphql", line: 1, column: 1), schemaIsFile: true,
            resolvers: [], maxDepth: 15, maxFields: 2_000)
    }

    @Test("A probe per query field: required arguments made from their types, leaves two levels deep, valid against the schema")
    func probesAreValidOperations() throws {
        let probes = GraphQLProbe.probes(for: Self.definition(), seed: 7)
        #expect(probes.map(\.field) == ["Root.book", "Root.books", "Root.search", "Root.node", "Root.count"])
        let books = try #require(probes.first { $0.name == "books" })
        #expect(books.query == "query Verify_books($filter: Filter!) { books(filter: $filter) { id title pages published kind author { id name } } }")
        #expect(books.variables == ["filter": ["kind": "NOVEL"]])
        #expect(!books.unknownID)
        let book = try #require(probes.first { $0.name == "book" })
        #expect(book.unknownID)
        #expect(book.variables["id"]?.stringValue?.hasPrefix("doppel-verify-unknown-") == true)
        #expect(probes.first { $0.name == "search" }?.query == "query Verify_search($text: String!) { search(text: $text) { __typename } }")
        #expect(probes.first { $0.name == "count" }?.query == "query Verify_count { count }", "an argument with a default is left out")
        // Every probe passes the library's validation of the schema.
        let service = GraphQLService()
        for probe in probes {
            let parameters = try #require(
                try? Parameters.read(payload: JSONObject([("query", .string(probe.query)), ("variables", probe.variables)])).get())
            if case .failure(let failure) = service.prepare(parameters, definition: Self.definition()) {
                Issue.record("\(probe.field): \(failure.errors.map { $0.message })")
            }
        }
        // Seeded: the same run sends the same ids.
        #expect(GraphQLProbe.probes(for: Self.definition(), seed: 7).map(\.variables) == probes.map(\.variables))
    }

    /// One answer and the problems a probe finds in it.
    struct Answer: Sendable, CustomTestStringConvertible {
        let name: String
        let body: JSON
        let problems: [String]
        var testDescription: String { name }
    }

    static let answers: [Answer] = [
        Answer(
            name: "as selected",
            body: ["data": ["books": [["id": "b1", "title": "T", "pages": nil, "published": 5, "kind": "POEM", "author": nil]]]],
            problems: []),
        Answer(name: "an empty list", body: ["data": ["books": []]], problems: []),
        Answer(
            name: "a number as text, a number past 32 bits, an unknown enum value",
            body: ["data": ["books": [["id": "b1", "title": 3, "pages": 4_294_967_296, "published": nil, "kind": "EPIC", "author": nil]]]],
            problems: [
                "books.0.title is 3, not a value of String", "books.0.pages is 4294967296, not a value of Int",
                "books.0.kind is \"EPIC\", not a value of the enum Kind",
            ]),
        Answer(
            name: "a member missing, one not selected",
            body: ["data": ["books": [["id": "b1", "title": "T", "pages": 1, "kind": "POEM", "author": nil, "isbn": "x"]]]],
            problems: ["books.0 has 'isbn', which was not selected", "books.0.published is missing"]),
        Answer(name: "a non-null list null without an error", body: ["data": ["books": nil]], problems: ["books is null, but its type is non-null"]),
        Answer(
            name: "a non-null null explained by an error below it",
            body: ["data": nil, "errors": [["message": "no", "path": ["books", 0, "title"]]]], problems: []),
        Answer(name: "data null without an error", body: ["data": nil], problems: ["data is null without an error that has a path"]),
        Answer(
            name: "an error without a message, an extra member",
            body: ["data": ["books": []], "errors": [["path": ["books"]]], "debug": true],
            problems: ["the answer has the member 'debug', which a GraphQL response does not", "errors[0] has no message"]),
        Answer(name: "not an object", body: ["data": ["books": ["x"]]], problems: ["books.0 is not an object (Book)"]),
    ]

    @Test("An answer is held to the GraphQL response format and to the probe's selection", arguments: answers)
    func answersAreChecked(_ answer: Answer) throws {
        let probe = try #require(GraphQLProbe.probes(for: Self.definition(), seed: 1).first { $0.name == "books" })
        #expect(probe.problems(in: answer.body).sorted() == answer.problems.sorted())
    }

    @Test("An abstract field's __typename must be one of its types; outcomes are read from data and errors")
    func abstractAndOutcomes() throws {
        let probes = GraphQLProbe.probes(for: Self.definition(), seed: 1)
        let search = try #require(probes.first { $0.name == "search" })
        #expect(search.problems(in: ["data": ["search": [["__typename": "Book"], ["__typename": "Person"]]]]).isEmpty)
        #expect(
            search.problems(in: ["data": ["search": [["__typename": "Shelf"]]]]) == [
                "search.0.__typename is not one of Found's types (Book, Person)"
            ])
        let node = try #require(probes.first { $0.name == "node" })
        #expect(node.outcome(in: ["data": ["node": nil]]) == .null)
        #expect(node.outcome(in: ["data": ["node": ["__typename": "Book"]]]) == .value)
        #expect(
            node.outcome(in: ["data": ["node": nil], "errors": [["message": "gone", "path": ["node"], "extensions": ["code": "NOT_FOUND"]]]])
                == .error(code: "NOT_FOUND", message: "gone"))
        #expect(node.outcome(in: ["errors": [["message": "bad"]]]) == nil)
    }

    @Test("A schema read back from introspection is the schema served: no change between them")
    func introspectionRoundTrip() async throws {
        let definition = Self.definition()
        struct NoCalls: ContractCaller {
            func send(_ request: RecordedRequest) async -> MockResponse {
                // The operation is admitted; the schema has no resolvers.
                MockResponse(status: 200, headers: [], body: JSONWriter.encode(["ok": true]), endpointID: "graphql")
            }
        }
        let request = RecordedRequest(
            method: "POST", target: "/graphql", headers: [(name: "content-type", value: "application/json")],
            body: JSONWriter.encode(["query": .string(IntrospectedSchema.query)]))
        let answer = await GraphQLService().answer(request, definition: definition, caller: NoCalls())
        #expect(answer.status == 200)
        let sdl = try IntrospectedSchema.sdl(from: try JSONReader.parse(answer.body)).get()
        #expect(sdl.contains("schema {\n  query: Root\n  mutation: Change\n}"))
        #expect(sdl.contains("input Filter {\n  kind: Kind!\n  minimum: Int = 1\n  words: [String!]\n}"))
        #expect(SchemaDiff.changes(from: Self.sdl, to: sdl) == [])
        // A reply that is not an introspection result says why.
        guard case .failure(let reason) = IntrospectedSchema.sdl(from: ["data": ["me": 1]]) else {
            Issue.record("read a schema from nothing")
            return
        }
        #expect(reason.message == "the answer has no data.__schema.types")
    }
}
