import DoppelCore
import DoppelOpenAPI
import DoppelRunner
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

/// Real documents' problems from minimal reproductions, served over loopback.
@Suite("Reproductions served")
struct ReproductionServingTests {
    /// Serves `text` as `api.yaml` from a temporary folder.
    static func serving(_ text: String, _ body: (TestClient) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-served-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("api.yaml")
        try text.write(to: file, atomically: true, encoding: .utf8)
        try await DoppelTestServer.with(contract: file.path) { server in
            try await body(TestClient(base: server.baseURL))
        }
    }

    /// `accept.yaml`: q-values were ignored; the media type `Accept` prefers is answered (RFC 9110 §12.5.1).
    @Test func acceptChoosesByQuality() async throws {
        try await Self.serving(
            """
            openapi: 3.0.2
            info: {title: accept negotiation, version: '1'}
            paths:
              /todos:
                get:
                  responses:
                    '200':
                      description: Get Todo Items
                      content:
                        'application/json':
                          example: hello
                        'application/xml':
                          example: <project><foo>1</foo><bar>2</bar></project>
            """
        ) { client in
            func answered(_ accept: String?) async throws -> String? {
                let answer = try await client.send("GET", "/todos", token: nil, headers: accept.map { ["Accept": $0] } ?? [:])
                return answer.status == 200 ? answer.header("Content-Type") : "\(answer.status)"
            }
            let got1 = try await answered("application/xml;q=0.9, application/json;q=0.1")
            #expect(got1 == "application/xml")
            let got2 = try await answered("application/json;q=0.5, application/xml;q=0.5")
            #expect(got2 == "application/json", "a tie keeps the first documented")
            let got3 = try await answered("application/json;q=0, application/xml")
            #expect(got3 == "application/xml")
            let got4 = try await answered("*/*;q=0.1, application/xml")
            #expect(got4 == "application/xml")
            let got5 = try await answered("application/*;q=0.2, application/json;q=0.1")
            #expect(got5 == "application/xml", "the most specific range gives json its quality")
            let got6 = try await answered("text/html")
            #expect(got6 == "406")
            let got7 = try await answered(nil)
            #expect(got7 == "application/json")
        }
    }

    /// `encpath.yaml`: a `%` in a path's literal (no escape) was not matched by `%25`.
    @Test func aPercentSignInAPathIsMatchedEncoded() async throws {
        try await Self.serving(
            """
            openapi: 3.0.2
            info: {title: encoded path, version: '1'}
            paths:
              /test path > with | unsafe % characters:
                get:
                  responses:
                    '200': { description: ok, content: { application/json: { example: "ok" } } }
              /files/my report:
                get:
                  responses:
                    '200': { description: ok, content: { application/json: { example: "report" } } }
              /done%20already:
                get:
                  responses:
                    '200': { description: ok, content: { application/json: { example: "escaped" } } }
            """
        ) { client in
            let got8 = try await client.send("GET", "/test%20path%20%3E%20with%20%7C%20unsafe%20%25%20characters", token: nil).json
            #expect(got8 == "ok")
            let got9 = try await client.send("GET", "/files/my%20report", token: nil).json
            #expect(got9 == "report")
            let got10 = try await client.send("GET", "/done%20already", token: nil).json
            #expect(got10 == "escaped")
        }
    }

    /// `bigint.yaml`: integers beyond 64 bits in the query were refused while JSON bodies took them.
    @Test func integersBeyondSixtyFourBitsAreIntegers() async throws {
        try await Self.serving(
            """
            openapi: 3.1.0
            info: {title: big integers, version: '1'}
            paths:
              /echo:
                get:
                  parameters:
                    - {name: n, in: query, schema: {type: integer, minimum: 1}}
                  responses:
                    '200': { description: ok, content: { application/json: { example: {ok: true} } } }
            """
        ) { client in
            let got11 = try await client.send("GET", "/echo?n=123456789012345678901234567890", token: nil).status
            #expect(got11 == 200)
            let got12 = try await client.send("GET", "/echo?n=5", token: nil).status
            #expect(got12 == 200)
            let negative = try await client.send("GET", "/echo?n=-123456789012345678901234567890", token: nil)
            #expect(negative.status == 422)
            #expect(
                negative.json?["errors"]?.arrayValue?.first?["message"]?.stringValue?.hasPrefix("must be at least 1") == true,
                "\(negative.json ?? .null)")
            let got13 = try await client.send("GET", "/echo?n=12345678901234567890.5", token: nil).status
            #expect(got13 == 422)
            // Messages name big integers in digits (they printed -1.8446744073709552e+19).
            let twoToThe64 = try await client.send("GET", "/echo?n=-18446744073709551616", token: nil)
            #expect(
                twoToThe64.json?["errors"]?.arrayValue?.first?["message"] == "must be at least 1, got -18446744073709551616",
                "\(twoToThe64.json ?? .null)")
        }
    }

    /// Bounds past 2^53 are kept as written: integers are compared with them
    /// exactly and messages name both as written (a maximum of
    /// 9007199254740993 was the double 9007199254740992.0, and let 9007199254740993 through
    /// a maximum of 9007199254740992 as the same double).
    @Test func integerBoundsPastTwoToTheFiftyThreeAreExact() async throws {
        try await Self.serving(
            """
            doppel: 1
            endpoints:
              e:
                request: POST /e
                body: { schema: { type: object, properties: { n: { type: integer, maximum: 9007199254740993 }, low: { type: integer, maximum: 9007199254740992 }, m: { type: integer, multipleOf: 7 }, big: { type: integer, minimum: -9223372036854775807 } } } }
                responses: [ { status: 204 } ]
            """
        ) { (client: TestClient) async throws in
            func errors(_ body: JSON) async throws -> [String] {
                try await client.send("POST", "/e", json: body, token: nil).json?["errors"]?.arrayValue?.compactMap { $0["message"]?.stringValue }
                    ?? []
            }
            #expect(
                try await errors([
                    "n": 9_007_199_254_740_993, "low": 9_007_199_254_740_992, "m": 9_007_199_254_740_995, "big": -9_223_372_036_854_775_807,
                ]) == [])
            #expect(try await errors(["n": 9_007_199_254_740_994]) == ["must be at most 9007199254740993, got 9007199254740994"])
            #expect(try await errors(["low": 9_007_199_254_740_993]) == ["must be at most 9007199254740992, got 9007199254740993"])
            #expect(try await errors(["m": 9_007_199_254_740_996]) == ["must be a multiple of 7, got 9007199254740996"])
            #expect(try await errors(["big": -9_223_372_036_854_775_808]) == ["must be at least -9223372036854775807, got -9223372036854775808"])
        }
    }

    /// A boolean `required: true` inside a property (a Swagger 2.0-era habit) was fatal; it is a warning, and the document serves.
    @Test func aBooleanRequiredInAPropertyIsAWarning() async throws {
        try await Self.serving(
            """
            openapi: 3.0.3
            info: {title: required true, version: '1'}
            paths:
              /pets:
                post:
                  requestBody:
                    content:
                      application/json:
                        schema:
                          type: object
                          properties:
                            name: {type: string, required: true}
                  responses:
                    '200': { description: ok, content: { application/json: { example: {ok: true} } } }
            """
        ) { client in
            let got14 = try await client.send("POST", "/pets", json: ["name": "Rex"], token: nil).status
            #expect(got14 == 200)
            let got15 = try await client.send("POST", "/pets", json: ["name": 1], token: nil).status
            #expect(got15 == 422)
        }
    }

    static func multipart(_ parts: [(headers: String, content: String)]) -> Data {
        Data((parts.map { "--b\r\n\($0.headers)\r\n\r\n\($0.content)\r\n" }.joined() + "--b--\r\n").utf8)
    }

    /// `multipart-file.yaml`, `multipart-object.yaml`: a file part for `type: string, format: binary` got
    /// 422 "expected string, got object"; a JSON part for an object property was refused.
    @Test func multipartFilesAndJSONPartsAreReadAsOpenAPISaysThem() async throws {
        try await Self.serving(
            """
            openapi: 3.0.3
            info: {title: multipart object part, version: '1'}
            paths:
              /upload:
                post:
                  requestBody:
                    required: true
                    content:
                      multipart/form-data:
                        schema:
                          type: object
                          required: [attributes, file]
                          properties:
                            attributes:
                              type: object
                              required: [name]
                              properties:
                                name: {type: string}
                            file: {type: string, format: binary, maxLength: 10}
                            extras: {type: array, items: {type: string, format: binary}}
                  responses:
                    '201':
                      description: created
                      content:
                        application/json:
                          schema: {type: object, properties: {ok: {type: boolean}}}
                          example: {ok: true}
            """
        ) { client in
            let form = ["Content-Type": "multipart/form-data; boundary=b"]
            let file = (headers: "Content-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\nContent-Type: image/png", content: "PNGDATA")
            let extra = (headers: "Content-Disposition: form-data; name=\"extras\"; filename=\"b.bin\"", content: "xyz")
            let typed = (headers: "Content-Disposition: form-data; name=\"attributes\"\r\nContent-Type: application/json", content: #"{"name":"x"}"#)
            let untyped = (headers: "Content-Disposition: form-data; name=\"attributes\"", content: #"{"name":"x"}"#)
            let accepted = try await client.send("POST", "/upload", token: nil, headers: form, body: Self.multipart([typed, file, extra, extra]))
            #expect(accepted.status == 201, "\(accepted.json ?? .null)")
            // An object property's part is JSON by default, as OpenAPI says.
            let plain = try await client.send("POST", "/upload", token: nil, headers: form, body: Self.multipart([untyped, file]))
            #expect(plain.status == 201, "\(plain.json ?? .null)")
            // Its schema is checked; a file's length (maxLength) counts its bytes.
            let nameless = (headers: "Content-Disposition: form-data; name=\"attributes\"", content: #"{"nam":"x"}"#)
            let large = (headers: file.headers, content: String(repeating: "p", count: 11))
            let refused = try await client.send("POST", "/upload", token: nil, headers: form, body: Self.multipart([nameless, large]))
            #expect(refused.status == 422)
            let messages = refused.json?["errors"]?.arrayValue?.compactMap { $0["pointer"]?.stringValue } ?? []
            #expect(messages == ["/body/attributes/name", "/body/file"], "\(refused.json ?? .null)")
            let broken = (headers: typed.headers, content: "{bad")
            let unreadable = try await client.send("POST", "/upload", token: nil, headers: form, body: Self.multipart([broken, file]))
            #expect(unreadable.status == 422)
            #expect(
                unreadable.json?["errors"]?.arrayValue?.first?["message"]?.stringValue?.hasPrefix("the part is not valid JSON") == true,
                "\(unreadable.json ?? .null)")
        }
    }

    /// `octet-upload.yaml`: a binary response with no example was served empty and without a `Content-Type`.
    @Test func binaryResponsesWithoutAnExampleAreSmallFilesOfTheirType() async throws {
        try await Self.serving(
            """
            openapi: 3.0.3
            info: {title: raw upload, version: '1'}
            paths:
              /raw:
                put:
                  requestBody:
                    required: true
                    content:
                      application/octet-stream:
                        schema: {type: string, format: binary}
                  responses:
                    '204': {description: stored}
              /image:
                get:
                  responses:
                    '200': { description: png, content: { image/png: { schema: {type: string, format: binary} } } }
              /report:
                get:
                  responses:
                    '200': { description: pdf, content: { application/pdf: { schema: {type: string, format: binary} } } }
              /blob:
                get:
                  responses:
                    '200': { description: bytes, content: { application/octet-stream: { schema: {type: string, format: binary} } } }
            """
        ) { client in
            #expect(
                try await client.send("PUT", "/raw", token: nil, headers: ["Content-Type": "application/octet-stream"], body: Data([0, 1, 2, 255]))
                    .status == 204)
            let image = try await client.send("GET", "/image", token: nil)
            #expect(image.header("Content-Type") == "image/png")
            #expect(image.body.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
            let report = try await client.send("GET", "/report", token: nil)
            #expect(report.header("Content-Type") == "application/pdf")
            #expect(
                String(decoding: report.body, as: UTF8.self).hasPrefix("%PDF-1.4")
                    && String(decoding: report.body, as: UTF8.self).hasSuffix("%%EOF\n"))
            let blob = try await client.send("GET", "/blob", token: nil)
            #expect(blob.status == 200 && blob.header("Content-Type") == "application/octet-stream" && blob.body.isEmpty)
        }
    }

    /// `xml.yaml`: an XML media type with a structured example was dropped; `Accept: application/xml` got JSON.
    @Test func aStructuredXMLExampleIsServedAsXML() async throws {
        try await Self.serving(
            """
            openapi: 3.0.0
            info: {title: xml, version: "1"}
            paths:
              /pets:
                get:
                  responses:
                    "200":
                      description: successful operation
                      content:
                        application/json:
                          schema: { $ref: "#/components/schemas/Pet" }
                          examples: { response: { value: { id: 2, name: Fluffy, status: available } } }
                        application/xml:
                          schema: { $ref: "#/components/schemas/Pet" }
                          examples: { response: { value: { id: 1, name: "Sharik & <co>", tags: [a, b], status: available } } }
            components:
              schemas:
                Pet:
                  type: object
                  required: [name]
                  properties:
                    id: { type: integer, format: int64 }
                    name: { type: string, example: doggie }
                    status: { type: string, enum: [available, pending, sold] }
            """
        ) { client in
            let xml = try await client.send("GET", "/pets", token: nil, headers: ["Accept": "application/xml"])
            #expect(xml.header("Content-Type") == "application/xml")
            #expect(
                String(decoding: xml.body, as: UTF8.self)
                    == "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Pet><id>1</id><name>Sharik &amp; &lt;co&gt;</name><tags>a</tags><tags>b</tags><status>available</status></Pet>"
            )
            let json = try await client.send("GET", "/pets", token: nil)
            #expect(json.json == ["id": 2, "name": "Fluffy", "status": "available"])
        }
    }

    /// `swagger20-minimal.yaml`: a Swagger 2.0 document was read as a Doppel contract ("unknown key 'paths'").
    @Test func swaggerTwoDocumentsServeAsTheySay() async throws {
        try await Self.serving(
            """
            swagger: "2.0"
            info: { title: Shop, version: "1" }
            host: shop.example
            basePath: /v1
            schemes: [https]
            consumes: [application/json]
            produces: [application/json]
            securityDefinitions:
              key: { type: apiKey, name: X-Key, in: header }
            parameters:
              Limit: { name: limit, in: query, type: integer, minimum: 1, maximum: 50 }
            paths:
              /items:
                get:
                  operationId: listItems
                  parameters:
                    - $ref: "#/parameters/Limit"
                    - { name: tags, in: query, type: array, items: { type: string }, collectionFormat: csv }
                  responses:
                    "200":
                      description: items
                      headers: { X-Total: { type: integer } }
                      schema: { type: array, items: { $ref: "#/definitions/Item" } }
                      examples: { application/json: [ { id: 1, name: pen, note: null } ] }
                post:
                  operationId: addItem
                  security: [ { key: [] } ]
                  parameters:
                    - { name: item, in: body, required: true, schema: { $ref: "#/definitions/Item" } }
                  responses:
                    "201": { description: added, schema: { $ref: "#/definitions/Item" } }
                    "401": { description: no key }
              /items/{id}/photo:
                post:
                  operationId: uploadPhoto
                  consumes: [multipart/form-data]
                  parameters:
                    - { name: id, in: path, required: true, type: integer }
                    - { name: file, in: formData, required: true, type: file }
                    - { name: caption, in: formData, type: string, maxLength: 5 }
                  responses:
                    "204": { description: stored }
            definitions:
              Item:
                type: object
                required: [id, name]
                properties:
                  id: { type: integer }
                  name: { type: string }
                  note: { type: string, x-nullable: true }
            """
        ) { client in
            let list = try await client.send("GET", "/v1/items?limit=5&tags=a,b", token: nil)
            #expect(list.status == 200 && list.json == [["id": 1, "name": "pen", "note": nil]], "\(list.json ?? .null)")
            #expect(try await client.send("GET", "/v1/items?limit=99", token: nil).status == 422)
            let noKey = try await client.send("POST", "/v1/items", json: ["id": 2, "name": "ink"], token: nil)
            #expect(noKey.status == 401)
            let added = try await client.send("POST", "/v1/items", json: ["id": 2, "name": "ink"], token: nil, headers: ["X-Key": "k"])
            #expect(added.status == 201, "\(added.json ?? .null)")
            let invalid = try await client.send("POST", "/v1/items", json: ["id": "two"], token: nil, headers: ["X-Key": "k"])
            #expect(invalid.status == 422)
            let form = ["Content-Type": "multipart/form-data; boundary=b"]
            let file = (headers: "Content-Disposition: form-data; name=\"file\"; filename=\"a.png\"", content: "PNG")
            let caption = (headers: "Content-Disposition: form-data; name=\"caption\"", content: "hello")
            #expect(
                try await client.send("POST", "/v1/items/3/photo", token: nil, headers: form, body: Self.multipart([file, caption])).status == 204)
            let long = (headers: caption.headers, content: "too long")
            #expect(try await client.send("POST", "/v1/items/3/photo", token: nil, headers: form, body: Self.multipart([file, long])).status == 422)
            #expect(try await client.send("POST", "/v1/items/3/photo", token: nil, headers: form, body: Self.multipart([caption])).status == 422)
        }
    }

    /// `oas32-query.yaml`: OpenAPI 3.2 documents were refused (and yet listened to, answering 3.2's
    /// operations 404). The QUERY operation and `additionalOperations` are served; `dataValue` examples read.
    @Test func openAPIThreeTwoOperationsAreServed() async throws {
        try await Self.serving(
            """
            openapi: 3.2.0
            info: {title: 3.2 features, version: '1'}
            tags:
              - { name: search, kind: nav, summary: Search }
              - { name: admin, parent: search }
            paths:
              /search:
                query:
                  requestBody:
                    required: true
                    content:
                      application/json:
                        schema: {type: object, required: [q], properties: {q: {type: string}}}
                  responses:
                    '200':
                      summary: the hits
                      description: ok
                      content:
                        application/json:
                          examples: { some: { dataValue: {hits: 1} } }
                additionalOperations:
                  PURGE:
                    responses:
                      '204': {description: purged}
            """
        ) { client in
            let found = try await client.send("QUERY", "/search", json: ["q": "x"], token: nil)
            #expect(found.status == 200 && found.json == ["hits": 1], "\(found.status) \(found.json ?? .null)")
            #expect(try await client.send("QUERY", "/search", json: ["r": "x"], token: nil).status == 422)
            #expect(try await client.send("PURGE", "/search", token: nil).status == 204)
            #expect(try await client.send("GET", "/search", token: nil).status == 405)
        }
    }
    /// OpenAPI 3.2's `in: querystring` (once refused): the whole query as one
    /// JSON value, served, checked and verified.
    @Test func openAPIThreeTwoQueryStringIsServedAndVerified() async throws {
        let document = """
            openapi: 3.2.0
            info: {title: querystring, version: '1'}
            paths:
              /search:
                get:
                  parameters:
                    - name: filter
                      in: querystring
                      required: true
                      content:
                        application/json:
                          schema: {type: object, required: [numbers], properties: {numbers: {type: array, items: {type: integer}}}}
                  responses:
                    '200': {description: ok, content: {application/json: {example: {found: 1}}}}
            """
        try await Self.serving(document) { (client: TestClient) async throws in
            #expect(try await client.send("GET", "/search?%7B%22numbers%22%3A%5B1%2C2%5D%7D", token: nil).json == ["found": 1])
            #expect(try await client.send("GET", "/search", token: nil).status == 422)
            #expect(try await client.send("GET", "/search?%7B%22numbers%22%3A%22x%22%7D", token: nil).status == 422)
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-qs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("api.yaml").path
        let loose = folder.appendingPathComponent("loose.yaml").path
        try document.write(toFile: file, atomically: true, encoding: .utf8)
        // A provider that takes any query.
        try "doppel: 1\nendpoints:\n  s: { request: GET /search, responses: [ { body: { found: 1 } } ] }\n".write(
            toFile: loose, atomically: true, encoding: .utf8)
        let contract = try ContractDocument.load(file: file)
        try await DoppelTestServer.with(contract: file) { server in
            let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: .inTheSuite).run()
            #expect(report.failed == 0 && report.notReached == 0, "\(report.checks.flatMap(VerifyReport.lines))")
        }
        try await DoppelTestServer.with(contract: loose) { server in
            let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: .inTheSuite).run()
            let said = report.checks.filter { $0.outcome == .failed }.flatMap(VerifyReport.lines).joined(separator: "\n")
            #expect(said.contains("a query string that is not JSON"), "\(said)")
        }
    }
}
