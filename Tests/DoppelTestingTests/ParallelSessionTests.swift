import DoppelTesting
import Foundation
import Testing

let bearer = [
    "Authorization":
        "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjJiOGMxZS03ZDRhLTRlNTktOWIxYy0yYTZmMGU4ZDRjNzEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCJ9.c2lnbmF0dXJl"
]

/// Twenty tests at once on one shared server, each walking the free plan's
/// monthly limit in a session of its own: if sessions leaked into each other,
/// some test would see its 402 early or its count off.
@Suite(.doppel("contracts/tales.yaml"))
struct ParallelSessionTests {
    @Test(arguments: 0..<20)
    func monthlyLimitInItsOwnSession(walker: Int) async throws {
        let doppel = try #require(DoppelSession.current)
        let child = try await doppel.send(
            "POST", "/api/v1/children", headers: bearer,
            json: #"{"name":"Walker \#(walker)","age_category":"5-7","gender":"female","interests":["maps"]}"#)
        try #require(child.status == 200, "\(child.text)")
        let childID = try #require(child.json?["id"]?.stringValue)
        for story in 1...5 {
            let generated = try await doppel.send(
                "POST", "/api/v1/stories/generate", headers: bearer,
                json: #"{"language":"en","child_id":"\#(childID)"}"#)
            #expect(generated.status == 200, "story \(story) of walker \(walker): \(generated.text)")
        }
        let refused = try await doppel.send(
            "POST", "/api/v1/stories/generate", headers: bearer,
            json: #"{"language":"en","child_id":"\#(childID)"}"#)
        #expect(refused.status == 402)
        #expect(refused.json?["limit_info"]?["stories_used"] == .int(5))
        #expect(refused.json?["limit_info"]?["current_plan"] == .string("free"))

        #expect(doppel.state["stories_used"] == .int(5))
        doppel.verify(endpoint: "generate-story", status: 200, count: 5)
        doppel.verify(endpoint: "generate-story", status: 402, count: 1)
        #expect(doppel.journal(endpoint: "generate-story").map(\.status) == [200, 200, 200, 200, 200, 402])
    }

    @Test func everyTestHasItsOwnSessionOnOneServer() async throws {
        let doppel = try #require(DoppelSession.current)
        let again = try await DoppelTestServer.shared(contract: "contracts/tales.yaml")
        #expect(again === doppel.server)
        #expect(doppel.id.hasPrefix("test-"))
        #expect(doppel.journal().isEmpty)
    }
}
