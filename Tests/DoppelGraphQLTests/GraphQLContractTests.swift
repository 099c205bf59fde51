import DoppelCore
import DoppelOpenAPI
import DoppelTestSupport
import Foundation
import Testing

@testable import DoppelGraphQL

/// The `graphql:` section read, and its mistakes reported where they are; the door's stages without sockets.
@Suite("GraphQL contracts")
struct GraphQLContractTests {
    /// The diagnostics of a contract written in a folder of its own, with `files` beside it.
    static func lint(_ text: String, files: [String: String] = [:]) throws -> [String] {
        try withTemporaryContract(text, files: files) { file in
            let folder = String(file.dropLast("contract.yaml".count))
            return ContractDocument.lint(file: file).map { $0.description.replacingOccurrences(of: folder, with: "") }
        }
    }

    @Test("Persisted queries are bounded in count and bytes; the least recently used give way")
    func persistedQueriesAreBounded() {
        let kept = PersistedQueries()
        for n in 0...PersistedQueries.maximumCount { kept.keep("{ a\(n) }", hash: "h\(n)") }
        #expect(kept.query(for: "h0") == nil, "the oldest gave way to the 1,001st")
        #expect(kept.query(for: "h1") == "{ a1 }")
        // Past the byte bound, the least recently used give way until the rest fit: every small one (h1, used
        // just now, after the others), then the oldest big ones. 8 MiB hold 83 queries of 100,000 bytes.
        let big = String(repeating: "x", count: 100_000)
        for n in 0..<90 { kept.keep(big, hash: "big\(n)") }
        #expect(kept.query(for: "h1") == nil)
        #expect((0..<90).filter { kept.query(for: "big\($0)") != nil } == Array(7..<90))
    }

    @Test("The bundled contract and its schema file lint clean")
    func bundledContractIsClean() {
        #expect(ContractDocument.lint(file: contractPath("tales-graphql.yaml")).isEmpty)
    }

    @Test("An SDL mistake is reported at its line and column, in the schema file or in the contract")
    func schemaMistakesArePlaced() throws {
        let inFile = try Self.lint(
            """
            doppel: 1
            graphql:
              schema: api.graphql
            """, files: ["api.graphql": "type Query {\n  me: Nope\n}\n"])
        #expect(inFile.count == 1)
        #expect(inFile.first?.hasPrefix("api.graphql:2:7: error: GraphQL schema: Unknown type \"Nope\"") == true, "\(inFile)")

        let inline = try Self.lint(
            """
            doppel: 1
            graphql:
              schema: |
                type Query {
                  me: String
                  oops(: Int): String
                }
            """)
        #expect(inline.first?.hasPrefix("contract.yaml:6:12: error: GraphQL schema: Syntax Error: Expected Name, found :") == true, "\(inline)")
    }

    @Test("Every mistake in the section is reported with its place")
    func sectionMistakes() throws {
        let problems = try Self.lint(
            """
            doppel: 1
            graphql:
              path: graphql
              schema: "type Query { me: String }"
              colour: blue
              max_depth: 0
              resolvers:
                me: { value: 1 }
                Query.me: { value: 1, error: { message: x } }
                Query.other: {}
            """)
        #expect(problems.contains { $0.hasPrefix("contract.yaml:3:9: error: 'path' of 'graphql' must be a path like /graphql") })
        #expect(problems.contains { $0.hasPrefix("contract.yaml:5:3: error:") && $0.contains("colour") }, "\(problems)")

        let more = try Self.lint(
            """
            doppel: 1
            graphql:
              schema: "type Query { me: String }"
              max_depth: 0
              resolvers:
                me: { value: 1 }
                Query.me: { value: 1, error: { message: x } }
                Query.other: {}
                Query.me2: { responses: [{ when: "true" }] }
            """)
        #expect(more.contains { $0.hasPrefix("contract.yaml:4:14: error: 'max_depth' of 'graphql' must be from 1 to 1000") }, "\(more)")
        #expect(more.contains { $0.hasPrefix("contract.yaml:6:5: error: a resolver is named 'Type.field'") })
        #expect(more.contains { $0.contains("has a 'value' or an 'error', not both") })
        #expect(more.contains { $0.hasPrefix("contract.yaml:8:5: error: resolver 'Query.other' needs a 'value', an 'error' or 'responses'") })
        #expect(more.contains { $0.contains("a response of resolver 'Query.me2' needs a 'value', an 'error' or 'skip: true'") })
    }

    @Test("An endpoint of the user's with an id the section makes (its operation's or a resolver's) is an error at that endpoint")
    func sectionIDsAreReserved() throws {
        let problems = try Self.lint(
            """
            doppel: 1
            endpoints:
              graphql:
                request: GET /other
                responses: [{ status: 200 }]
              Query.me:
                request: GET /me
                responses: [{ status: 200 }]
            graphql:
              schema: "type Query { me: String }"
              resolvers:
                Query.me: { value: hi }
            """)
        #expect(problems.contains { $0.hasPrefix("contract.yaml:4:5: error: endpoint id 'graphql' is taken by the contract's 'graphql:' section") })
        #expect(problems.contains { $0.hasPrefix("contract.yaml:7:5: error: endpoint id 'Query.me' is taken") }, "\(problems)")
    }

    @Test("A resolver naming no field of the schema is an error that lists the fields")
    func unknownResolver() throws {
        let problems = try Self.lint(
            """
            doppel: 1
            graphql:
              schema: "type Query { me: String, you: Int }"
              resolvers:
                Query.them: { value: 1 }
                Nothing.me: { value: 1 }
            """)
        #expect(problems.contains { $0.contains("resolver 'Query.them' names no field of Query; its fields are me, you") }, "\(problems)")
        #expect(problems.contains { $0.contains("resolver 'Nothing.me' names no object type of the schema; its object types are Query") })
    }

    @Test("A schema file outside the contract's folder is refused")
    func schemaFileStaysInFolder() throws {
        let problems = try Self.lint(
            """
            doppel: 1
            graphql:
              schema: ../../etc/secret.graphql
            """)
        #expect(problems.contains { $0.contains("schema file '../../etc/secret.graphql' resolves outside the contract's folder") }, "\(problems)")
    }

    @Test(
        "doppel import of SDL writes a contract that serves the same schema, text for text",
        arguments: [
            try! String(contentsOfFile: contractPath("tales.graphql"), encoding: .utf8), "  type Query {\n    hi: String\n  }\n",
            "type Query { a: Int }", "\"\"\"\n  Indented inside a block string\n\"\"\"\ntype Query {\n\ta: Int\n}\n",
        ])
    func importedSDLServesTheSameSchema(sdl: String) throws {
        let text = try SchemaImport.contract(fromSDL: sdl, file: "api.graphql").get()
        let contract = try ContractLoader.load(text: text, file: "imported.yaml")
        let read = try #require(contract.graphql?.schema)
        #expect(read.trimmingCharacters(in: .newlines) == sdl.trimmingCharacters(in: .newlines))
        #expect(GraphQLService.problems(of: contract).isEmpty)
    }

    @Test("doppel import of a broken schema says where, and writes nothing")
    func importedBrokenSDL() {
        guard case .failure(let problems) = SchemaImport.contract(fromSDL: "type Query {\n  a: Nope\n}\n", file: "api.graphql") else {
            Issue.record("a broken schema was imported")
            return
        }
        #expect(problems.diagnostics.map(\.description) == [#"api.graphql:2:6: error: GraphQL schema: Unknown type "Nope"."#])
    }

    @Test("A scenario's GraphQL step is the POST a client sends; its mistakes are reported where they are")
    func scenarioSteps() throws {
        let contract = try ContractLoader.load(file: contractPath("tales-graphql.yaml"))
        let scenario = try ScenarioLoader.load(
            text: "steps:\n  - graphql: \"query Q($id: ID!) { story(id: $id) { id } }\"\n    variables: { id: story_1 }\n    operation_name: Q\n",
            file: "s.yaml", contract: contract)
        guard case .request(let call) = scenario.steps[0].action, case .json(let body) = call.body else {
            Issue.record("a GraphQL step is a request with a JSON body")
            return
        }
        #expect(call.method == "POST" && call.path.constantValue == "/graphql")
        #expect(call.headers.contains { $0.0 == "Accept" && $0.1.constantValue == "application/graphql-response+json" })
        #expect(
            try body.render(in: EvaluationContext(now: 0)) == [
                "query": "query Q($id: ID!) { story(id: $id) { id } }", "operationName": "Q", "variables": ["id": "story_1"],
            ])
        #expect(scenario.steps.map(\.name) == ["GraphQL Q"])

        let tales = try ContractLoader.load(file: contractPath("tales.yaml"))
        #expect(
            scenarioProblems("steps:\n  - graphql: \"{ me { plan } }\"\n", contract: tales).contains {
                $0.hasPrefix("2:14:") && $0.contains("no 'graphql:' section")
            })
        #expect(scenarioProblems("steps:\n  - graphql: \"{ me { plan } }\"\n    json: {}\n", contract: contract).contains { $0.hasPrefix("3:11:") })
        #expect(
            scenarioProblems("steps:\n  - graphql: \"{ me { plan } }\"\n    variables: [1]\n", contract: contract).contains {
                $0.contains("'variables' must be a mapping")
            })
    }

    @Test(
        "Accept picks the form",
        arguments: [
            (nil, GraphQLService.Form.json), ("application/graphql-response+json", .graphQLResponse), ("application/json", .json),
            ("application/json, application/graphql-response+json", .graphQLResponse),
            ("application/graphql-response+json;q=0.5, application/json", .json), ("*/*", .json),
            ("application/graphql-response+json;q=0, application/json", .json),
        ] as [(String?, GraphQLService.Form)])
    func acceptPicksTheForm(accept: String?, form: GraphQLService.Form) {
        #expect(GraphQLService.form(accepting: accept) == form)
    }

    @Test("Accept naming nothing this server writes gets no form (406)")
    func unacceptable() {
        #expect(GraphQLService.form(accepting: "text/html") == nil)
        #expect(GraphQLService.form(accepting: "application/json;q=0") == nil)
    }
}
