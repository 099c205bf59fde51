import DoppelCore
import DoppelOpenAPI
import Foundation
import Testing

/// Real documents' problems, each from a minimal reproduction (as reported),
/// read as a user's document is: from a file, through the importer and the
/// contract loader.
@Suite("Reproductions of real documents")
struct ReproductionTests {
    /// Writes `files` (name to text) to a temporary folder, runs `body` on the path of the first, then removes the folder.
    static func withFiles<T>(_ files: [(String, String)], _ body: (String) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-repro-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, text) in files {
            let file = folder.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        return try body(folder.appendingPathComponent(files[0].0).path)
    }

    /// `xref/`: a `$ref` inside an `x-` extension (to a file outside the folder) was followed, and its failure was fatal.
    @Test func aReferenceInsideAnExtensionIsNeverFollowed() throws {
        try Self.withFiles([
            (
                "xref/openapi.yaml",
                """
                openapi: 3.0.3
                info: {title: a $ref inside an x- extension, version: '1'}
                paths:
                  /ping:
                    get:
                      responses:
                        '200':
                          description: ok
                          content:
                            application/json:
                              schema: {type: object}
                              example: {pong: true}
                      x-codegen: { $ref: 'missing.yaml' }
                components:
                  x-vendor-policy:
                    policies:
                      $ref: '../policies.yaml'
                """
            )
        ]) { file in
            #expect(ContractDocument.lint(file: file).map(\.description) == [])
            let contract = try ContractDocument.load(file: file)
            #expect(contract.endpoints.map(\.id) == ["get-ping"])
        }
    }

    /// `export-enum-null.yaml`, `export-object-maxlength.yaml`: documents that
    /// import and lint clean failed to export, OpenAPIKit refusing keywords of
    /// another type beside `type`. They say nothing, and are left out.
    @Test func keywordsOfAnotherTypeAreLeftOutOfTheExport() throws {
        try Self.withFiles([
            (
                "api.yaml",
                """
                openapi: 3.1.0
                info: {title: keywords of another type, version: '1'}
                paths:
                  /links:
                    post:
                      requestBody:
                        required: true
                        content:
                          application/json:
                            schema:
                              type: object
                              properties:
                                flag: { type: string, enum: [Y, N, null] }
                                metadata: { type: object, additionalProperties: {type: string}, maxLength: 80 }
                                count: { type: [integer, "null"], minimum: 1, maxLength: 3, items: { type: string } }
                      responses:
                        '201':
                          description: created
                          content:
                            application/json:
                              schema: {type: object}
                              example: {ok: true}
                """
            )
        ]) { file in
            let contract = try ContractDocument.load(file: file)
            let document = OpenAPIExporter.document(for: contract)
            for version in [OpenAPIDocumentWriter.Version.v3_1, .v3_0] {
                #expect(throws: Never.self) { try OpenAPIDocumentWriter.write(document, as: .yaml, version: version) }
            }
            let schema = document["paths"]?["/links"]?["post"]?["requestBody"]?["content"]?["application/json"]?["schema"]?["properties"]
            #expect(schema?["flag"]?["enum"] == ["Y", "N"])
            #expect(schema?["metadata"]?["maxLength"] == nil)
            #expect(schema?["metadata"]?["additionalProperties"] == ["type": "string"])
            #expect(schema?["count"]?["minimum"] == 1)
            #expect(schema?["count"]?["maxLength"] == nil && schema?["count"]?["items"] == nil)
            // The same values pass and fail before and after.
            let validator = SchemaValidator(registry: contract.schemas)
            let body = try #require(contract.endpoints.first?.body?.schema)
            #expect(validator.validate(["flag": nil], against: body).map(\.description) == ["/flag: expected string, got null"])
            #expect(validator.validate(["metadata": ["a": "b"], "count": nil], against: body).isEmpty)
        }
    }

    /// `oneof-nodisc.yaml`: a `oneOf` whose branches have only optional
    /// members was generated as `{}`, which every branch takes; lint then
    /// blamed the document.
    @Test func aGeneratedOneOfBodyMatchesExactlyOneBranch() throws {
        try Self.withFiles([
            (
                "api.yaml",
                """
                openapi: 3.1.0
                info: {title: generated oneOf with a discriminator, version: '1'}
                paths:
                  /transfer:
                    get:
                      responses:
                        '200':
                          description: ok
                          content:
                            application/json:
                              schema: {$ref: '#/components/schemas/Transfer'}
                components:
                  schemas:
                    Transfer:
                      type: object
                      properties:
                        id: {type: string}
                        categoryData:
                          oneOf:
                            - $ref: '#/components/schemas/Bank'
                            - $ref: '#/components/schemas/Card'
                    Bank:
                      type: object
                      properties:
                        type: {type: string, enum: [bank], default: bank}
                        iban: {type: string}
                    Card:
                      type: object
                      properties:
                        type: {type: string, enum: [card], default: card}
                        pan: {type: string}
                """
            )
        ]) { file in
            #expect(ContractDocument.lint(file: file).map(\.description) == [])
            let contract = try ContractDocument.load(file: file)
            let transfer = try #require(contract.schemas["Transfer"])
            let sample = try #require(SchemaSampler(registry: contract.schemas).sample(transfer))
            #expect(sample["categoryData"]?["type"] == "bank")
            #expect(SchemaValidator(registry: contract.schemas).validate(sample, against: transfer).isEmpty)
        }
    }

    /// `strlen.yaml`: lengths were counted in grapheme clusters; JSON Schema counts code points.
    @Test func stringLengthsCountCodePoints() throws {
        try Self.withFiles([
            (
                "api.yaml",
                """
                openapi: 3.1.0
                info: {title: string length counts code points, version: '1'}
                paths:
                  /country:
                    post:
                      requestBody:
                        required: true
                        content:
                          application/json:
                            schema:
                              type: object
                              properties:
                                code: {type: string, minLength: 2, maxLength: 2}
                      responses:
                        '200':
                          description: ok
                          content:
                            application/json:
                              schema: {type: object}
                              example: {ok: true}
                """
            )
        ]) { file in
            let contract = try ContractDocument.load(file: file)
            let validator = SchemaValidator(registry: contract.schemas)
            let body = try #require(contract.endpoints.first?.body?.schema)
            #expect(validator.validate(["code": "🇫🇷"], against: body).isEmpty)
            #expect(validator.validate(["code": "NL"], against: body).isEmpty)
            #expect(validator.validate(["code": "e\u{301}x"], against: body).map(\.description) == ["/code: must be at most 2 characters long"])
            #expect(validator.validate(["code": "é"], against: body).map(\.description) == ["/code: must be at least 2 characters long"])
        }
    }

    /// What OpenAPI 3.2 added that Doppel refused (`in: querystring`, an
    /// `itemSchema` stream) reads clean, and exports again as 3.2.
    @Test func whatThreeTwoAddsIsReadAndExportedAgain() throws {
        try Self.withFiles([
            (
                "api.yaml",
                """
                openapi: 3.2.0
                info: {title: 3.2 streams, version: '1'}
                paths:
                  /items:
                    get:
                      parameters:
                        - { name: all, in: querystring, required: true, content: { application/json: { schema: {type: object, required: [page], properties: {page: {type: integer}}} } } }
                      responses:
                        '200':
                          description: ok
                          content:
                            application/jsonl:
                              itemSchema: {type: object, properties: {id: {type: integer}}}
                """
            )
        ]) { file in
            let found = ContractDocument.lint(file: file).map(\.description)
            #expect(found.isEmpty, "\(found)")
            let contract = try ContractDocument.load(file: file)
            let endpoint = try #require(contract.endpoints.first)
            #expect(endpoint.queryString?.contentTypes == ["application/json"] && endpoint.queryString?.required == true)
            let exported = OpenAPIExporter.document(for: contract)
            #expect(exported["openapi"] == "3.2.0")
            let parameter = exported["paths"]?["/items"]?["get"]?["parameters"]?.arrayValue?.first
            #expect(
                parameter?["in"] == "querystring" && parameter?["content"]?["application/json"]?["schema"]?["required"] == ["page"],
                "\(parameter ?? .null)")
            _ = try OpenAPIDocumentWriter.write(exported, as: .yaml)
        }
    }
}
