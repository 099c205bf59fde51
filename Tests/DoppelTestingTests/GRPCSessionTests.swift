import DoppelTesting
import Foundation
import Testing

/// An app's gRPC calls against the demo contract, from a Swift test suite:
/// the quota in the test's own session, its status details, a stream, and
/// the journal and verification that follow.
@Suite(.doppel("contracts/tales-grpc.yaml"))
struct GRPCSessionTests {
    static let token = ["authorization": "Bearer app-token"]

    @Test func theQuotaIsResourceExhaustedInTheTestsOwnSession() async throws {
        let doppel = try #require(DoppelSession.current)
        for left in ["4", "3", "2", "1", "0"] {
            let story = try await doppel.call("tales.v1.Tales/GenerateStory", message: ["childName": "Mia"], metadata: Self.token)
            #expect(story.statusName == "OK")
            #expect(story.metadata["x-stories-left"] == left)
        }
        let refused = try await doppel.call("tales.v1.Tales/GenerateStory", message: ["childName": "Mia"], metadata: Self.token)
        #expect(refused.status == 8)
        #expect(refused.statusName == "RESOURCE_EXHAUSTED")
        #expect(refused.message == "Monthly story limit exceeded. You have used 5/5 stories this month.")
        let quota = refused.body["details"]?.arrayValue?.first
        #expect(quota?["@type"] == "type.googleapis.com/google.rpc.QuotaFailure")
        #expect(quota?["violations"]?.arrayValue?.first?["subject"] == "plan:free")

        let stories = try await doppel.call("tales.v1.Tales/ListStories", metadata: Self.token)
        #expect(stories.body.arrayValue?.count == 5)
        let anonymous = try await doppel.call("tales.v1.Tales/GetUsage")
        #expect(anonymous.statusName == "UNAUTHENTICATED")

        doppel.verify(endpoint: "tales.v1.Tales/GenerateStory", status: 429, count: 1)
        doppel.verify(endpoint: "tales.v1.Tales/GenerateStory", status: 200, count: 5)
        #expect(doppel.journal(endpoint: "tales.v1.Tales/ListStories.stories").count == 5)
        #expect(doppel.state["stories_used"] == .int(5))
    }

    @Test func aClientStreamAndAMessageTheProtoCannotHold() async throws {
        let doppel = try #require(DoppelSession.current)
        let summary = try await doppel.call(
            "tales.v1.Tales/UploadDrafts", messages: [["title": "a", "text": "xyz"], ["title": "b"]], metadata: Self.token)
        #expect(summary.body == ["drafts": 2, "characters": "3", "titles": ["a", "b"]])
        await #expect(throws: TestServerError.self) {
            _ = try await doppel.call("tales.v1.Tales/GenerateStory", message: ["childNom": "Mia"], metadata: Self.token)
        }
        // Nothing was sent for it: the session saw one call.
        #expect(doppel.journal().count == 3)
    }
}
