import DoppelCore
import NIOCore

/// The rules of one WebSocket or gRPC stream, each run in its session
/// through the store (`StateStore.transact`), as a request is: at once in
/// memory; with a shared store once it answers, one at a time, so the
/// client's messages are answered in the order they came. Lives on its
/// connection's event loop.
final class RuleQueue {
    /// Why a rule did not run: the store out of reach, or `SocketConnection.maximumWaiting` rules waiting for it already.
    enum Trouble {
        case failed(String)
        case behind(Int)
    }

    private var running = false
    /// The rules waiting their turn, oldest first (a ring: taken from the front, each in O(1)).
    private var waiting = CircularBuffer<() -> Void>()

    /// Whether no rule runs or waits.
    var isIdle: Bool { !running && waiting.isEmpty }

    /// Runs `rule` in `session` after those before it; `done` gets its
    /// outcome on `loop`, or `trouble` why there is none.
    func run(
        _ rule: @escaping @Sendable (Session) -> SocketOutcome?, session: String, store: any StateStore, engine: MockEngine, loop: any EventLoop,
        then done: @escaping (SocketOutcome?) -> Void, trouble: @escaping (Trouble) -> Void
    ) {
        guard !running else {
            guard waiting.count < SocketConnection.maximumWaiting else { return trouble(.behind(SocketConnection.maximumWaiting)) }
            waiting.append { [self] in run(rule, session: session, store: store, engine: engine, loop: loop, then: done, trouble: trouble) }
            return
        }
        switch store.transact(session: session, engine: engine, rule) {
        case .now(let outcome):
            done(outcome)
        case .later(let read):
            running = true
            let queue = NIOLoopBound(self, eventLoop: loop)
            let then = NIOLoopBound((done, trouble), eventLoop: loop)
            Task {
                let outcome: Result<SocketOutcome?, any Error>
                do { outcome = .success(try await Deadline.run(store.timeout) { try await read() }) } catch { outcome = .failure(error) }
                loop.execute {
                    queue.value.running = false
                    switch outcome {
                    case .success(let outcome): then.value.0(outcome)
                    case .failure(let error): then.value.1(.failed(store.failed(error, request: false)))
                    }
                    queue.value.next()
                }
            }
        }
    }

    /// Forgets the rules waiting (the socket or stream ended).
    func clear() {
        waiting.removeAll()
    }

    private func next() {
        while !running, !waiting.isEmpty { waiting.removeFirst()() }
    }
}
