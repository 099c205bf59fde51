import Foundation
import HeapModule

/// The timer behind `Deadline.run`: one thread that runs each action at its
/// time, unless it was cancelled first. Written here rather than a task
/// that sleeps per deadline (`Task.sleep`), which on Linux arms and cancels
/// a Dispatch timer and starts a task for every stateful request of a
/// shared store: measured at about a tenth of a replica's CPU per request
/// (Benchmarks/README.md). Scheduling is a lock and a heap insertion, and
/// wakes the thread only when the new deadline is the earliest (deadlines
/// of one length come in order, so they never do). A cancelled action is
/// forgotten at once; its place in the heap goes when its time comes, or
/// when such places are most of the heap (past 4,096), so the heap stays
/// within four times what waits.
package final class DeadlineTimer: @unchecked Sendable {
    package static let shared = DeadlineTimer()

    package init() {}

    private struct Entry: Comparable {
        let at: ContinuousClock.Instant
        let id: Int
        static func < (a: Entry, b: Entry) -> Bool { (a.at, a.id) < (b.at, b.id) }
    }

    private let condition = NSCondition()
    private var heap = Heap<Entry>()
    private var actions: [Int: @Sendable () -> Void] = [:]
    private var nextID = 0
    private var started = false

    /// Runs `action` on the timer's thread after `seconds`, unless
    /// `cancel` is called with the returned id first.
    package func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Int {
        let at = ContinuousClock.now + .milliseconds(Int64((max(0, seconds) * 1000).rounded(.up)))
        condition.lock()
        defer { condition.unlock() }
        nextID &+= 1
        let id = nextID
        // Mostly places of cancelled actions: dropped now, so the heap stays the size of what waits.
        if heap.count >= 4_096, heap.count > 4 * actions.count {
            heap = Heap(heap.unordered.filter { actions[$0.id] != nil })
        }
        let earliest = heap.min.map { at < $0.at } ?? true
        heap.insert(Entry(at: at, id: id))
        actions[id] = action
        if !started {
            started = true
            let thread = Thread { [self] in run() }
            thread.name = "doppel-deadlines"
            thread.start()
        } else if earliest {
            condition.signal()
        }
        return id
    }

    /// Forgets the action: it will not run.
    package func cancel(_ id: Int) {
        condition.lock()
        actions[id] = nil
        condition.unlock()
    }

    /// How many actions wait, and how many places the heap holds (for tests).
    package var waiting: (actions: Int, places: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (actions.count, heap.count)
    }

    private func run() {
        condition.lock()
        while true {
            guard let first = heap.min else {
                condition.wait()
                continue
            }
            let now = ContinuousClock.now
            guard first.at <= now else {
                let left = now.duration(to: first.at)
                let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) * 1e-18
                _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
                continue
            }
            heap.removeMin()
            guard let action = actions.removeValue(forKey: first.id) else { continue }
            condition.unlock()
            action()
            condition.lock()
        }
    }
}
