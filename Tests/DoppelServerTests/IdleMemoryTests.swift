import DoppelCore
import Foundation
import Testing

@testable import DoppelServer

/// When the server returns freed heap memory: after a quiet spell without
/// connections, once per spell, never while a connection is open. The
/// spells are run by hand, so the tests do not depend on timing.
@Suite struct IdleMemoryTests {
    /// Work scheduled for after a quiet spell, run when the test says the spell has passed.
    final class Spells: Sendable {
        private let pending = Locked<[@Sendable () -> Void]>([])
        var count: Int { pending.withLock { $0.count } }
        func schedule(_ delay: DispatchTimeInterval, _ work: @escaping @Sendable () -> Void) { pending.withLock { $0.append(work) } }
        /// Ends the spells begun so far (work they schedule waits for the next call).
        func pass() {
            for work in pending.withLock({ list in
                defer { list = [] }
                return list
            }) { work() }
        }
    }

    func trimmer(_ spells: Spells) -> IdleMemory.Trimmer {
        IdleMemory.Trimmer(quiet: .milliseconds(250), after: { spells.schedule($0, $1) }, trim: {})
    }

    @Test func trimsOnceAfterTheLastConnectionClosesAndNotWhileOneIsOpen() {
        let spells = Spells()
        let trimmer = trimmer(spells)
        trimmer.opened()
        trimmer.opened()
        trimmer.closed()
        #expect(spells.count == 0, "one connection is still open")
        trimmer.closed()
        #expect(spells.count == 1)
        spells.pass()
        #expect(trimmer.trims.load(ordering: .relaxed) == 1)
        #expect(spells.count == 0, "one trim per quiet spell")
        trimmer.opened()
        trimmer.closed()
        spells.pass()
        #expect(trimmer.trims.load(ordering: .relaxed) == 2)
    }

    @Test func connectionsComingAndGoingPutTheTrimOffUntilItIsQuiet() {
        let spells = Spells()
        let trimmer = trimmer(spells)
        trimmer.opened()
        trimmer.closed()
        for _ in 0..<3 {
            trimmer.opened()
            trimmer.closed()
            #expect(spells.count == 1, "one check at a time")
            spells.pass()
            #expect(trimmer.trims.load(ordering: .relaxed) == 0, "the spell was not quiet")
        }
        spells.pass()
        #expect(trimmer.trims.load(ordering: .relaxed) == 1)
    }

    @Test func aConnectionOpenWhenTheSpellEndsStandsTheCheckDown() {
        let spells = Spells()
        let trimmer = trimmer(spells)
        trimmer.opened()
        trimmer.closed()
        trimmer.opened()
        spells.pass()
        #expect(trimmer.trims.load(ordering: .relaxed) == 0)
        #expect(spells.count == 0)
        trimmer.closed()
        spells.pass()
        #expect(trimmer.trims.load(ordering: .relaxed) == 1)
    }

    @Test func theDelegateStillEnforcesTheConnectionLimit() {
        var delegate = IdleMemory(maxConnections: 2, whenIdle: nil)
        delegate.connectionOpened()
        #expect(delegate.isAcceptingNewConnections())
        delegate.connectionOpened()
        #expect(!delegate.isAcceptingNewConnections())
        delegate.connectionClosed()
        #expect(delegate.isAcceptingNewConnections())
    }
}
