import Testing

@testable import DoppelPostgres

/// The journal a replica holds before writing it is bounded by entries and by text.
@Suite("Shared journal buffer")
struct SharedJournalBufferTests {
    static func row(path: String) -> PostgresStateStore.Row {
        PostgresStateStore.Row(
            time: 0, session: "s", method: "GET", path: path, query: nil, status: 200, endpointID: nil,
            responseName: nil, durationMicros: 0, proxied: false, reason: nil, changes: [])
    }

    @Test("Past 32 MiB of paths, entries are dropped and counted, never held")
    func textIsBounded() {
        var buffer = PostgresStateStore.JournalBuffer()
        let long = String(repeating: "a", count: 30 * 1024)
        for _ in 0..<2_000 { buffer.add(Self.row(path: long)) }
        #expect(buffer.textBytes <= PostgresStateStore.maximumBufferedText)
        #expect(buffer.rows.count == PostgresStateStore.maximumBufferedText / (30 * 1024))
        #expect(buffer.dropped == 2_000 - buffer.rows.count)
    }

    @Test("Past 100,000 entries, entries are dropped and counted")
    func entriesAreBounded() {
        var buffer = PostgresStateStore.JournalBuffer()
        for _ in 0..<(PostgresStateStore.maximumBuffered + 10) { buffer.add(Self.row(path: "/")) }
        #expect(buffer.rows.count == PostgresStateStore.maximumBuffered)
        #expect(buffer.dropped == 10)
    }
}
