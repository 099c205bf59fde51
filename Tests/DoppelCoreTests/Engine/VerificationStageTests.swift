import Testing

@testable import DoppelCore

struct VerificationStageTests {
    func journal(_ entries: [(session: String, status: Int)]) -> Journal {
        let journal = Journal(capacity: 100)
        for entry in entries {
            journal.record(
                time: 0, session: entry.session, method: "GET", path: "/x", query: nil, status: entry.status,
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

/// The journal is bounded in bytes as well as entries: long targets (a
/// 32 KiB query is a valid request) drop the oldest entries first, while
/// the counts verification reads survive.
@Suite("Journal bounds")
struct JournalBoundsTests {
    @Test func longTargetsDropTheOldestEntriesWithinTheByteBudget() {
        let journal = Journal(capacity: 10_000)
        let query = String(repeating: "q", count: 1 << 20)  // 1 MiB each
        for index in 0..<100 {
            journal.record(
                time: 0, session: "s", method: "GET", path: "/p\(index)", query: query, status: 200,
                endpointID: "p", responseName: nil, durationMicros: 1)
        }
        let held = journal.entries
        let bytes = held.reduce(0) { $0 + $1.path.utf8.count + ($1.query?.utf8.count ?? 0) }
        #expect(bytes <= Journal.maximumTextBytes)
        #expect(held.count == 31)  // 31 entries of 1 MiB and a few bytes each fit in 32 MiB
        #expect(held.map(\.sequence) == Array(70...100))
        #expect(held.last?.path == "/p99")
        #expect(journal.tally.count { _ in true } == 100)

        // Short entries fill in again, up to the entry capacity.
        let small = Journal(capacity: 5)
        journal.clear()
        for index in 0..<8 {
            small.record(
                time: 0, session: "s", method: "GET", path: "/\(index)", query: nil, status: 200, endpointID: nil, responseName: nil,
                durationMicros: 1)
        }
        #expect(small.entries.map(\.path) == ["/3", "/4", "/5", "/6", "/7"])
        #expect(journal.count == 0)
    }

    @Test func oneEntryLargerThanTheBudgetIsStillKept() {
        let journal = Journal(capacity: 10)
        journal.record(
            time: 0, session: "s", method: "GET", path: "/a", query: nil, status: 200, endpointID: nil, responseName: nil, durationMicros: 1)
        journal.record(
            time: 0, session: "s", method: "GET", path: "/b", query: String(repeating: "x", count: Journal.maximumTextBytes + 1),
            status: 200, endpointID: nil, responseName: nil, durationMicros: 1)
        #expect(journal.entries.map(\.path) == ["/b"])
        journal.record(
            time: 0, session: "s", method: "GET", path: "/c", query: nil, status: 200, endpointID: nil, responseName: nil, durationMicros: 1)
        #expect(journal.entries.map(\.path) == ["/c"])
    }
}
