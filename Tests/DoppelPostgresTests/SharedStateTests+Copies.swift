import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

@testable import DoppelPostgres

/// A replica's copies of the rows it read or wrote last
/// (`PostgresStateStore+Copies.swift`) on a real database: a request is
/// decided on the copy without reading the row, and a copy made stale by
/// another replica (a write, a reset, a session made again) changes no
/// answer.
extension SharedStateTests {
    /// Replica `client`'s counts of requests decided on a copy, of stale copies, and of lost writes.
    func copies(_ client: TestClient) async throws -> (used: Int, stale: Int, lost: Int) {
        let store = try await client.send("GET", "/__doppel/health").json?["state_store"]
        return (
            try #require(store?["sessions_decided_on_copies"]?.intValue), try #require(store?["copies_stale"]?.intValue),
            try #require(store?["writes_lost"]?.intValue)
        )
    }

    @Test(
        "A replica decides a session's next request on its copy of the row; a copy the other replica's write made stale loses its write and is decided again on the newest row"
    )
    func requestsAreDecidedOnCopies() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales, timeout: 30)
        let (a, b) = (replicas.clients()[0], replicas.clients()[1])
        let child = try await child(a, session: "copied")
        let (aBefore, bBefore) = (try await copies(a), try await copies(b))
        // Two on A, each decided on the copy A wrote last: no read, nothing lost.
        #expect(try await generate(a, session: "copied", child: child) == 200)
        #expect(try await generate(a, session: "copied", child: child) == 200)
        var aNow = try await copies(a)
        #expect(aNow.used - aBefore.used == 2)
        #expect(aNow.stale == aBefore.stale && aNow.lost == aBefore.lost)
        // B has no copy: it reads the row (two stories) and writes the third.
        #expect(try await generate(b, session: "copied", child: child) == 200)
        #expect(try await copies(b).used == bBefore.used)
        // A's copy holds two stories: its write loses to B's, and the request is decided on the row B left (three).
        #expect(try await generate(a, session: "copied", child: child) == 200)
        aNow = try await copies(a)
        #expect(aNow.used - aBefore.used == 3)
        #expect(aNow.stale - aBefore.stale == 1)
        #expect(aNow.lost - aBefore.lost == 1)
        // Four stories: one more, then the limit, on either replica.
        #expect(try await generate(a, session: "copied", child: child) == 200)
        #expect(try await generate(b, session: "copied", child: child) == 402)
        #expect(try await generate(a, session: "copied", child: child) == 402)
        let state = try await a.send("GET", "/__doppel/state?session=copied").json?["state"]
        #expect(state?["stories_used"]?.intValue == 5, "\(state ?? .null)")
        await replicas.stop()
    }

    @Test(
        "A copy of a session reset through the other replica is read again, and answered as a fresh session; a session made again is decided on its new row"
    )
    func copiesOfRemovedSessionsChangeNoAnswer() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales, timeout: 30)
        let (a, b) = (replicas.clients()[0], replicas.clients()[1])
        // The answer a session that never was gives a generate for some child id: what a removed session must answer.
        let stranger = try await child(b, session: "stranger")
        let fresh = try await a.send(
            "POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(stranger)], session: "never-made")

        for session in ["removed", "made-again"] {
            let child = try await child(a, session: session)
            for _ in 0..<5 { #expect(try await generate(a, session: session, child: child) == 200) }
            #expect(try await generate(a, session: session, child: child) == 402, "A's copy now holds five stories")
            #expect(try await b.send("POST", "/__doppel/reset?session=\(session)").status == 200)
            let before = try await copies(a)
            if session == "removed" {
                // A's copy (five stories) is of a row no longer there: read again, and decided as the fresh session it is.
                let answer = try await a.send(
                    "POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(child)], session: session)
                #expect(answer.status == fresh.status, "\(answer.status) \(answer.json ?? .null)")
                #expect(answer.json?["error"] == fresh.json?["error"])
            } else {
                // Made again through B, two stories: A's copy (five, an older version) loses, and A decides on the new row.
                let again = try await self.child(b, session: session)
                for _ in 0..<2 { #expect(try await generate(b, session: session, child: again) == 200) }
                var statuses: [Int] = []
                for _ in 0..<4 { statuses.append(try await generate(a, session: session, child: again)) }
                #expect(statuses == [200, 200, 200, 402])
            }
            let after = try await copies(a)
            #expect(after.used - before.used >= 1)
            #expect(after.stale - before.stale == 1, "\(session): one stale copy, the first request's")
        }
        await replicas.stop()
    }
}

/// The bounds of a replica's copies, without a database.
@Suite("Row copies")
struct RowCopiesTests {
    @Test("At most 4,096 copies and 16 MiB of them; a row over 1 MiB is not kept; a copy replaced or forgotten gives its bytes back")
    func copiesAreBounded() {
        var copies = RowCopies()
        for index in 0..<5_000 { copies.keep("s\(index)", data: [UInt8](repeating: 1, count: 10), version: Int64(index)) }
        #expect(copies.count == RowCopies.maximumCopies)
        #expect(copies.bytes == RowCopies.maximumCopies * 10)
        #expect(copies.copy(of: "s4999")?.version == 4_999, "the newest is kept")

        copies.forgetAll()
        #expect(copies.count == 0 && copies.bytes == 0)
        let mebibyte = [UInt8](repeating: 2, count: 1 << 20)
        for index in 0..<20 { copies.keep("m\(index)", data: mebibyte, version: 1) }
        #expect(copies.bytes <= RowCopies.maximumCopyBytes)
        #expect(copies.count == 16)
        #expect(copies.copy(of: "m19") != nil)

        copies.keep("big", data: mebibyte + [0], version: 1)
        #expect(copies.copy(of: "big") == nil, "over a sixteenth of the budget: not kept")
        copies.keep("m19", data: [1, 2, 3], version: 2)
        #expect(copies.copy(of: "m19")?.data == [1, 2, 3])
        #expect(copies.bytes == 15 * (1 << 20) + 3)
        copies.forget("m19")
        copies.forget("m19")
        #expect(copies.bytes == 15 * (1 << 20))
        #expect(copies.copy(of: "m19") == nil)
    }
}
