import DoppelCore
import Testing

/// `querystring`: the whole query string as one value (OpenAPI 3.2's
/// `in: querystring`), read as form fields, JSON or text, and checked by its schema.
@Suite struct QueryStringTests {
    static let contract = """
        doppel: 1
        endpoints:
          search:
            request: GET /search
            querystring:
              content_type: application/json
              required: true
              schema: { type: object, required: [numbers], properties: { numbers: { type: array, items: { type: integer } } } }
            responses:
              - body: { count: "{{ len(query.numbers) }}" }
          form:
            request: GET /form
            querystring:
              schema: { type: object, properties: { page: { type: integer, minimum: 1 }, tag: { type: array, items: { type: string } } }, additionalProperties: false }
            responses:
              - body: { page: "{{ query.page }}", tags: "{{ query.tag }}" }
          text:
            request: GET /text
            querystring: { content_type: text/plain, schema: { type: string, pattern: "^[a-z ]+$" } }
            responses:
              - body: { said: "{{ query }}" }
        """

    static let cases: [(String, Int, JSON)] = [
        ("/search?%7B%22numbers%22%3A%5B1%2C2%5D%7D", 200, ["count": 2]),
        ("/search?{\"numbers\":[3]}", 200, ["count": 1]),
        ("/search", 422, [["pointer": "/query", "message": "a query string is required"]]),
        ("/search?%7Bbroken", 422, [["pointer": "/query", "message": "is not JSON: expected a string key at byte 1"]]),
        ("/search?%7B%22numbers%22%3A%5B%22x%22%5D%7D", 422, [["pointer": "/query/numbers/0", "message": "expected integer, got string"]]),
        ("/form?page=2&tag=a&tag=b", 200, ["page": 2, "tags": ["a", "b"]]),
        ("/form", 200, ["page": nil, "tags": nil]),
        (
            "/form?page=0&other=1", 422,
            [
                ["pointer": "/query/page", "message": "must be at least 1, got 0"],
                ["pointer": "/query/other", "message": "is not an allowed property"],
            ]
        ),
        ("/text?hello%20world", 200, ["said": "hello world"]),
        ("/text?HELLO", 422, [["pointer": "/query", "message": "must match the pattern ^[a-z ]+$"]]),
    ]

    @Test(arguments: cases)
    func theWholeQueryIsReadAsItsTypeSays(target: String, status: Int, expected: JSON) throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        let answer = engine.send("GET", target)
        #expect(answer.status == status, "\(answer.json ?? .null)")
        #expect((status == 200 ? answer.json : answer.json?["errors"]) == expected, "\(answer.json ?? .null)")
    }

    @Test func queryAndQuerystringTogetherAreAnError() {
        let found = diagnostics(
            of: """
                doppel: 1
                endpoints:
                  e:
                    request: GET /e
                    query: { properties: { a: { type: string } } }
                    querystring: { schema: { type: object } }
                    responses: [ { status: 200 } ]
                """
        ).map(\.description)
        #expect(found.contains { $0.contains("has 'query' and 'querystring'; 'querystring' is the whole query") }, "\(found)")
    }

    /// The sample request a verify or an export sends keeps the querystring's schema.
    @Test func theSampleRequestCarriesAValidQueryString() throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        for endpoint in engine.contract.endpoints {
            let request = engine.sampleRequest(for: endpoint)
            #expect(engine.respond(to: request).status == 200, "\(endpoint.id): \(request.query ?? "")")
        }
    }
}
