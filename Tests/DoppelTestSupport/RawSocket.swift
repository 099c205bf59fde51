import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A blocking loopback TCP connection that stays open between calls, for
/// attacks that need to hold a connection: slow headers, idle connections,
/// `Expect: 100-continue`. Call it from a Dispatch thread (`RawSocket.run`),
/// never from a cooperative one.
package final class RawSocket: @unchecked Sendable {
    private let fd: Int32

    package init(port: Int) throws {
        fd = try connectLoopback(port: port)
    }

    deinit { close(fd) }

    package func send(_ text: String) {
        sendAll(fd, Array(text.utf8))
    }

    /// Closes the sending half: the server reads the end of its input.
    package func finishSending() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// What arrives within `timeout` seconds, until `until` holds or the peer closes; and whether it closed.
    package func receive(timeout: Double, until done: (String) -> Bool = { _ in false }) -> (text: String, closed: Bool) {
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let waitMillis = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            guard waitReadable(fd, millis: waitMillis) else { break }
            let n = receiveSome(fd, into: &buffer)
            if n <= 0 { return (String(decoding: reply, as: UTF8.self), true) }
            reply.append(contentsOf: buffer[0..<n])
            if done(String(decoding: reply, as: UTF8.self)) { break }
        }
        return (String(decoding: reply, as: UTF8.self), false)
    }

    /// Runs blocking socket work on a Dispatch thread.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }
}

/// The resident set size of a process, in bytes (Linux: /proc/PID/status).
package func residentBytes(of pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
    else { return nil }
    return kilobytes * 1024
}

/// What a pipe has to read within `seconds`: the bytes available, empty at
/// its end, nil when nothing came in time. `FileHandle.availableData` waits
/// forever for output that never comes, and so would the test.
package func readSome(_ handle: FileHandle, within seconds: Double) -> Data? {
    var descriptor = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
    guard poll(&descriptor, 1, Int32(seconds * 1000)) > 0 else { return nil }
    var buffer = [UInt8](repeating: 0, count: 65536)
    let n = read(handle.fileDescriptor, &buffer, buffer.count)
    return n > 0 ? Data(buffer[0..<n]) : Data()
}

/// The whole answer to one request sent over a fresh loopback connection
/// (the request should say `Connection: close`).
package func rawAnswer(port: Int, _ request: String, timeout: Double = 10) async throws -> String {
    try await RawSocket.run {
        let socket = try RawSocket(port: port)
        socket.send(request)
        return socket.receive(timeout: timeout).text
    }
}
