import DoppelCore
import Synchronization

/// The engine a server answers with, which `doppel serve --watch` replaces
/// when the contract changes. Each request reads it once, so a request is
/// answered by one contract from start to end; requests in flight finish
/// on the engine they started with.
///
/// Every replacement raises `version`, an atomic read, so a connection can
/// keep the engine it last used and take the lock only after a reload.
public final class EngineSlot: Sendable {
    private let engine: Locked<(version: Int, engine: MockEngine)>
    private let latest = Atomic<Int>(0)

    /// A slot answering with `engine` until replaced.
    public init(_ engine: MockEngine) {
        self.engine = Locked((0, engine))
    }

    /// The engine answering now.
    public var current: MockEngine { engine.withLock { $0.engine } }

    /// The engine answering now, with the version it was put in as.
    var versioned: (version: Int, engine: MockEngine) { engine.withLock { $0 } }

    /// The version of the engine answering now: it changes with every replacement.
    var version: Int { latest.load(ordering: .acquiring) }

    /// Answers every later request with `replacement`.
    public func replace(with replacement: MockEngine) {
        engine.withLock { slot in
            slot = (slot.version + 1, replacement)
            latest.store(slot.version, ordering: .releasing)
        }
    }
}
