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
}
