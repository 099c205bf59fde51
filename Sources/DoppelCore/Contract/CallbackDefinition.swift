/// A request Doppel makes when a response is chosen (`callbacks:`): a
/// webhook, or an OpenAPI operation's documented callback. Rendered in the
/// response's context (after its effects, as its body is), sent by the
/// server after `delay`, retried as the contract says, and journaled with
/// its outcome. Only hosts the server allows (`--callback-allow`) are
/// contacted.
package struct CallbackDefinition: Sendable {
    /// What the journal counts it under: `<endpoint>.<name>`.
    package let name: String
    package let method: String
    /// The URL, a template: fixed, or taken from the request (`{{ body.callback_url }}`).
    package let url: ValueTemplate
    package let headers: [(String, ValueTemplate)]
    /// The body: a string is sent as it is (`text/plain`), anything else as JSON; nil sends none.
    package let body: ValueTemplate?
    package let contentType: String?
    package let delay: Delay?
    /// Attempts after the first when it fails (no answer, 5xx or 429).
    package let retries: Int
    /// Seconds before the first retry; each later one waits twice the one before (at most a minute).
    package let retryDelay: Double
    /// Seconds an attempt may take, connecting and answering.
    package let timeout: Double
    package let location: SourceLocation
}

/// A callback rendered for one answer, for the server to send.
package struct RenderedCallback: Sendable {
    package let name: String
    package let method: String
    package let url: String
    package let headers: [(name: String, value: String)]
    package let body: [UInt8]
    package let delay: Double
    package let retries: Int
    package let retryDelay: Double
    package let timeout: Double
}
