import DoppelCore
import DoppelOpenAPI
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

private func corpus(_ name: String) -> String {
    repositoryRoot.appendingPathComponent("Tests/DoppelServerTests/Fixtures/openapi/corpus/\(name)").path
}

/// Someone else's document is served despite its own mistakes, which are
/// warnings; Doppel's own contracts keep them as errors.
@Suite("Vendor documents")
struct VendorDocumentTests {
    @Test func aVendorsMistakesAreWarningsAndItsExamplesAreServedAsWritten() async throws {
        let diagnostics = ContractDocument.lint(file: corpus("vendor-mistakes.yaml"))
        #expect(!diagnostics.isEmpty)
        #expect(diagnostics.allSatisfy { $0.severity == .warning }, "\(diagnostics)")
        // Each with its place, once.
        #expect(
            diagnostics.contains {
                $0.description.hasSuffix(
                    "vendor-mistakes.yaml:20:17: warning: the body of response listCalls[0] breaks its schema at /status: expected string, got null; it is served as written"
                )
            },
            "\(diagnostics.map(\.description))")
        #expect(Set(diagnostics.map(\.description)).count == diagnostics.count)
        // A date-time without seconds breaks RFC 3339: a warning, and served as written.
        #expect(
            diagnostics.contains {
                $0.description.hasSuffix(
                    "vendor-mistakes.yaml:20:17: warning: the body of response listCalls[0] breaks its schema at /start: must be a valid date-time; it is served as written"
                )
            })

        try await DoppelTestServer.with(contract: corpus("vendor-mistakes.yaml")) { server in
            let client = TestClient(base: server.baseURL)
            let calls = try await client.send("GET", "/Accounts/AC1/Calls.json", token: nil)
            #expect(calls.status == 200)
            #expect(calls.json == ["uri": "/2010-04-01/Accounts/AC1/Calls.json", "status": nil, "start": "2024-01-01T10:00", "calls": []])
            // A body generated from a schema keeps it: the pattern, and the property one allOf branch requires and another defines.
            let made = try await client.send("POST", "/things", json: ["name": "ABC-12"], token: nil)
            #expect(made.status == 201)
            let code = try #require(made.json?["code"]?.stringValue)
            #expect(code.range(of: "^[A-Z]{3}-[0-9]{2}$", options: .regularExpression) != nil, "\(code)")
        }
    }

    @Test func theSameMistakeInADoppelContractIsAnError() {
        let diagnostics = ContractError.thrown { () throws(ContractError) in
            _ = try ContractLoader.load(
                text: """
                    doppel: 1
                    endpoints:
                      calls:
                        request: GET /calls
                        responses:
                          - schema: { type: object, properties: { status: { type: string, enum: [queued, done] } } }
                            body: { status: null }
                    """, file: "contract.yaml")
        }
        #expect(
            diagnostics.map(\.description) == [
                "contract.yaml:7:15: error: the body of response calls[0] breaks its schema at /status: expected string, got null"
            ])
    }

    /// `doppel import` of a document with mistakes of its own writes a
    /// contract that keeps them warnings (`document_mistakes: warn`) and
    /// serves as the document does; without that line they are errors.
    @Test func anImportKeepsTheDocumentsMistakesWarnings() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let imported = folder.appendingPathComponent("vendor.yaml")
        let run = try await DoppelCommand.run(["import", corpus("vendor-mistakes.yaml"), "-o", imported.path])
        #expect(run.status == 0, "\(run.errors)")
        let text = try String(contentsOf: imported, encoding: .utf8)
        #expect(text.contains("\ndoppel: 1\ndocument_mistakes: warn\n"))
        let diagnostics = ContractDocument.lint(file: imported.path)
        #expect(diagnostics.count == 3 && diagnostics.allSatisfy { $0.severity == .warning }, "\(diagnostics)")

        let document = MockEngine(contract: try ContractDocument.load(file: corpus("vendor-mistakes.yaml")))
        let contract = MockEngine(contract: try ContractDocument.load(file: imported.path))
        let request = RecordedRequest(method: "GET", target: "/Accounts/AC1/Calls.json")
        #expect(contract.respond(to: request).body == document.respond(to: request).body)
        #expect(contract.respond(to: request).json?["status"] == .null)

        // The line removed: the same mistakes are errors.
        try text.replacingOccurrences(of: "document_mistakes: warn\n", with: "").write(to: imported, atomically: true, encoding: .utf8)
        let strict = ContractDocument.lint(file: imported.path)
        #expect(strict.count == 3 && strict.allSatisfy { $0.severity == .error }, "\(strict)")
        try text.replacingOccurrences(of: "document_mistakes: warn", with: "document_mistakes: maybe").write(
            to: imported, atomically: true, encoding: .utf8)
        #expect(ContractDocument.lint(file: imported.path).contains { $0.message == "document_mistakes must be 'error' or 'warn'" })
    }

    @Test func lintReportsWarningsAndStrictMakesThemErrors() async throws {
        let lenient = try await DoppelCommand.run(["lint", corpus("vendor-mistakes.yaml")])
        #expect(lenient.status == 0)
        #expect(lenient.output.contains("ok, 3 warnings"))
        #expect(lenient.errors.contains("warning: the body of response listCalls[0] breaks its schema at /uri"))
        let strict = try await DoppelCommand.run(["lint", "--strict", corpus("vendor-mistakes.yaml")])
        #expect(strict.status == 1)
        #expect(strict.output.contains("(errors with --strict)"))
    }

    /// Each of these was wrong once, found by a third-party suite of mock-server cases.
    @Test func documentedAnswersForTheCasesMockServersGetWrong() async throws {
        try await DoppelTestServer.with(contract: corpus("mock-cases.yaml")) { server in
            let client = TestClient(base: server.baseURL)
            // A text/plain response with a schema and no example: text, with its Content-Type.
            let notes = try await client.send("GET", "/notes", token: nil)
            #expect(notes.status == 200)
            #expect(notes.header("content-type") == "text/plain")
            #expect(String(decoding: notes.body, as: UTF8.self) == "string")
            // A concrete path declared after a templated one still takes its requests.
            #expect(try await client.send("GET", "/pets/mine", token: nil).json == ["pet": "mine"])
            #expect(try await client.send("GET", "/pets/7", token: nil).json == ["pet": "id"])
            // A path with a space loads, and is served at its encoded form.
            #expect(try await client.send("GET", "/files/my%20report", token: nil).json == ["file": "report"])
            // Invalid input and malformed JSON get the operation's own 400.
            let invalid = try await client.send("POST", "/orders", json: [:], token: nil)
            #expect(invalid.status == 400 && invalid.json == ["error": "bad_request"])
            let malformed = try await client.send(
                "POST", "/orders", token: nil, headers: ["Content-Type": "application/json"], body: Data("{bad".utf8))
            #expect(malformed.status == 400 && malformed.json == ["error": "bad_request"])
            // A documented 401 without headers still carries its scheme's challenge, with a realm.
            let denied = try await rawAnswer(port: server.baseURL.port!, "GET /secure HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(
                denied.hasPrefix("HTTP/1.1 401 Unauthorized\r\n")
                    && denied.contains("\r\nWWW-Authenticate: Basic realm=\"Cases\", charset=\"UTF-8\"\r\n"), "\(denied)")
        }
    }

    /// A document of a vendor's size and shape (2.9 MB, 1,100 operations;
    /// `generate-large.py` writes it) lints with warnings only and serves
    /// its operations as it documents them.
    @Test func aLargeVendorDocumentServesAsDocumented() throws {
        let diagnostics = ContractDocument.lint(file: corpus("large-vendor.yaml"))
        #expect(diagnostics.allSatisfy { $0.severity == .warning })
        // Its planted mistakes, one warning each: a relative uri (11), a null
        // enum string, a date-time without seconds and a missing required
        // property in an example (11 each).
        #expect(diagnostics.count == 44, "\(diagnostics.map(\.description).prefix(5))")
        #expect(
            diagnostics.contains {
                $0.description.contains("large-vendor.yaml:")
                    && $0.message.contains("breaks its schema at /updated: must be a valid date-time; it is served as written")
            })
        let contract = try ContractDocument.load(file: corpus("large-vendor.yaml"))
        #expect(contract.endpoints.count == 1_100)

        let engine = MockEngine(contract: contract)
        func send(_ method: String, _ target: String, auth: String? = "Bearer sk_test_1", form: String? = nil) -> MockResponse {
            var headers: [(name: String, value: String)] = []
            if let auth { headers.append((name: "Authorization", value: auth)) }
            if form != nil { headers.append((name: "Content-Type", value: "application/x-www-form-urlencoded")) }
            return engine.respond(to: RecordedRequest(method: method, target: target, headers: headers, body: Array((form ?? "").utf8)))
        }
        // A list generated from its schema (allOf, a recursive tree, anyOf), and one whose example is served as written.
        let list = send("GET", "/v1/resource5s?limit=3&expand=owner&expand=parent&created%5Bgt%5D=5")
        #expect(list.status == 200)
        #expect(list.json?["object"] == "list")
        #expect(list.json?["data"]?.arrayValue?.first?["object"] == "resource5")
        #expect(send("GET", "/v1/resource0s").json == ["object": "list", "data": [], "has_more": false, "url": "/resource0s"])
        #expect(send("GET", "/v1/resource3s/x").json?["status"] == .null)
        // Parameters from components, with their bounds and patterns; a list
        // documents `4XX`, read as its 400 for invalid input.
        let outOfRange = send("GET", "/v1/resource5s?limit=500")
        #expect(outOfRange.status == 400 && outOfRange.json?["error"]?["type"] != nil)
        #expect(send("GET", "/v1/resource7s/x/events/evt_12345678").json?["object"] == "event")
        #expect(send("GET", "/v1/resource7s/x/events/bad").status == 422)
        // A form body checked against its schema; invalid input gets the documented 400 body.
        #expect(send("POST", "/v1/resource1s", form: "amount=5").status == 200)
        let invalid = send("POST", "/v1/resource1s", form: "amount=-1")
        #expect(invalid.status == 400 && invalid.json?["error"]?["type"] != nil)
        // Either security scheme admits; none is refused.
        #expect(send("DELETE", "/v1/resource1s/abc", auth: "Basic c2tfdGVzdDo=").json?["deleted"] == true)
        #expect(send("GET", "/v1/resource5s", auth: nil).status == 401)
    }

    /// An operation that documents only a 400, or only a `default`, answers invalid input with it.
    @Test func invalidInputGetsTheOnlyErrorAnswerDocumented() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("only-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: file) }
        try """
        openapi: 3.0.3
        info: { title: Only, version: "1" }
        paths:
          /check:
            post:
              requestBody: { required: true, content: { application/json: { schema: { type: object, required: [n], properties: { n: { type: integer } } } } } }
              responses:
                "400": { description: bad, content: { application/json: { example: { error: only_400 } } } }
          /fallback:
            post:
              requestBody: { required: true, content: { application/json: { schema: { type: object, required: [n] } } } }
              responses:
                "200": { description: ok, content: { application/json: { example: { ok: true } } } }
                default: { description: any error, content: { application/json: { example: { error: by_default } } } }
        """.write(to: file, atomically: true, encoding: .utf8)
        let engine = MockEngine(contract: try ContractDocument.load(file: file.path))
        func post(_ path: String, _ body: String) -> MockResponse {
            engine.respond(
                to: RecordedRequest(
                    method: "POST", target: path, headers: [(name: "Content-Type", value: "application/json")], body: Array(body.utf8)))
        }
        #expect(post("/check", #"{"n": "x"}"#).status == 400)
        #expect(post("/check", #"{"n": "x"}"#).json == ["error": "only_400"])
        #expect(post("/fallback", "{}").status == 400)
        #expect(post("/fallback", "{}").json == ["error": "by_default"])
        #expect(post("/fallback", "{oops").json == ["error": "by_default"])
        #expect(post("/fallback", #"{"n": 1}"#).json == ["ok": true])
    }

    /// Query parameters in each OpenAPI style: a valid query is served, an
    /// invalid one is refused at the member that is wrong.
    @Test(
        arguments: [
            ("color=red&size=2", nil),  // an exploded form object: its members as items of their own
            ("size=2", "/query/filter/color"),
            ("color=red&size=big", "/query/filter/size"),
            ("color=red&point=x,1,y,2", nil),  // a form object, not exploded
            ("color=red&point=x,1,y", "/query/point"),
            ("color=red&point=x,a", "/query/point/x"),
            ("color=red&ids=1|2|3", nil),  // pipeDelimited
            ("color=red&ids=1|x", "/query/ids/1"),
            ("color=red&tags=a%20b", nil),  // spaceDelimited
        ] as [(String, String?)])
    func queryParametersAreReadInTheirStyle(query: String, wrong: String?) async throws {
        let contract = try ContractDocument.load(file: corpus("mock-cases.yaml"))
        #expect(!contract.warnings.contains { $0.message.contains("style") }, "\(contract.warnings)")
        let answer = MockEngine(contract: contract).respond(to: RecordedRequest(method: "GET", target: "/search?" + query))
        if let wrong {
            #expect(answer.status == 422)
            #expect(
                answer.json?["errors"]?.arrayValue?.map { $0["pointer"] } == [.string(wrong)], "\(answer.json.map(JSONWriter.encodeString) ?? "")")
        } else {
            #expect(answer.status == 200, "\(answer.json.map(JSONWriter.encodeString) ?? "")")
        }
    }

    /// `Accept` picks among the media types a response is documented in.
    @Test(
        arguments: [
            (nil, 200, "application/json"),
            ("application/json", 200, "application/json"),
            ("text/csv", 200, "text/csv"),
            ("application/xml;q=0.5, text/csv;q=0.9", 200, "text/csv"),
            ("text/*", 200, "text/csv"),
            ("application/*;q=0, text/csv;q=0", 406, "application/problem+json"),
            ("image/png", 406, "application/problem+json"),
            ("*/*", 200, "application/json"),
        ] as [(String?, Int, String)])
    func acceptPicksAmongTheDocumentedMediaTypes(accept: String?, status: Int, type: String) throws {
        let engine = MockEngine(contract: try ContractDocument.load(file: corpus("mock-cases.yaml")))
        let answer = engine.respond(to: RecordedRequest(method: "GET", target: "/doc", headers: accept.map { [(name: "Accept", value: $0)] } ?? []))
        #expect(answer.status == status)
        #expect(answer.header("content-type") == type)
        if status == 406 {
            #expect(answer.json?["detail"]?.stringValue?.hasSuffix("application/json, application/xml, text/csv.") == true)
        }
        // Where an answer is documented in one media type, Accept is not consulted: a problem stays problem+json.
        let unmatched = engine.respond(to: RecordedRequest(method: "GET", target: "/notes", headers: [(name: "Accept", value: "application/json")]))
        #expect(unmatched.status == 200 && unmatched.header("content-type") == "text/plain")
    }

    /// `bearerFormat: JWT` is honoured when served: a token that is not a JWT is refused.
    @Test func aJWTBearerSchemeRefusesATokenThatIsNotOne() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: file) }
        try """
        openapi: 3.1.0
        info: { title: JWT, version: "1" }
        security: [ { token: [] } ]
        paths:
          /me:
            get:
              responses:
                "200": { description: ok, content: { application/json: { example: { me: true } } } }
                "401": { description: no, content: { application/json: { example: { error: unauthorized } } } }
        components:
          securitySchemes:
            token: { type: http, scheme: bearer, bearerFormat: JWT }
        """.write(to: file, atomically: true, encoding: .utf8)
        let engine = MockEngine(contract: try ContractDocument.load(file: file.path))
        func get(_ token: String) -> MockResponse {
            engine.respond(to: RecordedRequest(method: "GET", target: "/me", headers: [(name: "Authorization", value: "Bearer \(token)")]))
        }
        #expect(get(sampleJWT).json == ["me": true])
        #expect(get("not-a-jwt").status == 401)
        #expect(get("not-a-jwt").json == ["error": "unauthorized"])
    }

    /// `doppel serve` prints a document's warnings, each once with its place, and serves it.
    @Test func servePrintsTheDocumentsWarningsAndServes() async throws {
        let served = try await DoppelCommand.serve([corpus("vendor-mistakes.yaml"), "--log-format", "none"])
        defer { if served.process.isRunning { served.process.terminate() } }
        let client = TestClient(base: URL(string: "http://127.0.0.1:\(served.port)")!)
        #expect(try await client.send("GET", "/Accounts/AC1/Calls.json", token: nil).status == 200)
        served.process.terminate()
        #expect(await served.process.ending(within: 30) == .exit(0))
        let errorsHandle = served.errors
        let errors = String(decoding: try await offThePool { errorsHandle.readDataToEndOfFile() }, as: UTF8.self)
        let warnings = errors.split(separator: "\n").filter { $0.contains(": warning: ") }
        #expect(warnings.count == 3, "\(errors)")
        #expect(
            warnings.contains {
                $0.hasSuffix(
                    "vendor-mistakes.yaml:20:17: warning: the body of response listCalls[0] breaks its schema at /status: expected string, got null; it is served as written"
                )
            })
    }
}
