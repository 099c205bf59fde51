import DoppelCore
import DoppelRunner
import DoppelServer
import DoppelTestSupport
import Foundation
import Testing

@testable import DoppelGraphQL

/// The bundled GraphQL contract (contracts/tales-graphql.yaml) over loopback.
@Suite("GraphQL over loopback")
struct GraphQLServingTests {
    static func ask(
        _ client: TestClient, _ query: String, variables: JSON? = nil, session: String, token: String? = "parent",
        accept: String = "application/graphql-response+json"
    ) async throws -> HTTPResult {
        var body: [(String, JSON)] = [("query", .string(query))]
        if let variables { body.append(("variables", variables)) }
        return try await client.send(
            "POST", "/graphql", json: .object(JSONObject(body)), token: token, session: session, headers: ["Accept": accept])
    }

    /// The first of a response's `errors`.
    static func firstError(_ json: JSON?) -> JSON? { json?["errors"]?.arrayValue?.first }

    static func withTales<T: Sendable>(_ body: (DoppelTestServer, TestClient) async throws -> T) async throws -> T {
        try await DoppelTestServer.with(contract: contractPath("tales-graphql.yaml")) { server in
            try await body(server, TestClient(base: server.baseURL, maxConnections: 64))
        }
    }

    static let addChild = #"mutation { createChild(input: {name: "Mia", ageCategory: AGES_4_5}) { id name } }"#
    static let generate = #"mutation { generateStory(input: {childId: "child_1"}) { id title } }"#

    @Test("A mutation's record is read back by a query in its session, and in no other")
    func mutationsStickPerSession() async throws {
        try await Self.withTales { server, client in
            let added = try await Self.ask(client, Self.addChild, session: "a")
            #expect(added.status == 200)
            #expect(added.header("Content-Type")?.hasPrefix("application/graphql-response+json") == true)
            #expect(added.json == ["data": ["createChild": ["id": "child_1", "name": "Mia"]]])
            let story = try await Self.ask(client, Self.generate, session: "a")
            #expect(story.json?["data"]?["generateStory"]?["id"] == "story_1")
            let read = try await Self.ask(
                client, #"query Read($id: ID!) { story(id: $id) { title child { name stories { id } } } }"#, variables: ["id": "story_1"],
                session: "a")
            #expect(
                read.json == [
                    "data": ["story": ["title": "Mia and the Magic Garden", "child": ["name": "Mia", "stories": [["id": "story_1"]]]]]
                ])
            let elsewhere = try await Self.ask(client, #"{ story(id: "story_1") { id } children { id } }"#, session: "b")
            #expect(elsewhere.json == ["data": ["story": nil, "children": []]])

            // Journaled: the operation (named in the query), then each field the contract answered.
            let journal = server.engine.journal.entries.filter { $0.session == "a" }
            #expect(journal.map { $0.endpointID ?? "-" }.prefix(4) == ["graphql", "Mutation.createChild", "graphql", "Mutation.generateStory"])
            #expect(journal.first?.query == "operation=mutation")
            #expect(journal.contains { $0.query == "operation=query%20Read" })
            #expect(journal.first { $0.endpointID == "Mutation.generateStory" }?.changes.contains("stories_used") == true)
        }
    }

    @Test("200 parallel mutations in one session: exactly 5 stories, 195 monthly-limit errors with limit_info")
    func parallelMutationsCountExactly() async throws {
        try await Self.withTales { _, client in
            #expect(try await Self.ask(client, Self.addChild, session: "p").status == 200)
            let answers = try await withThrowingTaskGroup(of: JSON?.self) { group in
                for _ in 0..<200 { group.addTask { try await Self.ask(client, Self.generate, session: "p").json } }
                var all: [JSON?] = []
                for try await answer in group { all.append(answer) }
                return all
            }
            let made = answers.compactMap { $0?["data"]?["generateStory"]?["id"]?.stringValue }
            let refused = answers.filter { Self.firstError($0)?["extensions"]?["code"] == "MONTHLY_LIMIT_EXCEEDED" }
            #expect(Set(made) == Set((1...5).map { "story_\($0)" }))
            #expect(made.count == 5)
            #expect(refused.count == 195)
            #expect(Self.firstError(refused.first ?? nil)?["extensions"]?["limit_info"]?["stories_used"] == 5)
            #expect(Self.firstError(refused.first ?? nil)?["path"] == ["generateStory"])
            let me = try await Self.ask(client, "{ me { subscription { storiesUsed } } }", session: "p")
            #expect(me.json?["data"]?["me"]?["subscription"]?["storiesUsed"] == 5)
        }
    }

    @Test("An answer forced on a field's endpoint is its next answer; one forced on the operation answers the request")
    func forcedAnswers() async throws {
        try await Self.withTales { _, client in
            #expect(try await Self.ask(client, Self.addChild, session: "f").status == 200)
            let forced = try await client.send(
                "POST", "/__doppel/next?session=f", json: ["endpoint": "Mutation.generateStory", "status": 402], token: nil)
            #expect(forced.status == 200)
            let refused = try await Self.ask(client, Self.generate, session: "f")
            #expect(Self.firstError(refused.json)?["extensions"]?["code"] == "MONTHLY_LIMIT_EXCEEDED")
            #expect(refused.status == 200 && refused.json?["data"] == .null, "generateStory is non-null: the error reaches the root, data is null")
            #expect(try await Self.ask(client, Self.generate, session: "f").json?["data"]?["generateStory"]?["id"] == "story_1")

            #expect(
                try await client.send("POST", "/__doppel/next?session=f", json: ["endpoint": "graphql", "status": 401], token: nil).status == 200)
            let whole = try await Self.ask(client, "{ me { plan } }", session: "f")
            #expect(whole.status == 401)
            #expect(Self.firstError(whole.json)?["extensions"]?["code"] == "UNAUTHENTICATED")
        }
    }

    @Test("Prefer picks a documented answer of the resolvers that document it, or of the operation; one nobody documents is 400")
    func preferPicksAnswers() async throws {
        try await Self.withTales { server, client in
            #expect(try await Self.ask(client, Self.addChild, session: "p").status == 200)
            let forced = try await client.send(
                "POST", "/graphql", json: ["query": .string(Self.generate)], token: "parent", session: "p",
                headers: ["Prefer": "example=monthly-limit"])
            #expect(Self.firstError(forced.json)?["extensions"]?["code"] == "MONTHLY_LIMIT_EXCEEDED")
            #expect(Self.firstError(forced.json)?["extensions"]?["limit_info"]?["stories_used"] == 0)
            #expect(server.engine.journal.entries.last { $0.endpointID == "Mutation.generateStory" }?.why?.text.contains("Prefer") == true)
            // Resolvers that do not document it answer as the contract has them: the child is still there.
            let both = try await client.send(
                "POST", "/graphql", json: ["query": "{ children { id } }"], token: "parent", session: "p",
                headers: ["Prefer": "example=monthly-limit"])
            #expect(both.json == ["data": ["children": [["id": "child_1"]]]])
            // The operation's own documented answer (the auth scheme's failure) answers the whole request.
            let refused = try await client.send(
                "POST", "/graphql", json: ["query": "{ me { plan } }"], token: "parent", session: "p", headers: ["Prefer": "code=401"])
            #expect(refused.status == 401)
            #expect(Self.firstError(refused.json)?["extensions"]?["code"] == "UNAUTHENTICATED")
            let unknown = try await client.send(
                "POST", "/graphql", json: ["query": "{ me { plan } }"], token: "parent", session: "p", headers: ["Prefer": "code=418"])
            #expect(unknown.status == 400)
            #expect(Self.firstError(unknown.json)?["message"] == "Prefer: code=418 names a response neither the operation nor any resolver documents")
        }
    }

    @Test("Automatic persisted queries: an unknown hash is PersistedQueryNotFound; sent with its query it is kept, and the hash alone then runs it")
    func persistedQueries() async throws {
        try await Self.withTales { server, client in
            let query = "query Plan { me { plan } }"
            let hash = PersistedQueries.hash(query)
            #expect(hash == "e7974232e49b3a16af998997169536cabf303279f7ed061f7ff67d2eb7c9caf8", "as Python's hashlib has it")
            let extensions: JSON = ["persistedQuery": ["version": 1, "sha256Hash": .string(hash)]]
            let unknown = try await client.send("POST", "/graphql", json: ["extensions": extensions], token: "parent", session: "apq")
            #expect(unknown.status == 200)
            #expect(Self.firstError(unknown.json) == ["message": "PersistedQueryNotFound", "extensions": ["code": "PERSISTED_QUERY_NOT_FOUND"]])
            let sent = try await client.send(
                "POST", "/graphql", json: ["query": .string(query), "extensions": extensions], token: "parent", session: "apq")
            #expect(sent.json == ["data": ["me": ["plan": "FREE"]]])
            // The hash alone now runs it, by GET too (as Apollo's clients send it, for a CDN to cache).
            let encoded = String(decoding: JSONWriter.encode(extensions), as: UTF8.self).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let byHash = try await client.send("GET", "/graphql?operationName=Plan&extensions=" + encoded, token: "parent", session: "apq")
            #expect(byHash.json == ["data": ["me": ["plan": "FREE"]]])
            // A hash that is not the query's, and another version, are refused.
            let mismatched = try await client.send(
                "POST", "/graphql", json: ["query": "{ me { plan } }", "extensions": extensions], token: "parent", session: "apq")
            #expect(mismatched.status == 400 && Self.firstError(mismatched.json)?["message"] == "provided sha does not match query")
            let version = try await client.send(
                "POST", "/graphql", json: ["extensions": ["persistedQuery": ["version": 2, "sha256Hash": .string(hash)]]], token: "parent",
                session: "apq")
            #expect(version.status == 400)
            #expect(
                server.engine.journal.entries.contains {
                    $0.session == "apq" && $0.why?.text.contains("is not known yet") == true
                })
        }
    }

    @Test("Request errors: 400 in the specification's form, 200 in plain JSON; bad requests 400, 405, 406, 413, 415")
    func requestErrors() async throws {
        try await Self.withTales { server, client in
            let invalid = try await Self.ask(client, "{ me { nope } }", session: "e")
            #expect(invalid.status == 400)
            #expect(Self.firstError(invalid.json)?["locations"] == [["line": 1, "column": 8]])
            #expect(invalid.json?["data"] == nil)
            #expect(try await Self.ask(client, "{ me { nope } }", session: "e", accept: "application/json").status == 200)
            let syntax = try await Self.ask(client, "{ me { ", session: "e")
            #expect(syntax.status == 400 && Self.firstError(syntax.json)?["message"]?.stringValue?.contains("Syntax Error") == true)
            let variables = try await Self.ask(client, "query Q($id: ID!) { story(id: $id) { id } }", variables: ["id": ["no"]], session: "e")
            #expect(variables.status == 400, "a variable of the wrong type")
            // Execution never began: no `data` member at all (the library's Map is nil-literal: once it was written `"data": null`).
            #expect(variables.json?.objectValue?.keys.contains("data") == false)
            let unnamed = try await Self.ask(client, "query A { me { plan } } query B { me { plan } }", session: "e")
            #expect(unnamed.status == 400)

            #expect(try await client.send("PUT", "/graphql", json: ["query": "{ me { plan } }"], session: "e").status == 405)
            #expect(try await Self.ask(client, "{ me { plan } }", session: "e", accept: "text/html").status == 406)
            let plain = try await client.send(
                "POST", "/graphql", session: "e", headers: ["Content-Type": "text/plain"], body: Data("{ me { plan } }".utf8))
            #expect(plain.status == 415)
            let notJSON = try await client.send(
                "POST", "/graphql", session: "e", headers: ["Content-Type": "application/json"], body: Data("{ nope".utf8))
            #expect(notJSON.status == 400)
            let huge = try await Self.ask(client, "{ me { plan } }" + String(repeating: " ", count: 100_001), session: "e")
            #expect(huge.status == 413)
            let get = try await client.send("GET", "/graphql?query=%7B%20me%20%7B%20plan%20%7D%20%7D", session: "e")
            #expect(get.status == 200 && get.json == ["data": ["me": ["plan": "FREE"]]])
            let mutation = "mutation { generateStory(input: {childId: \"c\"}) { id } }".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let mutationByGet = try await client.send("GET", "/graphql?query=" + mutation, session: "e")
            #expect(mutationByGet.status == 405 && mutationByGet.header("Allow") == "POST")
            // The server kept serving.
            #expect(try await Self.ask(client, "{ me { plan } }", session: "e").json == ["data": ["me": ["plan": "FREE"]]])

            // Each refusal is journaled under the operation's endpoint with why (and sent status), though the contract never saw it.
            let refusals = server.engine.journal.entries.filter { $0.session == "e" && $0.endpointID == "graphql" && $0.status != 200 }
            #expect(refusals.first?.status == 400)
            #expect(refusals.first?.why?.text.contains("Cannot query field \"nope\" on type \"Me\"") == true, "\(refusals.map(\.why))")
            #expect(refusals.map(\.status) == [400, 400, 400, 400, 405, 406, 415, 400, 413, 405])
            #expect(refusals.contains { $0.why?.text.contains("a mutation is sent with POST") == true && $0.method == "GET" })
        }
    }

    @Test("Deep, wide and fragment-multiplied operations are refused with the bound's code before anything runs")
    func boundsHold() async throws {
        try await Self.withTales { server, client in
            var deep = "id"
            for _ in 0..<10 { deep = "stories { child { \(deep) } }" }
            let tooDeep = try await Self.ask(client, "{ children { \(deep) } }", session: "b")
            #expect(tooDeep.status == 400 && Self.firstError(tooDeep.json)?["extensions"]?["code"] == "DEPTH_LIMIT_EXCEEDED")

            let wide = "{ " + (0..<2_100).map { "a\($0): me { plan }" }.joined(separator: " ") + " }"
            let tooWide = try await Self.ask(client, wide, session: "b")
            #expect(tooWide.status == 400 && Self.firstError(tooWide.json)?["extensions"]?["code"] == "FIELD_LIMIT_EXCEEDED")

            // Each fragment spreads the one before it ten times: some 10^12 fields when spread, measured in a moment.
            let bomb = Self.fragmentBomb(levels: 12)
            let multiplied = try await Self.ask(client, bomb, session: "b")
            #expect(multiplied.status == 400 && Self.firstError(multiplied.json)?["extensions"]?["code"] == "FIELD_LIMIT_EXCEEDED")
            // Refused before the contract was asked: no resolver ran, and the journal has the three refusals with their bound.
            let journaled = server.engine.journal.entries.filter { $0.session == "b" }
            #expect(journaled.map { "\($0.endpointID ?? "-") \($0.status)" } == ["graphql 400", "graphql 400", "graphql 400"])
            #expect(journaled.first?.why?.text.contains("(max_depth)") == true)
            #expect(journaled.last?.why?.text.contains("3222222222221 fields") == true)
        }
    }

    @Test("Introspection's list fields nested past three levels are refused; the standard introspection query is answered")
    func introspectionBombsAreRefused() async throws {
        try await Self.withTales { _, client in
            var nested = "name"
            for _ in 0..<6 { nested = "fields { type { \(nested) } }" }
            let bomb = try await Self.ask(client, "{ __schema { types { \(nested) } } }", session: "i")
            #expect(bomb.status == 400 && Self.firstError(bomb.json)?["extensions"]?["code"] == "INTROSPECTION_DEPTH_EXCEEDED")
            // Through a fragment too.
            let spread = try await Self.ask(
                client,
                "{ __type(name: \"Query\") { ...F } } fragment F on __Type { fields { type { fields { type { fields { type { fields { name } } } } } } } }",
                session: "i")
            #expect(Self.firstError(spread.json)?["extensions"]?["code"] == "INTROSPECTION_DEPTH_EXCEEDED")
            let standard = try await Self.ask(
                client,
                "{ __schema { queryType { name } types { name kind fields(includeDeprecated: true) { name args { name type { kind name ofType { kind name } } } type { kind name ofType { kind name ofType { kind name } } } } inputFields { name defaultValue type { name } } interfaces { name } possibleTypes { name } enumValues { name } } } }",
                session: "i")
            #expect(standard.status == 200)
            let types = standard.json?["data"]?["__schema"]?["types"]?.arrayValue ?? []
            let input = types.first { $0["name"] == "StoryInput" }
            #expect(input?["inputFields"]?.arrayValue?.first { $0["name"] == "language" }?["defaultValue"] == "EN")
        }
    }

    @Test("Variables near the body limit are read and answered, or refused whole; the server keeps serving")
    func hugeVariables() async throws {
        try await Self.withTales { _, client in
            let many = JSON.array(Array(repeating: .string("dragons"), count: 20_000))
            let big = try await Self.ask(
                client, "mutation($i: [String!]) { createChild(input: {name: \"Mia\", ageCategory: AGES_4_5, interests: $i}) { id } }",
                variables: ["i": many], session: "v")
            #expect(big.status == 200)
            #expect(big.json?["data"]?["createChild"]?["id"] == "child_1")
            let tooBig = JSON.array(Array(repeating: .string("dragons"), count: 200_000))
            let refused = try await Self.ask(client, "query($i: [String!]) { me { plan } }", variables: ["i": tooBig], session: "v")
            #expect(refused.status == 413)
            // Variables nested 5,000 deep: past the JSON reader's depth, a 400.
            let nested = try await client.send(
                "POST", "/graphql", session: "v", headers: ["Content-Type": "application/json"],
                body: Data(
                    ("{\"query\": \"{ me { plan } }\", \"variables\": {\"a\": " + String(repeating: "[", count: 5_000)
                        + String(repeating: "]", count: 5_000) + "}}").utf8))
            #expect(nested.status == 400)
            #expect(try await Self.ask(client, "{ me { plan } }", session: "v").json == ["data": ["me": ["plan": "FREE"]]])
        }
    }

    @Test("A rate limit of every endpoint counts a GraphQL request once, however many fields the contract resolves; past it, 429")
    func rateLimitsCountOperations() async throws {
        let contract = """
            doppel: 1
            rate_limits:
              per-session:
                key: session
                limit: 3
                window: 1m
            graphql:
              schema: "type Query { a: Int, b: Int, c: [Int] }"
              auth: none
              resolvers:
                Query.a: { value: 1 }
                Query.b: { value: 2 }
                Query.c: { value: [3, 4] }
            """
        try await withTemporaryContract(contract) { file in
            try await DoppelTestServer.with(contract: file) { server in
                let client = TestClient(base: server.baseURL)
                for _ in 0..<3 {
                    let answer = try await Self.ask(client, "{ a b c }", session: "r", token: nil)
                    #expect(answer.json == ["data": ["a": 1, "b": 2, "c": [3, 4]]])
                    #expect(answer.header("RateLimit-Limit") == "3")
                }
                let refused = try await Self.ask(client, "{ a }", session: "r", token: nil)
                #expect(refused.status == 429)
                #expect(refused.header("Retry-After") != nil)
                #expect(try await Self.ask(client, "{ a }", session: "other", token: nil).status == 200, "another session's window")
            }
        }
    }

    @Test("doppel verify of the demo served as written passes every GraphQL check; the door's own calls are never sent as requests")
    func verifyPassesTheContractItself() async throws {
        try await Self.withTales { server, _ in
            let contract = try ContractLoader.load(file: contractPath("tales-graphql.yaml"))
            let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: .inTheSuite).run()
            #expect(report.failed == 0, "\(report.checks.filter { $0.outcome == .failed }.map(\.summary))")
            #expect(
                report.checks.map { "\($0.endpointID): \($0.name)" } == [
                    "graphql: schema by introspection", "Query.me: valid query", "Query.children: valid query",
                    "Query.story: valid query, unknown id", "Query.stories: valid query", "Query.plans: valid query", "graphql: unknown field",
                    "graphql: syntax error", "graphql: variable of the wrong type", "graphql: no credentials",
                ])
            // Only operations reached the server: every journal entry is the `graphql` endpoint's or a resolver's, none an upgrade.
            #expect(server.engine.journal.entries.allSatisfy { $0.method == "POST" && $0.path == "/graphql" })
        }
    }

    @Test("doppel verify of a provider that drifted from the contract fails exactly the drifted checks, saying how")
    func verifyFindsDrift() async throws {
        // The provider: the demo with a field gone, an unknown story an error, and no auth.
        let original = try String(contentsOfFile: contractPath("tales-graphql.yaml"), encoding: .utf8)
        let sdl = try String(contentsOfFile: contractPath("tales.graphql"), encoding: .utf8)
        let drifted =
            original
            .replacingOccurrences(of: "  default: bearer\n", with: "  default: none\n")
            .replacingOccurrences(
                of: "    Query.story:\n      value: \"{{ state.stories[args.id] }}\"",
                with: "    Query.story:\n      error: { message: no such story, extensions: { code: NOT_FOUND } }")
        #expect(drifted != original)
        try await withTemporaryContract(
            drifted, files: ["tales.graphql": sdl.replacingOccurrences(of: "  monthlyLimit: Int!\n", with: "")]
        ) { file in
            let rewritten = try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(
                of: "          monthlyLimit: \"{{ data.limits[state.plan].monthly_stories }}\"\n", with: "")
            try rewritten.write(toFile: file, atomically: true, encoding: .utf8)
            try await DoppelTestServer.with(contract: file) { server in
                let contract = try ContractLoader.load(file: contractPath("tales-graphql.yaml"))
                let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: .inTheSuite).run()
                let failed = report.checks.filter { $0.outcome == .failed }
                #expect(
                    failed.map { "\($0.endpointID): \($0.name)" } == [
                        "graphql: schema by introspection", "Query.me: valid query", "Query.story: valid query, unknown id",
                        "graphql: no credentials",
                    ])
                #expect(failed.first?.details.contains("breaking: graphql-field-removed Usage.monthlyLimit: the field is gone") == true)
                #expect(failed.first { $0.endpointID == "Query.story" }?.summary.contains("NOT_FOUND") == true)
                #expect(failed.last?.summary == "the contract refuses an operation without credentials with 401; the provider answered 200")
            }
        }
    }

    /// Fragments each spreading the previous one ten times under aliases.
    static func fragmentBomb(levels: Int) -> String {
        var text = "query { me { ...L\(levels) } }\nfragment L0 on Me { plan }\n"
        for level in 1...levels {
            text +=
                "fragment L\(level) on Me { " + (0..<10).map { "x\($0): subscription { __typename } ...L\(level - 1)" }.joined(separator: " ")
                + " }\n"
        }
        return text
    }

    @Test("Fields nothing answers get the same schema-valid values every time; an Example in a description is used")
    func madeValuesAreDeterministic() async throws {
        try await Self.withTales { _, client in
            let query = "{ plans { tier displayName monthlyStories monthlyPrice } children { id } }"
            let first = try await Self.ask(client, query, session: "m1")
            let second = try await Self.ask(client, query, session: "m2")
            #expect(first.json == second.json)
            let plans = try #require(first.json?["data"]?["plans"]?.arrayValue)
            #expect(plans.count == 2)
            #expect(plans.allSatisfy { $0["displayName"] == "Free" && $0["monthlyStories"] == 5 })
            #expect(plans.allSatisfy { ["FREE", "BASIC", "PREMIUM"].contains($0["tier"]?.stringValue ?? "") })
        }
    }

    @Test("Without a token the operation is refused as a whole with the contract's 401, and nothing runs")
    func unauthenticated() async throws {
        try await Self.withTales { server, client in
            let refused = try await Self.ask(client, Self.addChild, session: "u", token: nil)
            #expect(refused.status == 401)
            #expect(refused.header("WWW-Authenticate") == "Bearer")
            #expect(refused.json == ["errors": [["message": "Not authenticated", "extensions": ["code": "UNAUTHENTICATED"]]]])
            #expect(server.engine.journal.entries.filter { $0.session == "u" }.map(\.endpointID) == ["graphql"])
        }
    }
}
