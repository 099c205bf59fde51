import Hummingbird

/// A Hummingbird app of a test's own on a free loopback port (an upstream,
/// a provider): its port, and the task that runs it, cancelled to stop it.
package func startLoopbackApp(_ router: Router<BasicRequestContext>) async throws -> (port: Int, task: Task<Void, any Error>) {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))) { channel in
        continuation.yield(channel.localAddress?.port ?? 0)
        continuation.finish()
    }
    let task = Task { try await app.runService(gracefulShutdownSignals: []) }
    var iterator = ports.makeAsyncIterator()
    guard let port = await iterator.next(), port > 0 else {
        task.cancel()
        throw CancellationError()
    }
    return (port, task)
}
