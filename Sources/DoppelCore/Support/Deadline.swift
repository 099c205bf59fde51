import Foundation
import HeapModule

/// Work bounded in time: a shared store's transaction, its admin calls and
/// its background work never hold their caller past their deadline.
package enum Deadline {
    /// What `run` throws once its time is up.
    package struct Exceeded: Error, CustomStringConvertible {
        package let seconds: Double
        package var description: String { "no answer within \(seconds.formatted()) s" }
    }

    /// `body`'s result, or `Exceeded` after `seconds`: the caller never
    /// waits longer, even for work that does not end when cancelled (it is
    /// cancelled, and its result dropped).
    package static func run<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let outcome = Locked<CheckedContinuation<T, any Error>?>(nil)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            outcome.withLock { $0 = continuation }
            let work = Locked<Task<Void, Never>?>(nil)
            // The alarm goes off on the clock's thread, but what it does waits for a turn in the cooperative pool, at the
            // caller's priority, as a task that slept would: on a busy process (the test suite's, on 2 cores) work that
            // was queued for a turn before the deadline gets it before the deadline acts (a clock that acted at once timed
            // such work out: a health call's 503).
            let priority = Task.currentPriority
            let alarm = DeadlineClock.shared.schedule(after: seconds) {
                Task(priority: priority) {
                    guard let waiting = outcome.withLock({ $0.take() }) else { return }
                    work.withLock { $0 }?.cancel()
                    waiting.resume(throwing: Exceeded(seconds: seconds))
                }
            }
            let task = Task {
                let result: Result<T, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                DeadlineClock.shared.cancel(alarm)
                outcome.withLock { $0.take() }?.resume(with: result)
            }
            work.withLock { $0 = task }
            // The alarm acted before the task was stored (a deadline already past): it found none to cancel.
            if outcome.withLock({ $0 == nil }) { task.cancel() }
        }
    }
}

/// The deadlines of `Deadline.run`, kept by one thread that sleeps until
/// the earliest. Written here rather than a `Task.sleep` per call: each of
/// those registers a Dispatch timer and runs a task of its own, woken
/// again when cancelled, which a profile of a replica on a shared store
/// put at about a tenth of its CPU; here a deadline is an entry in a heap,
/// and one that is met is a dictionary removal (a fifth less CPU per
/// stateful request on a shared store: Benchmarks/README.md).
package final class DeadlineClock: @unchecked Sendable {
    package static let shared = DeadlineClock()

    /// An alarm to cancel.
    package struct Alarm: Sendable {
        fileprivate let id: UInt64
    }

    private struct Due: Comparable {
        let at: UInt64
        let id: UInt64
        static func < (a: Due, b: Due) -> Bool { (a.at, a.id) < (b.at, b.id) }
    }

    private let condition = NSCondition()
    /// The alarms not yet fired nor cancelled; guarded by `condition`.
    private var alarms: [UInt64: @Sendable () -> Void] = [:]
    /// Every alarm's due time; a cancelled alarm's entry stays until it comes up or the heap is rebuilt.
    private var heap = Heap<Due>()
    private var nextID: UInt64 = 0
    private var running = false

    package init() {}

    /// Calls `fire` once, on the clock's thread, `seconds` from now (at once when not positive), unless cancelled first.
    package func schedule(after seconds: Double, _ fire: @escaping @Sendable () -> Void) -> Alarm {
        let delay = seconds > 0 ? UInt64(min(seconds, 1e9) * 1e9) : 0
        let due = Self.now() &+ delay
        condition.lock()
        defer { condition.unlock() }
        nextID &+= 1
        let entry = Due(at: due, id: nextID)
        alarms[entry.id] = fire
        // Rebuilt once cancelled entries are most of it, so the heap stays within twice the alarms outstanding.
        if heap.count >= 1024 && heap.count > 2 * alarms.count {
            heap = Heap(heap.unordered.filter { alarms[$0.id] != nil })
        }
        let earliest = heap.min
        heap.insert(entry)
        if !running {
            running = true
            let thread = Thread { [self] in loop() }
            thread.name = "doppel-deadlines"
            thread.start()
        } else if earliest.map({ entry < $0 }) ?? true {
            condition.signal()
        }
        return Alarm(id: entry.id)
    }

    /// The alarm will not fire (a no-op once it has).
    package func cancel(_ alarm: Alarm) {
        condition.lock()
        alarms[alarm.id] = nil
        condition.unlock()
    }

    /// Alarms outstanding and heap entries held, for tests.
    package var counts: (alarms: Int, entries: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (alarms.count, heap.count)
    }

    private func loop() {
        condition.lock()
        while true {
            var due: [@Sendable () -> Void] = []
            let now = Self.now()
            while let first = heap.min, first.at <= now || alarms[first.id] == nil {
                heap.removeMin()
                if let fire = alarms.removeValue(forKey: first.id) { due.append(fire) }
            }
            if !due.isEmpty {
                condition.unlock()
                for fire in due { fire() }
                condition.lock()
                continue
            }
            if let first = heap.min {
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(first.at - now) / 1e9))
            } else {
                condition.wait()
            }
        }
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
