import DoppelTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The suite's hand-written loopback servers must never touch a descriptor
/// they no longer own: the process gives a closed number to its next socket,
/// which may be another test's connection.
@Suite struct LoopbackHelperTests {
    @Test func stoppingAListenerItsThreadClosedLeavesTheNumbersNextOwnerAlone() throws {
        let listenerFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listenerFD >= 0)
        let listener = ListeningSocket(listenerFD)
        listener.close()
        // The lowest free number: the one just closed (POSIX), unless another thread took it first.
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { for fd in pair { _ = Foundation.close(fd) } }
        listener.stop()
        listener.close()
        // Still open both ways: a byte goes through, and no end was read.
        try #require(sendAll(pair[0], [0x2A]))
        var buffer = [UInt8](repeating: 0, count: 4)
        #expect(waitReadable(pair[1], millis: 5_000))
        #expect(receiveSome(pair[1], into: &buffer) == 1)
        #expect(buffer[0] == 0x2A)
        #expect(!waitReadable(pair[1], millis: 50), "the socket's other end was shut down")
    }
}
