import DoppelCore
import DoppelProtobuf
import NIOConcurrencyHelpers

/// The gRPC catalogue of the contract being served (`grpc:`), read once per
/// engine: its `.proto` file is read when a call first needs it after the
/// contract (re)loaded, and kept until the next reload.
final class GRPCServices: Sendable {
    private let current = NIOLockedValueBox<(version: Int, catalog: GRPCCatalog?)?>(nil)

    /// The catalogue for the engine of slot version `version`; nil when its contract has no `grpc:` section.
    func catalog(version: Int, engine: MockEngine) -> GRPCCatalog? {
        if let known = current.withLockedValue({ $0 }), known.version == version { return known.catalog }
        // Read outside the lock: a reload's first calls may each read it, and keep the same.
        let catalog = engine.contract.grpc.flatMap { GRPCCatalog.load($0).catalog }
        current.withLockedValue { $0 = (version, catalog) }
        return catalog
    }
}
