import Hummingbird
import NIOCore

/// The request context Doppel's responder runs with: Hummingbird's core
/// context plus the connection, for the client's address (rate limits keyed
/// by client) and for faults that break the connection on purpose.
public struct DoppelRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection the request came on.
    public let channel: any Channel
    /// The client's IP address, when the channel knows it.
    public let remoteAddress: String?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
        self.remoteAddress = source.channel.remoteAddress?.ipAddress
    }
}
