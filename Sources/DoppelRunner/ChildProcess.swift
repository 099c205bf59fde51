import DoppelCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, in place of Foundation's
/// `Process`.
///
/// Written here rather than taken from a library: Foundation's `Process.run()`
/// on Linux (swift-corelibs-foundation 6.3) counts the open descriptors of
/// `/proc/self/fd` into a buffer it then over-reads when many are open, and
/// the process crashes (swift-corelibs-foundation#5472); a suite that holds
/// thousands of sockets hit it. swift-subprocess spawns correctly but ties a
/// child's life to one `run { }` closure, while a test holds a server child
/// across awaits and stops it from a `deinit`. What this needs is small: a
/// spawn that closes every inherited descriptor in the child
/// (`posix_spawn_file_actions_addclosefrom_np` on Linux,
/// `POSIX_SPAWN_CLOEXEC_DEFAULT` on Darwin), signals back to their defaults,
/// pipes, and a reap that never races itself.
package final class ChildProcess: @unchecked Sendable {
    /// Where a standard stream of the child goes.
    package enum Stream: Sendable {
        /// A new pipe; its other end is this object's `output` or `errors`.
        case pipe
        /// `/dev/null`.
        case null
        /// The parent's own stream.
        case inherit
        /// Standard error only: the same pipe as standard output.
        case sameAsOutput
    }

    /// How the child ended.
    package enum Ending: Equatable, Sendable {
        case exit(Int32)
        case signal(Int32)
    }

    package struct SpawnFailure: Error, CustomStringConvertible {
        package let description: String
    }

    package let processIdentifier: pid_t
    /// The reading end of standard output's pipe, when it is `.pipe`.
    package let output: FileHandle?
    /// The reading end of standard error's pipe, when it is `.pipe`.
    package let errors: FileHandle?

    private let lock = NSLock()
    private var ending: Ending?

    /// Starts `executable` (a path, not searched for) with `arguments`, in
    /// `directory` when given, standard input from `/dev/null`.
    package init(
        _ executable: String, _ arguments: [String], directory: String? = nil, output outputStream: Stream = .pipe, errors errorStream: Stream = .pipe
    ) throws(SpawnFailure) {
        var actions = Self.emptyActions()
        var attributes = Self.emptyAttributes()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        func pipeEnds() throws(SpawnFailure) -> (read: Int32, write: Int32) {
            var fds: [Int32] = [-1, -1]
            guard Self.closeOnExecPipe(&fds) == 0 else { throw SpawnFailure(description: "pipe: \(String(cString: strerror(errno)))") }
            parentEnds.append(fds[0])
            childEnds.append(fds[1])
            return (fds[0], fds[1])
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var outputRead: Int32?
        var errorsRead: Int32?
        switch outputStream {
        case .pipe:
            let ends = try pipeEnds()
            outputRead = ends.read
            posix_spawn_file_actions_adddup2(&actions, ends.write, 1)
        case .null, .sameAsOutput: posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        case .inherit: break
        }
        switch errorStream {
        case .pipe:
            let ends = try pipeEnds()
            errorsRead = ends.read
            posix_spawn_file_actions_adddup2(&actions, ends.write, 2)
        case .null: posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        case .sameAsOutput: posix_spawn_file_actions_adddup2(&actions, 1, 2)
        case .inherit: break
        }
        if let directory {
            guard Self.changeDirectory(&actions, directory) else {
                for fd in parentEnds { close(fd) }
                throw SpawnFailure(description: "cannot run \(executable) in \(directory): this C library cannot spawn in another folder")
            }
        }
        Self.closeInherited(&actions, &attributes)
        // The parent may ignore or block signals (SIGPIPE for its sockets);
        // an ignored or blocked signal would stay so in the child.
        var all = sigset_t()
        var none = sigset_t()
        sigfillset(&all)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        Self.addFlags(Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK), to: &attributes)

        var pid = pid_t()
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + environment { free(pointer) } }
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
        guard status == 0 else {
            for fd in parentEnds { close(fd) }
            throw SpawnFailure(description: "cannot run \(executable): \(String(cString: strerror(status)))")
        }
        processIdentifier = pid
        output = outputRead.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        errors = errorsRead.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
    }

    #if canImport(Darwin)
    // Darwin's spawn types are optional pointers, glibc's are structs.
    private static func emptyActions() -> posix_spawn_file_actions_t? { nil }
    private static func emptyAttributes() -> posix_spawnattr_t? { nil }
    #else
    private static func emptyActions() -> posix_spawn_file_actions_t { posix_spawn_file_actions_t() }
    private static func emptyAttributes() -> posix_spawnattr_t { posix_spawnattr_t() }
    #endif

    // `pipe2` is not in the Swift module of glibc; every descriptor above
    // standard error is closed in the child anyway.
    private static func closeOnExecPipe(_ fds: inout [Int32]) -> Int32 {
        guard pipe(&fds) == 0 else { return -1 }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return 0
    }

    // Every descriptor above standard error is closed in the child.
    #if canImport(Darwin)
    private static func closeInherited(_ actions: inout posix_spawn_file_actions_t?, _ attributes: inout posix_spawnattr_t?) {
        addFlags(Int16(POSIX_SPAWN_CLOEXEC_DEFAULT), to: &attributes)
    }

    private static func changeDirectory(_ actions: inout posix_spawn_file_actions_t?, _ directory: String) -> Bool {
        posix_spawn_file_actions_addchdir_np(&actions, directory) == 0
    }

    private static func addFlags(_ flags: Int16, to attributes: inout posix_spawnattr_t?) {
        var current: Int16 = 0
        posix_spawnattr_getflags(&attributes, &current)
        posix_spawnattr_setflags(&attributes, current | flags)
    }
    #else
    // glibc declares `posix_spawn_file_actions_addclosefrom_np` (2.34) and
    // `_addchdir_np` (2.29) only for _GNU_SOURCE, which its Swift module is
    // not built with: they are looked up by name. Before 2.34 the child keeps
    // the descriptors that are not close-on-exec (NIO's sockets are).
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    private static func symbol(_ name: String) -> UnsafeMutableRawPointer? { dlsym(dlopen(nil, RTLD_NOW), name) }

    private static let addCloseFrom = symbol("posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: CloseFrom.self) }
    private static let addChangeDirectory = symbol("posix_spawn_file_actions_addchdir_np").map { unsafeBitCast($0, to: ChangeDirectory.self) }

    private static func closeInherited(_ actions: inout posix_spawn_file_actions_t, _ attributes: inout posix_spawnattr_t) {
        _ = addCloseFrom?(&actions, 3)
    }

    private static func changeDirectory(_ actions: inout posix_spawn_file_actions_t, _ directory: String) -> Bool {
        guard let addChangeDirectory else { return false }
        return directory.withCString { addChangeDirectory(&actions, $0) } == 0
    }

    private static func addFlags(_ flags: Int16, to attributes: inout posix_spawnattr_t) {
        var current: Int16 = 0
        posix_spawnattr_getflags(&attributes, &current)
        posix_spawnattr_setflags(&attributes, current | flags)
    }
    #endif

    deinit {
        // A child nobody waited for is reaped once it ends, not left a zombie.
        if lock.withLock({ ending }) == nil {
            let pid = processIdentifier
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            }
        }
    }

    /// Whether the child has not ended yet (reaps it when it has).
    package var isRunning: Bool { reap(blocking: false) == nil }

    /// How the child ended; nil while it runs.
    package var ended: Ending? { reap(blocking: false) }

    /// Waits, blocking this thread, until the child ends.
    @discardableResult
    package func waitUntilExit() -> Ending {
        // Waits without reaping (WNOWAIT), so that the reap itself happens
        // once, under the lock, whoever asks.
        var info = siginfo_t()
        while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) < 0, errno == EINTR {}
        return reap(blocking: true) ?? .exit(-1)
    }

    /// How the child ended, waited for within `seconds` on a thread of its
    /// own (not one of the few threads every task shares); nil when it has
    /// not ended by then.
    package func ending(within seconds: Double) async -> Ending? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Ending?, Never>) in
            let answered = Locked(false)
            let answer = { @Sendable (ending: Ending?) in
                if answered.setFirst() { continuation.resume(returning: ending) }
            }
            Thread.detachNewThread { answer(self.waitUntilExit()) }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { answer(nil) }
        }
    }

    /// SIGTERM.
    package func terminate() { signal(SIGTERM) }
    /// SIGINT.
    package func interrupt() { signal(SIGINT) }

    /// Sends `number` while the child has not been reaped (its pid cannot yet be another's).
    package func signal(_ number: Int32) {
        lock.withLock {
            if ending == nil { _ = kill(processIdentifier, number) }
        }
    }

    private func reap(blocking: Bool) -> Ending? {
        lock.withLock {
            if let ending { return ending }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(processIdentifier, &status, blocking ? 0 : WNOHANG) } while result < 0 && errno == EINTR
            guard result == processIdentifier else { return nil }
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as macros.
            let signalled = status & 0x7f
            ending = signalled == 0 ? .exit((status >> 8) & 0xff) : .signal(signalled)
            return ending
        }
    }

    /// A pipe of the child read to its end on a thread of its own, its first
    /// `limit` bytes kept: a child writing to a pipe nobody reads would stall
    /// once the pipe is full.
    package final class Drained: @unchecked Sendable {
        private let data = Locked(Data())
        private let done = DispatchSemaphore(value: 0)

        package init(_ handle: FileHandle?, keeping limit: Int = .max) {
            guard let handle else {
                done.signal()
                return
            }
            Thread.detachNewThread { [data, done] in
                while let chunk = try? handle.read(upToCount: 65_536), !chunk.isEmpty {
                    data.withLock { if $0.count < limit { $0.append(chunk.prefix(limit - $0.count)) } }
                }
                done.signal()
            }
        }

        /// What was read by the pipe's end, or by `seconds` from now if sooner
        /// (a grandchild may hold the pipe open).
        package func value(within seconds: Double) -> Data {
            _ = done.wait(timeout: .now() + seconds)
            return data.withLock { $0 }
        }
    }
}
