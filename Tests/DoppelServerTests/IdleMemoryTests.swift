@testable import DoppelServer
import Foundation
import Testing

/// When the server returns freed heap memory: after a quiet spell without
/// connections, once per spell, never while a connection is open.
@Suite struct IdleMemoryTests {
    /// Waits long enough for a check scheduled now (and one rescheduled after it) to have run.
    func settle() async throws { try await Task.sleep(for: .milliseconds(300)) }

    @Test func trimsOnceAfterTheLastConnectionClosesAndNotWhileOneIsOpen() async throws {
        let trimmer = IdleMemory.Trimmer(quiet: .milliseconds(50))
        trimmer.opened()
        trimmer.opened()
        trimmer.closed()
        try await settle()
        #expect(trimmer.trims.load(ordering: .relaxed) == 0, "one connection is still open")
        trimmer.closed()
        try await settle()
        #expect(trimmer.trims.load(ordering: .relaxed) == 1)
        try await settle()
        #expect(trimmer.trims.load(ordering: .relaxed) == 1, "one trim per quiet spell")
        trimmer.opened()
        trimmer.closed()
        try await settle()
        #expect(trimmer.trims.load(ordering: .relaxed) == 2)
    }

    @Test func connectionsComingAndGoingPutTheTrimOffUntilItIsQuiet() async throws {
        let trimmer = IdleMemory.Trimmer(quiet: .milliseconds(100))
        for _ in 0..<8 {
            trimmer.opened()
            trimmer.closed()
            try await Task.sleep(for: .milliseconds(30))
        }
        #expect(trimmer.trims.load(ordering: .relaxed) == 0, "never quiet for 100 ms so far")
        try await Task.sleep(for: .milliseconds(400))
        #expect(trimmer.trims.load(ordering: .relaxed) == 1)
    }

    @Test func theDelegateStillEnforcesTheConnectionLimit() {
        var delegate = IdleMemory(maxConnections: 2)
        delegate.connectionOpened()
        #expect(delegate.isAcceptingNewConnections())
        delegate.connectionOpened()
        #expect(!delegate.isAcceptingNewConnections())
        delegate.connectionClosed()
        #expect(delegate.isAcceptingNewConnections())
    }

    #if canImport(Glibc)
    @Test func glibcsTrimIsFound() {
        #expect(IdleMemory.Trimmer.trimHeap != nil)
    }
    #endif
}
