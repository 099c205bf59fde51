import Foundation

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
            let timer = Task {
                try? await Task.sleep(for: .seconds(seconds))
                guard !Task.isCancelled, let waiting = outcome.withLock({ $0.take() }) else { return }
                work.withLock { $0 }?.cancel()
                waiting.resume(throwing: Exceeded(seconds: seconds))
            }
            work.withLock {
                $0 = Task {
                    let result: Result<T, any Error>
                    do { result = .success(try await body()) } catch { result = .failure(error) }
                    timer.cancel()
                    outcome.withLock { $0.take() }?.resume(with: result)
                }
            }
        }
    }
}
