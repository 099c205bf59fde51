import DoppelCore
import Testing

/// What the contract language gained to describe an LLM API
/// (contracts/llm-chat.yaml): `tokens()`, `items` from one expression,
/// `rate_limit` in expressions, and `negotiate: false`.
@Suite struct LLMLanguageTests {
    func eval(_ text: String, roots: [String: JSON] = [:]) throws -> JSON {
        try Expression.parse(text).evaluate(in: EvaluationContext(roots: roots, now: 0))
    }

    static let pieces: [(String, [String])] = [
        ("Hello, world!", ["Hello", ",", " world", "!"]),
        ("internationalization", ["intern", "ationa", "lizati", "on"]),
        ("12345 apples", ["123", "45", " apples"]),
        ("a  b", ["a", " ", " b"]),
        ("line\n next\n\nend", ["line", "\n", " next", "\n\n", "end"]),
        ("  lead", [" ", " lead"]),
        ("trail ", ["trail", " "]),
        ("tab\tthen", ["tab", "\t", "then"]),
        ("Ёжик в тумане", ["Ёжик", " в", " тумане"]),
        ("Ёжики", ["Ёжики"]),
        ("в туманище", ["в", " тумани", "ще"]),
        ("e\u{301}te\u{301}", ["e\u{301}te\u{301}"]),
        ("hi 👋🏽!", ["hi", " 👋🏽", "!"]),
        ("", []),
    ]

    @Test(arguments: pieces)
    func tokensCutTextAsDocumented(text: String, expected: [String]) throws {
        #expect(try eval("tokens(text)", roots: ["text": .string(text)]) == .array(expected.map { .string($0) }))
    }

    @Test func tokensOfNullAreNoneAndOfANumberAnError() throws {
        #expect(try eval("tokens(body.missing)", roots: ["body": [:]]) == [])
        #expect(throws: EvaluationError.self) { try eval("tokens(5)") }
    }

    /// Whatever the text, the pieces join back to it, none is empty, and
    /// none is longer than a space and six characters.
    @Test func tokensJoinBackToAnyText() throws {
        let palette: [Character] = [
            "a", "Z", "é", "ж", "語", "1", "9", " ", " ", "\n", "\t", "\r\n", ",", ".", "!", "-", "'", "\u{301}", "👋🏽", "🇫🇷", "\u{A0}", "_",
        ]
        var generator = SeededGenerator(seed: 43)
        for _ in 0..<500 {
            let text = String((0..<Int.random(in: 0...80, using: &generator)).map { _ in palette.randomElement(using: &generator)! })
            let pieces = TextTokensProbe.pieces(try eval("tokens(text)", roots: ["text": .string(text)]))
            #expect(pieces.joined() == text, "\(text.debugDescription)")
            #expect(pieces.allSatisfy { !$0.isEmpty }, "\(text.debugDescription)")
            #expect(pieces.allSatisfy { $0.count <= 7 || $0.allSatisfy(\.isWhitespace) }, "\(pieces)")
        }
    }

    /// About four characters of English a token, as real tokenizers count.
    @Test func englishCountsNearFourCharactersAToken() throws {
        let text = "The quick brown fox jumps over the lazy dog, and then it runs back into the forest to find its friends before night falls."
        let count = try #require(try eval("len(tokens(text))", roots: ["text": .string(text)]).intValue)
        #expect(count == 27)
        #expect((3.5...5.5).contains(Double(text.count) / Double(count)))
    }

    static let streaming = """
        doppel: 1
        endpoints:
          deltas:
            request: POST /deltas
            negotiate: false
            let:
              words: "tokens(string(body.text ?? ''))"
            responses:
              - name: listed
                when: body.kind == 'list'
                content_type: text/event-stream
                interval: 10ms
                items: "{{ map(words, w => {data: {delta: w}}) + [{data: '[DONE]'}] }}"
              - name: not-a-list
                when: body.kind == 'object'
                content_type: application/jsonl
                items: "{{ {not: 'a list'} }}"
              - name: too-many
                when: body.kind == 'many'
                content_type: application/jsonl
                items: "{{ tokens(string(body.text)) }}"
              - name: whole
                body: { text: "{{ body.text }}" }
            documented:
              - { status: 200, content_type: text/plain, text: plain }
        """

    /// The engine's decision for a POST of `json` to /deltas.
    static func deltas(_ json: JSON, accept: String? = nil, contract: String = streaming) throws -> Decision {
        var headers = [(name: "Content-Type", value: "application/json")]
        if let accept { headers.append((name: "Accept", value: accept)) }
        return MockEngine(contract: try loadContract(contract)).decided(
            RecordedRequest(method: "POST", target: "/deltas", headers: headers, body: JSONWriter.encode(json)))
    }

    @Test func itemsFromOneExpressionAreSentOnePartEach() throws {
        let decision = try Self.deltas(["kind": "list", "text": "Hi there"])
        let parts = try #require(decision.delivery.parts)
        #expect(
            parts.map { String(decoding: $0.bytes, as: UTF8.self) } == [
                "data: {\"delta\":\"Hi\"}\n\n", "data: {\"delta\":\" there\"}\n\n", "data: [DONE]\n\n",
            ])
        #expect(parts.map(\.delay) == [0, 0.01, 0.01])
        #expect(decision.response?.header("content-type") == "text/event-stream")
    }

    @Test func anEmptyListSendsNoItems() throws {
        let decision = try Self.deltas(["kind": "list", "text": ""])
        #expect(try #require(decision.delivery.parts).map { String(decoding: $0.bytes, as: UTF8.self) } == ["data: [DONE]\n\n"])
    }

    @Test func itemsThatAreNotAListOrTooManyAreProblemsAndChangeNothing() throws {
        let engine = MockEngine(contract: try loadContract(Self.streaming))
        let notAList = engine.send("POST", "/deltas", json: ["kind": "object"])
        #expect(notAList.status == 500)
        #expect(notAList.json?["detail"]?.stringValue?.contains("'items' must give a list, not object") == true, "\(notAList.json ?? nil)")
        let many = engine.send("POST", "/deltas", json: ["kind": "many", "text": .string(String(repeating: "x ", count: 10_001))])
        #expect(many.status == 413)
        #expect(many.json?["detail"]?.stringValue?.contains("more than a stream sends (10000)") == true, "\(many.json ?? nil)")
        #expect(engine.send("POST", "/deltas", json: ["kind": "many", "text": "xyz"]).status == 200)
    }

    /// Without `negotiate: false`, `Accept: application/json` would pick
    /// another 200 form; with it, the chosen stream goes out as it is.
    @Test func negotiateFalseSendsTheChosenFormWhateverAcceptSays() throws {
        let body: JSON = ["kind": "list", "text": "Hi"]
        let kept = try Self.deltas(body, accept: "application/json")
        #expect(kept.response?.header("content-type") == "text/event-stream")
        #expect(kept.response?.responseName == "listed")
        let negotiating = try Self.deltas(
            body, accept: "application/json", contract: Self.streaming.replacingOccurrences(of: "    negotiate: false\n", with: ""))
        #expect(negotiating.response?.responseName == "whole")
        #expect(try Self.deltas(body, accept: "image/png").response?.status == 200, "no 406: the chosen form is sent")
    }

    @Test func rateLimitIsTheTightestLimitAsExpressionsSeeIt() throws {
        let clock = TestClock("2025-01-01T00:00:00Z")
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                responses:
                  slow-down:
                    status: 429
                    headers: { x-remaining: "{{ rate_limit.remaining }}", x-limit: "{{ rate_limit.name }}" }
                    body: { retry: "{{ retry_after }}", reset: "{{ rate_limit.reset }}" }
                rate_limits:
                  minute: { key: session, limit: 3, window: 1m, response: slow-down, endpoints: [e] }
                  hour: { key: session, limit: 100, window: 1h, endpoints: [e] }
                endpoints:
                  e:
                    request: GET /e
                    responses:
                      - headers: { x-remaining: "{{ rate_limit.remaining }}", x-limit: "{{ rate_limit.name }}/{{ rate_limit.limit }}" }
                  free:
                    request: GET /free
                    responses: [ { body: { limit: "{{ rate_limit }}" } } ]
                """), clock: { clock.now })
        #expect(engine.send("GET", "/e").header("x-remaining") == "2")
        clock.advance(seconds: 15)
        let second = engine.send("GET", "/e")
        #expect(second.header("x-remaining") == "1" && second.header("x-limit") == "minute/3")
        #expect(engine.send("GET", "/e").header("x-remaining") == "0")
        let refused = engine.send("GET", "/e")
        #expect(refused.status == 429 && refused.header("x-remaining") == "0" && refused.header("x-limit") == "minute")
        #expect(refused.json == ["retry": 45, "reset": 45])
        #expect(engine.send("GET", "/free").json == ["limit": nil], "no limit covers it")
    }

    @Test func lintPlacesTheNewKeysProblems() {
        let found = diagnostics(
            of: """
                doppel: 1
                endpoints:
                  e:
                    request: GET /e
                    negotiate: sometimes
                    responses:
                      - content_type: application/jsonl
                        items: "{{ map(nope, it) }}"
                      - content_type: application/json
                        items: "{{ [1] }}"
                """
        ).map { "\($0.location.line):\($0.location.column): \($0.message)" }
        #expect(found.contains { $0.hasPrefix("5:") && $0.contains("negotiate") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("8:") && $0.contains("nope") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("10:") && $0.contains("not one") }, "\(found)")
    }
}

/// The strings of a JSON list.
enum TextTokensProbe {
    static func pieces(_ value: JSON) -> [String] {
        value.arrayValue?.compactMap(\.stringValue) ?? []
    }
}
