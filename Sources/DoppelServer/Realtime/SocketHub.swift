import Crypto
import DoppelCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// The server's open WebSockets, by session: where an HTTP response's
/// `push` finds the sockets it goes to, and the per-session bound.
///
/// Each socket lives on its connection's event loop; the hub only hands
/// texts to that loop. Hummingbird's WebSocket router (hummingbird-websocket)
/// upgrades connections of Hummingbird's own HTTP channel, which Doppel's
/// connections (`DoppelHTTP1Channel`, `HTTPDoor`) are not, so the upgrade is
/// answered by `HTTPDoor` and the frames are read and written by NIO's
/// WebSocket codec (NIOWebSocket, what hummingbird-websocket builds on).
package final class SocketHub: Sendable {
    /// The bounds of sockets (`docs/limits.md`).
    package struct Limits: Sendable {
        /// Sockets one session may have open (`--max-sockets-per-session`).
        package var perSession = 16
        /// Seconds a socket may go without a frame from the client (`--socket-idle-timeout`).
        package var idle = 300.0
        /// The largest message a client may send, in bytes, its fragments together (`--max-socket-message`).
        package var message = 64 << 10
        /// Messages a client may send a second, on average; a burst of as many is allowed.
        package var rate = 100.0
        /// The most bytes of messages waiting for a client that does not read; past it the socket is dropped.
        package var outbound = 1 << 20

        package init() {}
    }

    package let limits: Limits

    /// One open socket, as the hub knows it.
    struct Member: Sendable {
        let endpointID: String
        /// The client's address: the `default` session's places are counted per address.
        var address: String? = nil
        let loop: any EventLoop
        /// Takes only pushes that name its endpoint (a gRPC stream: its messages must be its method's).
        var namedOnly = false
        /// Sends a pushed message (called on `loop`).
        let send: @Sendable (RenderedPush, _ from: String) -> Void
    }

    private let sockets = NIOLockedValueBox([String: [ObjectIdentifier: Member]]())
    private let total = NIOLockedValueBox(0)
    private let droppedCount = NIOLockedValueBox(0)

    /// Sockets dropped because their client read nothing while `Limits.outbound` bytes waited.
    package var dropped: Int { droppedCount.withLockedValue { $0 } }

    func noteDropped() {
        droppedCount.withLockedValue { $0 += 1 }
    }

    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Adds a socket of `session`; false when the session has as many as
    /// allowed. Clients that name no session all share `default`, so there
    /// the bound is per client address: one client holding its places
    /// leaves every other client theirs.
    func join(_ id: ObjectIdentifier, session: String, member: Member) -> Bool {
        let joined = sockets.withLockedValue { sockets in
            let open =
                sockets[session].map { members in
                    session == SessionStore.defaultID ? members.values.lazy.filter { $0.address == member.address }.count : members.count
                } ?? 0
            guard open < limits.perSession else { return false }
            sockets[session, default: [:]][id] = member
            return true
        }
        if joined { total.withLockedValue { $0 += 1 } }
        return joined
    }

    func leave(_ id: ObjectIdentifier, session: String) {
        let left = sockets.withLockedValue { sockets -> Bool in
            guard sockets[session]?.removeValue(forKey: id) != nil else { return false }
            if sockets[session]?.isEmpty == true { sockets[session] = nil }
            return true
        }
        if left { total.withLockedValue { $0 -= 1 } }
    }

    /// Sockets open now.
    package var count: Int { total.withLockedValue { $0 } }

    /// Whether `session` has an open socket.
    func hasSockets(in session: String) -> Bool {
        sockets.withLockedValue { $0[session] != nil }
    }

    /// Hands pushed messages to the session's sockets (of one endpoint, or
    /// all); returns how many sockets got each.
    @discardableResult
    func push(_ pushes: [RenderedPush], session: String, from: String) -> Int {
        guard !pushes.isEmpty else { return 0 }
        let members = sockets.withLockedValue { $0[session].map { Array($0.values) } ?? [] }
        var reached = 0
        for push in pushes {
            for member in members
            where member.namedOnly ? push.socket == member.endpointID && push.subscription == nil : push.isFor(endpointID: member.endpointID) {
                member.loop.execute { member.send(push, from) }
                reached += 1
            }
        }
        return reached
    }

    /// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key` (RFC 6455 section 4.2.2).
    static func accept(key: String) -> String {
        let digest = Insecure.SHA1.hash(data: Array((key.trimmingCharacters(in: .whitespaces) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
        return Data(digest).base64EncodedString()
    }
}
