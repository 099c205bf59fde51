import DoppelCore
import Foundation
import Testing

/// One request's reads and changes of its session are one atomic step:
/// concurrent requests see all of another request or none of it.
@Suite struct TransactionTests {
    static let contract = """
        doppel: 1
        state:
          counters: { steps: 0 }
          collections: { tokens: {} }
        responses:
          unauthorized: { status: 401, body: { detail: Not authenticated } }
        auth:
          default: bearer
          schemes:
            bearer: { type: bearer, issued: tokens, failure: unauthorized }
        rate_limits:
          per-session:
            key: session
            limit: 1000
            window: 1h
            endpoints: [step]
        endpoints:
          issue:
            request: POST /tokens
            auth: none
            responses:
              - effects: [ "state.tokens[body.token] = {}" ]
                status: 201
          redeem:
            request: POST /redeem
            responses:
              - effects: [ "delete state.tokens[auth.token]" ]
                status: 200
          step:
            request: POST /step
            auth: none
            responses:
              - when: body.fail == true
                effects: [ "state.steps += 1", "state.steps += 'not a number'" ]
                status: 200
              - effects: [ "state.steps += 1" ]
                status: 200
                body: { steps: "{{ state.steps }}" }
        """

    @Test func aTokenRevokedByOneRequestIsRefusedToEveryConcurrentOne() async throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        for round in 0..<5 {
            let session = "round-\(round)"
            #expect(engine.send("POST", "/tokens", json: ["token": "once"], token: nil, session: session).status == 201)
            // 100 requests race to redeem a one-time token: authentication and
            // the revoking effect are one step, so exactly one gets through.
            let statuses = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<100 { group.addTask { engine.send("POST", "/redeem", token: "once", session: session).status } }
                return await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            }
            #expect(statuses == [200: 1, 401: 99])
        }
    }

    @Test func countsWindowsAndEffectsOfARequestAreSeenAllOrNothing() async throws {
        let engine = MockEngine(contract: try loadContract(Self.contract))
        // Successful steps and steps whose second effect fails, interleaved.
        let results = await withTaskGroup(of: (status: Int, steps: Int?, remaining: Int?).self) { group in
            for i in 0..<300 {
                group.addTask {
                    let response = engine.send("POST", "/step", json: ["fail": .bool(i % 3 == 0)], token: nil, session: "s")
                    let steps = (try? JSONReader.parse(response.body))?["steps"]?.intValue
                    let remaining = response.headers.first { $0.name == "RateLimit-Remaining" }.flatMap { Int($0.value) }
                    return (response.status, steps, remaining)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let succeeded = results.filter { $0.status == 200 }
        #expect(succeeded.count == 200)
        #expect(results.filter { $0.status == 500 }.count == 100)
        // A failed request left no step, no rate window slot and no call count behind,
        // so every success sees its own step and its own slot, in the same state.
        for result in succeeded {
            #expect(result.steps.map { $0 + (result.remaining ?? -1) } == 1000)
        }
        #expect(Set(succeeded.compactMap(\.steps)) == Set(1...200))
        #expect(engine.sessions.existing("s")?.snapshot["steps"] == 200)
    }

    @Test func authenticatedRequestsCountAgainstARateLimitValidOrNot() throws {
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                auth: { default: bearer, schemes: { bearer: { type: bearer } } }
                rate_limits:
                  per-session: { key: session, limit: 10, window: 1h }
                endpoints:
                  add:
                    request: POST /items
                    body: { schema: { type: object, required: [name], properties: { name: { type: string } } } }
                    responses: [ { status: 201 } ]
                """))
        func remaining(_ response: MockResponse) -> String? { response.headers.first { $0.name == "RateLimit-Remaining" }?.value }
        for _ in 0..<3 { #expect(engine.send("POST", "/items", json: ["name": "x"], token: nil).status == 401) }
        for _ in 0..<2 { #expect(engine.send("POST", "/items", json: ["nome": "x"]).status == 422) }
        let valid = engine.send("POST", "/items", json: ["name": "x"])
        #expect(valid.status == 201)
        // The two invalid requests and this one counted; the three refused by authentication did not.
        #expect(remaining(valid) == "7")
    }
}
