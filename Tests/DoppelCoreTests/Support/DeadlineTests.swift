import DoppelTestSupport
import Foundation
import Testing

@testable import DoppelCore

/// `Deadline.run` and the one-thread timer behind it. Times here are lower
/// bounds (nothing runs before its time) and generous upper bounds (a
/// loaded suite may hold any thread for seconds), never speed checks.
@Suite struct DeadlineTests {
    /// Records what ran, in order.
    final class Ran: Sendable {
        let names = Locked<[String]>([])
        func add(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    @Test func actionsRunInTheOrderOfTheirTimesAndNotBefore() async {
        let timer = DeadlineTimer()
        let ran = Ran()
        let started = ContinuousClock.now
        let seen = Locked<[String: Duration]>([:])
        for (name, seconds) in [("third", 0.3), ("first", 0.05), ("second", 0.15)] {
            _ = timer.schedule(after: seconds) {
                seen.withLock { $0[name] = ContinuousClock.now - started }
                ran.add(name)
            }
        }
        #expect(await eventually(within: 60) { ran.all.count == 3 })
        #expect(ran.all == ["first", "second", "third"])
        let times = seen.withLock { $0 }
        #expect(times["first"]! >= .milliseconds(50) && times["second"]! >= .milliseconds(150) && times["third"]! >= .milliseconds(300))
        #expect(timer.waiting.actions == 0)
    }

    @Test func aCancelledActionNeverRuns() async {
        let timer = DeadlineTimer()
        let ran = Ran()
        let cancelled = timer.schedule(after: 0.05) { ran.add("cancelled") }
        _ = timer.schedule(after: 0.1) { ran.add("kept") }
        timer.cancel(cancelled)
        #expect(await eventually(within: 60) { ran.all == ["kept"] })
        #expect(ran.all == ["kept"])
        #expect(timer.waiting.actions == 0)
    }

    @Test func anEarlierDeadlineScheduledLaterWakesTheTimer() async {
        let timer = DeadlineTimer()
        let ran = Ran()
        // The timer's thread runs (a first action has run), then waits for the 120 s deadline.
        _ = timer.schedule(after: 0.01) { ran.add("warm") }
        #expect(await eventually(within: 60) { ran.all == ["warm"] })
        let late = timer.schedule(after: 120) { ran.add("late") }
        try? await Task.sleep(for: .milliseconds(100))
        ran.names.withLock { $0 = [] }
        let started = ContinuousClock.now
        _ = timer.schedule(after: 0.05) { ran.add("early") }
        // Without the wake-up it would wait behind the 120 s deadline.
        #expect(await eventually(within: 60) { ran.all == ["early"] })
        #expect(ContinuousClock.now - started < .seconds(60))
        timer.cancel(late)
        #expect(timer.waiting.actions == 0)
    }

    @Test func cancelledPlacesDoNotPileUp() {
        let timer = DeadlineTimer()
        for _ in 0..<20_000 { timer.cancel(timer.schedule(after: 3_600) {}) }
        let kept = (0..<10).map { _ in timer.schedule(after: 3_600) {} }
        #expect(timer.waiting.actions == 10)
        #expect(timer.waiting.places <= 4_096, "\(timer.waiting.places) places for 10 actions")
        kept.forEach(timer.cancel)
    }

    @Test func runAnswersTheBodysResultOrItsError() async throws {
        #expect(try await Deadline.run(60) { 42 } == 42)
        struct Broken: Error {}
        await #expect(throws: Broken.self) { try await Deadline.run(60) { () -> Int in throw Broken() } }
    }

    @Test func runEndsABodyThatNeverDoesAtItsTimeAndCancelsIt() async {
        let cancelled = Locked(false)
        let started = ContinuousClock.now
        await #expect(throws: Deadline.Exceeded.self) {
            try await Deadline.run(0.2) { () -> Int in
                // Ends only when cancelled; a body that ignores cancellation is left behind.
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
                cancelled.withLock { $0 = true }
                return 0
            }
        }
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(await eventually(within: 60) { cancelled.withLock { $0 } }, "the body was cancelled")
    }

    @Test func manyRunsAtOnceEachEndOnce() async {
        // 1,000 that answer and 100 that never do, all at once.
        let outcomes = await withTaskGroup(of: Int?.self) { group in
            for index in 0..<1_100 {
                group.addTask {
                    try? await Deadline.run(index < 1_000 ? 60 : 0.3) { () -> Int in
                        if index >= 1_000 { try await Task.sleep(for: .seconds(3_600)) }
                        return index
                    }
                }
            }
            var all: [Int?] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        #expect(outcomes.count == 1_100)
        #expect(Set(outcomes.compactMap { $0 }) == Set(0..<1_000))
        #expect(outcomes.filter { $0 == nil }.count == 100)
    }
}
