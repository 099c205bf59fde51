import DoppelCore
import DoppelOpenAPI
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

private func document(_ name: String) -> String {
    repositoryRoot.appendingPathComponent("Tests/DoppelServerTests/Fixtures/openapi/\(name)").path
}

/// OpenAPI documents served as they are, checked over loopback HTTP.
@Suite("Serving OpenAPI documents")
struct OpenAPIServingTests {
    @Test func aThreeOneDocumentAnswersItsDefaultsPreferencesAndFailuresAsDocumented() async throws {
        try await DoppelTestServer.with(contract: document("pets-3.1.yaml")) { server in
            let client = TestClient(base: server.baseURL)
            // The first 2xx, with its first example; paths below the server URL's path.
            let list = try await client.send("GET", "/api/v2/pets", token: nil)
            #expect(list.status == 200)
            #expect(list.json == [["petType": "cat", "name": "Tom", "lives": 9], ["petType": "dog", "name": "Rex", "goodBoy": true]])
            // Prefer picks another example, another status, or says what is documented.
            let none = try await client.send("GET", "/api/v2/pets", token: nil, headers: ["Prefer": "example=none"])
            #expect(none.status == 200 && none.json == [])
            let bad = try await client.send("GET", "/api/v2/pets", token: nil, headers: ["Prefer": "code=400"])
            #expect(bad.status == 400 && bad.json == ["error": "bad_request"])
            let unknown = try await client.send("GET", "/api/v2/pets", token: nil, headers: ["Prefer": "code=404"])
            #expect(unknown.status == 400)
            #expect(unknown.json?["type"] == "urn:doppel:problem:unknown-preference")
            #expect(unknown.json?["detail"]?.stringValue?.contains("200 two, 200 none, 400") == true)
            // A code that is no status is named as it was written.
            let impossible = try await client.send("GET", "/api/v2/pets", token: nil, headers: ["Prefer": "code=999"])
            #expect(impossible.status == 400)
            #expect(impossible.json?["detail"]?.stringValue?.contains("code=999 (not a status)") == true, "\(impossible.json ?? .null)")
            // An invalid query gets the operation's documented 400.
            let invalid = try await client.send("GET", "/api/v2/pets?limit=0", token: nil)
            #expect(invalid.status == 400 && invalid.json == ["error": "bad_request"])
            let trace = try await client.send("GET", "/api/v2/pets", token: nil, headers: ["X-Trace": "NOT OK"])
            #expect(trace.status == 400)
            let tags = try await client.send("GET", "/api/v2/pets?tags=a&tags=b&limit=5", token: nil)
            #expect(tags.status == 200)

            // Bearer: no token gets the documented 401, its `{{` sent as written.
            let anonymous = try await client.send("POST", "/api/v2/pets", json: ["petType": "dog", "name": "Rex"], token: nil)
            #expect(anonymous.status == 401 && anonymous.json == ["error": "missing token {{ not a template }}"])
            // oneOf by discriminator: a dog is a dog; a cow is no pet; a failing body gets the documented 422.
            let added = try await client.send("POST", "/api/v2/pets", json: ["petType": "dog", "name": "Rex"])
            #expect(added.status == 201)
            #expect(added.header("Location") == "/api/v2/pets/7")
            // No example: generated from the schema (the first oneOf branch), the same every time.
            #expect(added.json == ["petType": "cat", "name": "string", "lives": 0])
            let cow = try await client.send("POST", "/api/v2/pets", json: ["petType": "cow", "name": "Rex"])
            #expect(cow.status == 422 && cow.json == ["error": "invalid_pet"])
            #expect(cow.header("Content-Type") == "application/problem+json")
            let nameless = try await client.send("POST", "/api/v2/pets", json: ["petType": "cat", "name": ""])
            #expect(nameless.status == 422)
            let form = try await client.send(
                "POST", "/api/v2/pets", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Data("petType=cat&name=Tom&lives=3".utf8))
            #expect(form.status == 201)

            // API key in a header, the query or a cookie: any admits; none gets the documented 403.
            let forbidden = try await client.send("GET", "/api/v2/pets/7", token: nil)
            #expect(forbidden.status == 403 && forbidden.json == ["error": "forbidden"])
            for (target, headers) in [
                ("/api/v2/pets/7", ["X-API-Key": "k"]), ("/api/v2/pets/7?api_key=k", [:]), ("/api/v2/pets/7", ["Cookie": "theme=dark; session=abc"]),
            ] {
                let pet = try await client.send("GET", target, token: nil, headers: headers)
                #expect(pet.status == 200, "\(target) \(headers)")
            }
            // Path parameters by type: 0 is not > 0, and "x" no integer; no documented 400 or 422, so Doppel's 422.
            let zero = try await client.send("GET", "/api/v2/pets/0", token: nil, headers: ["X-API-Key": "k"])
            #expect(zero.status == 422)
            #expect(zero.json?["errors"] == [["pointer": "/path/petId", "message": "must be greater than 0, got 0"]])
            let word = try await client.send("GET", "/api/v2/pets/x", token: nil, headers: ["X-API-Key": "k"])
            #expect(word.status == 422)
            let gone = try await client.send("GET", "/api/v2/pets/7", token: nil, headers: ["X-API-Key": "k", "Prefer": "code=404, example=gone"])
            #expect(gone.status == 404 && gone.json == ["error": "not_found", "detail": "the pet is gone"])

            // HTTP basic.
            let credentials = Data("ann:secret".utf8).base64EncodedString()
            let deleted = try await client.send("DELETE", "/api/v2/pets/7", token: nil, headers: ["Authorization": "Basic \(credentials)"])
            #expect(deleted.status == 204)
            // Refused with RFC 7617's challenge: a realm (the API's title) and the charset.
            // Over a raw socket: URLSession on Linux before Swift 6.3.3 never
            // completes a request answered with a Basic challenge (swift-corelibs-foundation#5456).
            let refused = try await rawAnswer(port: server.baseURL.port!, "DELETE /api/v2/pets/7 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(
                refused.hasPrefix("HTTP/1.1 401 Unauthorized\r\n")
                    && refused.contains("\r\nWWW-Authenticate: Basic realm=\"Pets\", charset=\"UTF-8\"\r\n"), "\(refused)")

            // A recursive schema's generated value, with the schema's own example; a cookie parameter's const.
            let category = try await client.send("GET", "/api/v2/categories/mammals", token: nil)
            #expect(category.status == 200)
            #expect(category.json == ["name": "mammals", "children": [["name": "mammals"]]])
            let again = try await client.send("GET", "/api/v2/categories/mammals", token: nil)
            #expect(again.body == category.body)
            #expect(try await client.send("GET", "/api/v2/categories/fish", token: nil).status == 422)
            #expect(try await client.send("GET", "/api/v2/categories/birds", token: nil, headers: ["Cookie": "locale=fr"]).status == 422)

            // prefixItems with `items: false`, and a type list with null.
            let point = try await client.send("POST", "/api/v2/points", json: ["at": [1, 2.5], "label": nil], token: nil)
            #expect(point.status == 201)
            #expect(point.json == ["id": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "created": "2026-01-01T00:00:00Z"])
            let three = try await client.send("POST", "/api/v2/points", json: ["at": [1, 2, 3]], token: nil)
            #expect(three.status == 422)
            #expect(three.json?["errors"]?.arrayValue?.first?["pointer"] == "/body/at/2")
            let text = try await client.send("POST", "/api/v2/points", json: ["at": ["a", 2]], token: nil)
            #expect(text.status == 422)
        }
    }

    @Test func aThreeZeroJSONDocumentReadsNullableAndBooleanExclusiveBounds() async throws {
        try await DoppelTestServer.with(contract: document("shop-3.0.json")) { server in
            let client = TestClient(base: server.baseURL)
            let keyless = try await client.send("GET", "/shop/orders/3", token: nil)
            #expect(keyless.status == 401 && keyless.json == ["message": "key required"])
            let order = try await client.send("GET", "/shop/orders/3", token: nil, headers: ["X-Key": "k"])
            #expect(order.status == 200)
            // Generated: required lines (minItems 1) with the example sku and a price above its exclusive 0; recursion stops.
            #expect(order.json?["id"] == 0)
            #expect(order.json?["lines"] == [["sku": "SKU-1", "price": 1]])
            #expect(order.json?["coupon"] == "string")
            // 3.0's `exclusiveMinimum: true` makes 0 invalid.
            let zero = try await client.send("GET", "/shop/orders/0", token: nil, headers: ["X-Key": "k"])
            #expect(zero.status == 422)
            let missing = try await client.send("GET", "/shop/orders/9", token: nil, headers: ["X-Key": "k", "Prefer": "example=missing"])
            #expect(missing.status == 404 && missing.json == ["message": "no such order"])

            func multipart(_ fields: [(String, String)]) -> Data {
                var text = ""
                for (name, value) in fields { text += "--b\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n" }
                return Data((text + "--b--\r\n").utf8)
            }
            let placed = try await client.send(
                "POST", "/shop/orders", token: nil, headers: ["Content-Type": "multipart/form-data; boundary=b"],
                body: multipart([("item", "tea"), ("quantity", "2")]))
            #expect(placed.status == 201 && placed.json == ["id": 1, "status": "placed"])
            let none = try await client.send(
                "POST", "/shop/orders", token: nil, headers: ["Content-Type": "multipart/form-data; boundary=b"],
                body: multipart([("item", "tea"), ("quantity", "0")]))
            #expect(none.status == 422)
            #expect(none.json?["errors"] == [["pointer": "/body/quantity", "message": "must be at least 1, got 0"]])
        }
    }

    @Test func aScenarioForcesAnOperationsResponseByExampleName() throws {
        let contract = try ContractDocument.load(file: document("pets-3.1.yaml"))
        let scenario = try ScenarioLoader.load(
            text: """
                contract: pets-3.1.yaml
                overrides:
                  - { endpoint: getPet, example: gone }
                  - { endpoint: listPets, status: 200, example: none }
                steps: []
                """, file: document("forced.yaml"), contract: contract)
        let engine = MockEngine(contract: contract)
        _ = engine.sessions.start("s", scenario: scenario)
        let pet = engine.respond(
            to: RecordedRequest(method: "GET", target: "/api/v2/pets/7", headers: [("X-API-Key", "k"), ("Doppel-Session", "s")]))
        #expect(pet.status == 404)
        let list = engine.respond(to: RecordedRequest(method: "GET", target: "/api/v2/pets", headers: [("Doppel-Session", "s")]))
        #expect(list.status == 200 && list.body == Array("[]".utf8))

        let wrong = ContractError.thrown { () throws(ContractError) in
            _ = try ScenarioLoader.load(
                text: "contract: pets-3.1.yaml\noverrides: [{ endpoint: getPet, example: lost }]\nsteps: []\n",
                file: document("forced.yaml"), contract: contract)
        }
        #expect(
            wrong.map(\.message) == ["endpoint 'getPet' documents no 'lost' response; it has 200 getPet[0], 404 gone, 403 getPet.on_unauthorized"])
    }

    /// A document with many operations, each with parameters, a body, several statuses and examples.
    static func manyOperations(_ count: Int) -> String {
        var paths = ""
        for index in 0..<count {
            paths += """
                  /things\(index)/{id}:
                    get:
                      operationId: getThing\(index)
                      parameters:
                        - { name: id, in: path, required: true, schema: { type: integer, minimum: 1 } }
                        - { name: verbose, in: query, schema: { type: boolean } }
                      responses:
                        "200":
                          description: A thing.
                          content:
                            application/json:
                              schema: { $ref: "#/components/schemas/Thing" }
                              examples:
                                first: { value: { id: \(index), name: "thing \(index)" } }
                                second: { value: { id: \(index), name: "other \(index)" } }
                        "404":
                          description: No thing.
                          content: { application/json: { example: { error: "no thing \(index)" } } }
                    put:
                      operationId: putThing\(index)
                      requestBody:
                        required: true
                        content: { application/json: { schema: { $ref: "#/components/schemas/Thing" } } }
                      responses:
                        "200":
                          description: Stored.
                          content: { application/json: { schema: { $ref: "#/components/schemas/Thing" } } }
                        "422":
                          description: Invalid.
                          content: { application/json: { example: { error: invalid } } }

                """
        }
        return """
            openapi: 3.1.0
            info: { title: Many, version: "1" }
            security: [{ token: [] }]
            paths:
            \(paths)
            components:
              securitySchemes:
                token: { type: http, scheme: bearer }
              schemas:
                Thing:
                  type: object
                  required: [id, name]
                  properties:
                    id: { type: integer }
                    name: { type: string, example: widget }
                    tags: { type: [array, "null"], items: { type: string } }
            """
    }

    @Test func importingThenServingAnswersAsServingTheDocument() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-import-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let many = folder.appendingPathComponent("many.yaml").path
        try Self.manyOperations(60).write(toFile: many, atomically: true, encoding: .utf8)

        for file in [many, document("pets-3.1.yaml"), document("shop-3.0.json")] {
            let direct = try ContractDocument.load(file: file)
            let tree = try ContractDocument.contractTree(file: file).tree
            let imported = folder.appendingPathComponent("imported-\(URL(fileURLWithPath: file).lastPathComponent).yaml").path
            try YAMLWriter.yaml(tree).write(toFile: imported, atomically: true, encoding: .utf8)
            // The import is a contract of its own, lint-clean.
            #expect(ContractLoader.lint(file: imported).isEmpty)
            let reloaded = try ContractLoader.load(file: imported)
            #expect(reloaded.endpoints.map(\.id) == direct.endpoints.map(\.id))

            let requests = Self.requests(for: direct)
            #expect(requests.count >= direct.endpoints.count * 4)
            let a = MockEngine(contract: direct)
            let b = MockEngine(contract: reloaded)
            for request in requests {
                let left = a.respond(to: request)
                let right = b.respond(to: request)
                #expect(left.status == right.status, "\(request.method) \(request.path)")
                #expect(left.body == right.body, "\(request.method) \(request.path)")
                #expect(left.headers.map(\.name) == right.headers.map(\.name), "\(request.method) \(request.path)")
            }
        }
    }

    /// For every endpoint: with and without credentials, a valid and an
    /// invalid path or body, and a `Prefer` for each documented status and name.
    static func requests(for contract: Contract) -> [RecordedRequest] {
        var requests: [RecordedRequest] = []
        for endpoint in contract.endpoints {
            let path = endpoint.path.template.replacingOccurrences(of: "{id}", with: "3").replacingOccurrences(of: "{petId}", with: "3")
                .replacingOccurrences(of: "{name}", with: "birds")
            let credentials: [(name: String, value: String)] = [("Authorization", "Bearer t"), ("X-API-Key", "k"), ("X-Key", "k")]
            let body = Array(#"{"id": 1, "name": "n", "petType": "dog"}"#.utf8)
            let json: [(name: String, value: String)] = [("Content-Type", "application/json")]
            requests.append(RecordedRequest(method: endpoint.method, target: path, headers: credentials + json, body: body))
            requests.append(RecordedRequest(method: endpoint.method, target: path, headers: json, body: body))
            requests.append(
                RecordedRequest(
                    method: endpoint.method, target: path.replacingOccurrences(of: "/3", with: "/0"), headers: credentials + json, body: body))
            requests.append(RecordedRequest(method: endpoint.method, target: path, headers: credentials + json, body: Array(#"{"id": "x"}"#.utf8)))
            for response in contract.documentedResponses(of: endpoint) {
                requests.append(
                    RecordedRequest(
                        method: endpoint.method, target: path,
                        headers: credentials + json + [("Prefer", "code=\(response.status), example=\(response.name)")], body: body))
            }
        }
        return requests
    }
}
