import Dispatch
import HummingbirdCore
import Synchronization

/// Counts connections against `--max-connections` and, where asked
/// (`ServerConfiguration.whenIdle`), runs work once the server has had none
/// for a quarter of a second.
///
/// `doppel serve` returns the heap memory the last load freed there:
/// requests free what they allocate, but glibc's allocator keeps freed
/// memory in its per-thread arenas for reuse, so after a burst of load an
/// idle server held several megabytes more than it did before it, and kept
/// them until the next burst. The work runs off the event loops, at most
/// once per quiet spell, never while a connection is open (a trim takes
/// each arena's lock for a moment).
struct IdleMemory: AvailableConnectionsDelegate {
    private var limit: MaximumAvailableConnections
    private let trimmer: Trimmer?

    /// - Parameters:
    ///   - whenIdle: the work; nil runs nothing.
    ///   - quiet: how long the server must have had no connection before it runs.
    init(maxConnections: Int, whenIdle: (@Sendable () -> Void)?, quiet: DispatchTimeInterval = .milliseconds(250)) {
        limit = MaximumAvailableConnections(maxConnections)
        trimmer = whenIdle.map { Trimmer(quiet: quiet, trim: $0) }
    }

    mutating func connectionOpened() {
        limit.connectionOpened()
        trimmer?.opened()
    }

    mutating func connectionClosed() {
        limit.connectionClosed()
        trimmer?.closed()
    }

    func isAcceptingNewConnections() -> Bool { limit.isAcceptingNewConnections() }

    final class Trimmer: Sendable {
        /// Runs work after a delay (tests run it by hand).
        typealias Scheduler = @Sendable (DispatchTimeInterval, @escaping @Sendable () -> Void) -> Void
        private let quiet: DispatchTimeInterval
        private let after: Scheduler
        private let trim: @Sendable () -> Void
        private let open = Atomic<Int>(0)
        /// Bumped by every open and close, so a check can tell whether the quiet spell was quiet.
        private let activity = Atomic<Int>(0)
        /// Whether a check is scheduled.
        private let armed = Atomic<Bool>(false)
        /// How many times memory has been returned.
        let trims = Atomic<Int>(0)

        init(
            quiet: DispatchTimeInterval,
            after: @escaping Scheduler = { delay, work in DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay, execute: work) },
            trim: @escaping @Sendable () -> Void
        ) {
            self.quiet = quiet
            self.after = after
            self.trim = trim
        }

        func opened() {
            open.wrappingAdd(1, ordering: .relaxed)
            activity.wrappingAdd(1, ordering: .relaxed)
        }

        func closed() {
            activity.wrappingAdd(1, ordering: .relaxed)
            if open.wrappingSubtract(1, ordering: .relaxed).newValue == 0, !armed.exchange(true, ordering: .acquiringAndReleasing) {
                schedule()
            }
        }

        /// Checks after the quiet spell: trims if nothing happened in it, waits
        /// another spell if connections came and went, stands down if one is open.
        private func schedule() {
            let seen = activity.load(ordering: .relaxed)
            after(quiet) { [self] in
                guard open.load(ordering: .relaxed) == 0 else {
                    armed.store(false, ordering: .releasing)
                    return
                }
                guard activity.load(ordering: .relaxed) == seen else { return schedule() }
                trim()
                trims.wrappingAdd(1, ordering: .relaxed)
                armed.store(false, ordering: .releasing)
            }
        }
    }
}
