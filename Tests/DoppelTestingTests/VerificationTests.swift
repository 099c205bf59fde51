import DoppelTesting
import Foundation
import Testing

@Suite(.doppel("contracts/tales.yaml"))
struct VerificationTests {
    @Test func aFailedVerificationNamesTheNearMatches() async throws {
        let doppel = try #require(DoppelSession.current)
        // Without a token: the documented 401, not a 200.
        let response = try await doppel.send("POST", "/api/v1/stories/generate", json: #"{"language":"en"}"#)
        #expect(response.status == 401)

        // The recorded issue must say what came instead; any other issue fails the test.
        let id = doppel.id
        withKnownIssue {
            doppel.verify(endpoint: "generate-story", status: 200)
        } matching: { issue in
            let message = issue.comments.map(\.rawValue).joined()
            return message.contains("'generate-story' with 200 in session '\(id)' answered 0 times; expected at least 1")
                && message.contains("near matches:\n  401 in session '\(id)': 1 time")  // its own session's first
        }

        let passed = doppel.verify(endpoint: "generate-story", status: 401, count: 1)
        #expect(passed.passed && passed.actual == 1)
        #expect(!doppel.verification(endpoint: "generate-story", status: 401, max: 0).passed)
    }

    @Test func anUnknownEndpointIsNamedWithASuggestion() async throws {
        let doppel = try #require(DoppelSession.current)
        withKnownIssue {
            doppel.verify(endpoint: "generate-stroy")
        } matching: { issue in
            issue.comments.map(\.rawValue).joined() == "the contract has no endpoint 'generate-stroy' (did you mean 'generate-story'?)"
        }
    }

    @Test func coverageCountsThisSessionOnly() async throws {
        let doppel = try #require(DoppelSession.current)
        #expect(doppel.coverage.reached == 0)
        _ = try await doppel.send("GET", "/api/v1/free-stories")
        let coverage = doppel.coverage
        #expect(coverage.reached == 1)
        #expect(coverage.total > 10)
        #expect(!coverage.unreached.contains("list-free-stories 200"))
        #expect(coverage.unreached.contains("generate-story 402"))
    }

    @Test func aScenarioRunsInTheTestsSession() async throws {
        let doppel = try #require(DoppelSession.current)
        let result = try await doppel.run(scenario: "scenarios/tales/monthly-limit.yaml")
        #expect(result.passed)
        #expect(result.session == doppel.id)
        doppel.verify(endpoint: "generate-story", status: 402, count: 1)
    }

    @Test func theClockMovesForThisSessionAlone() async throws {
        let doppel = try #require(DoppelSession.current)
        let other = doppel.server.session()
        let before = other.now
        try doppel.advanceClock(by: "31d")
        #expect(doppel.now - other.now > 31 * 86400 - 60)
        #expect(abs(other.now - before) < 60)
        #expect(throws: TestServerError.self) { try doppel.advanceClock(by: "soon") }
    }
}
