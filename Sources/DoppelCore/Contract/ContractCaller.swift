/// What reaches a contract as a client over HTTP would: the server's own
/// path (a shared state store too, the event stream, the journal and the
/// request log), or in a process of its own, the engine.
package protocol ContractCaller: Sendable {
    /// A request through the contract, answered in full (no delay), and journaled.
    func send(_ request: RecordedRequest) async -> MockResponse
}
