import Hummingbird
import NIOCore

/// The request context Doppel's responder runs with: Hummingbird's core
/// context plus the client's address (for rate limits keyed by client).
public struct DoppelRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The client's IP address, when the channel knows it.
    public let remoteAddress: String?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress?.ipAddress
    }
}
