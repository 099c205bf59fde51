import Dispatch
import Foundation

/// Work split across the machine's cores, for loading large contracts: a
/// document of 1,000 operations has 1,000 endpoints, each read on its own.
package enum Parallel {
    /// The cores this process may use, found once: Foundation reads the
    /// cgroup's CPU quota from files each time it is asked.
    package static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// `body(0)` to `body(count - 1)`, each a task of its own handed to the
    /// next thread free, on up to one thread per core (the calling thread
    /// among them); the results in order.
    package static func map<Result>(count: Int, _ body: @Sendable (Int) -> Result) -> [Result] {
        var results = [Result?](repeating: nil, count: count)
        results.withUnsafeMutableBufferPointer { slots in
            // Each task writes only its own slot.
            nonisolated(unsafe) let slots = slots
            DispatchQueue.concurrentPerform(iterations: count) { index in
                slots[index] = body(index)
            }
        }
        return results.map { $0! }
    }

    /// `body` applied to contiguous slices of `items` (up to four a core),
    /// as `map(count:)` runs its tasks, the results in the order of the
    /// slices. Fewer than `minimumPerSlice` items per slice run as one slice
    /// on the calling thread: threads cost more than small work.
    package static func mapSlices<Item: Sendable, Result>(
        _ items: [Item], minimumPerSlice: Int, _ body: @Sendable (ArraySlice<Item>) -> Result
    ) -> [Result] {
        // A few slices per core, handed out as threads come free, so that a
        // thread that starts late or a slice that takes longer does not keep
        // the others waiting.
        let count = min(cores * 4, items.count / max(minimumPerSlice, 1))
        guard count > 1 else { return [body(items[...])] }
        let bounds = (0...count).map { items.count * $0 / count }
        return map(count: count) { index in body(items[bounds[index]..<bounds[index + 1]]) }
    }
}
