import DoppelCore
import DoppelOpenAPI
import Foundation
import Testing

/// Writes `text` to `api.yaml` in a temporary folder, runs `body` on its path and folder, then removes the folder.
private func withDocument<T>(_ text: String, _ body: (_ file: String, _ folder: String) throws -> T) throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-openapi-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("api.yaml").path
    try text.write(toFile: file, atomically: true, encoding: .utf8)
    return try body(file, folder.path)
}

/// Every diagnostic of loading `text` as a document named `api.yaml`.
private func diagnostics(_ text: String) throws -> [String] {
    try withDocument(text) { file, folder in
        ContractDocument.lint(file: file).map { $0.description.replacingOccurrences(of: folder + "/", with: "") }
    }
}

@Suite("OpenAPI import")
struct OpenAPIImportTests {
    @Test func everyProblemInADocumentIsLocatedInIt() throws {
        let found = try diagnostics(
            """
            openapi: 3.1.0
            info: { title: Broken, version: "1" }
            paths:
              /a:
                get:
                  responses:
                    "200":
                      description: ok
                      content:
                        application/json:
                          schema: { $ref: "#/components/schemas/Missing" }
              /b:
                post:
                  requestBody:
                    content:
                      application/json:
                        schema: { $ref: "#/components/schemas/Item" }
                        example: { count: "three" }
                  responses:
                    "201":
                      description: created
                      content:
                        application/json:
                          schema: { $ref: "#/components/schemas/Item" }
                          example: { count: -1 }
            components:
              schemas:
                Item:
                  type: object
                  properties:
                    count: { type: integer, minimum: 0 }
                    label: { type: strin }
            """)
        // The document's own mistakes: each a warning, located, and the document serves.
        #expect(found.filter { $0.contains(": error: ") } == [])
        for expected in [
            "api.yaml:11:31: warning: unresolved $ref '#/components/schemas/Missing': components.schemas has no 'Missing'; any value is accepted there",
            "api.yaml:18:22: warning: the example body of endpoint 'post-b' breaks its schema at /count: expected integer, got string; it is served as written",
            "api.yaml:25:24: warning: the body of response post-b[0] breaks its schema at /count: must be at least 0, got -1; it is served as written",
            "api.yaml:32:24: warning: unknown type 'strin' in property 'label' of schema 'Item' (did you mean 'string'?); it is left out, and the other types checked",
        ] {
            #expect(found.contains(expected), "\(expected) not in \(found)")
        }
        // OpenAPIKit's own reading stops at the bad type; it says so once.
        #expect(found.filter { $0.contains(": warning: OpenAPIKit cannot read this schema") }.count == 1)
    }

    @Test func aLargeDocumentConvertedInSlicesKeepsEveryOperationIdAndProblem() throws {
        // Enough operations to be converted on several threads. Every
        // third repeats an operationId (ids stay unique, in document
        // order); every seventh has a status that is not one.
        let count = 420
        var text = "openapi: 3.1.0\ninfo: { title: Many, version: \"1\" }\npaths:\n"
        for index in 0..<count {
            let id = index % 3 == 0 ? "same" : "op\(index)"
            let status = index % 7 == 0 ? "\"2x0\"" : "\"200\""
            text += "  /p\(index):\n    get:\n      operationId: \(id)\n      responses: { \(status): { description: ok } }\n"
        }
        let source = try withDocument(text) { file, _ in try ContractDocument.contractTree(file: file, checkingWithOpenAPIKit: false) }
        let ids = source.tree["endpoints"]?.mappingPairs?.compactMap(\.key.scalarText) ?? []
        var expected: [String] = []
        var repeats = 0
        for index in 0..<count {
            if index % 3 == 0 {
                repeats += 1
                expected.append(repeats == 1 ? "same" : "same-\(repeats)")
            } else {
                expected.append("op\(index)")
            }
        }
        #expect(ids == expected)
        let statuses = source.diagnostics.filter { $0.message.hasPrefix("response status '2x0'") }
        #expect(statuses.map(\.location.line) == (0..<count).filter { $0 % 7 == 0 }.map { 4 * $0 + 7 })
    }

    @Test func twentyThousandOperationsOfOneIdAreNumberedInOrder() throws {
        // Numbered from 2 each time, the ids took time of the square of the count.
        var text = "openapi: 3.1.0\ninfo: { title: Same, version: \"1\" }\npaths:\n"
        for index in 0..<20_000 { text += "  /p\(index): { get: { operationId: same, responses: { \"200\": { description: ok } } } }\n" }
        let source = try withDocument(text) { file, _ in try ContractDocument.contractTree(file: file, checkingWithOpenAPIKit: false) }
        let ids = source.tree["endpoints"]?.mappingPairs?.compactMap(\.key.scalarText) ?? []
        #expect(ids.count == 20_000)
        #expect(ids.first == "same")
        #expect(ids.last == "same-20000")
        #expect(Set(ids).count == 20_000)
    }

    @Test func openAPIKitsValidationOfAVeryLargeDocumentIsSkippedWithAWarning() throws {
        let count = ContractDocument.largestValidatedMap + 1
        var text = "openapi: 3.1.0\ninfo: { title: Large, version: \"1\" }\npaths:\n"
        for index in 0..<count { text += "  /p\(index): { get: { operationId: op\(index), responses: { \"200\": { description: ok } } } }\n" }
        let found = try diagnostics(text)
        #expect(
            found == [
                "api.yaml:1:1: warning: OpenAPIKit's validation was skipped: the document has a map of \(count) entries (paths or components), more than \(count - 1); Doppel's own checks still ran"
            ])
    }

    @Test func servingMakesEachEndpointAsItIsReadToTheSameContract() throws {
        // Served, a document's endpoints are made one at a time as the
        // loader reads them; imported, they are a tree first. Both give the
        // same endpoints and the same problems, in slices on every core.
        func document(broken: Bool) -> String {
            var text = "openapi: 3.1.0\ninfo: { title: Many, version: \"1\" }\npaths:\n"
            for index in 0..<420 {
                let status = broken && index % 7 == 0 ? "\"2x0\"" : "\"200\""
                let style = index % 5 == 0 ? "style: deepObject, " : ""
                text += "  /p\(index)/{id}:\n    get:\n      operationId: \(index % 3 == 0 ? "same" : "op\(index)")\n"
                text +=
                    "      parameters: [{ name: id, in: path, required: true, \(style)schema: { type: integer, minimum: \(index % 11 == 0 && broken ? "x" : "1") } }]\n"
                text += "      responses: { \(status): { description: ok, content: { application/json: { example: { n: \(index) } } } } }\n"
            }
            return text
        }
        try withDocument(document(broken: false)) { file, _ in
            let source = try ContractDocument.contractTree(file: file, checkingWithOpenAPIKit: false)
            let whole = try ContractLoader.load(root: source.tree, file: file, warnings: source.diagnostics)
            let inParts = try ContractDocument.load(file: file, checkingWithOpenAPIKit: false)
            #expect(inParts.endpoints.count == 420)
            #expect(inParts.endpoints.map(\.id) == whole.endpoints.map(\.id))
            #expect(inParts.endpoints.map(\.path.template) == whole.endpoints.map(\.path.template))
            #expect(inParts.endpoints.map { $0.responses.count } == whole.endpoints.map { $0.responses.count })
        }
        try withDocument(document(broken: true)) { file, _ in
            let source = try ContractDocument.contractTree(file: file, checkingWithOpenAPIKit: false)
            let whole = ContractError.thrown { () throws(ContractError) in
                _ = try ContractLoader.load(root: source.tree, file: file, warnings: source.diagnostics)
            }
            let inParts = ContractError.thrown { () throws(ContractError) in
                _ = try ContractDocument.load(file: file, checkingWithOpenAPIKit: false)
            }
            #expect(whole.filter { $0.severity == .error }.count == 60 + 39)
            #expect(whole.filter { $0.message.contains("style deepObject") }.count == 84)
            #expect(inParts.map(\.description) == whole.map(\.description))
        }
    }

    @Test func parametersAreGroupedByPlaceTheOperationsOwnFirst() throws {
        let text = """
            openapi: 3.1.0
            info: { title: Params, version: "1" }
            paths:
              /a/{id}:
                parameters:
                  - { name: id, in: path, schema: { type: string } }
                  - { name: limit, in: query, required: true, schema: { type: string } }
                  - { name: X-Trace, in: header, schema: { type: string } }
                get:
                  parameters:
                    - { name: limit, in: query, schema: { type: integer } }
                    - { name: Accept, in: header, schema: { type: string } }
                    - { name: AUTHORIZATION, in: header, schema: { type: string } }
                    - { name: session, in: cookie, required: true, schema: { type: string } }
                    - { name: legacy, in: body, schema: { $ref: "#/components/schemas/Missing" } }
                  responses: { "200": { description: ok } }
            """
        let source = try withDocument(text) { file, _ in try ContractDocument.contractTree(file: file, checkingWithOpenAPIKit: false) }
        let endpoint = try #require(source.tree["endpoints"]?["get-a-id"])
        #expect(endpoint["path"]?.json == ["type": "object", "required": ["id"], "properties": ["id": ["type": "string"]]])
        // The operation's `limit` replaces the path item's, required or not.
        #expect(endpoint["query"]?.json == ["type": "object", "properties": ["limit": ["type": "integer"]]])
        // Accept and Authorization are described elsewhere in OpenAPI, in any case.
        #expect(endpoint["headers"]?.json == ["type": "object", "properties": ["X-Trace": ["type": "string"]]])
        #expect(endpoint["cookies"]?.json == ["type": "object", "required": ["session"], "properties": ["session": ["type": "string"]]])
        // A place OpenAPI 3 does not have is left out, its schema still checked.
        #expect(endpoint["body"] == nil)
        #expect(
            source.diagnostics.map(\.message).contains(
                "unresolved $ref '#/components/schemas/Missing': components.schemas has no 'Missing'; any value is accepted there"))
    }

    @Test func theDocumentsSecurityIsReadOnceForAllOperations() throws {
        // Its problems are reported once, not once an operation; an
        // operation without security of its own has it.
        let text = """
            openapi: 3.1.0
            info: { title: Security, version: "1" }
            security: [{ token: [], key: [] }, { ghost: [] }]
            paths:
              /a: { get: { responses: { "200": { description: ok } } } }
              /b: { get: { responses: { "200": { description: ok } } } }
              /c: { get: { security: [], responses: { "200": { description: ok } } } }
            components:
              securitySchemes:
                token: { type: http, scheme: bearer }
                key: { type: apiKey, in: header, name: X-Key }
            """
        let source = try withDocument(text) { file, _ in try ContractDocument.contractTree(file: file, checkingWithOpenAPIKit: false) }
        let messages = source.diagnostics.map(\.message)
        #expect(messages.filter { $0.contains("which components.securitySchemes does not declare") }.count == 1)
        #expect(messages.filter { $0.contains("several schemes at once") }.count == 1)
        #expect(source.tree["auth"]?["default"]?.json == ["token"])
        #expect(source.tree["endpoints"]?["get-a"]?["auth"] == nil)
        #expect(source.tree["endpoints"]?["get-c"]?["auth"]?.json == "none")
    }

    @Test func structuralProblemsComeFromOpenAPIKitAtTheirPlace() throws {
        let found = try diagnostics(
            """
            openapi: 3.1.0
            info: { title: Broken, version: "1" }
            paths:
              /a:
                get:
                  responses:
                    "200": { description: ok }
                  parameters:
                    - { name: q, in: nowhere, schema: { type: string } }
            """)
        #expect(found.count == 1)
        #expect(found.first?.hasPrefix("api.yaml:9:") == true || found.first?.hasPrefix("api.yaml:8:") == true, "\(found)")
        // Found by OpenAPIKit alone: a warning, as serving (which runs that check beside the server) takes it.
        #expect(found.first?.contains("warning: not a valid OpenAPI 3.1.0 document") == true)

        let version = try diagnostics("openapi: 2.0.0\ninfo: { title: Old, version: '1' }\npaths: {}\n")
        #expect(version == ["api.yaml:1:10: error: OpenAPI 2.0.0 is not supported; Doppel reads OpenAPI 3.0, 3.1 and 3.2 documents, and Swagger 2.0"])
    }

    @Test func referencesThatCannotBeReadOrLoopAreRefused() throws {
        let missing = try diagnostics(
            """
            openapi: 3.1.0
            info: { title: Refs, version: "1" }
            paths:
              /a:
                get:
                  parameters:
                    - $ref: "other.yaml#/components/parameters/Q"
                  responses:
                    "200": { description: ok }
            """)
        #expect(
            missing.count == 1 && missing[0].hasSuffix("error: $ref 'other.yaml#/components/parameters/Q' cannot be read: no such file"), "\(missing)"
        )
        let loop = try diagnostics(
            """
            openapi: 3.1.0
            info: { title: Refs, version: "1" }
            paths:
              /a:
                get:
                  responses:
                    "200": { $ref: "#/components/responses/Loop" }
            components:
              responses:
                Loop: { $ref: "#/components/responses/Loop" }
            """)
        #expect(loop.contains { $0.contains("$ref chain longer than 32 hops") }, "\(loop)")
    }

    @Test func schemaReferencesNameAComponentSchema() throws {
        let found = try diagnostics(
            """
            openapi: 3.1.0
            info: { title: Refs, version: "1" }
            paths:
              /a:
                get:
                  responses:
                    "200":
                      description: ok
                      content:
                        application/json:
                          schema:
                            type: object
                            properties:
                              deep: { $ref: "#/components/schemas/Item/properties/id" }
                              other: { $ref: "#/paths" }
                              escaped: { $ref: "#/components/schemas/A~1B" }
                              encoded: { $ref: "#/components/schemas/With%20Space" }
            components:
              schemas:
                Item: { type: object, properties: { id: { type: integer } } }
                A/B: { type: string }
                With Space: { type: string }
            """
        ).filter { $0.contains(": error: ") }
        // A pointer into a schema is followed (JSON Schema allows any); one to what is no schema is an error.
        #expect(
            found == [
                "api.yaml:15:34: error: $ref '#/paths' does not point at a schema (schemas are under components.schemas, a 'schema' or '$defs')"
            ])
    }

    @Test func pointersIntoSchemasAnchorsAndIdsAreFollowed() throws {
        try withDocument(
            """
            openapi: 3.1.0
            info: { title: Refs, version: "1" }
            paths:
              /a:
                post:
                  requestBody:
                    content:
                      application/json:
                        schema:
                          type: object
                          properties:
                            id: { $ref: "#/components/schemas/Item/properties/id" }
                            tag: { $ref: "#/components/schemas/Item/$defs/tag" }
                            node: { $ref: "https://example.com/tree#node" }
                  responses: { "200": { description: ok } }
            components:
              schemas:
                Item:
                  type: object
                  properties: { id: { type: integer, minimum: 1 } }
                  $defs: { tag: { type: string, maxLength: 3 } }
                Tree:
                  $id: https://example.com/tree
                  $defs:
                    node:
                      $anchor: node
                      type: object
                      properties: { children: { type: array, items: { $ref: "#node" } }, leaf: { $ref: leaf } }
                Leaf:
                  $id: https://example.com/leaf
                  type: boolean
            """
        ) { file, _ in
            let contract = try ContractDocument.load(file: file, checkingWithOpenAPIKit: false)
            let body = try #require(contract.endpoints.first?.body?.schema)
            let validator = SchemaValidator(registry: contract.schemas)
            #expect(validator.validate(["id": 2, "tag": "abc", "node": ["children": [["leaf": true], ["children": []]]]], against: body).isEmpty)
            let issues = validator.validate(["id": 0, "tag": "abcd", "node": ["children": [["leaf": "yes"]]]], against: body).map(\.description)
            #expect(
                issues == [
                    "/id: must be at least 1, got 0", "/tag: must be at most 3 characters long",
                    "/node/children/0/leaf: expected boolean, got string",
                ])
        }
    }

    /// JSON Schema 2020-12's extensible tree: `StrictTree` extends `Tree`
    /// by its own `$dynamicAnchor`, so the nodes deep inside a strict tree
    /// are strict too, while a plain tree's are not.
    @Test func aDynamicReferenceIsResolvedInTheDynamicScope() throws {
        try withDocument(
            """
            openapi: 3.1.0
            info: { title: Trees, version: "1" }
            paths:
              /strict:
                post:
                  requestBody: { content: { application/json: { schema: { $ref: "#/components/schemas/StrictTree" } } } }
                  responses: { "200": { description: ok } }
              /plain:
                post:
                  requestBody: { content: { application/json: { schema: { $ref: "#/components/schemas/Tree" } } } }
                  responses: { "200": { description: ok } }
            components:
              schemas:
                Tree:
                  $id: https://example.com/tree
                  $dynamicAnchor: node
                  type: object
                  properties:
                    data: true
                    children: { type: array, items: { $dynamicRef: "#node" } }
                StrictTree:
                  $id: https://example.com/strict-tree
                  $dynamicAnchor: node
                  $ref: tree
                  unevaluatedProperties: false
            """
        ) { file, _ in
            let diagnostics = ContractDocument.lint(file: file)
            #expect(!diagnostics.contains { $0.message.contains("dynamicRef") }, "\(diagnostics)")
            let contract = try ContractDocument.load(file: file)
            let validator = SchemaValidator(registry: contract.schemas)
            let strict = try #require(contract.endpoints.first { $0.id == "post-strict" }?.body?.schema)
            let plain = try #require(contract.endpoints.first { $0.id == "post-plain" }?.body?.schema)
            let misspelled: JSON = ["children": [["daat": 1]]]
            #expect(validator.validate(["children": [["data": 1, "children": []]]], against: strict).isEmpty)
            #expect(
                validator.validate(misspelled, against: strict).map(\.description) == [
                    "/children/0/daat: is not an allowed property (unevaluatedProperties)"
                ])
            #expect(validator.validate(misspelled, against: plain).isEmpty)
            // The import says it in the contract's words, and serves the same.
            let source = try ContractDocument.contractTree(file: file)
            let text = try YAMLWriter.yaml(source.tree)
            #expect(text.contains("$dynamicRef:") && text.contains("$dynamicScope:"), "\(text)")
            let imported = try ContractLoader.load(text: text, file: "trees.yaml")
            let again = SchemaValidator(registry: imported.schemas)
            let importedStrict = try #require(imported.endpoints.first { $0.id == "post-strict" }?.body?.schema)
            #expect(again.validate(misspelled, against: importedStrict).count == 1)
            // An export writes the first target as a plain $ref, which OpenAPIKit reads.
            _ = try OpenAPIDocumentWriter.write(OpenAPIExporter.document(for: contract), as: .yaml)
        }
        // One that leads nowhere is said once, at its place.
        let broken = try diagnostics(
            """
            openapi: 3.1.0
            info: { title: Trees, version: "1" }
            paths: {}
            components:
              schemas:
                Tree: { type: array, items: { $dynamicRef: "#missing" } }
            """)
        #expect(broken.count == 1 && broken.first?.contains("error: unresolved $ref '#missing': no $anchor 'missing'") == true, "\(broken)")
    }

    @Test func aURLIsReadFromItsCopyInTheDocumentsFolderAndNeverFetched() throws {
        try withDocument(
            """
            openapi: 3.1.0
            info: { title: Remote, version: "1" }
            paths:
              /pets:
                post:
                  parameters:
                    - $ref: "https://schemas.example.com/common/v1/parts.yaml#/parameters/trace"
                  requestBody:
                    content:
                      application/json:
                        schema: { $ref: "https://schemas.example.com/common/v1/pet.json#/$defs/Pet" }
                  responses: { "200": { description: ok } }
            """
        ) { file, folder in
            let copies = folder + "/schemas.example.com/common/v1"
            try FileManager.default.createDirectory(atPath: copies, withIntermediateDirectories: true)
            // Inside a copy, a relative reference is relative to the URL it stands for.
            try
                #"{"$id": "https://schemas.example.com/common/v1/pet.json", "$defs": {"Pet": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "tag": {"$ref": "tag.json"}}}}}"#
                .write(toFile: copies + "/pet.json", atomically: true, encoding: .utf8)
            try #"{"type": "string", "maxLength": 3}"#.write(toFile: copies + "/tag.json", atomically: true, encoding: .utf8)
            try "parameters:\n  trace: { name: X-Trace, in: header, required: true, schema: { type: string } }\n"
                .write(toFile: copies + "/parts.yaml", atomically: true, encoding: .utf8)
            let contract = try ContractDocument.load(file: file, checkingWithOpenAPIKit: false)
            let endpoint = try #require(contract.endpoints.first)
            #expect(endpoint.headers?.required.map { $0.lowercased() } == ["x-trace"])
            let body = try #require(endpoint.body?.schema)
            let validator = SchemaValidator(registry: contract.schemas)
            #expect(validator.validate(["name": "Rex", "tag": "dog"], against: body).isEmpty)
            #expect(
                validator.validate(["tag": "poodle"], against: body).map(\.description) == [
                    "/name: is required", "/tag: must be at most 3 characters long",
                ])
        }
        // No copy: the error says where one would be read; a path that climbs out of its host's folder is never read.
        let missing = try diagnostics(
            """
            openapi: 3.1.0
            info: { title: Remote, version: "1" }
            paths:
              /a:
                post:
                  requestBody: { content: { application/json: { schema: { $ref: "https://example.com/pet.json" } } } }
                  responses: { "200": { description: ok } }
              /b:
                post:
                  requestBody: { content: { application/json: { schema: { $ref: "https://example.com/../../api.yaml" } } } }
                  responses: { "200": { description: ok } }
            """)
        #expect(missing.count == 2, "\(missing)")
        #expect(
            missing.first?.hasPrefix("api.yaml:6:") == true
                && missing.first?.contains("Doppel does not fetch from the network: save a copy of it in the document's folder as HOST/PATH") == true,
            "\(missing)")
        #expect(missing.last?.hasPrefix("api.yaml:10:") == true, "\(missing)")
    }

    /// OpenAPI 3.2's `$self`: the URI the document gives itself is the base
    /// of its references, and a URI below its folder names the file at that
    /// place below the document's own folder (where it is read, never fetched).
    @Test func aDocumentsSelfURIIsTheBaseOfItsReferences() throws {
        try withDocument(
            """
            openapi: 3.2.0
            $self: https://api.example.com/v1/openapi.yaml
            info: { title: Self, version: "1" }
            paths:
              /pets:
                post:
                  requestBody: { content: { application/json: { schema: { $ref: "https://api.example.com/v1/schemas/pet.yaml" } } } }
                  responses: { "200": { description: ok } }
              /owners:
                post:
                  requestBody: { content: { application/json: { schema: { $ref: "https://api.example.com/v1/openapi.yaml#/components/schemas/Owner" } } } }
                  responses: { "200": { description: ok } }
            components:
              schemas:
                Owner: { type: object, required: [name], properties: { name: { type: string, maxLength: 4 } } }
            """
        ) { file, folder in
            try FileManager.default.createDirectory(atPath: folder + "/schemas", withIntermediateDirectories: true)
            // Relative to its URI, https://api.example.com/v1/schemas/pet.yaml: `../openapi.yaml` is the document.
            try
                "type: object\nrequired: [owner]\nproperties:\n  owner: { $ref: '../openapi.yaml#/components/schemas/Owner' }\n  id: { $id: 'ids/pet-id', type: integer }\n  same: { $ref: 'ids/pet-id' }\n"
                .write(toFile: folder + "/schemas/pet.yaml", atomically: true, encoding: .utf8)
            let contract = try ContractDocument.load(file: file, checkingWithOpenAPIKit: true)
            let validator = SchemaValidator(registry: contract.schemas)
            let pets = try #require(contract.endpoints.first { $0.id == "post-pets" }?.body?.schema)
            #expect(validator.validate(["owner": ["name": "Ann"], "id": 1, "same": 2], against: pets).isEmpty)
            #expect(
                validator.validate(["owner": ["name": "Annabel"], "same": "x"], against: pets).map(\.description)
                    == ["/owner/name: must be at most 4 characters long", "/same: expected integer, got string"])
            let owners = try #require(contract.endpoints.first { $0.id == "post-owners" }?.body?.schema)
            #expect(validator.validate(["name": 5], against: owners).map(\.description) == ["/name: expected string, got integer"])
        }
        // Another host is still never fetched.
        let elsewhere = try diagnostics(
            """
            openapi: 3.2.0
            $self: https://api.example.com/v1/openapi.yaml
            info: { title: Self, version: "1" }
            paths:
              /a:
                post:
                  requestBody: { content: { application/json: { schema: { $ref: "https://api.example.com/v2/pet.yaml" } } } }
                  responses: { "200": { description: ok } }
            """)
        #expect(elsewhere.count == 1 && elsewhere.first?.contains("Doppel does not fetch from the network") == true, "\(elsewhere)")
    }

    /// What a vendor's document of 2,900 files does (DigitalOcean's): a
    /// discriminator's mapping into another file, a header named `x-…`
    /// given by reference, a `properties` map shared by reference, and an
    /// integer bound past 64 bits. Each was refused or lost before.
    @Test func aMultiFileVendorDocumentsWaysAreRead() throws {
        try withDocument(
            """
            openapi: 3.0.0
            info: { title: Actions, version: "2" }
            paths:
              /actions:
                post:
                  requestBody: { content: { application/json: { schema: { $ref: "models/actions.yml#/action" } } } }
                  responses:
                    "400": { $ref: "responses/bad.yml" }
                    "200":
                      description: ok
                      content: { application/json: { schema: { type: object, properties: { bytes: { type: integer, maximum: 18446744073709551615 } } } } }
            """
        ) { file, folder in
            try FileManager.default.createDirectory(atPath: folder + "/models", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: folder + "/responses", withIntermediateDirectories: true)
            try """
            action:
              type: object
              required: [type]
              properties: { type: { type: string } }
              discriminator:
                propertyName: type
                mapping: { assign: "#/assign", resize: "#/resize" }
              oneOf: [{ $ref: "#/assign" }, { $ref: "#/resize" }]
            assign:
              type: object
              required: [droplet_id]
              properties:
                $ref: "attributes.yml#/assign_properties"
            resize:
              type: object
              required: [size]
              properties: { size: { type: string } }
            """.write(toFile: folder + "/models/actions.yml", atomically: true, encoding: .utf8)
            try "assign_properties:\n  droplet_id: { type: integer }\n".write(
                toFile: folder + "/models/attributes.yml", atomically: true, encoding: .utf8)
            try """
            description: Bad Request
            headers:
              x-request-id: { $ref: "../shared.yml#/x-request-id" }
            """.write(toFile: folder + "/responses/bad.yml", atomically: true, encoding: .utf8)
            try "x-request-id: { description: The request, schema: { type: string, format: uuid } }\n".write(
                toFile: folder + "/shared.yml", atomically: true, encoding: .utf8)

            let diagnostics = ContractDocument.lint(file: file)
            #expect(!diagnostics.contains { $0.severity == .error }, "\(diagnostics)")
            #expect(diagnostics.contains { $0.message.hasPrefix("a $ref as the whole of 'properties' is read as the map it names") })
            let contract = try ContractDocument.load(file: file)
            let endpoint = try #require(contract.endpoints.first)
            let body = try #require(endpoint.body?.schema)
            let validator = SchemaValidator(registry: contract.schemas)
            #expect(validator.validate(["type": "assign", "droplet_id": 7], against: body).isEmpty)
            #expect(validator.validate(["type": "resize", "size": "s-1"], against: body).isEmpty)
            #expect(!validator.validate(["type": "assign", "droplet_id": "seven"], against: body).isEmpty)
            #expect(!validator.validate(["type": "resize"], against: body).isEmpty)
            // The 400's header, under its `x-` name, had its reference left unfollowed (an error: "points outside the document").
            #expect(!diagnostics.contains { $0.message.contains("x-request-id") }, "\(diagnostics)")
            let exported = OpenAPIExporter.document(for: contract)
            // The bound past 64 bits is written as it was read; OpenAPIKit, which holds 64 bits, checks the rest.
            let text = try OpenAPIDocumentWriter.write(exported, as: .yaml)
            #expect(text.contains("maximum: 1.8446744073709552e+19"), "\(text)")
        }
    }

    @Test func unsupportedFeaturesAreNamedNotSilentlyDropped() throws {
        try withDocument(
            """
            openapi: 3.1.0
            info: { title: Partial, version: "1" }
            paths:
              /a:
                get:
                  security: [{ digest: [] }]
                  parameters:
                    - { name: filter, in: query, style: deepObject, schema: { type: object } }
                  responses:
                    "200":
                      description: ok
                      content:
                        application/json:
                          schema: { type: object, patternProperties: { "^x": { type: string } } }
                trace:
                  responses: { "200": { description: ok } }
            components:
              securitySchemes:
                digest: { type: http, scheme: digest }
            """
        ) { file, _ in
            let found = try ContractDocument.contractTree(file: file).diagnostics
            let messages = found.map(\.message)
            #expect(messages.contains { $0.contains("security scheme 'digest' (http digest) is not supported") })
            // deepObject is read in the query now: no warning.
            #expect(!messages.contains { $0.contains("style deepObject") })
            // patternProperties is checked now: kept, without a word.
            #expect(!messages.contains { $0.contains("patternProperties") })
            #expect(messages.contains { $0.contains("TRACE /a is not served") })
            #expect(found.allSatisfy { $0.severity == .warning })
            // Still served: the unsupported parts are named, the rest works.
            let contract = try ContractDocument.load(file: file)
            #expect(contract.endpoints.map(\.id) == ["get-a"])
        }
    }

    @Test func aSchemaSampleKeepsItsSchema() throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                schemas:
                  Node:
                    type: object
                    required: [id, kind, children]
                    properties:
                      id: { type: string, format: uuid }
                      kind: { enum: [leaf, branch] }
                      weight: { type: number, exclusiveMinimum: 0.5, multipleOf: 0.25 }
                      size: { type: integer, minimum: 3, maximum: 9 }
                      code: { type: string, minLength: 12, maxLength: 12 }
                      children: { type: array, items: { $ref: Node } }
                      pair: { type: array, prefixItems: [{ type: string }, { type: boolean }], items: false }
                  Shape:
                    oneOf: [{ $ref: Node }, { type: string }]
                endpoints:
                  get:
                    request: GET /node
                    responses:
                      - { schema: Shape, body_from_schema: true }
                """, file: "sample.yaml")
        let response = MockEngine(contract: contract).respond(to: RecordedRequest(method: "GET", target: "/node"))
        let value = try JSONReader.parse(response.body)
        let validator = SchemaValidator(registry: contract.schemas)
        #expect(validator.validate(value, against: Schema(ref: "Shape")).isEmpty, "\(value)")
        #expect(value["pair"] == ["string", true])
        #expect(value["size"] == 3)
        #expect(value["weight"] == 1.5)
    }

    @Test func aSampleOfAnExplosiveSchemaStopsAtItsBound() throws {
        // Ten required members at each of eight levels would be 10^8 values;
        // a minLength of a billion, a gigabyte of text.
        var schemas = ""
        for level in 0..<8 {
            let names = (0..<10).map { "m\($0)" }
            let members = names.map { "\($0): { $ref: L\(level + 1) }" }.joined(separator: ", ")
            schemas += "  L\(level): { type: object, required: [\(names.joined(separator: ", "))], properties: { \(members) } }\n"
        }
        schemas += "  L8: { type: string, minLength: 1000000000 }\n"
        let text =
            "doppel: 1\nschemas:\n" + schemas + """
                endpoints:
                  big:
                    request: GET /big
                    responses:
                      - { schema: L0, body_from_schema: true }
                  short:
                    request: GET /short
                    responses:
                      - { schema: { type: object, properties: { a: { type: string, minLength: 1000000000 }, b: { type: integer } } }, body_from_schema: true }
                """
        let found = try withDocument(text) { file, folder in
            ContractLoader.lint(file: file).map { $0.description.replacingOccurrences(of: folder + "/api.yaml", with: "big.yaml") }
        }
        // A warning, so that an OpenAPI document whose schema explodes is served all the same.
        #expect(
            found == [
                "big.yaml:16:41: warning: no body can be generated from the schema of response big[0]: a value would recurse without end or hold more than 100000 values and characters, so the response is sent without a body; write the body instead"
            ])
        let engine = MockEngine(contract: try ContractLoader.load(text: text, file: "big.yaml"))
        let big = engine.respond(to: RecordedRequest(method: "GET", target: "/big"))
        #expect(big.status == 200 && big.body.isEmpty)
        // The optional member that cannot be sampled within the bound is left out.
        let short = engine.respond(to: RecordedRequest(method: "GET", target: "/short"))
        #expect(try JSONReader.parse(short.body) == ["b": 0])
    }

    @Test func bodyFromSchemaNeedsASchemaAndNoBody() throws {
        let found = ContractError.thrown { () throws(ContractError) in
            _ = try ContractLoader.load(
                text: """
                    doppel: 1
                    endpoints:
                      a:
                        request: GET /a
                        responses:
                          - { body_from_schema: true }
                      b:
                        request: GET /b
                        responses:
                          - { schema: { type: string }, body: x, body_from_schema: true }
                    """, file: "c.yaml")
        }.map(\.description)
        #expect(
            found == [
                "c.yaml:6:29: error: 'body_from_schema' of response a[0] needs a 'schema' to generate the body from",
                "c.yaml:10:64: error: 'body_from_schema' of response b[0] stands for a body; give one or the other",
            ])
    }
}

/// Small hostile documents: each once trapped the process that read it.
@Suite("OpenAPI import, hostile documents")
struct OpenAPIHostileDocumentTests {
    @Test func aReferenceToANegativeArrayIndexIsALocatedError() throws {
        let found = try diagnostics(
            """
            openapi: 3.1.0
            info: { title: t, version: "1" }
            paths:
              /a:
                get:
                  parameters: [ { name: q, in: query, schema: { type: string } } ]
                  responses:
                    "200": { $ref: "#/paths/~1a/get/parameters/-1" }
            """)
        #expect(found.contains { $0.hasPrefix("api.yaml:8:") && $0.contains("unresolved $ref '#/paths/~1a/get/parameters/-1'") }, "\(found)")
    }

    @Test(arguments: [
        "{ type: integer, minimum: 1e300 }",
        "{ type: integer, maximum: -1e300 }",
        "{ type: number, minimum: 1e308, multipleOf: 1e-300 }",
        "{ type: string, minLength: 9223372036854775807 }",
        "{ type: array, minItems: 9223372036854775807 }",
        "{ type: array, minItems: 9223372036854775807, items: { type: string, minLength: 9223372036854775807 } }",
    ])
    func boundsPastTheIntegerRangeAreServed(schema: String) throws {
        try withDocument(
            """
            openapi: 3.1.0
            info: { title: t, version: "1" }
            paths:
              /a:
                get:
                  responses:
                    "200":
                      description: ok
                      content:
                        application/json:
                          schema: \(schema)
            """
        ) { file, _ in
            let engine = MockEngine(contract: try ContractDocument.load(file: file))
            let response = engine.respond(to: RecordedRequest(method: "GET", target: "/a"))
            #expect(response.status == 200)
            // A number past Int's range is written as a number, not trapped on.
            if schema.contains("integer, minimum") { #expect(String(decoding: response.body, as: UTF8.self) == "1e+300") }
        }
    }
}

/// OpenAPI callbacks and WebSocket upgrades, as the importer reads them.
@Suite("OpenAPI import: callbacks and upgrades")
struct OpenAPICallbackImportTests {
    @Test(
        "Runtime expressions of a callback URL become templates; those a request cannot fill are refused",
        arguments: [
            ("{$request.body#/callbackUrl}", "{{ body.callbackUrl }}"),
            ("{$request.body#/hooks/0/url}", "{{ body.hooks[0].url }}"),
            ("{$request.body#/call-back}", "{{ body['call-back'] }}"),
            (
                "https://example.com/notify?id={$request.query.id}&by={$request.header.X-User}",
                "https://example.com/notify?id={{ query.id }}&by={{ headers['x-user'] }}"
            ),
            ("http://x/{$request.path.orderId}/{$method}", "http://x/{{ path.orderId }}/{{ request.method }}"),
        ])
    func runtimeExpressions(expression: String, template: String) {
        #expect(OpenAPIImporter.template(fromRuntimeExpression: expression) == template)
    }

    @Test func expressionsOnlyAResponseHasAreRefused() {
        for expression in ["{$response.body#/id}", "{$statusCode}", "{$url}", "http://x/{$request.body#/a"] {
            #expect(OpenAPIImporter.template(fromRuntimeExpression: expression) == nil, "\(expression)")
        }
    }

    @Test(
        "A callback is made from the served response, its body from the schema; one needing the response is a warning; a GET documenting 101 is a WebSocket"
    )
    func callbacksAndUpgrades() throws {
        let document = """
            openapi: 3.1.0
            info: { title: Hooks, version: "1" }
            paths:
              /orders:
                post:
                  responses: { "201": { description: created } }
                  callbacks:
                    shipped:
                      "{$request.body#/hook}":
                        post:
                          requestBody: { content: { application/json: { schema: { type: object, required: [state], properties: { state: { const: shipped } } } } } }
                          responses: { "200": { description: ok } }
                    audit:
                      "{$response.body#/auditUrl}":
                        post: { responses: { "200": { description: ok } } }
              /live:
                get:
                  responses: { "101": { description: switching to a WebSocket }, "401": { description: no token } }
              /odd:
                post:
                  responses: { "101": { description: cannot be }, "200": { description: ok } }
            """
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-hooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("api.yaml").path
        try document.write(toFile: file, atomically: true, encoding: .utf8)
        let contract = try ContractDocument.load(file: file)
        let orders = try #require(contract.endpoints.first { $0.path.template == "/orders" })
        let callback = try #require(orders.responses.first?.callbacks.first)
        #expect(callback.name == "shipped" && callback.method == "POST" && orders.responses.first?.callbacks.count == 1)
        #expect(callback.body?.constantValue == ["state": "shipped"])
        #expect(contract.warnings.contains { $0.message.contains("callback 'audit'") && $0.severity == .warning })
        let live = try #require(contract.endpoints.first { $0.path.template == "/live" })
        #expect(live.socket != nil && live.responses.first?.status == 101)
        let odd = try #require(contract.endpoints.first { $0.path.template == "/odd" })
        #expect(odd.socket == nil && !contract.statuses(of: odd).contains(101))
        #expect(contract.warnings.contains { $0.message.contains("POST /odd documents 101") })
    }

    @Test("A callback URL OpenAPIKit cannot parse (`{{` in it) is a warning: serving and importing agree, and the braces are sent as written")
    func aCallbackURLOpenAPIKitCannotReadIsAWarning() throws {
        let document = """
            openapi: 3.1.0
            info: { title: Hooks, version: "1" }
            paths:
              /pay:
                post:
                  responses: { "202": { description: taken } }
                  callbacks:
                    done:
                      "http://127.0.0.1:9/a{{b}}c":
                        post: { responses: { "200": { description: ok } } }
            """
        try withDocument(document) { file, _ in
            let problems = ContractDocument.lint(file: file)
            #expect(problems.allSatisfy { $0.severity == .warning }, "\(problems)")
            #expect(problems.contains { $0.message.hasPrefix("OpenAPIKit cannot read this callback") })
            let contract = try ContractDocument.load(file: file)
            let callback = try #require(contract.endpoints.first?.responses.first?.callbacks.first)
            #expect(try callback.url.render(in: EvaluationContext(roots: [:], now: 0)) == "http://127.0.0.1:9/a{{b}}c")
        }
    }

    @Test("A contract's callbacks are exported as OpenAPI callbacks when a runtime expression can say their URL, and read back")
    func callbacksExportAndReadBack() throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                endpoints:
                  pay:
                    request: POST /pay
                    auth: none
                    responses:
                      - status: 202
                        let: { id: "'p1'" }
                        callbacks:
                          - { name: by-body, url: "{{ body.hooks[0].url }}", body: { event: paid } }
                          - { name: by-host, url: "https://{{ headers['x-hook-host'] }}/paid?id={{ query.id }}" }
                          - { name: fixed, url: "http://127.0.0.1:9000/paid", method: put }
                          - { name: by-let, url: "http://127.0.0.1:9000/{{ id }}" }
                """, file: "hooks.yaml")
        let document = OpenAPIExporter.document(for: contract)
        let callbacks = try #require(document["paths"]?["/pay"]?["post"]?["callbacks"]?.objectValue)
        #expect(callbacks.keys.sorted() == ["by-body", "by-host", "fixed"], "a URL from a let cannot be said in OpenAPI")
        #expect(callbacks["by-body"]?.objectValue?.keys.first == "{$request.body#/hooks/0/url}")
        #expect(callbacks["by-host"]?.objectValue?.keys.first == "https://{$request.header.x-hook-host}/paid?id={$request.query.id}")
        #expect(callbacks["fixed"]?["http://127.0.0.1:9000/paid"]?["put"] != nil)
        #expect(
            callbacks["by-body"]?["{$request.body#/hooks/0/url}"]?["post"]?["requestBody"]?["content"]?["application/json"]?["example"] == [
                "event": "paid"
            ])

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-hooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("exported.json").path
        try Data(JSONWriter.encode(document)).write(to: URL(fileURLWithPath: file))
        let readBack = try ContractDocument.load(file: file)
        let names = readBack.endpoints.first?.responses.first?.callbacks.map(\.name) ?? []
        #expect(names.sorted() == ["by-body", "by-host", "fixed"])
    }
}
