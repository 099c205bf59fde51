import DoppelTesting
import Foundation
import Testing

/// An app's socket code against the demo contract, from a Swift test suite:
/// the session's socket, its messages, and the HTTP call that pushes one.
@Suite(.doppel("contracts/realtime-demo.yaml"))
struct SocketSessionTests {
    @Test func theSessionsSocketHearsWhatItsPostTriggers() async throws {
        let doppel = try #require(DoppelSession.current)
        let refused = try await doppel.openSocket("/v1/live")
        #expect(refused.handshake.status == 401)

        let socket = try await doppel.openSocket("/v1/live", headers: ["Authorization": "Bearer app-token"])
        guard let welcome = await Self.next(socket) else {
            Issue.record("no welcome")
            return
        }
        #expect(welcome == #"{"type":"welcome","stories_used":0,"monthly_limit":3}"#)

        let created = try await doppel.send("POST", "/v1/stories", headers: ["Authorization": "Bearer app-token"], json: #"{"title":"Moon"}"#)
        #expect(created.status == 202)
        guard let ready = await Self.next(socket) else {
            Issue.record("no push")
            return
        }
        #expect(ready == #"{"type":"story_ready","id":"st_1","title":"Moon"}"#)
        await socket.close()
        doppel.verify(endpoint: "live.welcome", count: 1)
        doppel.verify(endpoint: "live.push", count: 1)
        #expect(doppel.state["stories_used"] == .int(1))
    }

    /// The next text message that is not the contract's heartbeat (sent every 15 s, so a slow run may see one
    /// between the two messages it waits for), as an app would read its socket.
    static func next(_ socket: WebSocketClient) async -> String? {
        while case .text(let text)? = await socket.receive(within: 60) {
            if !text.contains(#""type":"heartbeat""#) { return text }
        }
        return nil
    }

    @Test func anUpgradeRequestForURLSession() throws {
        let doppel = try #require(DoppelSession.current)
        let request = doppel.socketRequest("/v1/live", headers: ["Authorization": "Bearer app-token"])
        #expect(request.url?.scheme == "ws")
        #expect(request.url?.path == "/v1/live")
        #expect(request.value(forHTTPHeaderField: "Doppel-Session") == doppel.id)
    }
}
