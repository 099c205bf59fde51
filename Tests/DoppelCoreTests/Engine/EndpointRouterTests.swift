import Testing

@testable import DoppelCore

@Suite struct EndpointRouterTests {
    let contract: Contract

    init() throws {
        contract = try loadContract(
            """
            doppel: 1
            base_path: /v1beta
            endpoints:
              predict: { request: "POST /models/{model}:predict", responses: [ { body: { model: "{{ path.model }}" } } ] }
              rates-pair: { request: GET /rates, match: query.target != null, responses: [ { body: { pair: true } } ] }
              rates: { request: GET /rates, responses: [ { body: { pair: false } } ] }
              child: { request: "GET /children/{id}", responses: [ { status: 200 } ] }
              delete-child: { request: "DELETE /children/{id}", responses: [ { status: 204 } ] }
            """)
    }

    func route(_ method: String, _ path: String, query: [String: String] = [:]) -> EndpointRouter.Route {
        EndpointRouter(endpoints: contract.endpoints).route(method: method, path: path) { endpoint, _ in
            endpoint.match.filter { condition in
                !((try? condition.expression.test(
                    in: EvaluationContext(roots: ["query": .object(JSONObject(query.map { ($0.key, .string($0.value)) }))], now: 0))) ?? false)
            }.map(\.expression.source)
        }
    }

    @Test func capturesParametersBesideLiteralColons() {
        guard case .matched(let endpoint, let parameters) = route("POST", "/v1beta/models/imagen-3.0-generate-002:predict") else {
            Issue.record("no match")
            return
        }
        #expect(endpoint.id == "predict")
        #expect(parameters == ["model": "imagen-3.0-generate-002"])
    }

    @Test func decodesPercentEscapesInParameters() {
        guard case .matched(_, let parameters) = route("GET", "/v1beta/children/a%20b") else {
            Issue.record("no match")
            return
        }
        #expect(parameters == ["id": "a b"])
    }

    @Test func matchConditionsChooseBetweenEndpointsOfOnePath() {
        guard case .matched(let pair, _) = route("GET", "/v1beta/rates", query: ["target": "EUR"]),
            case .matched(let all, _) = route("GET", "/v1beta/rates")
        else {
            Issue.record("no match")
            return
        }
        #expect(pair.id == "rates-pair")
        #expect(all.id == "rates")
    }

    @Test func wrongMethodIsA405WithTheAllowedOnes() {
        guard case .methodNotAllowed(let allowed) = route("PUT", "/v1beta/children/7") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["GET", "DELETE", "HEAD"])
    }

    @Test func missesNameTheNearestEndpointsAndHowTheyDiffer() {
        guard case .notFound(let misses) = route("GET", "/v1beta/childs/7") else {
            Issue.record("expected 404")
            return
        }
        #expect(misses.first?.endpointID == "child")
        #expect(misses.first?.reasons == ["path segment 2 is 'childs', expected 'children'"])
    }

    @Test func theEngineAnswersMissesAsProblems() throws {
        let engine = MockEngine(contract: contract)
        let notFound = engine.send("GET", "/nowhere")
        #expect(notFound.status == 404)
        #expect(notFound.header("content-type") == "application/problem+json")
        #expect(notFound.json?["type"] == "urn:doppel:problem:no-matching-endpoint")
        let notAllowed = engine.send("PATCH", "/v1beta/rates")
        #expect(notAllowed.status == 405)
        #expect(notAllowed.header("allow") == "GET, HEAD")
        let predicted = engine.send("POST", "/v1beta/models/m1:predict")
        #expect(predicted.json == ["model": "m1"])
        // The base_path forgotten: the 404 says which path was meant.
        let forgotten = engine.send("GET", "/children/7")
        #expect(forgotten.status == 404)
        #expect(
            forgotten.json?["detail"]
                == "No endpoint of the contract matches GET /children/7. The contract's base_path is /v1beta: did you mean GET /v1beta/children/7?")
        #expect(engine.send("GET", "/nowhere").json?["detail"]?.stringValue?.contains("base_path") == false)
    }
}

@Suite struct PathBytesTests {
    @Test func segmentsKeepEmptyOnesAndTheRootPath() {
        #expect(EndpointRouter.segments(of: "/") == [""])
        #expect(EndpointRouter.segments(of: "/a//b/") == ["a", "", "b", ""])
        #expect(EndpointRouter.segments(of: "/сказки/7") == ["сказки", "7"])
        #expect(EndpointRouter.segments(of: "") == [""])
    }

    @Test func literalsAreComparedByteForByteBesideParameters() throws {
        let template = try PathTemplate("/сказки/{id}.ёж/{name}:x")
        #expect(template.match(EndpointRouter.segments(of: "/сказки/7.ёж/a:b:x")) == ["id": "7", "name": "a:b"])
        #expect(template.match(EndpointRouter.segments(of: "/сказки/щ.ёж.ёж/%D1%91:x")) == ["id": "щ.ёж", "name": "ё"])
        #expect(template.match(EndpointRouter.segments(of: "/сказки/.ёж/a:x")) == nil)
        #expect(template.match(EndpointRouter.segments(of: "/сказки/7.ёж/:x")) == nil)
        // "é" written as e and a combining accent is not the same bytes as the literal's "é".
        let accented = try PathTemplate("/caf\u{E9}")
        #expect(accented.match(EndpointRouter.segments(of: "/caf\u{E9}")) == [:])
        #expect(accented.match(EndpointRouter.segments(of: "/cafe\u{301}")) == nil)
    }

    @Test(arguments: [
        ("/a/{id}", "id"),
        ("/v1/{model}:predict/x{n}y", "model n"),
        ("/{ñame}/{e\u{301}}/{_a-1}", "ñame e\u{301} _a-1"),
        ("/files/{path...}", "path"),
        ("/a//b/", ""),
        ("/a/{id", "error: '{' without '}' in path"),
        ("/a/id}", "error: '}' without '{' in path"),
        ("/a/{x}}", "error: '}' without '{' in path"),
        ("/a/{}", "error: invalid parameter name '' in path"),
        ("/a/{a b}", "error: invalid parameter name 'a b' in path"),
        ("/a/{a{b}", "error: invalid parameter name 'a{b' in path"),
        ("/a/{x}{y}", "error: two parameters side by side in one segment cannot be told apart"),
        ("/a/{x}/b/{x}", "error: parameter 'x' appears twice"),
        ("/a/{x}/{x...}", "error: parameter 'x' appears twice"),
        ("/a/{p...}/b", "error: a '{name...}' parameter, which takes the rest of the path, must be the whole last segment"),
        ("/a/{p q...}", "error: invalid parameter name 'p q' in path"),
        ("a/b", "error: a path must start with '/'"),
    ])
    func templatesNameTheirParametersOrSayWhatIsWrong(template: String, expected: String) {
        do {
            let parsed = try PathTemplate(template)
            #expect(parsed.parameterNames.joined(separator: " ") == expected)
        } catch {
            #expect("error: " + error.message == expected)
        }
    }

    @Test func namesCompareWithoutLetterCaseOnly() {
        #expect("Content-Type".caseInsensitiveEquals("content-TYPE"))
        #expect(!"content-type".caseInsensitiveEquals("content-typ"))
        #expect(!"a@b".caseInsensitiveEquals("a`b"), "only letters fold")
        #expect(!"x-1".caseInsensitiveEquals("x-2"))
        #expect("ÉTÉ-Date".caseInsensitiveEquals("été-date"), "beyond ASCII, lowercased")
        #expect(!"été".caseInsensitiveEquals("ete"))
    }

    @Test func queryItemsAreSplitAndDecoded() {
        let request = RecordedRequest(method: "GET", target: "/x?a=1&&b=%20c+d&flag&=e&ж=%D0%B6&a=2")
        #expect(request.queryItems.map { [$0.0, $0.1] } == [["a", "1"], ["b", " c d"], ["flag", ""], ["", "e"], ["ж", "ж"], ["a", "2"]])
        #expect(RecordedRequest(method: "GET", target: "/x?").queryItems.isEmpty)
        #expect(RecordedRequest(method: "GET", target: "/x?&&").queryItems.isEmpty)
    }
}

@Suite struct RestOfPathTests {
    @Test func aTrailingRestParameterTakesTheRestOfThePath() throws {
        let template = try PathTemplate("/files/{bucket}/{path...}")
        #expect(template.parameterNames == ["bucket", "path"])
        #expect(template.match(EndpointRouter.segments(of: "/files/b1/a/b.txt")) == ["bucket": "b1", "path": "a/b.txt"])
        #expect(template.match(EndpointRouter.segments(of: "/files/b1/one")) == ["bucket": "b1", "path": "one"])
        #expect(template.match(EndpointRouter.segments(of: "/files/b1/x%20y/z%2Fw")) == ["bucket": "b1", "path": "x y/z%2Fw"])
        #expect(template.match(EndpointRouter.segments(of: "/files/b1")) == nil)
        #expect(template.match(EndpointRouter.segments(of: "/files/b1/")) == nil)
    }

    @Test(arguments: ["/files/{path...}/meta", "/files/x{path...}", "/files/{a}/{a...}", "/files/{...}"])
    func aRestParameterMustBeTheWholeLastSegment(template: String) {
        #expect(throws: PathTemplate.TemplateError.self) { try PathTemplate(template) }
    }

    @Test func routingKeepsContractOrderWithRestEndpoints() throws {
        let contract = try loadContract(
            """
            doppel: 1
            endpoints:
              meta: { request: "GET /files/{id}/meta", responses: [ { status: 200, body: meta } ] }
              any: { request: "GET /files/{path...}", responses: [ { status: 200, body: "{{ path.path }}" } ] }
              late: { request: GET /files/a/b, responses: [ { status: 200, body: late } ] }
              other: { request: GET /other, responses: [ { status: 200 } ] }
            """)
        let engine = MockEngine(contract: contract)
        #expect(engine.send("GET", "/files/7/meta").json == "meta")
        #expect(engine.send("GET", "/files/a/b").json == "a/b")
        #expect(engine.send("GET", "/files/deep/er/still.txt").json == "deep/er/still.txt")
        #expect(engine.send("GET", "/files").status == 404)
        #expect(engine.send("POST", "/files/x").status == 405)
        #expect(engine.send("GET", "/other").status == 200)
    }

    /// A contract of up to `endpoints` endpoints (repeats left out), each of
    /// one to four segments: a parameter one time in `oneParameterIn`, else
    /// one of `words`.
    static func randomContract(endpoints: Int, words: [String], oneParameterIn odds: Int, using random: inout SeededGenerator) throws -> Contract {
        func segment(_ n: Int) -> String { Int.random(in: 0..<odds, using: &random) == 0 ? "{p\(n)}" : words.randomElement(using: &random)! }
        var seen: Set<String> = []
        var lines: [String] = []
        for i in 0..<endpoints {
            let count = Int.random(in: 1...4, using: &random)
            let path = "/" + (0..<count).map(segment).joined(separator: "/")
            let method = ["GET", "POST", "DELETE"].randomElement(using: &random)!
            guard seen.insert(method + " " + path).inserted else { continue }
            lines.append("  e\(i): { request: \"\(method) \(path)\", responses: [ { status: 200 } ] }")
        }
        return try loadContract("doppel: 1\nendpoints:\n" + lines.joined(separator: "\n"))
    }

    /// The router's table (a bucket per segment count, indexed by the text of
    /// one segment) must choose what trying every endpoint in contract order
    /// chooses: the first whose method and path match, else a 405 naming the
    /// methods whose path matches, else a 404. Random contracts, seeded.
    @Test(arguments: 1...20)
    func theTableChoosesWhatTryingEveryEndpointInOrderChooses(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let words = ["a", "b", "c", "items", "v1"]
        let contract = try Self.randomContract(endpoints: 60, words: words, oneParameterIn: 3, using: &random)
        let router = EndpointRouter(endpoints: contract.endpoints)
        for _ in 0..<500 {
            let count = Int.random(in: 1...5, using: &random)
            let path = "/" + (0..<count).map { _ in (words + ["zz", "42"]).randomElement(using: &random)! }.joined(separator: "/")
            let method = ["GET", "POST", "DELETE", "HEAD", "PUT"].randomElement(using: &random)!
            let segments = EndpointRouter.segments(of: path)
            let matching = contract.endpoints.filter { $0.path.match(segments) != nil }
            let expected: String
            if let first = matching.first(where: { $0.method == method || (method == "HEAD" && $0.method == "GET") }) {
                expected = "matched " + first.id
            } else if !matching.isEmpty {
                expected = "405"
            } else {
                expected = "404"
            }
            let actual: String
            switch router.route(method: method, path: path, conditions: { _, _ in [] }) {
            case .matched(let endpoint, _): actual = "matched " + endpoint.id
            case .methodNotAllowed: actual = "405"
            case .notFound: actual = "404"
            }
            #expect(actual == expected, "\(method) \(path)")
        }
    }

    /// The near misses an unmatched request is told about are the three
    /// endpoints that rank highest when every endpoint is scored and sorted
    /// (ties in contract order), the way they were found before the router
    /// kept only the best three as it scored them and measured each
    /// misspelling once. Random contracts and requests, seeded.
    @Test(arguments: 1...20)
    func nearMissesAreTheThreeBestOfEveryEndpointScored(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let words = ["items", "itens", "item", "users", "usres", "v1", "v2", "orders", "a"]
        let contract = try Self.randomContract(endpoints: 80, words: words, oneParameterIn: 4, using: &random)
        let router = EndpointRouter(endpoints: contract.endpoints)
        for _ in 0..<300 {
            let count = Int.random(in: 1...5, using: &random)
            let path = "/" + (0..<count).map { _ in (words + ["zz", "42", "ITEMS"]).randomElement(using: &random)! }.joined(separator: "/")
            let method = ["GET", "POST", "DELETE", "PUT"].randomElement(using: &random)!
            let segments = EndpointRouter.segments(of: path)
            let scored = contract.endpoints.enumerated().map { index, endpoint in
                (
                    index,
                    endpoint.path.agreement(with: segments) * 4 + endpoint.path.spellingCloseness(to: segments) * 2
                        + (endpoint.method == method ? 1 : 0)
                )
            }
            let expected = scored.filter { $0.1 > 0 }.sorted { $0.1 > $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }.prefix(3).map {
                contract.endpoints[$0.0].id
            }
            #expect(router.nearMisses(method: method, segments: segments).map(\.endpointID) == expected, "\(method) \(path)")
        }
    }
}

/// A small deterministic generator, so a failing seed reproduces.
typealias SeededGenerator = SplitMix64
