import DoppelCore
import Testing

/// OpenAPI 3.2's sequential media types: written item by item and read back
/// item by item, and a contract's `items`, `items_from_schema` and `item_schema`.
@Suite struct SequentialMediaTests {
    static let items: [JSON] = [["id": 1, "text": "two\nlines"], "plain", 3, ["nested": [true, .null]]]

    @Test(arguments: ["application/jsonl", "application/x-ndjson", "application/json-seq", "application/geo+json-seq", "multipart/mixed"])
    func whatIsWrittenReadsBackAsTheSameItems(type: String) throws {
        let media = try #require(SequentialMedia(SequentialMedia.withBoundary(type)))
        var body: [UInt8] = []
        for (index, item) in Self.items.enumerated() {
            body += try #require(media.write(item, last: index == Self.items.count - 1, limit: 1 << 20))
        }
        #expect(try media.read(body) == Self.items)
    }

    @Test func eventsAreWrittenAndReadAsTheirFields() throws {
        let media = try #require(SequentialMedia("text/event-stream"))
        let events: [JSON] = [
            ["event": "tick", "id": "1", "retry": 500, "data": "first\nsecond"],
            ["data": ["n": 2]],
            "bare",
        ]
        let text = String(decoding: events.enumerated().flatMap { media.write($1, last: $0 == 2, limit: 1 << 20)! }, as: UTF8.self)
        #expect(text == "event: tick\nid: 1\nretry: 500\ndata: first\ndata: second\n\ndata: {\"n\":2}\n\ndata: bare\n\n")
        // Read as a client reads them: data lines joined, comments and unknown fields skipped, CRLF taken.
        let read = try media.read(
            Array(": comment\r\nevent: tick\r\nid: 1\r\nretry: 500\r\ndata: first\r\ndata:second\r\nother: x\r\n\r\ndata: {\"n\":2}\n\n".utf8))
        #expect(read == [["event": "tick", "id": "1", "retry": 500, "data": "first\nsecond"], ["data": "{\"n\":2}"]])
    }

    @Test func aBodyThatIsNotItsFramingIsNamed() {
        #expect(throws: SequentialMedia.Unreadable.self) { try SequentialMedia.jsonLines.read(Array("{\"a\":1}\n{oops}\n".utf8)) }
        do {
            _ = try SequentialMedia.jsonLines.read(Array("{\"a\":1}\n{oops}\n".utf8))
        } catch {
            #expect(error.reason.hasPrefix("item 1 is not JSON"), "\(error.reason)")
        }
        #expect(throws: SequentialMedia.Unreadable(reason: "a JSON text sequence must start each item with a record separator (0x1E)")) {
            try SequentialMedia.jsonSequence.read(Array("1\n\u{1E}2\n".utf8))
        }
        #expect(throws: SequentialMedia.Unreadable(reason: "more than 2 items")) {
            try SequentialMedia.jsonLines.read(Array("1\n2\n3\n".utf8), maximumItems: 2)
        }
        #expect(SequentialMedia("application/json") == nil && SequentialMedia("text/plain") == nil)
    }

    @Test func aStreamOfItemsIsSentOnePartPerItemIntervalApart() throws {
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                endpoints:
                  logs:
                    request: GET /logs
                    responses:
                      - content_type: application/jsonl
                        item_schema: { type: object, required: [n], properties: { n: { type: integer } } }
                        interval: 50ms
                        items:
                          - { n: 1, path: "{{ request.path }}" }
                          - { n: 2 }
                  generated:
                    request: GET /generated
                    responses:
                      - content_type: application/json-seq
                        item_schema: { type: object, required: [id], properties: { id: { type: integer, example: 7 } } }
                        items_from_schema: 2
                """))
        let logs = engine.decision("GET", "/logs")
        let parts = try #require(logs.delivery.parts)
        #expect(parts.map(\.delay) == [0, 0.05])
        #expect(parts.map { String(decoding: $0.bytes, as: UTF8.self) } == ["{\"n\":1,\"path\":\"/logs\"}\n", "{\"n\":2}\n"])
        #expect(logs.response?.header("content-type") == "application/jsonl")
        let generated = try #require(engine.decision("GET", "/generated").delivery.parts)
        #expect(generated.flatMap(\.bytes) == Array("\u{1E}{\"id\":7}\n\u{1E}{\"id\":7}\n".utf8))
    }

    @Test func aRequestBodyIsCheckedItemByItem() throws {
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                endpoints:
                  ingest:
                    request: POST /ingest
                    body:
                      content_type: [application/x-ndjson]
                      item_schema: { type: object, required: [id], properties: { id: { type: integer } } }
                    responses:
                      - status: 200
                        body: { count: "{{ len(body) }}" }
                """))
        let headers = [(name: "Content-Type", value: "application/x-ndjson")]
        let taken = engine.send("POST", "/ingest", headers: headers, body: Array("{\"id\":1}\n{\"id\":2}\n".utf8))
        #expect(taken.status == 200 && taken.json == ["count": 2])
        let refused = engine.send("POST", "/ingest", headers: headers, body: Array("{\"id\":1}\n{\"id\":\"x\"}\n{}\n".utf8))
        #expect(refused.status == 422)
        #expect(
            refused.json?["errors"] == [
                ["pointer": "/body/1/id", "message": "expected integer, got string"], ["pointer": "/body/2/id", "message": "is required"],
            ])
        let broken = engine.send("POST", "/ingest", headers: headers, body: Array("{\"id\":1}\nnot json\n".utf8))
        #expect(
            broken.status == 422
                && broken.json?["errors"]?.arrayValue?.first?["message"]?.stringValue?.hasPrefix("cannot be read item by item: item 1 is not JSON")
                    == true
        )
    }

    @Test(arguments: [
        ("items: [1]\n        content_type: application/json", "'items' of response e[0] are sent as a sequential media type"),
        ("items_from_schema: 2", "'items_from_schema' of response e[0] needs an 'item_schema'"),
        ("item_schema: { type: integer }\n        items_from_schema: 0", "must be a number of items from 1 to 100"),
        ("item_schema: { type: integer }\n        items: [1, two]", "an item of response e[0]"),
        ("item_schema: { type: integer }\n        body: 1", "'item_schema' of response e[0] describes the items of a streamed body"),
        ("items: [1]\n        text: x", "give only one body"),
    ])
    func aMistakeInItemsIsAnErrorAtItsPlace(fields: String, message: String) {
        let found = diagnostics(
            of: """
                doppel: 1
                endpoints:
                  e:
                    request: GET /e
                    responses:
                      - status: 200
                        \(fields)
                """
        ).map(\.description)
        #expect(found.contains { $0.contains(message) }, "\(found)")
    }
}
