import DoppelCore

/// Sessions and a journal that live outside the process, shared by
/// replicas of one contract (`doppel serve --state-store`). The server asks
/// it to decide each request that needs its session's state, to answer
/// admin calls on the shared sessions and journal, and to journal every
/// answer; requests that need no state are decided in the process
/// (`MockEngine.needsSession(_:use:)`), which is why a stateless endpoint
/// costs the same with a shared store as without one.
///
/// DoppelPostgres implements it on PostgreSQL.
package protocol SharedState: Sendable {
    /// Whether `request` must be decided by the shared store: its answer
    /// may read or change its session, or the store cannot rule that out now.
    func needsStore(_ request: RecordedRequest, engine: MockEngine) -> Bool

    /// Decides `request` in its shared session (loaded, locked, decided in
    /// and written back as one transaction), or a 503
    /// `state-store-unavailable` within a bounded time.
    func decide(_ request: RecordedRequest, refusal: Problem?, engine: MockEngine) async -> Decision

    /// An admin call, on the shared sessions and journal.
    func admin(_ request: RecordedRequest, api: AdminAPI) async -> MockResponse

    /// Journals a delivered answer (off the answer's critical path).
    func complete(_ decision: Decision, status: Int, durationMicros: Int)
}
