import Foundation

/// Runs blocking or long `body` (a wait for a process, a read of its pipe,
/// seconds of computation) on a thread of its own.
///
/// Every test of the package runs in one process whose tasks share as many
/// threads as the machine has cores (two here). A test that blocks, or
/// computes for seconds, in a task holds one of them, and every other test's
/// tasks (the in-process servers' answers among them) wait: their own time
/// limits then fail them. On a thread of its own the work shares the cores
/// with them instead. Not Dispatch's threads: these waits last up to
/// minutes, and URLSession's clients need that pool.
package func offThePool<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
