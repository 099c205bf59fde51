/// Why the engine chose a response, kept as facts while the request is
/// answered and made text only when read (a journal's JSON, a live event):
/// the common answers (the first response, a `when` that held, a
/// sequence's position) cost no string unless someone looks.
package struct Reason: Sendable {
    /// How the contract's own choice was made, if it made one.
    package enum Choice: Sendable {
        /// The endpoint's first response, which has no `when`.
        case first
        /// The response without a `when`, after `checked` whose `when` did not hold.
        case afterWhens(checked: Int)
        /// The response whose `when` (its source) held.
        case when(String)
    }

    /// What the stages before the choice said (the credential refused, the
    /// limit reached, the override or `Prefer` in force, the problem).
    package var given: String?
    package var choice: Choice?
    /// A sequence's call number and the answer it gave, of how many; whether it cycles.
    package var sequence: (call: Int, answer: Int, of: Int, cycles: Bool)?
    /// What followed the choice (another content type, by `Accept`).
    package var after: String?

    package init(_ given: String? = nil) {
        self.given = given.map(Problem.clipped)
    }

    /// The reason as the journal gives it, at most `Problem.maximumReason` characters.
    package var text: String {
        var parts: [String] = []
        if let given { parts.append(given) }
        switch choice {
        case .first: parts.append("the endpoint's first response (no `when`)")
        case .afterWhens(let checked): parts.append("no earlier `when` held (\(checked) checked); the response without one")
        case .when(let source): parts.append("`when: \(source)` held")
        case nil: break
        }
        if let sequence {
            let past = sequence.call > sequence.of ? (sequence.cycles ? " (cycling)" : " (the last, repeated)") : ""
            parts.append("sequence call \(sequence.call): answer \(sequence.answer) of \(sequence.of)\(past)")
        }
        if let after { parts.append(after) }
        return Problem.clipped(parts.joined(separator: "; "))
    }

    /// The bytes of text it holds of its own (a `when`'s source is the contract's).
    package var heldBytes: Int { (given?.utf8.count ?? 0) + (after?.utf8.count ?? 0) }
}
