import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

@Suite struct ContractLoaderTests {
    @Test func reportsThreePlantedMistakesAtTheirLinesAndColumns() {
        let text = """
            doppel: 1
            state:
              counters: { used: 0 }
            endpoints:
              generate:
                request: POST /generate
                responsse:
                  - status: 200
              list:
                request: GET /items
                responses:
                  - ref: not-found
              count:
                request: GET /count
                responses:
                  - when: state.usd > 3 and
                    status: 402
                  - status: 200
            """
        let found = diagnostics(of: text, file: "planted.yaml").map(\.description)
        #expect(
            found == [
                "planted.yaml:6:5: error: endpoint 'generate' needs 'responses'",
                "planted.yaml:7:5: error: unknown key 'responsse' in endpoint 'generate' (did you mean 'responses'?)",
                "planted.yaml:12:14: error: undefined response 'not-found'",
                "planted.yaml:16:32: error: bad expression: expected a value but found end of expression",
            ])
    }

    @Test func reportsUnknownStateNamesInsideExpressionsAtTheirColumn() {
        let text = """
            doppel: 1
            state:
              counters: { used: 0 }
            endpoints:
              count:
                request: GET /count
                responses:
                  - when: state.usd > 3
                    status: 402
                  - status: 200
                    body: { n: "used {{ state.usde }}" }
            """
        #expect(
            diagnostics(of: text, file: "c.yaml").map(\.description) == [
                "c.yaml:8:21: error: state has no 'usd' (did you mean 'used'?)",
                "c.yaml:11:35: error: state has no 'usde' (did you mean 'used'?)",
            ])
    }

    @Test func yamlSyntaxErrorsHaveALocation() {
        let found = diagnostics(of: "doppel: 1\nendpoints:\n  a: [unclosed\n", file: "broken.yaml")
        #expect(found.count == 1)
        #expect(found.first?.description.hasPrefix("broken.yaml:4:1: error: YAML syntax:") == true)
    }

    @Test func examplesMustKeepTheirOwnSchema() {
        let text = """
            doppel: 1
            schemas:
              Child:
                type: object
                required: [name]
                properties: { name: { type: string } }
            endpoints:
              create:
                request: POST /children
                body:
                  schema: Child
                  example: { name: 7 }
                responses:
                  - status: 200
            """
        #expect(
            diagnostics(of: text, file: "e.yaml").map(\.description) == [
                "e.yaml:12:16: error: the example body of endpoint 'create' breaks its schema at /name: expected string, got integer"
            ])
    }

    @Test func referencesAuthAndVersionsAreChecked() {
        let text = """
            doppel: 2
            auth:
              default: bearr
              schemes:
                bearer: { type: bearer }
            endpoints:
              a:
                request: FETCH /a/{id
                responses: [ { status: 200 } ]
              b:
                request: GET /b
                auth: tokn
                body: { schema: Missing }
                responses: [ { status: 999 } ]
            """
        #expect(
            diagnostics(of: text, file: "r.yaml").map(\.description) == [
                "r.yaml:1:9: error: unsupported contract format version 2; this Doppel reads 'doppel: 1'",
                "r.yaml:3:12: error: auth default 'bearr' is not a declared scheme (did you mean 'bearer'?)",
                "r.yaml:8:14: error: unknown method 'FETCH' (did you mean 'PATCH'?)",
                "r.yaml:8:20: error: bad path: '{' without '}' in path",
                "r.yaml:12:11: error: undefined auth scheme 'tokn'",
                "r.yaml:13:21: error: undefined schema 'Missing'",
                "r.yaml:14:28: error: status must be an HTTP status code from 100 to 599",
            ])
    }

    @Test func schemaReferencesAreCheckedAndShared() throws {
        let text = """
            doppel: 1
            schemas:
              Item: { type: object, properties: { id: { type: integer } } }
            endpoints:
              a:
                request: POST /a
                body: { schema: { $ref: Item } }
                responses: [ { status: 200, schema: { $ref: "#/schemas/Item" }, body: { id: 1 } } ]
                documented: [ { status: 201, schema: Item, body: { id: 2 } } ]
              b:
                request: POST /b
                body: { schema: { $ref: Itme } }
                responses: [ { status: 200, schema: { $ref: Item, description: with a sibling }, body: { id: "x" } } ]
            """
        #expect(
            diagnostics(of: text, file: "s.yaml").map(\.description) == [
                "s.yaml:12:29: error: undefined schema 'Itme' (did you mean 'Item'?)",
                "s.yaml:13:92: error: the body of response b[0] breaks its schema at /id: expected integer, got string",
            ])
        let contract = try ContractLoader.load(
            text: text.replacingOccurrences(of: "Itme", with: "Item").replacingOccurrences(of: "\"x\"", with: "3"), file: "s.yaml")
        // Every bare reference to Item is one schema, and validates as Item.
        let a = try #require(contract.endpoints.first)
        let references = [a.body?.schema, a.responses[0].schema, a.documented[0].schema].compactMap { $0 }
        #expect(references.count == 3 && references.allSatisfy { $0 === references[0] && $0.ref == "Item" })
        let validator = SchemaValidator(registry: contract.schemas)
        #expect(!validator.validate(["id": "no"], against: references[0]).isEmpty)
        #expect(validator.validate(["id": 7], against: references[0]).isEmpty)
    }

    @Test func constantBodiesAreTheirYAMLAsJSON() throws {
        let body = """
            { id: 1, ratio: 0.5, on: true, off: "false", none: null, tilde: ~, text: plain words,
              list: [1, [2, [3, { deep: [true, "x", { deeper: [] }] }]], {}], nested: { a: { b: { c: [0x1F, 1e3, -2] } } },
              braces: "{ not a template }", empty: "" }
            """
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                endpoints:
                  a:
                    request: GET /a
                    responses: [ { status: 200, body: \(body) } ]
                  b:
                    request: GET /b
                    responses: [ { status: 200, body: { list: [1, "{{ 1 + 1 }}", { n: 3 }], fixed: { k: [1, 2] } } } ]
                """, file: "b.yaml")
        let expected = try #require(try SourceReader.read(body, file: "x.yaml").get()).json
        guard case .json(let template, let encoded, _) = contract.endpoints[0].responses[0].body else {
            Issue.record("not a JSON body")
            return
        }
        #expect(template.constantValue == expected)
        #expect(encoded == JSONWriter.encode(expected))
        // A body with a placeholder is a template, its constant parts constants.
        guard case .json(let templated, let none, _) = contract.endpoints[1].responses[0].body, case .object(let object) = templated else {
            Issue.record("not a templated object body")
            return
        }
        #expect(none == nil)
        #expect(object.pairs.map(\.0) == ["list", "fixed"])
        #expect(object.values[1].constantValue == ["k": [1, 2]])
        #expect(object.values[0].constantValue == nil)
    }

    @Test func booleanSchemasArePlainTrueAndFalse() throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                schemas:
                  Anything: true
                  Nothing: false
                  Open: { type: object, additionalProperties: true, properties: { never: false } }
                endpoints:
                  a: { request: GET /a, responses: [ { status: 200 } ] }
                """, file: "s.yaml")
        let validator = SchemaValidator(registry: contract.schemas)
        #expect(validator.validate(["any": [1]], against: try #require(contract.schemas["Anything"])).isEmpty)
        #expect(!validator.validate(1, against: try #require(contract.schemas["Nothing"])).isEmpty)
        #expect(validator.validate(["x": 1], against: try #require(contract.schemas["Open"])).isEmpty)
        #expect(!validator.validate(["never": 1], against: try #require(contract.schemas["Open"])).isEmpty)
        // Quoted, "true" is a name, not a schema that allows everything.
        #expect(
            diagnostics(
                of: "doppel: 1\nschemas: { Q: \"true\" }\nendpoints: { a: { request: GET /a, responses: [ { status: 200 } ] } }\n", file: "q.yaml"
            )
            .map(\.description) == ["q.yaml:2:15: error: undefined schema 'true'"])
    }

    @Test func unreachableEndpointsAndBadEffectsAreErrors() {
        let text = """
            doppel: 1
            state:
              counters: { used: 0 }
            endpoints:
              first: { request: GET /a, responses: [ { status: 200 } ] }
              second: { request: GET /a, responses: [ { status: 201 } ] }
              third:
                request: POST /b
                responses:
                  - effects: [ "state.usde += 1", "body.x = 1" ]
            """
        #expect(
            diagnostics(of: text, file: "u.yaml").map(\.description) == [
                "u.yaml:6:11: error: endpoint 'second' is unreachable: 'first' has the same request (GET /a) and no 'match' condition",
                "u.yaml:10:21: error: bad effect: state has no 'usde' (did you mean 'used'?)",
                "u.yaml:10:40: error: bad effect: an effect can only change state: write 'state.<name>'",
            ])
    }

    @Test func anEndpointIsUnreachableBehindTheFirstWithoutAMatch() {
        let text = """
            doppel: 1
            endpoints:
              gated: { request: GET /a, match: "query.x == '1'", responses: [ { status: 200 } ] }
              open: { request: GET /a, responses: [ { status: 201 } ] }
              shadowed: { request: GET /a, match: "query.x == '2'", responses: [ { status: 202 } ] }
              other: { request: POST /a, responses: [ { status: 203 } ] }
            """
        #expect(
            diagnostics(of: text, file: "u.yaml").map(\.description) == [
                "u.yaml:5:13: error: endpoint 'shadowed' is unreachable: 'open' has the same request (GET /a) and no 'match' condition"
            ])
    }

    @Test func aLargeContractReadInSlicesKeepsEveryEndpointAndProblemInOrder() throws {
        // Enough endpoints to be read on several threads.
        let count = 450
        func contract(_ endpoint: (Int) -> String) -> String {
            "doppel: 1\nendpoints:\n" + (0..<count).map { "  e\($0): " + endpoint($0) }.joined(separator: "\n") + "\n"
        }
        let clean = try loadContract(contract { "{ request: GET /e\($0), responses: [ { status: 200, body: { n: \($0) } } ] }" })
        #expect(clean.endpoints.map(\.id) == (0..<count).map { "e\($0)" })
        // An unknown key in each, and a request example that breaks its schema
        // (checked after all endpoints are read) in every tenth.
        let broken = contract {
            $0 % 10 == 0
                ? "{ request: POST /e\($0), body: { schema: { type: object, required: [n] }, example: {} }, responses: [ { status: 200 } ] }"
                : "{ request: GET /e\($0), respnses: [] }"
        }
        let found = diagnostics(of: broken, file: "big.yaml")
        let misspelt = found.filter { $0.message.hasPrefix("unknown key 'respnses'") }
        let unanswered = found.filter { $0.message.hasSuffix("needs 'responses'") }
        let breaking = found.filter { $0.message.contains("breaks its schema") }
        #expect(found.count == misspelt.count + unanswered.count + breaking.count)
        #expect(misspelt.map(\.location.line) == (0..<count).filter { $0 % 10 != 0 }.map { $0 + 3 })
        #expect(unanswered.map(\.location.line) == misspelt.map(\.location.line))
        #expect(breaking.map(\.location.line) == (0..<count).filter { $0 % 10 == 0 }.map { $0 + 3 })
    }

    @Test func anUndefinedFailureIsTheOnlyErrorAndUndefinedSchemesAreNamedAtOnce() {
        let text = """
            doppel: 1
            auth:
              default: bearer
              schemes:
                bearer: { type: bearer, failure: nope }
            endpoints:
              a: { request: GET /a, responses: [ { status: 200 } ] }
              b: { request: GET /b, auth: [bearer, other, third], responses: [ { status: 200 } ] }
            """
        #expect(
            diagnostics(of: text, file: "a.yaml").map(\.description) == [
                "a.yaml:5:38: error: undefined response 'nope'",
                "a.yaml:8:40: error: undefined auth scheme 'other'",
                "a.yaml:8:47: error: undefined auth scheme 'third'",
            ])
    }

    @Test func aPathNameTheTemplateDoesNotCaptureIsAnError() {
        let text = """
            doppel: 1
            endpoints:
              todo:
                request: GET /todos/{id}
                match: path.idd != '0'
                responses:
                  - status: 200
                    body: { id: "{{ path.todo_id }}", fine: "{{ path.id }}" }
              plain: { request: GET /all, responses: [ { status: 200, body: "{{ path.id }}" } ] }
            responses:
              shared: { status: 200, body: "{{ path.anything }}" }
            """
        #expect(
            diagnostics(of: text, file: "p.yaml").map(\.description) == [
                "p.yaml:5:17: error: path has no 'idd' (did you mean 'id'?); it has 'id'",
                "p.yaml:8:30: error: path has no 'todo_id'; it has 'id'",
                "p.yaml:9:74: error: path has no 'id'; the endpoint's path has no parameters",
            ])
    }

    @Test func aQueryValueUsedAsANumberNeedsItsType() throws {
        func contract(query: String) -> String {
            """
            doppel: 1
            data: { items: [1, 2, 3] }
            endpoints:
              list:
                request: GET /items
            \(query)
                responses:
                  - status: 200
                    body: { page: "{{ slice(data.items, 0, query.limit) }}", pages: "{{ query.count - 1 }}", fine: "{{ slice(data.items, int(query.skip)) }}" }
            """
        }
        #expect(
            diagnostics(of: contract(query: ""), file: "q.yaml").map(\.description) == [
                "q.yaml:9:54: error: query.limit is text unless the endpoint's query schema gives it type integer or number, so slice() would fail; declare it, or write int(query.limit)",
                "q.yaml:9:83: error: query.count is text unless the endpoint's query schema gives it type integer or number, so '-' would fail; declare it, or write int(query.count)",
            ])
        let typed = "    query: { properties: { limit: { type: integer }, count: { type: [number, \"null\"] } } }"
        #expect(diagnostics(of: contract(query: typed), file: "q.yaml").isEmpty)
        // Found as the request's query is read: through `allOf` branches; a
        // type that also admits a string stays text.
        let branched = "    query: { allOf: [ { properties: { limit: { type: integer } } } ], properties: { count: { type: [string, integer] } } }"
        #expect(
            diagnostics(of: contract(query: branched), file: "q.yaml").map(\.message) == [
                "query.count is text unless the endpoint's query schema gives it type integer or number, so '-' would fail; declare it, or write int(query.count)"
            ])
    }

    @Test func fallbacksAreCheckedLikeResponses() {
        let text = """
            doppel: 1
            fallbacks:
              not_fund: { body: {} }
              method_not_allowed: missing
              malformed_body: { body: { detail: "{{ errors }}" } }
              validation_failed: { body: { detail: "{{ errors[0].message }}", status: "{{ problem.status }}" } }
            endpoints:
              a: { request: GET /a, responses: [ { status: 200 } ] }
            """
        #expect(
            diagnostics(of: text, file: "f.yaml").map(\.description) == [
                "f.yaml:3:3: error: unknown key 'not_fund' in fallbacks (did you mean 'not_found'?)",
                "f.yaml:4:23: error: undefined response 'missing'",
                "f.yaml:5:41: error: unknown name 'errors'",
            ])
        // Without a status, a fallback keeps Doppel's.
        let contract = try? loadContract(
            "doppel: 1\nfallbacks:\n  not_found: { body: {} }\n  payload_too_large: { status: 400 }\nendpoints:\n  a: { request: GET /a, responses: [ { status: 200 } ] }\n"
        )
        #expect(contract?.fallbacks[.notFound]?.status == 404)
        #expect(contract?.fallbacks[.payloadTooLarge]?.status == 400)
    }

    @Test func bodyFilesMayNotLeaveTheContractFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("bodies"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data([0x89, 0x50, 0x4E, 0x47]).write(to: folder.appendingPathComponent("bodies/pixel.png"))
        let contractFile = folder.appendingPathComponent("c.yaml")
        try """
        doppel: 1
        endpoints:
          image: { request: GET /image, responses: [ { file: bodies/pixel.png } ] }
          escape: { request: GET /escape, responses: [ { file: ../../etc/passwd } ] }
        """.write(to: contractFile, atomically: true, encoding: .utf8)
        let found = ContractLoader.lint(file: contractFile.path)
        #expect(found.map(\.message) == ["body file '../../etc/passwd' resolves outside the contract's folder"])

        try """
        doppel: 1
        endpoints:
          image: { request: GET /image, responses: [ { file: bodies/pixel.png } ] }
        """.write(to: contractFile, atomically: true, encoding: .utf8)
        let engine = MockEngine(contract: try ContractLoader.load(file: contractFile.path))
        let response = engine.send("GET", "/image")
        #expect(response.body == [0x89, 0x50, 0x4E, 0x47])
        #expect(response.header("content-type") == "image/png")
    }

    @Test func bundledContractsAreClean() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("contracts").path)
            .filter { $0.hasSuffix(".yaml") }
        #expect(!files.isEmpty)
        for file in files {
            #expect(ContractLoader.lint(file: contractPath(file)).isEmpty, "\(file)")
        }
    }
}
