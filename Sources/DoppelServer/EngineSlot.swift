import DoppelCore

/// The engine a server answers with, which `doppel serve --watch` replaces
/// when the contract changes. Each request reads it once, so a request is
/// answered by one contract from start to end; requests in flight finish
/// on the engine they started with.
public final class EngineSlot: Sendable {
    private let engine: Locked<MockEngine>

    public init(_ engine: MockEngine) {
        self.engine = Locked(engine)
    }

    /// The engine answering now.
    public var current: MockEngine { engine.withLock { $0 } }

    /// Answers every later request with `replacement`.
    public func replace(with replacement: MockEngine) {
        engine.withLock { $0 = replacement }
    }
}
