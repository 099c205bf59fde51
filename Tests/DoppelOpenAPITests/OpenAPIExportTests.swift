import DoppelCore
import DoppelTestSupport
import Foundation
import OpenAPIKit
import Testing
import Yams

@testable import DoppelOpenAPI

private func contract(_ name: String) throws -> Contract {
    try ContractLoader.load(file: repositoryRoot.appendingPathComponent("contracts/\(name)").path)
}

@Suite("OpenAPI export")
struct OpenAPIExportTests {
    /// The bundled contracts; none when the folder cannot be read, which `theBundledContractsAreFound` reports.
    static let bundled = ((try? FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("contracts").path)) ?? [])
        .filter { $0.hasSuffix(".yaml") }.sorted()

    @Test func theBundledContractsAreFound() {
        #expect(Self.bundled.count >= 5, "contracts/ holds \(Self.bundled)")
    }

    @Test(arguments: bundled)
    func everyBundledContractExportsAsValidOpenAPI(name: String) throws {
        let contract = try contract(name)
        let document = OpenAPIExporter.document(for: contract)
        // OpenAPIKit reads and validates the document, then writes it.
        let yaml = try OpenAPIDocumentWriter.write(document, as: .yaml)
        let json = try OpenAPIDocumentWriter.write(document, as: .json)
        #expect(yaml.hasPrefix("openapi: 3.1.0"))
        #expect(json.contains("\"openapi\" : \"3.1.0\"") || json.contains("\"openapi\": \"3.1.0\""))
        // Every endpoint is an operation.
        let paths = try #require(document["paths"]?.objectValue)
        let operationIDs = paths.values.flatMap { $0.objectValue?.values.compactMap { $0["operationId"]?.stringValue } ?? [] }
        let firstOfEachRoute = Dictionary(grouping: contract.endpoints, by: { "\($0.method) \($0.path.template)" }).values.compactMap(\.first).map(
            \.id)
        // A GraphQL section's path is one route answered by POST, and by GET for queries (its WebSocket for subscriptions is not HTTP's to describe).
        #expect(
            Set(operationIDs)
                == Set(firstOfEachRoute).subtracting([GraphQLDefinition.socketEndpointID]).union(contract.graphql == nil ? [] : ["graphql-get"]))
    }

    /// The export reads its document back through JSONDecoder, which is
    /// linear, instead of through Yams, to validate it: both must find the
    /// same problems, in the bundled contracts' documents and in broken ones.
    @Test(arguments: bundled)
    func readingThroughJSONOrYAMLValidatesAlike(name: String) throws {
        let document = OpenAPIExporter.document(for: try contract(name))
        func problems(_ document: JSON, throughYAML: Bool) throws -> [String] {
            let read = try OpenAPIDocumentWriter.decode(OpenAPIKit.OpenAPI.Document.self, from: document, throughYAML: throughYAML)
            do {
                try read.validate()
                return []
            } catch let collection as OpenAPIKit.ValidationErrorCollection {
                return collection.values.map { "\($0.codingPathString): \($0.reason)" }.sorted()
            }
        }
        #expect(try problems(document, throughYAML: false) == [])
        #expect(try problems(document, throughYAML: true) == [])
        // Broken: every operation's id made the same (OpenAPIKit requires them unique).
        var broken = document
        if case .object(var root) = document, case .object(var paths) = document["paths"] {
            for pair in paths.pairs {
                guard case .object(var item) = pair.value else { continue }
                for operation in item.pairs {
                    guard case .object(var fields) = operation.value else { continue }
                    fields["operationId"] = "same"
                    item[operation.key] = .object(fields)
                }
                paths[pair.key] = .object(item)
            }
            root["paths"] = .object(paths)
            broken = .object(root)
        }
        let viaJSON = try problems(broken, throughYAML: false)
        let operations = document["paths"]?.objectValue?.values.reduce(0) { $0 + ($1.objectValue?.count ?? 0) } ?? 0
        #expect(viaJSON.isEmpty == (operations < 2), "\(operations) operations")
        #expect(viaJSON == (try problems(broken, throughYAML: true)))
    }

    @Test func aVeryLargeContractIsReadButNotValidatedByOpenAPIKit() throws {
        let count = ContractDocument.largestValidatedMap + 1
        var text = "doppel: 1\nendpoints:\n"
        for index in 0..<count { text += "  e\(index): { request: GET /things\(index), responses: [ { body: { n: \(index) } } ] }\n" }
        let large = OpenAPIExporter.document(for: try ContractLoader.load(text: text, file: "large.yaml"))
        #expect(OpenAPIDocumentWriter.skipsValidation(large))
        let written = try OpenAPIDocumentWriter.write(large, as: .json)
        #expect(written.contains("/things\(count - 1)"))
        #expect(!OpenAPIDocumentWriter.skipsValidation(OpenAPIExporter.document(for: try contract("tales.yaml"))))
    }

    @Test func theTalesGenerateOperationDocumentsEveryStatusItCanAnswer() throws {
        let document = OpenAPIExporter.document(for: try contract("tales.yaml"))
        #expect(document["servers"] == [["url": "/api/v1"]])
        let generate = try #require(document["paths"]?["/stories/generate"]?["post"])
        #expect(generate["operationId"] == "generate-story")
        #expect(generate["security"] == [["bearer": []]])
        #expect(document["components"]?["securitySchemes"]?["bearer"] == ["type": "http", "scheme": "bearer", "bearerFormat": "JWT"])
        let responses = try #require(generate["responses"]?.objectValue)
        // Its responses, `documented` (500) and the auth failure (401); a
        // malformed or invalid request gets the contract's fallback, a 400
        // in the document's shape, not Doppel's 422.
        #expect(responses.keys == ["400", "404", "402", "200", "500", "401"])
        #expect(responses["400"]?["content"]?["application/json"]?["schema"]?["required"] == ["detail"])
        let limit = try #require(responses["402"]?["content"]?["application/json"])
        // The document's printed models: a client generator decodes a typed 402.
        #expect(limit["schema"] == ["$ref": "#/components/schemas/APIError"])
        let schemas = try #require(document["components"]?["schemas"])
        #expect(schemas["APIError"]?["properties"]?["limit_info"] == ["$ref": "#/components/schemas/LimitInfo"])
        #expect(schemas["LimitInfo"]?["properties"]?["stories_used"] == ["type": "integer"])
        #expect(generate["requestBody"]?["content"]?["application/json"]?["schema"] == ["$ref": "#/components/schemas/GenerateStoryRequest"])
    }

    @Test func withoutFallbacksAValidatingEndpointDocumentsDoppelsProblem() throws {
        let document = OpenAPIExporter.document(
            for: try ContractLoader.load(
                text: """
                    doppel: 1
                    endpoints:
                      e: { request: POST /e, body: { schema: { type: object } }, responses: [ { status: 201 } ] }
                    """, file: "e.yaml"))
        let responses = try #require(document["paths"]?["/e"]?["post"]?["responses"]?.objectValue)
        #expect(responses.keys == ["201", "422"])
        #expect(responses["422"]?["content"]?["application/problem+json"]?["schema"]?["required"] == ["type", "title", "status", "detail"])
    }

    @Test func queryParametersComeFromTheQuerySchema() throws {
        let document = OpenAPIExporter.document(for: try contract("tales.yaml"))
        let list = try #require(document["paths"]?["/free-stories"]?["get"])
        #expect(list["security"] == [])
        let parameters = try #require(list["parameters"]?.arrayValue)
        #expect(parameters.map { $0["name"] } == ["age_category", "language", "limit"])
        #expect(parameters.allSatisfy { $0["in"] == "query" && $0["required"] == nil })
        #expect(parameters[2]["schema"] == ["type": "integer", "minimum": 1, "maximum": 1000])
    }

    @Test func schemasAreWrittenAsOpenAPI31MeansThem() throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                schemas:
                  Pet:
                    type: object
                    required: [name]
                    properties:
                      name: { type: string, nullable: true, pattern: "^[a-z]+$" }
                      age: { type: integer, exclusiveMinimum: 0 }
                      kind: { enum: [cat, dog] }
                      friends: { type: array, items: { $ref: Pet } }
                    additionalProperties: false
                auth:
                  schemes:
                    key: { type: api_key, header: X-Api-Key, query: api_key }
                endpoints:
                  pet:
                    request: GET /pets/{id}
                    auth: key
                    responses:
                      - status: 200
                        schema: Pet
                        body: { name: rex, age: 3, kind: dog, friends: [] }
                """, file: "pets.yaml")
        let document = OpenAPIExporter.document(for: contract)
        let pet = try #require(document["components"]?["schemas"]?["Pet"])
        #expect(pet["properties"]?["name"] == ["type": ["string", "null"], "pattern": "^[a-z]+$"])
        #expect(pet["properties"]?["age"] == ["type": "integer", "exclusiveMinimum": 0])
        #expect(pet["properties"]?["friends"]?["items"] == ["$ref": "#/components/schemas/Pet"])
        #expect(pet["additionalProperties"] == false)
        let operation = try #require(document["paths"]?["/pets/{id}"]?["get"])
        #expect(operation["parameters"] == [["name": "id", "in": "path", "required": true, "schema": ["type": "string"]]])
        // An API key accepted in a header or the query: either scheme satisfies.
        #expect(operation["security"] == [["key": []], ["key-query": []]])
        let ok = try #require(operation["responses"]?["200"]?["content"]?["application/json"])
        #expect(ok["schema"] == ["$ref": "#/components/schemas/Pet"])
        #expect(ok["examples"]?["pet-0"]?["value"] == ["name": "rex", "age": 3, "kind": "dog", "friends": []])
        _ = try OpenAPIDocumentWriter.write(document, as: .yaml)
    }

    @Test func aTemplatedBodysSchemaShowsWhatIsConstantAndItsExampleIsRendered() throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                state: { counters: { used: 0 } }
                endpoints:
                  usage:
                    request: GET /usage
                    responses:
                      - status: 200
                        body: { used: "{{ state.used }}", plan: free, note: "used {{ state.used }}" }
                """, file: "usage.yaml")
        let ok = try #require(
            OpenAPIExporter.document(for: contract)["paths"]?["/usage"]?["get"]?["responses"]?["200"]?["content"]?["application/json"])
        #expect(ok["schema"]?["properties"] == ["used": [:], "plan": ["type": "string"], "note": ["type": "string"]])
        // Its example is what it renders for a sample request in the contract's initial state, named after the response.
        #expect(ok["examples"] == ["usage-0": ["value": ["used": 0, "plan": "free", "note": "used 0"]]])
    }

    @Test func statusKeysStayStringsInYAML() throws {
        let yaml = try OpenAPIDocumentWriter.write(OpenAPIExporter.document(for: try contract("tales.yaml")), as: .yaml)
        #expect(yaml.contains("'200':"))
        #expect(!yaml.contains("\n        200:"))
        // Read back with YAML's usual typing, the keys are still strings.
        let loaded = try #require(try Yams.load(yaml: yaml) as? [String: Any])
        let paths = try #require(loaded["paths"] as? [String: Any])
        let responses = try #require(((paths["/children"] as? [String: Any])?["post"] as? [String: Any])?["responses"] as? [String: Any])
        #expect(responses["200"] != nil)
    }

    @Test func numbersAreWrittenAsYAML11ReadersReadThem() throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                endpoints:
                  e:
                    request: GET /e
                    query: { properties: { n: { type: number, minimum: 0, maximum: 0.5 } } }
                    responses: [ { status: 204 } ]
                """, file: "numbers.yaml")
        let yaml = try OpenAPIDocumentWriter.write(OpenAPIExporter.document(for: contract), as: .yaml)
        #expect(yaml.contains("minimum: 0\n"), "\(yaml)")
        // YAML 1.1 (PyYAML, openapi-spec-validator) needs a decimal point in a float.
        let maximum = try #require(yaml.split(separator: "\n").first { $0.contains("maximum:") }).split(separator: " ").last.map(String.init)
        #expect(maximum?.contains(".") == true && maximum.flatMap(Double.init) == 0.5, "\(maximum ?? "")")
        #expect(!yaml.contains("e+0"))
    }

    @Test func aNullableReferenceAdmitsNullAsASecondBranchAndIsWrittenAsBuilt() throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                schemas:
                  Hero: { type: object, properties: { name: { type: string } } }
                  Story:
                    type: object
                    properties:
                      hero: { $ref: Hero, nullable: true }
                endpoints:
                  story:
                    request: GET /story
                    responses:
                      - status: 200
                        schema: Story
                        body: { zebra: 1, apple: 2, hero: null }
                """, file: "story.yaml")
        let document = OpenAPIExporter.document(for: contract)
        let hero = try #require(document["components"]?["schemas"]?["Story"]?["properties"]?["hero"])
        #expect(hero == ["anyOf": [["$ref": "#/components/schemas/Hero"], ["type": "null"]]])
        let yaml = try OpenAPIDocumentWriter.write(document, as: .yaml)
        // Written as built: no `type: 'null'` beside the anyOf (which would
        // admit null alone), and the example's members in the contract's order.
        let written = try #require(try Yams.load(yaml: yaml) as? [String: Any])
        let components = try #require(written["components"] as? [String: Any])
        let story = try #require((components["schemas"] as? [String: Any])?["Story"] as? [String: Any])
        let writtenHero = try #require((story["properties"] as? [String: Any])?["hero"] as? [String: Any])
        #expect(Set(writtenHero.keys) == ["anyOf"])
        let zebra = try #require(yaml.range(of: "zebra: 1"))
        let apple = try #require(yaml.range(of: "apple: 2"))
        #expect(zebra.lowerBound < apple.lowerBound)
        let json = try OpenAPIDocumentWriter.write(document, as: .json)
        #expect(try JSONReader.parse(Array(json.utf8)) == document)
    }

    // MARK: OpenAPI 3.0

    @Test(arguments: bundled)
    func everyBundledContractExportsAsOpenAPI30ThatReadsBackToTheSameOperations(name: String) throws {
        let contract = try contract(name)
        // OpenAPIKit30 reads and validates the 3.0 document before it is written.
        let yaml = try OpenAPIDocumentWriter.write(OpenAPIExporter.document(for: contract), as: .yaml, version: .v3_0)
        #expect(yaml.hasPrefix("openapi: 3.0.3"))
        #expect(!yaml.contains("prefixItems") && !yaml.contains("const:"))

        // Served as a document again (through OpenAPIKit30 and its 3.1
        // converter), it has the same operations answering the same statuses.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-export30-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent(name).path
        try yaml.write(toFile: file, atomically: true, encoding: .utf8)
        let served = try ContractDocument.load(file: file)
        var expected: [String: [Int]] = [:]
        for item in try #require(OpenAPIExporter.document(for: contract)["paths"]?.objectValue).values {
            for operation in item.objectValue?.values ?? [] {
                let id = try #require(operation["operationId"]?.stringValue)
                expected[id] = (operation["responses"]?.objectValue?.keys ?? []).compactMap { Int($0) }.sorted()
            }
        }
        let actual = Dictionary(uniqueKeysWithValues: served.endpoints.map { ($0.id, served.statuses(of: $0).sorted()) })
        #expect(actual == expected)
    }

    static let schemaCases: [(String, JSON, JSON)] = [
        ("type list with null", ["type": ["string", "null"]], ["type": "string", "nullable": true]),
        ("null alone", ["type": "null"], ["enum": [nil], "nullable": true]),
        ("several types", ["type": ["string", "integer"]], ["anyOf": [["type": "string"], ["type": "integer"]]]),
        ("const", ["const": "cat"], ["enum": ["cat"]]),
        (
            "numeric exclusive bounds", ["type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10],
            ["type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": true]
        ),
        ("the tighter bound wins", ["minimum": 5, "exclusiveMinimum": 0], ["minimum": 5]),
        (
            "$ref with siblings", ["$ref": "#/components/schemas/Pet", "description": "the pet"],
            ["description": "the pet", "allOf": [["$ref": "#/components/schemas/Pet"]]]
        ),
        ("$ref alone", ["$ref": "#/components/schemas/Pet"], ["$ref": "#/components/schemas/Pet"]),
        (
            "closed tuple", ["type": "array", "prefixItems": [["type": "string"], ["type": "integer"]], "items": false],
            ["type": "array", "items": ["anyOf": [["type": "string"], ["type": "integer"]]], "maxItems": 2]
        ),
        ("array without items", ["type": "array"], ["type": "array", "items": [:]]),
        ("boolean schemas inside", ["properties": ["a": true, "b": false]], ["properties": ["a": [:], "b": ["not": [:]]]]),
        (
            "nested", ["type": "object", "properties": ["tags": ["type": "array", "items": ["type": ["string", "null"]]]]],
            ["type": "object", "properties": ["tags": ["type": "array", "items": ["type": "string", "nullable": true]]]]
        ),
        ("base64 bytes", ["type": "string", "contentEncoding": "base64"], ["type": "string", "format": "byte"]),
    ]

    @Test(arguments: schemaCases)
    func schemasAreRewrittenAsOpenAPI30SaysThem(name: String, schema: JSON, expected: JSON) {
        #expect(OpenAPI30Downgrade.schema(schema) == expected, "\(name)")
    }
}
