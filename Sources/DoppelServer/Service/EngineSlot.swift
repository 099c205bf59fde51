import DoppelCore
import DoppelProtobuf
import Synchronization

/// The engine a server answers with, which `doppel serve --watch` replaces
/// when the contract changes. Each request reads it once, so a request is
/// answered by one contract from start to end; requests in flight finish
/// on the engine they started with.
///
/// Every replacement raises `version`, an atomic read, so a connection can
/// keep the engine it last used and take the lock only after a reload.
/// The contract's gRPC catalogue (its `.proto` read) is made with the
/// engine, off the event loops, never by a call.
public final class EngineSlot: Sendable {
    /// One engine as served, with what is read once for it.
    struct Served: Sendable {
        let version: Int
        let engine: MockEngine
        /// The `grpc:` section's catalogue; nil when the contract has none.
        let grpc: GRPCCatalog?

        init(version: Int, engine: MockEngine) {
            self.version = version
            self.engine = engine
            self.grpc = engine.contract.grpc.flatMap { GRPCCatalog.load($0).catalog }
        }

        /// The same engine and catalogue under another version.
        init(_ served: Served, version: Int) {
            self.version = version
            self.engine = served.engine
            self.grpc = served.grpc
        }
    }

    private let engine: Locked<Served>
    private let latest = Atomic<Int>(0)
    private let grpcServed: Atomic<Bool>

    /// A slot answering with `engine` until replaced.
    public init(_ engine: MockEngine) {
        let served = Served(version: 0, engine: engine)
        self.engine = Locked(served)
        self.grpcServed = Atomic(served.grpc != nil)
    }

    /// The engine answering now.
    public var current: MockEngine { engine.withLock { $0.engine } }

    /// The engine answering now, with the version it was put in as.
    var versioned: Served { engine.withLock { $0 } }

    /// The version of the engine answering now: it changes with every replacement.
    var version: Int { latest.load(ordering: .acquiring) }

    /// Whether the engine answering now serves gRPC (an atomic read, taken per connection).
    var servesGRPC: Bool { grpcServed.load(ordering: .acquiring) }

    /// Answers every later request with `replacement`.
    public func replace(with replacement: MockEngine) {
        // The catalogue is read before the lock is taken; the version is the slot's.
        let read = Served(version: 0, engine: replacement)
        engine.withLock { slot in
            slot = Served(read, version: slot.version + 1)
            grpcServed.store(read.grpc != nil, ordering: .releasing)
            latest.store(slot.version, ordering: .releasing)
        }
    }
}
