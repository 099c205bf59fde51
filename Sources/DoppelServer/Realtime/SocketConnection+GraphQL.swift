import DoppelCore
import DoppelGraphQL
import NIOCore
import NIOWebSocket

/// A GraphQL socket's operations and events, one at a time, in order.
extension SocketConnection {
    // MARK: GraphQL

    /// Takes a GraphQL socket's steps, in order.
    func take(_ steps: [GraphQLSocketSession.Step]) {
        for step in steps {
            switch step {
            case .send(let text): sendText(text)
            case .close(let code, let reason): close(SocketClose(code: code, reason: reason), by: "graphql-transport-ws: \(reason)")
            case .run(let work): enqueue(work)
            case .journal(let method, let rule, let message, let sent, let reason):
                publish(engine.journalSocket(opening, method: method, rule: rule, message: message, sent: sent, reason: Reason(reason)))
            }
        }
    }

    /// An operation to run once those before it have: one at a time, so a subscription's events keep their order.
    func enqueue(_ work: GraphQLSocketSession.Work) {
        guard works.count < Self.maximumWaiting else {
            publish(
                engine.journalSocket(
                    opening, method: "SEND", rule: "next",
                    reason: Reason("not run: \(Self.maximumWaiting) operations and events already wait on this socket (operation \(work.id))")))
            return
        }
        works.append(work)
        runNext()
    }

    func runNext() {
        guard !working, !closing, !works.isEmpty, let loop = context?.eventLoop else { return }
        working = true
        let work = works.removeFirst()
        let bound = NIOLoopBound(self, eventLoop: loop)
        Task {
            let outcome = await work.body()
            loop.execute {
                let socket = bound.value
                socket.working = false
                guard !socket.closing, let graphql = socket.graphql else { return }
                socket.take(graphql.finished(outcome))
                socket.runNext()
            }
        }
    }

    /// The most sends one socket keeps waiting for their delay (delayed
    /// answers, pushes and `on_connect` rules together); past it a delayed
    /// send is not kept (journaled).
    static let maximumWaiting = 1_000

    /// Runs `body` after `seconds`, kept until then so the socket's end
    /// cancels it; false (nothing kept) when `maximumWaiting` sends wait already.
    @discardableResult
    func later(_ seconds: Double, on loop: any EventLoop, _ body: @escaping () -> Void) -> Bool {
        guard scheduled.count < Self.maximumWaiting else { return false }
        let id = nextScheduled
        nextScheduled += 1
        scheduled[id] = loop.assumeIsolated().scheduleTask(in: Self.amount(seconds)) { [self] in
            scheduled[id] = nil
            body()
        }
        return true
    }
}
