import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The second SIGINT or SIGTERM exits at once.
///
/// The first signal starts a graceful shutdown (ServiceLifecycle), which
/// ignores any further ones; a person pressing Ctrl-C again, or a supervisor
/// sending SIGTERM twice, means "now".
enum ShutdownSignals {
    private static let sources = LockedSources()

    static func exitOnSecondSignal(beforeExit: @escaping @Sendable () -> Void) {
        let count = LockedCount()
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                guard count.increment() >= 2 else { return }
                FileHandle.standardError.write(Data("doppel: second signal, exiting now\n".utf8))
                beforeExit()
                exit(128 + signalNumber)
            }
            source.resume()
            sources.keep(source)
        }
    }

    /// Keeps the signal sources alive for the life of the process.
    private final class LockedSources: @unchecked Sendable {
        private let lock = NSLock()
        private var all: [any DispatchSourceSignal] = []
        func keep(_ source: any DispatchSourceSignal) { lock.withLock { all.append(source) } }
    }

    private final class LockedCount: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func increment() -> Int {
            lock.withLock {
                value += 1
                return value
            }
        }
    }
}

/// Process-wide resource limits.
enum ProcessLimits {
    /// Raises the soft limit of open files to the hard limit, so idle
    /// connections run into `--max-connections` and the idle timeout, not
    /// into a low default soft limit that stops accepting anyone.
    static func raiseOpenFileLimit() {
        #if os(Linux)
        let resource = Int32(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(resource, &limit)
    }
}
