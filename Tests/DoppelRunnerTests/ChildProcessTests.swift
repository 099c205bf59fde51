import DoppelRunner
import DoppelTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The child processes of `doppel verify`'s commands and of this suite: the
/// spawn Foundation's `Process` crashed in when many descriptors were open.
@Suite("Child processes: spawned with nothing inherited, waited for once")
struct ChildProcessTests {
    @Test("With 1,000 more descriptors open in the parent, a child starts and inherits none of them")
    func manyOpenDescriptorsAreNotInherited() async throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        // Below the limit by enough for the suite's other tests, which hold sockets meanwhile.
        let count = min(1_000, Int(limit.rlim_cur) - 2_000)
        let opened = (0..<count).map { _ in open("/dev/null", O_RDONLY) }.filter { $0 >= 0 }
        defer { for fd in opened { close(fd) } }
        #expect(opened.count >= 500, "\(opened.count) descriptors opened (limit \(limit.rlim_cur))")
        let child = try ChildProcess("/bin/ls", ["-1", "/proc/self/fd"], errors: .null)
        let output = try #require(child.output)
        let listed = String(decoding: try await offThePool { output.readDataToEndOfFile() }, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(await child.ending(within: 30) == .exit(0))
        // Standard input, output and error, and the folder `ls` itself opened to list.
        #expect(listed.sorted() == ["0", "1", "2", "3"], "\(listed)")
    }

    @Test("Exit codes, signals, a folder, one pipe for both streams, and a wait that gives up")
    func endingsAndStreams() async throws {
        let failing = try ChildProcess("/bin/sh", ["-c", "pwd; echo said >&2; exit 3"], directory: "/tmp", errors: .sameAsOutput)
        let output = try #require(failing.output)
        #expect(failing.errors == nil)
        let text = String(decoding: try await offThePool { output.readDataToEndOfFile() }, as: UTF8.self)
        #expect(text == "/tmp\nsaid\n")
        #expect(await failing.ending(within: 30) == .exit(3))
        #expect(!failing.isRunning)
        #expect(failing.ended == .exit(3), "the ending is kept once reaped")

        let sleeper = try ChildProcess("/bin/sleep", ["30"], output: .null, errors: .null)
        #expect(sleeper.isRunning)
        #expect(await sleeper.ending(within: 0.2) == nil, "it has not ended within 0.2 s")
        sleeper.terminate()
        #expect(await sleeper.ending(within: 30) == .signal(SIGTERM))
        sleeper.terminate()  // after the reap: no signal goes to a pid that may be another's now

        #expect(throws: ChildProcess.SpawnFailure.self) { try ChildProcess("/no/such/program", []) }
    }
}
