import Testing

@testable import DoppelCore

/// A reloaded contract (`doppel serve --watch`): what each session keeps.
struct ReloadStageTests {
    @Test func aSessionKeepsWhatTheNewDeclarationStillDeclaresAlike() {
        let old = StateDeclaration(
            initial: JSONObject([("hits", 0), ("plan", "free"), ("gone", 1), ("children", .object(JSONObject()))]),
            kinds: ["hits": .counter, "plan": .variable, "gone": .counter, "children": .collection],
            collectionKeys: ["children": "id"])
        let new = StateDeclaration(
            initial: JSONObject([("hits", 0), ("plan", 7), ("children", .object(JSONObject())), ("added", "x")]),
            kinds: ["hits": .counter, "plan": .counter, "children": .collection, "added": .variable],
            collectionKeys: ["children": "name"])
        let state = JSONObject([("hits", 12), ("plan", "premium"), ("gone", 3), ("children", .object(JSONObject([("a", ["id": "a"])])))])
        let migrated = SessionStore.migrate(state, from: old, to: new)
        #expect(migrated["hits"] == 12)  // same name, same kind: kept
        #expect(migrated["plan"] == 7)  // a variable now a counter: the new initial value
        #expect(migrated["children"] == .object(JSONObject()))  // another key field: the new initial value
        #expect(migrated["added"] == "x")  // new: its initial value
        #expect(migrated["gone"] == nil)  // no longer declared: dropped
    }

    @Test func anEngineCarryingOnSharesSessionsJournalAndClock() throws {
        let first = try ContractLoader.load(
            text: """
                doppel: 1
                state: { counters: { hits: 0 } }
                endpoints:
                  hit:
                    request: POST /hit
                    responses:
                      - effects: ["state.hits += 1"]
                        body: { hits: "{{ state.hits }}", version: 1 }
                """, file: "first.yaml")
        let second = try ContractLoader.load(
            text: """
                doppel: 1
                state: { counters: { hits: 0, misses: 0 } }
                endpoints:
                  hit:
                    request: POST /hit
                    responses:
                      - effects: ["state.hits += 1"]
                        body: { hits: "{{ state.hits }}", version: 2 }
                """, file: "second.yaml")
        let engine = MockEngine(contract: first, clock: { 1_000_000 })
        let request = RecordedRequest(method: "POST", target: "/hit", headers: [(name: "Doppel-Session", value: "s")])
        _ = engine.respond(to: request)
        let reloaded = MockEngine(contract: second, carryingOn: engine)
        #expect(reloaded.sessions === engine.sessions && reloaded.journal === engine.journal)
        #expect(reloaded.respond(to: request).json == ["hits": 2, "version": 2])
        #expect(reloaded.sessions.session("s").snapshot["misses"] == 0)
        #expect(reloaded.sessions.initial["misses"] == 0)
        #expect(reloaded.journal.count == 2)
    }
}
