import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback HTTP server of a few lines that answers every request with the
/// same bytes, written as given (status lines no real server sends), and
/// keeps the head of each request it read. For upstreams that misbehave and
/// for hosts that must never be reached.
package final class RawUpstream: @unchecked Sendable {
    package let port: Int
    private let listener: ListeningSocket
    private let answer: [UInt8]
    private let seen = NIOLockedValueBox<[String]>([])
    private let stopped = NIOLockedValueBox(false)

    /// The request heads read so far.
    package var heads: [String] { seen.withLockedValue { $0 } }

    /// Whether it reads a request and never answers it, holding the connection until stopped.
    private let silent: Bool

    /// Whether it writes its answer and then holds the connection until stopped (a body that never ends).
    private let holds: Bool

    package init(answer: String, silent: Bool = false, holds: Bool = false) throws {
        self.answer = Array(answer.utf8)
        self.silent = silent
        self.holds = holds
        (listener, port) = try ListeningSocket.loopback(backlog: 16)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// `http://127.0.0.1:PORT`
    package var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Stops accepting. The listening socket is closed by the accepting
    /// thread once it is done with it: closed here, its number could be given
    /// to another test's socket before that thread's next `accept`, which
    /// would then take that test's connections (see `ListeningSocket`).
    package func stop() {
        stopped.withLockedValue { $0 = true }
        listener.stop()
    }

    private func acceptLoop() {
        defer { listener.close() }
        while !stopped.withLockedValue({ $0 }) {
            let client = acceptConnection(listener.fd)
            if client < 0 { return }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while waitReadable(client, millis: 60_000) {  // generous: in the full suite, load tests can hold the shared event loops for many seconds
                let n = receiveSome(client, into: &buffer)
                if n <= 0 { break }
                received.append(contentsOf: buffer[0..<n])
                if received.count > 65536 || String(decoding: received, as: UTF8.self).contains("\r\n\r\n") { break }
            }
            let text = String(decoding: received, as: UTF8.self)
            seen.withLockedValue { $0.append(text.components(separatedBy: "\r\n").first ?? "") }
            if silent {
                // Held, unanswered, until the upstream stops (later connections
                // wait in the listen queue): a client only ever sees its own timeout.
                while !stopped.withLockedValue({ $0 }) { usleep(20_000) }
            } else {
                sendAll(client, answer)
                while holds, !stopped.withLockedValue({ $0 }) { usleep(20_000) }
            }
            closeGracefully(client)
        }
    }
}
