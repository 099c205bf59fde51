@testable import DoppelCore
import Testing

struct VerificationStageTests {
    func journal(_ entries: [(session: String, status: Int)]) -> Journal {
        let journal = Journal(capacity: 100)
        for entry in entries {
            journal.record(time: 0, session: entry.session, method: "GET", path: "/x", query: nil, status: entry.status,
                           endpointID: "x", responseName: nil, durationMicros: 1)
        }
        return journal
    }

    @Test func countsAgainstExactlyOrARange() {
        let journal = journal([("a", 200), ("a", 200), ("a", 404), ("b", 200)])
        #expect(Verification(.init(endpoint: "x", status: 200, session: "a"), expected: .exactly(2), in: journal).passed)
        #expect(!Verification(.init(endpoint: "x", status: 200, session: "a"), expected: .exactly(1), in: journal).passed)
        #expect(Verification(.init(endpoint: "x", status: 200), expected: .between(min: 3, max: 3), in: journal).actual == 3)
        #expect(Verification(.init(endpoint: "x", status: 500), expected: .between(min: 0, max: 0), in: journal).passed)
        #expect(!Verification(.init(endpoint: "y"), in: journal).passed)
    }

    @Test func nearMatchesListTheSessionsOwnFirstAndAreCappedInTheMessage() {
        var entries: [(session: String, status: Int)] = (0..<14).map { ("other-\($0 + 10)", 200) }
        entries.append(("z-mine", 401))
        let verification = Verification(.init(endpoint: "x", status: 200, session: "z-mine"), in: journal(entries))
        #expect(verification.nearMatches.count == 15)
        #expect(verification.nearMatches.first == Verification.NearMatch(endpoint: "x", status: 401, session: "z-mine", count: 1))
        let lines = verification.description.split(separator: "\n").map(String.init)
        #expect(lines[0] == "'x' with 200 in session 'z-mine' answered 0 times; expected at least 1")
        #expect(lines[1] == "near matches:")
        #expect(lines[2] == "  401 in session 'z-mine': 1 time")
        #expect(lines.count == 2 + Verification.shownNearMatches + 1)
        #expect(lines.last == "  and 5 more")
    }
}
