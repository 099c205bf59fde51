import DoppelCore
import Testing

@Suite struct TimeAndTroubleStageTests {
    let clock = TestClock("2025-01-01T00:00:00Z")

    func engine(_ text: String) throws -> MockEngine {
        let clock = self.clock
        return MockEngine(contract: try loadContract(text), clock: { clock.now })
    }

    @Test func fixedWindowsCountPerKeyAndTellWhenToRetry() throws {
        let engine = try engine(
            """
            doppel: 1
            rate_limits:
              per-key: { key: "headers['x-key']", limit: 2, window: 1m }
            endpoints:
              e: { request: GET /e, responses: [ { status: 200 } ] }
            """)
        func call(_ key: String) -> MockResponse { engine.send("GET", "/e", headers: [(name: "X-Key", value: key)]) }
        #expect(call("a").header("ratelimit-remaining") == "1")
        clock.advance(seconds: 20)
        #expect(call("a").header("ratelimit-remaining") == "0")
        #expect(call("b").status == 200)
        let refused = call("a")
        #expect(refused.status == 429)
        #expect(refused.header("retry-after") == "40")
        #expect(refused.json?["detail"] == "Rate limit exceeded; retry in 40 s.")
        clock.advance(seconds: 40)
        #expect(call("a").status == 200)
    }

    @Test func aLimitsOwnRetryAfterIsTheOnlyOneSent() throws {
        let engine = try engine(
            """
            doppel: 1
            responses:
              too-many:
                status: 429
                headers: { Retry-After: "{{ retry_after }}" }
                body: { detail: slow down }
            rate_limits:
              s: { key: session, limit: 1, window: 1m, response: too-many }
            endpoints:
              e: { request: GET /e, responses: [ { status: 200 } ] }
            """)
        #expect(engine.send("GET", "/e").status == 200)
        let refused = engine.send("GET", "/e")
        #expect(refused.status == 429)
        #expect(refused.headers.filter { $0.name.lowercased() == "retry-after" }.map(\.value) == ["60"])
    }

    @Test func slidingWindowsFreeOneSlotAtATime() throws {
        let engine = try engine(
            """
            doppel: 1
            rate_limits:
              s: { key: session, limit: 2, window: 10s, algorithm: sliding }
            endpoints:
              e: { request: GET /e, responses: [ { status: 200 } ] }
            """)
        #expect(engine.send("GET", "/e").status == 200)
        clock.advance(seconds: 4)
        #expect(engine.send("GET", "/e").status == 200)
        #expect(engine.send("GET", "/e").header("retry-after") == "6")
        clock.advance(seconds: 6)
        #expect(engine.send("GET", "/e").status == 200)
        #expect(engine.send("GET", "/e").status == 429)
    }

    @Test func sequencesRepeatTheLastOrCycle() throws {
        let engine = try engine(
            """
            doppel: 1
            endpoints:
              last: { request: GET /last, responses: [ { sequence: [ { status: 503 }, { status: 200 } ] } ] }
              cycle: { request: GET /cycle, responses: [ { sequence: [ { status: 201 }, { status: 202 } ], then: cycle } ] }
            """)
        #expect((0..<4).map { _ in engine.send("GET", "/last").status } == [503, 200, 200, 200])
        #expect((0..<5).map { _ in engine.send("GET", "/cycle").status } == [201, 202, 201, 202, 201])
        #expect(engine.send("GET", "/last", session: "other").status == 503)
    }

    @Test func sessionClocksMoveIndependently() throws {
        let engine = try engine(
            """
            doppel: 1
            endpoints:
              now: { request: GET /now, responses: [ { body: { now: "{{ clock.now }}" } } ] }
            """)
        let moved = engine.sessions.session("moved")
        _ = moved.adjustClock { $0.advance(by: CalendarDuration.parse("31d")!, real: clock.now) }
        #expect(engine.send("GET", "/now", session: "moved").json == ["now": "2025-02-01T00:00:00Z"])
        #expect(engine.send("GET", "/now").json == ["now": "2025-01-01T00:00:00Z"])
        _ = moved.adjustClock { $0.freeze(true, real: clock.now) }
        clock.advance(seconds: 3600)
        #expect(engine.send("GET", "/now", session: "moved").json == ["now": "2025-02-01T00:00:00Z"])
        #expect(engine.send("GET", "/now").json == ["now": "2025-01-01T01:00:00Z"])
    }

    @Test func responsesCarryTheirDelayAndFaultForTheTransport() throws {
        let engine = try engine(
            """
            doppel: 1
            endpoints:
              slow: { request: GET /slow, responses: [ { delay: 250ms, body: { a: 1 } } ] }
              range: { request: GET /range, responses: [ { delay: { min: 1s, max: 2s }, status: 200 } ] }
              broken: { request: GET /broken, responses: [ { fault: malformed_json, body: { message: hello } } ] }
              reset: { request: GET /reset, responses: [ { fault: connection_reset } ] }
            """)
        #expect(engine.decision("GET", "/slow").delay == 0.25)
        #expect(engine.decision("GET", "/slow").delivery.kind == .whole)
        #expect((1.0...2.0).contains(engine.decision("GET", "/range").delay))
        let broken = engine.decision("GET", "/broken")
        #expect(broken.delivery.kind == .whole)
        #expect(broken.response?.body == Array(#"{"message"#.utf8))
        #expect(engine.decision("GET", "/reset").delivery.kind == .fault(.connectionReset))
        #expect(Delay.parse("100ms-300ms") == Delay(minimum: 0.1, maximum: 0.3))
        #expect(Delay.parse("1mo") == nil)
    }

    @Test func multipartBodiesSplitIntoParts() throws {
        let body = Array(
            "--b\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHi\r\n--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nabc\r\n--b--\r\n"
                .utf8)
        #expect(FormBody.boundary(of: "multipart/form-data; boundary=\"b\"") == "b")
        let parts = try FormBody.multipartParts(body, boundary: "b")
        #expect(
            parts == [
                FormBody.Part(name: "title", filename: nil, contentType: nil, content: Array("Hi".utf8)),
                FormBody.Part(name: "f", filename: "a.txt", contentType: "text/plain", content: Array("abc".utf8)),
            ])
        #expect(throws: FormBody.MalformedMultipart.self) { try FormBody.multipartParts(Array("--b\r\nno".utf8), boundary: "b") }
        #expect(throws: FormBody.MalformedMultipart.self) { try FormBody.multipartParts(Array("nothing".utf8), boundary: "b") }
    }

    @Test func loaderChecksTheNewKeys() {
        let text = """
            doppel: 1
            auth:
              schemes:
                b: { type: bearer, issued: tokns, expired: gone }
            rate_limits:
              r: { key: auth.token, limit: 5, window: soon, endpoints: [nope] }
            endpoints:
              e:
                request: GET /e
                responses:
                  - { fault: explode, delay: fast, status: 200 }
                  - sequence: [ { when: "true", status: 200 } ]
                    then: loop
            """
        #expect(
            diagnostics(of: text, file: "n.yaml").map(\.description) == [
                "n.yaml:4:32: error: 'issued' of auth scheme 'b' must name a state collection of issued tokens",
                "n.yaml:4:48: error: undefined response 'gone'",
                "n.yaml:6:43: error: 'window' of rate limit 'r' must be a duration like 1m, 30s or 1h",
                "n.yaml:6:61: error: rate limit 'r' covers unknown endpoint 'nope'",
                "n.yaml:11:9: warning: response e[0] has no 'when', so the responses after it are never chosen",
                "n.yaml:11:18: error: unknown fault 'explode'; faults are connection_reset, empty_reply, truncated_body, malformed_json, no_answer",
                "n.yaml:11:34: error: delay must be a duration like 250ms or a range like 10s-30s",
                "n.yaml:12:29: error: responses in a sequence are taken in turn and cannot have 'when'; put it on the sequence",
                "n.yaml:13:15: error: 'then' of sequence e[1] must be repeat_last or cycle",
            ])
    }
}

@Suite struct RepeatedFormFieldTests {
    @Test func aRepeatedTextFieldGivesAListInBothKindsOfForm() throws {
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                endpoints:
                  form:
                    request: POST /form
                    body:
                      content_type: [application/x-www-form-urlencoded, multipart/form-data]
                      schema: { type: object, properties: { n: { type: integer }, one: { type: string } } }
                    responses: [ { status: 200, body: "{{ body }}" } ]
                """))
        let urlencoded = engine.send(
            "POST", "/form", token: nil, headers: [(name: "Content-Type", value: "application/x-www-form-urlencoded")],
            body: Array("tag=a&tag=b&n=1&one=x".utf8))
        #expect(urlencoded.json == ["tag": ["a", "b"], "n": 1, "one": "x"])
        let multipart =
            "--b\r\nContent-Disposition: form-data; name=\"tag\"\r\n\r\na\r\n--b\r\nContent-Disposition: form-data; name=\"tag\"\r\n\r\nb\r\n"
            + "--b\r\nContent-Disposition: form-data; name=\"one\"\r\n\r\nx\r\n--b--\r\n"
        let parts = engine.send(
            "POST", "/form", token: nil, headers: [(name: "Content-Type", value: "multipart/form-data; boundary=b")], body: Array(multipart.utf8))
        #expect(parts.json == ["tag": ["a", "b"], "one": "x"])
        // A repeated field whose schema wants one value is a validation failure, not its last value.
        let twice = engine.send(
            "POST", "/form", token: nil, headers: [(name: "Content-Type", value: "application/x-www-form-urlencoded")],
            body: Array("one=x&one=y".utf8))
        #expect(twice.status == 422)
    }
}
