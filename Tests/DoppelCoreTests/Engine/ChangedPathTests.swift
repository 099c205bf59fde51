import Testing

@testable import DoppelCore

/// The journal's text of a changed path is built in one string on the
/// request's path; the way it was first written (keys mapped, joined,
/// split at line breaks, joined again, counted in characters) is kept
/// here as the reference both must agree with.
@Suite("Changed paths as the journal writes them")
struct ChangedPathTests {
    static func reference(_ path: [StateKey]) -> String {
        var text = path.map(\.memberName).joined(separator: ".").split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\\n")
        if text.count > 200 { text = String(text.prefix(199)) + "…" }
        return text
    }

    static let pieces = ["", "a", "stories", "s_1", "\n", "a\nb", "\r\n", "x\r\ny", "é", "e\u{301}", "👩‍👩‍👧", "🇫🇷", ".", "\\n"]

    @Test("Agrees with the reference on names, positions, line breaks, combining marks and lengths around 200 characters")
    func agreesWithTheReference() {
        var paths: [[StateKey]] = [[], [.name("stories_used")], [.name("stories"), .name("s_1")], [.name("list"), .position(-1)], [.position(0)]]
        for first in Self.pieces {
            for second in Self.pieces { paths.append([.name(first), .name(second), .position(3)]) }
        }
        // Lengths on both sides of the cut, in one-byte, two-byte and many-byte characters.
        for piece in ["a", "é", "e\u{301}", "👩‍👩‍👧", "\n", "\r\n"] {
            for count in [1, 99, 100, 198, 199, 200, 201, 202, 400] {
                paths.append([.name(String(repeating: piece, count: count))])
                paths.append([.name("s"), .name(String(repeating: piece, count: count / 2)), .name("t")])
            }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let keys = (0..<Int.random(in: 1...5, using: &generator)).map { _ -> StateKey in
                if Bool.random(using: &generator) { return .position(Int.random(in: -5...500, using: &generator)) }
                let length = Int.random(in: 0...90, using: &generator)
                return .name((0..<length).map { _ in Self.pieces.randomElement(using: &generator)! }.joined())
            }
            paths.append(keys)
        }
        var disagreements: [String] = []
        for path in paths where SessionData.journalText(of: path) != Self.reference(path) {
            disagreements.append("\(path): \(SessionData.journalText(of: path).debugDescription) ≠ \(Self.reference(path).debugDescription)")
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(3))")
        #expect(SessionData.journalText(of: [.name("stories"), .name("s_1")]) == "stories.s_1")
        #expect(SessionData.journalText(of: [.name("a\nb")]) == "a\\nb")
        #expect(SessionData.journalText(of: [.name(String(repeating: "é", count: 201))]).count == 200)
    }
}
