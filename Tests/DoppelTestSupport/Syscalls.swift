import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The blocking calls of the suite's hand-written loopback servers, gone on
// with after a signal. The suite starts processes, and a child's exit can
// interrupt a helper's `poll`, `recv`, `send` or `accept` (EINTR). Taken as
// "the peer is done", that made a fake upstream answer before it had read the
// request and close the connection with the request unread: the kernel then
// resets the connection, and the client loses the answer it was sent
// ("closed the connection without an answer"), in the full suite only.

/// Whether `fd` has something to read (or its end) within `millis`.
package func waitReadable(_ fd: Int32, millis: Int32) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(millis))
    while true {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let left = deadline - ContinuousClock.now
        let wait = max(0, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
        let ready = poll(&descriptor, 1, wait)
        if ready > 0 { return true }
        if ready == 0 || errno != EINTR { return false }
    }
}

/// `recv` into `buffer`: the count read, 0 at the end, below 0 for an error other than a signal.
package func receiveSome(_ fd: Int32, into buffer: inout [UInt8]) -> Int {
    while true {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n >= 0 || errno != EINTR { return n }
    }
}

/// Writes all of `bytes`; false when the peer is gone.
@discardableResult
package func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var sent = 0
    while sent < bytes.count {
        let n = bytes[sent...].withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n < 0, errno == EINTR { continue }
        if n <= 0 { return false }
        sent += n
    }
    return true
}

/// `accept` on a listening socket: a connection, or below 0 once the socket
/// is shut down. A pending connection the client gave up on, or a process
/// out of descriptors for a moment (the suite holds thousands of sockets at
/// times), is waited out rather than taken for the end: a fake server that
/// stopped there would leave the next client's connection to be reset.
package func acceptConnection(_ listener: Int32) -> Int32 {
    while true {
        let client = accept(listener, nil, nil)
        if client >= 0 { return client }
        switch errno {
        case EINTR, ECONNABORTED: continue
        case EMFILE, ENFILE, ENOBUFS, ENOMEM: usleep(10_000)
        default: return client
        }
    }
}

/// Ends a served connection without a reset: says the end of output, reads
/// what the client has already sent and was not read, then closes. A close
/// with unread input resets the connection, and a reset throws away what the
/// client had not read yet. Nothing is waited for: a client that keeps its
/// connection open gets its end at once, as before.
package func closeGracefully(_ fd: Int32) {
    shutdown(fd, Int32(SHUT_WR))
    var buffer = [UInt8](repeating: 0, count: 4096)
    var drained = 0
    while drained < 1 << 20, waitReadable(fd, millis: 0) {
        let n = receiveSome(fd, into: &buffer)
        if n <= 0 { break }
        drained += n
    }
    close(fd)
}

/// `connect` to `address`, gone on with after a signal: an interrupted
/// connect goes on in the background (EINTR), and its outcome is read once
/// the socket is writable, rather than taken for a refusal.
package func connectSocket(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Bool {
    if connect(fd, address, length) == 0 { return true }
    guard errno == EINTR || errno == EINPROGRESS else { return false }
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
        var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&descriptor, 1, 1_000)
        if ready < 0, errno == EINTR { continue }
        if ready <= 0 { continue }
        var failure: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &size)
        return failure == 0
    }
    return false
}

/// A listening socket that one thread accepts on and another stops. Closing
/// it and shutting it down go through one lock: once closed, its number may
/// be given to any other socket of the process (another test's connection),
/// and a `shutdown` of that number would end that connection instead, with
/// no answer read ("closed before a complete response", in the full suite
/// only). Stopping after the accepting thread is done does nothing.
package final class ListeningSocket: @unchecked Sendable {
    package let fd: Int32
    private let lock = NSLock()
    private var open = true

    package init(_ fd: Int32) { self.fd = fd }

    /// A socket listening on 127.0.0.1 at a free port, and the port.
    package static func loopback(backlog: Int32) throws -> (socket: ListeningSocket, port: Int) {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        let listener = ListeningSocket(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, backlog) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound else {
            listener.close()
            throw URLError(.cannotConnectToHost)
        }
        return (listener, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Wakes an `accept` waiting on it (it returns an error); nothing once closed.
    package func stop() {
        lock.lock()
        defer { lock.unlock() }
        if open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Closes it, once; called by the accepting thread when it is done with it.
    package func close() {
        lock.lock()
        defer { lock.unlock() }
        guard open else { return }
        open = false
        _ = Foundation.close(fd)
    }
}
