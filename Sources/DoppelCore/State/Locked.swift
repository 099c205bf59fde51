import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a lock. Used where a critical section is short and
/// synchronous (no awaits), which keeps per-request state changes atomic.
///
/// On Linux the lock is glibc's adaptive mutex, which spins briefly before
/// it sleeps: the sections here last a few microseconds, and two event loops
/// answering requests of one session would otherwise put each other to sleep
/// and wake each other through the kernel on most requests.
///
/// It is `Sendable` when its value is: the lock makes access exclusive, not
/// a value that is not safe to share safe to hand over (as `Mutex`).
package final class Locked<Value> {
    #if canImport(Glibc)
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    #else
    private let lock = NSLock()
    #endif
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        #if canImport(Glibc)
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        #endif
    }

    deinit {
        #if canImport(Glibc)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        #endif
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        #if canImport(Glibc)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        #else
        lock.lock()
        defer { lock.unlock() }
        #endif
        return try body(&value)
    }
}

extension Locked: @unchecked Sendable where Value: Sendable {}

extension Locked where Value == Bool {
    /// Sets the flag; true for the one caller that found it unset (a thing
    /// done once whichever of several paths reaches it first).
    package func setFirst() -> Bool {
        withLock { isSet in
            defer { isSet = true }
            return !isSet
        }
    }
}
