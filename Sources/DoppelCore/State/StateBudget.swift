import Synchronization

/// The state all sessions of a store hold together, as JSON size, against a
/// limit: one session may hold at most `SessionData.maximumStateSize`, and
/// without a shared budget ten thousand full sessions would hold 160 GiB.
///
/// Sessions report each committed change of their size; the store evicts
/// least recently used sessions while the total is over the limit.
///
/// The total is an atomic rather than a locked value: the store reads it on
/// every request, and a read is then a plain load, with no lock for the
/// event loops to pass between them.
package final class StateBudget: Sendable {
    /// The most state all sessions may hold together.
    package static let defaultLimit = 512 << 20

    package let limit: Int
    private let total = Atomic<Int>(0)

    package init(limit: Int = StateBudget.defaultLimit) {
        self.limit = limit
    }

    /// What all sessions hold now.
    package var used: Int { total.load(ordering: .relaxed) }

    /// True while the sessions hold more than the limit.
    package var isOver: Bool { used > limit }

    func add(_ delta: Int) {
        guard delta != 0 else { return }
        total.wrappingAdd(delta, ordering: .relaxed)
    }
}
