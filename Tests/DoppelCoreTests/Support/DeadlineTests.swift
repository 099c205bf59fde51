import DoppelTestSupport
import Foundation
import Testing

@testable import DoppelCore

/// `Deadline.run` and the one thread that keeps its deadlines. Nothing here
/// bounds how late a deadline acts (the suite's pool was seen held for
/// 27 s): a deadline not kept shows as the work's result or a wait of an
/// hour, not as a slow one.
@Suite struct DeadlineTests {
    @Test("Work that ends in time gives its result or its error; its alarm is cancelled")
    func workInTime() async throws {
        #expect(try await Deadline.run(30) { 42 } == 42)
        struct Failed: Error {}
        await #expect(throws: Failed.self) { try await Deadline.run(30) { throw Failed() } }
        let clock = DeadlineClock()
        let fired = Locked(0)
        let alarm = clock.schedule(after: 0.05) { fired.withLock { $0 += 1 } }
        clock.cancel(alarm)
        try await Task.sleep(for: .milliseconds(300))
        #expect(fired.withLock { $0 } == 0)
        #expect(clock.counts.alarms == 0)
    }

    @Test("Work that does not end when cancelled: the caller gets Exceeded at its deadline, and the work is cancelled")
    func workPastItsDeadline() async throws {
        let gate = Gate()
        let cancelled = Locked(false)
        // Opened after 10 minutes in any case: a deadline not kept then ends in the work's result, not Exceeded.
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(600))
            gate.open()
        }
        await #expect(throws: Deadline.Exceeded.self) {
            try await Deadline.run(0.1) {
                await gate.wait()
                cancelled.withLock { $0 = Task.isCancelled }
            }
        }
        watchdog.cancel()
        gate.open()
        #expect(try await eventually(within: 120) { cancelled.withLock { $0 } })
    }

    @Test("A deadline already past (0 s or less): the caller gets Exceeded, and the work is cancelled every time")
    func aDeadlineAlreadyPast() async throws {
        // Its alarm can act before the work's task is stored: that work was once left running, not cancelled.
        let ended = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<400 {
                group.addTask {
                    await #expect(throws: Deadline.Exceeded.self) {
                        try await Deadline.run(index.isMultiple(of: 2) ? 0 : -1) {
                            // Ends only when cancelled (or after 10 minutes).
                            try? await Task.sleep(for: .seconds(600))
                            ended.withLock { $0 += 1 }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await eventually(within: 60) { ended.withLock { $0 } == 400 }, "\(ended.withLock { $0 }) of 400 cancelled")
    }

    /// Blocks the calling thread (a thread of the pool, when called from a task).
    static func hold(seconds: Double) { Thread.sleep(forTimeInterval: seconds) }

    @Test("Work queued for a turn before its deadline gets it before the deadline acts: the cooperative pool held, it still ends in time")
    func workQueuedBeforeTheDeadlineGetsItsTurn() async throws {
        // Every thread of the pool (and as many more as the runtime may add for blocked ones) held for 0.3 s.
        let holders = (0..<(ProcessInfo.processInfo.activeProcessorCount * 2)).map { _ in
            Task { Self.hold(seconds: 0.3) }
        }
        // Queued behind them; its deadline comes while they hold the pool, and acts only after it had its turn.
        #expect(try await Deadline.run(0.05) { 42 } == 42)
        for holder in holders { await holder.value }
    }

    @Test("An earlier deadline set after a later one fires first: the clock's thread wakes for it")
    func anEarlierDeadlineWakesTheClock() async throws {
        let clock = DeadlineClock()
        let order = Locked<[String]>([])
        // The clock's thread sleeps until the hour is up unless the earlier one wakes it.
        _ = clock.schedule(after: 3_600) { order.withLock { $0.append("late") } }
        _ = clock.schedule(after: 0.05) { order.withLock { $0.append("early") } }
        #expect(try await eventually(within: 120) { order.withLock { $0 } == ["early"] })
        _ = clock.schedule(after: 0) { order.withLock { $0.append("now") } }
        #expect(try await eventually(within: 120) { order.withLock { $0 } == ["early", "now"] })
    }

    @Test("1,000 runs at once, half past their deadlines: each ends once, the right way")
    func manyAtOnce() async throws {
        let gate = Gate()
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    do {
                        // Even ones end at once; odd ones wait for the gate, past deadlines of 0.05–0.5 s set in no order.
                        let deadline = index % 2 == 0 ? 600 : 0.05 + Double(index * 7919 % 10) / 20
                        return try await Deadline.run(deadline) {
                            if index % 2 == 1 { await gate.wait() }
                            return "done"
                        }
                    } catch is Deadline.Exceeded {
                        return "exceeded"
                    } catch {
                        return "\(error)"
                    }
                }
            }
            var tally: [String: Int] = [:]
            for await outcome in group { tally[outcome, default: 0] += 1 }
            return tally
        }
        gate.open()
        #expect(outcomes == ["done": 500, "exceeded": 500])
    }

    @Test("Alarms cancelled before they are due are not kept: the heap stays within twice the alarms outstanding")
    func cancelledAlarmsAreDropped() {
        let clock = DeadlineClock()
        let kept = (0..<10).map { _ in clock.schedule(after: 3_600) {} }
        for _ in 0..<100_000 { clock.cancel(clock.schedule(after: 3_600) {}) }
        let counts = clock.counts
        #expect(counts.alarms == 10)
        #expect(counts.entries <= 2_048, "\(counts.entries) entries for 10 alarms")
        for alarm in kept { clock.cancel(alarm) }
        #expect(clock.counts.alarms == 0)
    }
}
