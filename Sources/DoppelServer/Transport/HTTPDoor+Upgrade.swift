import DoppelCore
import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// The door's WebSocket upgrade: an answer of 101 hands the connection to
/// the socket's frames and rules.
extension HTTPDoor {
    // MARK: WebSockets

    /// An upgrade the contract answered 101: the handshake's answer, then
    /// the connection's HTTP handlers give way to WebSocket frames and the
    /// socket's rules (`SocketConnection`). Done in one turn of the event
    /// loop, so no byte the client sends after the 101 reaches the HTTP
    /// decoder (a client sends none before it, RFC 6455 section 4.1). A
    /// session with as many sockets as allowed gets 429 instead.
    func upgrade(_ exchange: DoorExchange, answered response: MockResponse, opening: SocketOpening) {
        guard let context = channelContext else { return }
        let socket = SocketConnection(answerer: answerer, opening: opening)
        guard !isOver, connection.canWrite, let key = exchange.request.header("sec-websocket-key"),
            socket.join(loop: context.eventLoop)
        else {
            let tooMany = Problem.tooManySockets(limit: answerer.sockets.limits.perSession).response(endpointID: opening.endpointID)
            var refused = exchange
            refused.decision.delivery = .whole(tooMany)
            refused.decision.effects = nil
            closeAfterAnswer = true
            finish(refused, status: tooMany.status)
            writeLast(ResponseBytes.encode(tooMany, date: currentDate(), close: true, allocator: context.channel.allocator))
            return
        }
        finish(exchange, status: 101)
        var head = context.channel.allocator.buffer(capacity: 256)
        head.writeStaticString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ")
        head.writeString(SocketHub.accept(key: key))
        head.writeStaticString("\r\n")
        if let spoken = exchange.engine.contract.endpoint(id: opening.endpointID)?.socket?.protocols,
            let chosen = MockEngine.chosenProtocol(offered: MockEngine.offeredProtocols(exchange.request), spoken: spoken)
        {
            head.writeString("Sec-WebSocket-Protocol: \(chosen)\r\n")
        }
        // The contract's own headers, but none that frame a body (a 101 has none).
        for (name, value) in response.headers
        where HTTPToken.isValid(name)
            && !["content-type", "content-length", "transfer-encoding", "connection", "upgrade", "sec-websocket-accept", "sec-websocket-protocol"]
                .contains(name.lowercased())
        {
            head.writeString("\(name): ")
            ResponseBytes.writeValue(value, into: &head)
            head.writeStaticString("\r\n")
        }
        head.writeStaticString("\r\n")
        connection.handOver(head)
        held.removeAll()
        phase = .upgraded
        let pipeline = context.pipeline.syncOperations
        let limits = answerer.sockets.limits
        do {
            try pipeline.addHandler(WebSocketFrameEncoder(), position: .last)
            try pipeline.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: limits.message)), position: .last)
            try pipeline.addHandler(ClientFrameRules(), position: .last)
            try pipeline.addHandler(
                NIOWebSocketFrameAggregator(
                    minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1024,
                    maxAccumulatedFrameSize: limits.message), position: .last)
            try pipeline.addHandler(socket, position: .last)
            // The HTTP handlers go, this one last.
            for handler in [
                try pipeline.context(handlerType: ConnectionGuard.RequestWatcher.self),
                try pipeline.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self),
                try pipeline.context(handlerType: ConnectionGuard.ByteWatcher.self), context,
            ] {
                pipeline.removeHandler(context: handler, promise: nil)
            }
        } catch {
            socket.leave()
            context.close(promise: nil)
        }
    }
}
