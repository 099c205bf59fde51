import DoppelCore
import Foundation
import Testing

/// Changes are made in place and undone when a request fails part-way:
/// whatever kind of change came before the failure, the session is left
/// exactly as it was.
@Suite struct RollbackTests {
    static let contract = """
        doppel: 1
        state:
          counters: { n: 0 }
          collections: { items: [ { id: keep, x: 0 } ] }
          variables:
            list: [1, 2, 3]
            profile: { name: a, tags: [t] }
        endpoints:
          mess:
            request: POST /mess
            responses:
              - effects:
                  - state.n += 1
                  - "state.items['new'] = {x: 1}"
                  - "state.items['new'].y = 2"
                  - "state.items.keep.x = 5"
                  - state.list[3] = 4
                  - delete state.list[0]
                  - delete state.profile.name
                  - state.profile.deep.er = 1
                  - state.profile.tags[0] = 'u'
                  - "state.n += if(body.fail == true, 'not a number', 0)"
                status: 200
          flaky:
            request: POST /flaky
            responses:
              - sequence:
                  - { status: 503, effects: [ "state.n += if(body.fail == true, 'not a number', 0)" ] }
                  - { status: 200 }
        """

    @Test func aFailedRequestLeavesEveryKindOfChangeUndone() throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        let before = engine.sessions.session("s").snapshot
        #expect(engine.send("POST", "/mess", json: ["fail": true], session: "s").status == 500)
        #expect(engine.sessions.existing("s")?.snapshot == before)

        #expect(engine.send("POST", "/mess", json: ["fail": false], session: "s").status == 200)
        let after = try #require(engine.sessions.existing("s")?.snapshot)
        #expect(after["n"] == 1)
        #expect(after["items"] == ["keep": ["id": "keep", "x": 5], "new": ["x": 1, "y": 2]])
        #expect(after["list"] == [2, 3, 4])
        #expect(after["profile"] == ["tags": ["u"], "deep": ["er": 1]])

        // A second failure after changes: back to the state after the success, not before it.
        #expect(engine.send("POST", "/mess", json: ["fail": true], session: "s").status == 500)
        #expect(engine.sessions.existing("s")?.snapshot == after)
    }

    @Test func aFailedCallDoesNotMoveItsSequence() throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        #expect(engine.send("POST", "/flaky", json: ["fail": true], session: "s").status == 500)
        #expect(engine.send("POST", "/flaky", json: ["fail": false], session: "s").status == 503)
        #expect(engine.send("POST", "/flaky", json: ["fail": false], session: "s").status == 200)
    }

    @Test func theStateSizeIsKeptExactlyThroughChangesAndRollbacks() throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        for fail in [false, true, false, true, true, false] {
            _ = engine.send("POST", "/mess", json: ["fail": .bool(fail)], session: "s")
        }
        let session = try #require(engine.sessions.existing("s"))
        let kept = session.transact { (data: inout SessionData) -> Int in data.stateSize }
        #expect(kept == JSON.object(session.snapshot).encodedSize)
    }
    static let renderingContract = """
        doppel: 1
        state:
          counters: { n: 0 }
          collections: { items: [] }
        rate_limits:
          two: { key: session, limit: 2, window: 1h, endpoints: [divide] }
        fallbacks:
          not_found:
            status: 404
            effects: [ state.n += 1 ]
            body: { n: "{{ 10 / (state.n - 1) }}" }
        endpoints:
          divide:
            request: POST /divide
            responses:
              - sequence:
                  - status: 200
                    effects: [ state.n += 1, "state.items[uuid()] = {at: state.n}" ]
                    body: { ratio: "{{ 10 / (state.n - body.by) }}", minus: "{{ body.word - 1 }}" }
                  - { status: 201 }
        """

    /// Effects and rendering commit together: a template of the chosen
    /// response that fails (a division by zero, text minus one) leaves the
    /// counter, the collection, the sequence and the rate window as they were.
    @Test func aTemplateThatFailsKeepsNoEffectSequenceOrRateWindow() throws {
        let engine = MockEngine(contract: try loadContract(Self.renderingContract))
        let before = engine.sessions.session("s").snapshot
        for body: JSON in [["by": 1, "word": 1], ["by": 0, "word": "text"]] {
            let failed = engine.send("POST", "/divide", json: body, session: "s")
            #expect(failed.status == 500)
            #expect(failed.json?["type"] == "urn:doppel:problem:expression-failed")
            #expect(engine.sessions.existing("s")?.snapshot == before)
        }
        // The rate window counted neither failure, and the sequence is still at its first response.
        let first = engine.send("POST", "/divide", json: ["by": 0, "word": 1], session: "s")
        #expect(first.status == 200)
        #expect(first.json?["ratio"] == 10)
        #expect(first.headers.first { $0.name == "RateLimit-Remaining" }?.value == "1")
        let after = try #require(engine.sessions.existing("s")?.snapshot)
        #expect(after["n"] == 1)
        #expect(after["items"]?.objectValue?.count == 1)
        #expect(engine.send("POST", "/divide", json: ["by": 0, "word": 1], session: "s").status == 201)
        #expect(engine.send("POST", "/divide", json: ["by": 0, "word": 1], session: "s").status == 429)
    }

    @Test func aFallbackWhoseTemplateFailsKeepsNoEffect() throws {
        let engine = MockEngine(contract: try loadContract(Self.renderingContract))
        // n goes 0 -> 1 and the body divides by n - 1 = 0: nothing is kept.
        #expect(engine.send("GET", "/nowhere", session: "s").status == 500)
        #expect(engine.sessions.existing("s")?.snapshot["n"] == 0)
    }
}
