import DoppelCore
import DoppelPostgres
import DoppelRunner
import DoppelServer
import DoppelTestSupport
import Foundation
import Testing

/// Replicas sharing sessions on a real PostgreSQL (`doppel serve
/// --state-store`): counted outcomes of parallel bursts over replicas,
/// the clock, scenarios and the journal across replicas, and the database
/// stopped and started mid-run. One at a time: one test stops the database.
@Suite(
    "Shared state on PostgreSQL", .serialized,
    .enabled(if: TestDatabase.url != nil, "needs PostgreSQL: set DOPPEL_TEST_POSTGRES, or install Debian's postgresql (.ci/run does)"))
struct SharedStateTests {
    static let tales = contractPath("tales.yaml")

    /// A child in `session`, made through the first replica; its id.
    func child(_ client: TestClient, session: String) async throws -> String {
        let made = try await client.send(
            "POST", "/api/v1/children", json: ["name": "Emma", "age_category": "5-7", "gender": "female", "interests": ["x"]],
            session: session)
        #expect(made.status == 200)
        return try #require(made.json?["id"]?.stringValue)
    }

    /// One generate for `child` in `session`; its status.
    func generate(_ client: TestClient, session: String, child: String) async throws -> Int {
        try await client.send("POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(child)], session: session).status
    }

    /// `count` generates spread over the clients in turn, all at once; statuses counted.
    func generates(_ clients: [TestClient], count: Int, session: String, child: String) async throws -> [Int: Int] {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                let client = clients[index % clients.count]
                group.addTask { try await generate(client, session: session, child: child) }
            }
            var tally: [Int: Int] = [:]
            for try await status in group { tally[status, default: 0] += 1 }
            return tally
        }
    }

    /// How much health's `key` grew from `before` to `after` (nil when either lacks it).
    func delta(_ key: String, from before: JSON, to after: JSON) -> Int? {
        guard let now = after[key]?.intValue, let then = before[key]?.intValue else { return nil }
        return now - then
    }

    @Test("200 parallel generates over 2 and 3 replicas in one session: exactly 5 × 200 and 195 × 402, 20 runs")
    func burstsOverReplicasAreExact() async throws {
        for replicaCount in [2, 3] {
            // A generous store timeout: these tests count outcomes, and a busy CI machine may queue 200 requests on one row lock for seconds.
            let replicas = try await SharedReplicas.start(replicaCount, contract: Self.tales, timeout: 30)
            let clients = replicas.clients()
            for run in 0..<10 {
                let session = "burst-\(run)"
                let child = try await child(clients[0], session: session)
                let tally = try await generates(clients, count: 200, session: session, child: child)
                #expect(tally == [200: 5, 402: 195], "run \(run) over \(replicaCount) replicas")
            }
            await replicas.stop()
        }
    }

    @Test(
        "A session written by one request at a time is read and written without a lock; a burst on one session stays exact, at most one write a request"
    )
    func writesTakeTheLockOnlyWhenTheyCollide() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales, timeout: 30)
        let clients = replicas.clients()
        /// Sessions written over both replicas: after a plain read (two round trips), and under the row's lock.
        func writes() async throws -> (unlocked: Int, locked: Int) {
            var total = (unlocked: 0, locked: 0)
            for client in clients {
                let store = try await client.send("GET", "/__doppel/health").json?["state_store"]
                total.unlocked += try #require(store?["sessions_written_unlocked"]?.intValue)
                total.locked += try #require(store?["sessions_written_locked"]?.intValue)
            }
            return total
        }
        let before = try await writes()
        let calm = try await child(clients[0], session: "calm")
        var statuses: [Int] = []
        for index in 0..<7 {
            statuses.append(try await generate(clients[index % 2], session: "calm", child: calm))
        }
        #expect(statuses == [200, 200, 200, 200, 200, 402, 402])
        let calmWrites = try await writes()
        #expect(calmWrites.unlocked - before.unlocked == 8, "the child and 7 generates, one at a time, alternating replicas")
        #expect(calmWrites.locked == before.locked)
        let busy = try await child(clients[0], session: "busy")
        let tally = try await generates(clients, count: 100, session: "busy", child: busy)
        #expect(tally == [200: 5, 402: 95])
        let busyWrites = try await writes()
        // Requests of one session on one replica are decided in batches, one write each: at most one write per request.
        let busyCount = busyWrites.unlocked + busyWrites.locked - calmWrites.unlocked - calmWrites.locked
        #expect(busyCount >= 2 && busyCount <= 101, "\(busyCount) writes for the child and 100 generates")
        await replicas.stop()
    }

    @Test("Requests of one session waiting on one replica are decided in one batch and written once, and count exactly")
    func waitingRequestsAreBatched() async throws {
        // A store timeout of 120 s: a waiting request is refused once 48 s have passed, the held row's lock waited on for 60 s.
        let replicas = try await SharedReplicas.start(2, contract: Self.tales, timeout: 120)
        let clients = replicas.clients()
        let child = try await child(clients[0], session: "held")
        func store(_ client: TestClient) async throws -> JSON? { try await client.send("GET", "/__doppel/health").json?["state_store"] }
        let before = try #require(try await store(clients[0]))
        // The session's row held locked from outside: the first request's write waits for it, and the others queue behind it.
        let held = try await TestDatabase.holdRow(namespace: replicas.namespace, session: "held", url: TestDatabase.url!)
        // (20: fewer than the test client's 32 connections, so every one is sent at once.)
        async let tally = generates([clients[0]], count: 20, session: "held", child: child)
        let queued = try await eventually(within: 30) { try await store(clients[0])?["transactions_waiting"]?.intValue == 19 }
        let waiting = try await store(clients[0])
        #expect(queued, "19 requests wait behind the first: \(waiting ?? .null)")
        try await held.release()
        #expect(try await tally == [200: 5, 402: 15])
        let after = try #require(try await store(clients[0]))
        #expect(delta("sessions_written_unlocked", from: before, to: after) == 2, "the first request's write, then one for the 19: \(after)")
        #expect(delta("sessions_written_locked", from: before, to: after) == 0)
        #expect(delta("transactions_batched", from: before, to: after) == 19)
        #expect(after["transactions_waiting"]?.intValue == 0)
        await replicas.stop()
    }

    @Test("A write that lost to another write of its session is decided again on the row that write left, and written without the lock")
    func aLostWriteIsDecidedAgainOnTheRowAsItIs() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales, timeout: 120)
        let clients = replicas.clients()
        let url = try #require(TestDatabase.url)
        let child = try await child(clients[0], session: "lost")
        func generate() async throws -> Int { try await self.generate(clients[0], session: "lost", child: child) }
        func store() async throws -> JSON? { try await clients[0].send("GET", "/__doppel/health").json?["state_store"] }
        let row = "namespace = '\(replicas.namespace)' AND id = 'lost'"
        #expect(try await generate() == 200)
        // The session after one generate, kept to write back from outside: another writer's state, one story behind.
        let oneStory = try #require(try await TestDatabase.sql(["SELECT encode(data, 'hex') FROM doppel_sessions WHERE \(row)"], url: url).first)
        #expect(try await generate() == 200)
        let before = try #require(try await store())
        // Another writer changes the row and holds it uncommitted: the replica reads two stories, decides a third, and its write waits.
        let held = try await TestDatabase.holdRow(
            namespace: replicas.namespace, session: "lost", url: url,
            changing: "UPDATE doppel_sessions SET data = decode('\(oneStory)', 'hex'), version = version + 1 WHERE \(row)")
        async let third = generate()
        let waiting = try await eventually(within: 60) {
            let blocked = try await TestDatabase.sql(
                ["SELECT count(*) FROM pg_stat_activity WHERE \(held.holder) = ANY(pg_blocking_pids(pid)) AND query LIKE '%WITH written AS%'"],
                url: url)
            return blocked == ["1"]
        }
        #expect(waiting, "the replica's write waits for the other writer's lock")
        // Committed: the replica's write finds another version, reads the row again (one story) and writes two over it.
        try await held.release()
        #expect(try await third == 200)
        let after = try #require(try await store())
        #expect(delta("writes_lost", from: before, to: after) == 1, "\(after)")
        #expect(delta("sessions_written_unlocked", from: before, to: after) == 1)
        #expect(delta("sessions_written_locked", from: before, to: after) == 0)
        // Two stories kept, not three: three more are generated before the limit of 5.
        var statuses: [Int] = []
        for _ in 0..<4 { statuses.append(try await generate()) }
        #expect(statuses == [200, 200, 200, 402])
        await replicas.stop()
    }

    @Test("A session removed and made again goes on above every version it had: a write decided on the removed row cannot land on the new one")
    func aSessionMadeAgainGoesOnAboveItsVersions() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales, timeout: 30)
        let clients = replicas.clients()
        let url = try #require(TestDatabase.url)
        func version() async throws -> Int64? {
            try await TestDatabase.sql(
                ["SELECT version FROM doppel_sessions WHERE namespace = '\(replicas.namespace)' AND id = 'again'"], url: url
            ).first.flatMap { Int64($0) }
        }
        let child = try await child(clients[0], session: "again")
        for _ in 0..<3 { #expect(try await generate(clients[1], session: "again", child: child) == 200) }
        let old = try #require(try await version())
        #expect(try await clients[1].send("POST", "/__doppel/reset?session=again").status == 200)
        #expect(try await version() == nil, "the row is removed")
        // Made again, through the other replica: its first version is above the removed row's last.
        let again = try await self.child(clients[0], session: "again")
        let new = try #require(try await version())
        #expect(new > old, "\(new) after \(old)")
        #expect(try await generate(clients[1], session: "again", child: again) == 200)
        #expect(try await version() == new + 1)
        await replicas.stop()
    }

    @Test("A request whose database call does not end when its caller gives up does not hold up its session's next requests")
    func aStuckTransactionDoesNotHoldItsSession() async throws {
        // Once armed, the next transaction waits until released, whether cancelled or not (as a database call seen across a restart did).
        let armed = Locked(false)
        let waiting = Locked<CheckedContinuation<Void, Never>?>(nil)
        let replicas = try await SharedReplicas.start(1, contract: Self.tales, timeout: 1) {
            let stall = armed.withLock { armed in
                defer { armed = false }
                return armed
            }
            if stall { await withCheckedContinuation { continuation in waiting.withLock { $0 = continuation } } }
        }
        let client = replicas.clients()[0]
        // The replica's first request can outlast a 1 s timeout on a machine busy with the rest of the suite (its
        // connections still opening): that 503 keeps nothing, so the child is asked for again, up to 10 times.
        var made: String?
        for _ in 0..<10 where made == nil {
            let answer = try await client.send(
                "POST", "/api/v1/children", json: ["name": "Emma", "age_category": "5-7", "gender": "female", "interests": ["x"]],
                session: "stuck")
            #expect(answer.status == 200 || answer.status == 503)
            made = answer.json?["id"]?.stringValue
        }
        let child = try #require(made)
        func generate() async throws -> Int { try await self.generate(client, session: "stuck", child: child) }
        armed.withLock { $0 = true }
        #expect(try await generate() == 503, "its caller gave up after the store's timeout")
        // The stuck batch holds nothing: the session's next request is decided at once.
        #expect(try await generate() == 200)
        #expect(try await generate() == 200)
        // Released, the stuck request finds its time gone and keeps nothing: 5 stories in all, 2 of them made.
        waiting.withLock { $0.take() }?.resume()
        var statuses: [Int] = []
        for _ in 0..<4 { statuses.append(try await generate()) }
        #expect(statuses == [200, 200, 200, 402])
        await replicas.stop()
    }

    @Test("GraphQL over 2 replicas: a mutation on one is read on the other; 100 parallel mutations over both make exactly 5 stories")
    func graphQLOverReplicas() async throws {
        let replicas = try await SharedReplicas.start(2, contract: contractPath("tales-graphql.yaml"), timeout: 30)
        let clients = replicas.clients()
        func ask(_ client: TestClient, _ query: String, session: String) async throws -> JSON? {
            try await client.send("POST", "/graphql", json: ["query": .string(query)], token: "parent", session: session).json
        }
        let added = try await ask(clients[0], #"mutation { createChild(input: {name: "Mia", ageCategory: AGES_4_5}) { id } }"#, session: "gq")
        #expect(added?["data"]?["createChild"]?["id"] == "child_1")
        let outcomes = try await withThrowingTaskGroup(of: JSON?.self) { group in
            for index in 0..<100 {
                group.addTask {
                    try await ask(clients[index % 2], #"mutation { generateStory(input: {childId: "child_1"}) { id } }"#, session: "gq")
                }
            }
            var all: [JSON?] = []
            for try await outcome in group { all.append(outcome) }
            return all
        }
        let made = outcomes.compactMap { $0?["data"]?["generateStory"]?["id"]?.stringValue }
        let refused = outcomes.filter { $0?["errors"]?.arrayValue?.first?["extensions"]?["code"] == "MONTHLY_LIMIT_EXCEEDED" }
        #expect(Set(made) == Set((1...5).map { "story_\($0)" }) && made.count == 5)
        #expect(refused.count == 95)
        let read = try await ask(clients[1], "{ children { name stories { id } } me { subscription { storiesUsed } } }", session: "gq")
        #expect(read?["data"]?["children"]?.arrayValue?.first?["stories"]?.arrayValue?.count == 5)
        #expect(read?["data"]?["me"]?["subscription"]?["storiesUsed"] == 5)
        #expect(try await ask(clients[1], "{ children { id } }", session: "elsewhere")?["data"]?["children"] == [])
        await replicas.stop()
    }

    @Test("Bursts over many sessions at once, in statements shared by several: each session gets exactly its own 5")
    func manySessionsAreEachExact() async throws {
        let replicas = try await SharedReplicas.start(3, contract: Self.tales, timeout: 30)
        let clients = replicas.clients()
        let sessions = (0..<20).map { "many-\($0)" }
        var children: [String: String] = [:]
        for session in sessions { children[session] = try await child(clients[0], session: session) }
        let outcomes = try await withThrowingTaskGroup(of: (String, Int).self) { group in
            for index in 0..<400 {
                let session = sessions[index % sessions.count]
                let client = clients[index % clients.count]
                let child = children[session]!
                group.addTask {
                    (
                        session,
                        try await client.send(
                            "POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(child)], session: session
                        ).status
                    )
                }
            }
            var tally: [String: [Int: Int]] = [:]
            for try await (session, status) in group { tally[session, default: [:]][status, default: 0] += 1 }
            return tally
        }
        for session in sessions { #expect(outcomes[session] == [200: 5, 402: 15], "\(session)") }
        // The sessions' reads and writes went to the database in statements shared by several (`+Rounds.swift`).
        var shared = 0
        for client in clients {
            shared += try await client.send("GET", "/__doppel/health").json?["state_store"]?["sessions_in_shared_statements"]?.intValue ?? 0
        }
        #expect(shared > 0, "rounds of more than one session")
        await replicas.stop()
    }

    @Test("A rate window is exact across replicas: 3 a minute per token, 200 at once over 3 replicas, 10 runs")
    func rateWindowsAreExact() async throws {
        let replicas = try await SharedReplicas.start(3, contract: contractPath("cleveroo.yaml"), timeout: 30)
        let clients = replicas.clients()
        let engine = MockEngine(contract: try ContractLoader.load(file: contractPath("cleveroo.yaml")))
        let request = engine.sampleRequest(for: try #require(engine.contract.endpoint(id: "generate-game")))
        var headers: [String: String] = [:]
        for (name, value) in request.headers where name.lowercased() != "content-length" { headers[name] = value }
        for run in 0..<10 {
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<200 {
                    let client = clients[index % 3]
                    group.addTask { [headers] in
                        try await client.send(
                            request.method, request.path + (request.query.map { "?" + $0 } ?? ""), token: nil, session: "rate-\(run)",
                            headers: headers, body: Data(request.body)
                        ).status
                    }
                }
                var tally: [Int: Int] = [:]
                for try await status in group { tally[status, default: 0] += 1 }
                return tally
            }
            #expect(statuses[429] == 197, "run \(run): \(statuses)")
            #expect(statuses.filter { $0.key != 429 }.values.reduce(0, +) == 3, "run \(run): \(statuses)")
        }
        await replicas.stop()
    }

    @Test("The clock advanced through one replica is the clock of every replica; the journal counts every replica's answers")
    func clockAndJournalAreShared() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales)
        let (a, b) = (replicas.clients()[0], replicas.clients()[1])
        let child = try await child(a, session: "clock")
        #expect(try await generates([a, b], count: 6, session: "clock", child: child) == [200: 5, 402: 1])
        let advanced = try await a.send("POST", "/__doppel/clock", json: ["session": "clock", "advance": "31d"])
        #expect(advanced.status == 200)
        let seen = try await b.send("GET", "/__doppel/clock?session=clock")
        // The same clock, read a moment later (its seconds go on in real time: a second's boundary may fall between the two calls).
        let instants = try [advanced, seen].map { answer in
            try #require(answer.json?["now"]?.stringValue.flatMap { ISO8601DateFormatter().date(from: $0) })
        }
        #expect(instants[1].timeIntervalSince(instants[0]) >= 0 && instants[1].timeIntervalSince(instants[0]) < 5)
        #expect(instants[1].timeIntervalSinceNow > 30 * 86_400)
        // A month later the count starts again, whichever replica answers.
        #expect(
            try await generate(b, session: "clock", child: child) == 200
        )
        // Each replica's journal entries, read through the other at once.
        let verified = try await a.send(
            "POST", "/__doppel/verify", json: ["session": "clock", "endpoint": "generate-story", "status": 200, "count": 6])
        #expect(verified.json?["pass"] == .bool(true), "\(verified.json.map { JSONWriter.encodeString($0) } ?? "")")
        let coverage = try await b.send("GET", "/__doppel/coverage?session=clock")
        #expect(coverage.status == 200)
        await replicas.stop()
    }

    @Test("A scenario started through one replica overrides the next answer of another, even of an endpoint that reads no state")
    func scenariosActAcrossReplicas() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales)
        let (a, b) = (replicas.clients()[0], replicas.clients()[1])
        #expect(try await b.send("GET", "/api/v1/free-stories", session: "sc").json != nil)
        let started = try await a.send(
            "PUT", "/__doppel/scenario?session=sc",
            json: [
                "overrides": [["endpoint": "list-free-stories", "fault": "malformed_json"]]
            ])
        #expect(started.status == 200, "\(String(decoding: started.body, as: UTF8.self))")
        #expect(try await b.send("GET", "/api/v1/free-stories", session: "sc").json == nil, "the override's malformed JSON")
        // Other sessions are untouched, and the reset through b ends it for a.
        #expect(try await a.send("GET", "/api/v1/free-stories", session: "other").json != nil)
        #expect(try await b.send("POST", "/__doppel/reset", json: ["session": "sc"]).status == 200)
        #expect(try await a.send("GET", "/api/v1/free-stories", session: "sc").json != nil)
        await replicas.stop()
    }

    @Test("An agent's tools on one replica reach the shared sessions: its forced 402 answers a client on the other, both in its explain")
    func agentsActAcrossReplicas() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales, agents: true)
        let (a, b) = (replicas.clients()[0], replicas.clients()[1])
        let agent = try #require(try await MCPCalls.open(a, token: nil))
        let forced = try await MCPCalls.call(
            a, "force_next", JSONObject([("endpoint", "generate-story"), ("status", 402)]), id: agent.id, token: nil)
        #expect(forced?["waiting"]?.arrayValue?.count == 1, "\(forced ?? .null)")
        let generated = try await b.send(
            "POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": "123e4567-e89b-12d3-a456-426614174000"], session: agent.session)
        #expect(generated.status == 402)
        #expect(generated.json?["limit_info"] != nil)
        // The tool's own request through replica a is the contract's answer again (the forced one is used).
        let sent = try await MCPCalls.call(
            a, "send_request",
            JSONObject([
                ("method", "POST"), ("path", "/api/v1/stories/generate"),
                ("headers", .object(JSONObject([("Authorization", .string("Bearer \(sampleJWT)"))]))),
                ("body", ["language": "en", "child_id": "123e4567-e89b-12d3-a456-426614174000"]),
            ]), id: agent.id, token: nil)
        #expect(sent?["status"]?.intValue == 404, "\(sent ?? .null)")
        let entries = try await MCPCalls.call(a, "explain", JSONObject(), id: agent.id, token: nil)?["entries"]?.arrayValue ?? []
        #expect(entries.map { $0["status"]?.intValue } == [402, 404], "\(entries)")
        await replicas.stop()
    }

    @Test("An answer forced through one replica is the next answer of another, even of an endpoint that reads no state; either's journal says why")
    func forcedAnswersActAcrossReplicas() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales)
        let (a, b) = (replicas.clients()[0], replicas.clients()[1])
        let child = try await child(a, session: "fx")
        #expect(try await a.send("POST", "/__doppel/next?session=fx", json: ["endpoint": "generate-story", "status": 402]).status == 200)
        #expect(try await a.send("POST", "/__doppel/next?session=fx", json: ["endpoint": "list-plans", "status": 401]).status == 200)
        let waiting = try await b.send("GET", "/__doppel/next?session=fx")
        #expect(waiting.json?["waiting"]?.arrayValue?.count == 2)
        let refused = try await b.send("POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(child)], session: "fx")
        #expect(refused.status == 402)
        #expect(refused.json?["limit_info"]?["monthly_limit"] == 5)
        #expect(try await b.send("GET", "/api/v1/subscription/plans", session: "fx").status == 401)
        #expect(try await a.send("GET", "/api/v1/subscription/plans", session: "fx").status == 200, "used once, over both replicas")
        #expect(
            try await generate(a, session: "fx", child: child) == 200)
        let journal = try await a.send("GET", "/__doppel/journal?session=fx&endpoint=generate-story")
        let entries = journal.json?["entries"]?.arrayValue ?? []
        #expect(entries.map { $0["status"] } == [402, 200])
        #expect(entries.first?["reason"] == "forced as this call's answer through the admin API (POST /__doppel/next)")
        #expect(entries.last?["changes"] == ["stories_used", "usage_month"])
        await replicas.stop()
    }

    @Test("A database in the previous schema (version 1) is migrated by the first replica: its journal kept, new entries with why")
    func schemaOneIsMigrated() async throws {
        let name = "doppel_v1_\(UUID().uuidString.prefix(8).lowercased())"
        let base = try #require(TestDatabase.url)
        try await TestDatabase.sql(["CREATE DATABASE \(name)"], url: base)
        var components = try #require(URLComponents(string: base))
        components.path = "/" + name
        let url = try #require(components.string)
        do {
            try await TestDatabase.sql(
                PostgresStateStore.schema + [
                    "CREATE TABLE doppel_schema (version integer NOT NULL)", "INSERT INTO doppel_schema (version) VALUES (1)",
                    "INSERT INTO doppel_journal (namespace, time, session, method, path, status, duration_us, proxied) VALUES ('old', 0, 'default', 'GET', '/old', 200, 1, false)",
                ], url: url)
            let replicas = try await SharedReplicas.start(2, contract: Self.tales, namespace: "old", url: url)
            let a = replicas.clients()[0]
            #expect(try await a.send("GET", "/api/v1/free-stories").status == 200)
            let entries = try await a.send("GET", "/__doppel/journal").json?["entries"]?.arrayValue ?? []
            #expect(entries.map { $0["path"] } == ["/old", "/api/v1/free-stories"])
            #expect(entries.first?["reason"] == .null && entries.first?["changes"] == [])
            #expect(entries.last?["reason"] == "the endpoint's first response (no `when`)")
            #expect(try await TestDatabase.sql(["SELECT version FROM doppel_schema"], url: url) == ["\(PostgresStateStore.schemaVersion)"])
            await replicas.stop()
        } catch {
            try? await TestDatabase.sql(["DROP DATABASE \(name) WITH (FORCE)"], url: base)
            throw error
        }
        try await TestDatabase.sql(["DROP DATABASE \(name) WITH (FORCE)"], url: base)
    }

    @Test("State replaced through one replica is the state another reads and answers from")
    func stateReplacedAcrossReplicas() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales)
        let (a, b) = (replicas.clients()[0], replicas.clients()[1])
        let child = try await child(a, session: "st")
        // One story through b (it sets the month the count belongs to), read through a.
        #expect(
            try await generate(b, session: "st", child: child) == 200)
        var state = try #require(try await a.send("GET", "/__doppel/state?session=st").json?["state"]?.objectValue)
        #expect(state["stories_used"] == 1)
        state["stories_used"] = 5
        #expect(try await a.send("PUT", "/__doppel/state?session=st", json: ["state": .object(state)]).status == 200)
        #expect(try await b.send("GET", "/__doppel/state?session=st").json?["state"]?["stories_used"] == 5)
        #expect(
            try await generate(b, session: "st", child: child) == 402)
        let listed = try await b.send("GET", "/__doppel/sessions")
        #expect(listed.json?["sessions"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["st"])
        await replicas.stop()
    }

    @Test("Sessions past --max-sessions are evicted over all replicas, least recently used first, never the default one")
    func evictionAcrossReplicas() async throws {
        let replicas = try await SharedReplicas.start(2, contract: Self.tales, sessionLimit: 3)
        let clients = replicas.clients()
        for (index, session) in ["default", "e1", "e2", "e3", "e4", "e5"].enumerated() {
            _ = try await child(clients[index % 2], session: session)
        }
        // Each replica sweeps every 5 s. Every look, before and after the
        // sweep, lists each session or counts it as evicted, never neither.
        var ids: [String] = []
        var evicted: JSON?
        var looks: [Int] = []
        try await eventually(within: 60, every: .milliseconds(100)) {
            let listed = try await clients[looks.count % 2].send("GET", "/__doppel/sessions")
            ids = listed.json?["sessions"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            evicted = listed.json?["evicted"]?["for_room"]
            looks.append(ids.count + (evicted?.intValue ?? -10))
            return ids.count == 3
        }
        #expect(ids == ["default", "e4", "e5"])
        #expect(evicted == 3)
        #expect(looks.allSatisfy { $0 == 6 }, "sessions listed + evicted, look by look: \(looks)")
        await replicas.stop()
    }

    @Test(
        "Another contract on a namespace is refused while a replica serves it; once none does, it takes the namespace over and the sessions start over"
    )
    func anotherContractIsRefusedThenTakesOver() async throws {
        let replicas = try await SharedReplicas.start(1, contract: Self.tales)
        let client = replicas.clients()[0]
        _ = try await child(client, session: "kept")
        await #expect {
            _ = try await SharedReplicas.start(1, contract: contractPath("currency.yaml"), namespace: replicas.namespace)
        } throws: { error in
            error is PostgresStateStore.OpeningError
                && "\(error)".hasPrefix("the state store's namespace '\(replicas.namespace)' is served by 1 running replica")
                && "\(error)".contains("--state-namespace")
        }
        await replicas.stop()
        let currency = try await SharedReplicas.start(1, contract: contractPath("currency.yaml"), namespace: replicas.namespace)
        #expect(currency.replicas[0].store.tookOver == Self.tales)
        let listed = try await currency.clients()[0].send("GET", "/__doppel/sessions")
        #expect(listed.json?["sessions"]?.arrayValue?.isEmpty == true, "the tales sessions are gone")
        await currency.stop()
    }

    @Test(
        "The database stopped mid-burst: 503 state-store-unavailable within 10 s, never over-serving; started again: serving within 20 s, committed state intact"
    )
    func theDatabaseStoppedAndStarted() async throws {
        try #require(TestDatabase.control != nil, "set DOPPEL_TEST_POSTGRES_CTL (.ci/run does)")
        let replicas = try await SharedReplicas.start(2, contract: Self.tales, timeout: 1)
        let clients = replicas.clients(maxConnections: 8)
        let child = try await child(clients[0], session: "fault")
        let body: JSON = ["language": "en", "child_id": .string(child)]
        // Two stories before the fault.
        #expect(try await generates(clients, count: 2, session: "fault", child: child) == [200: 2])
        // Four clients keep generating over both replicas while the database stops under them.
        let stopped = ContinuousClock.now + .milliseconds(100)
        let burst = Task {
            try await withThrowingTaskGroup(of: [(status: Int, at: Duration, type: String?, retryAfter: String?)].self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var seen: [(status: Int, at: Duration, type: String?, retryAfter: String?)] = []
                        while ContinuousClock.now - stopped < .seconds(3) || !seen.contains(where: { $0.status == 503 }) {
                            guard ContinuousClock.now - stopped < .seconds(12) else { break }
                            let answer = try await clients[worker % 2].send("POST", "/api/v1/stories/generate", json: body, session: "fault")
                            seen.append(
                                (answer.status, ContinuousClock.now - stopped, answer.json?["type"]?.stringValue, answer.header("Retry-After")))
                        }
                        return seen
                    }
                }
                var all: [(status: Int, at: Duration, type: String?, retryAfter: String?)] = []
                for try await seen in group { all += seen }
                return all
            }
        }
        try await Task.sleep(until: stopped)
        try TestDatabase.run("stop")
        let answers = try await burst.value
        #expect(Set(answers.map(\.status)).isSubset(of: [200, 402, 503]), "\(Set(answers.map(\.status)))")
        for refused in answers where refused.status == 503 {
            #expect(refused.type == "urn:doppel:problem:state-store-unavailable")
            #expect(refused.retryAfter != nil)
        }
        let servedWhileDown = answers.filter { $0.status == 200 }.count
        let firstRefusal = answers.filter { $0.status == 503 }.map(\.at).min()
        let refusal = try #require(firstRefusal)
        #expect(refusal < .seconds(10))
        try TestDatabase.run("start")
        let serving = try await eventually(within: 20, every: .milliseconds(200)) {
            try await clients[1].send("GET", "/api/v1/users/subscription", session: "fault").status == 200
        }
        #expect(serving, "not serving 20 s after the database started")
        // Committed state intact: 2 before, the burst's 200s, then exactly the rest of the 5; never more.
        let rest = try await generates(clients, count: 10, session: "fault", child: child)
        #expect(2 + servedWhileDown + (rest[200] ?? 0) == 5, "\(servedWhileDown) served in the burst, then \(rest)")
        let used = try await clients[0].send("GET", "/api/v1/users/subscription", session: "fault")
        #expect(used.json?["limits"]?["stories_used"] == 5)
        await replicas.stop()
    }
    @Test(
        "The database restarted five times under load: the replica serves again after each, its pool's connections not lost, and every 200 is kept"
    )
    func theDatabaseRestartedAgainAndAgain() async throws {
        try #require(TestDatabase.control != nil, "set DOPPEL_TEST_POSTGRES_CTL (.ci/run does)")
        // Two connections: a connection the pool lost on a restart (a call that never ends) would leave it none by the second.
        let replicas = try await SharedReplicas.start(1, contract: Self.tales, timeout: 1, connections: 2)
        let client = replicas.clients(maxConnections: 8)[0]
        let upgrade = "/api/v1/subscription/purchase?plan_tier=premium&billing_cycle=monthly&payment_method=card"
        #expect(try await client.send("POST", upgrade, session: "again").status == 200, "premium: every generate is a 200 and counted")
        let child = try await child(client, session: "again")
        let statuses = Locked([Int: Int]())
        func count(_ status: Int) -> Int { statuses.withLock { $0[status] ?? 0 } }
        let running = Locked(true)
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        while running.withLock({ $0 }) {
                            guard let status = try? await self.generate(client, session: "again", child: child) else { continue }
                            statuses.withLock { $0[status, default: 0] += 1 }
                        }
                    }
                }
            }
        }
        for restart in 0..<5 {
            let refused = count(503)
            try TestDatabase.run("stop")
            #expect(try await eventually(within: 10) { count(503) > refused }, "restart \(restart): no 503 while the database was stopped")
            try TestDatabase.run("start")
            let served = count(200)
            let serving = try await eventually(within: 20, every: .milliseconds(100)) { count(200) >= served + 10 }
            #expect(serving, "restart \(restart): not serving 20 s after the database started: \(statuses.withLock { $0 })")
        }
        running.withLock { $0 = false }
        await load.value
        // One at a time after the last restart: each decided at once, on a connection of the pool's two.
        for _ in 0..<10 { #expect(try await generate(client, session: "again", child: child) == 200) }
        let tally = statuses.withLock { $0 }
        #expect(Set(tally.keys).isSubset(of: [200, 503]), "\(tally)")
        let subscription = try await client.send("GET", "/api/v1/users/subscription", session: "again")
        let used = try #require(subscription.json?["limits"]?["stories_used"]?.intValue)
        // Every 200 kept; a 503 may have been kept as well (its write committed as the database stopped), nothing more.
        let served = count(200) + 10
        #expect(used >= served && used <= served + count(503), "\(used) stories used after \(tally) and 10 more")
        await replicas.stop()
    }

    @Test("A NUL in a path, a JSON key and a state key is journaled and stored: the replica's journal, heartbeat and namespace are kept")
    func nulCharactersAreStorable() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nul-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("items.yaml").path
        try """
        doppel: 1
        info: { title: Items, version: "1" }
        state:
          collections: { items: [] }
        endpoints:
          put-item:
            request: PUT /items/{id}
            body: { schema: { type: object, additionalProperties: false, properties: { n: { type: integer } } } }
            responses:
              - status: 200
                effects: [ "state.items[path.id] = body" ]
                body: "{{ body }}"
          get-item:
            request: GET /items/{id}
            responses:
              - when: path.id not in state.items
                status: 404
                body: { error: no such item }
              - status: 200
                body: "{{ state.items[path.id] }}"
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let replicas = try await SharedReplicas.start(1, contract: file)
        let client = replicas.clients()[0]
        // A client-chosen state key and path with U+0000, and a refused JSON key holding one (named in the 422's reason).
        #expect(try await client.send("PUT", "/items/x%00y", json: ["n": 1], session: "nul").status == 200)
        #expect(try await client.send("PUT", "/items/a", json: ["a\u{0}b": 1], session: "nul").status == 422)
        for index in 0..<20 {
            #expect(try await client.send("PUT", "/items/i\(index)", json: ["n": .int(index)], session: "nul").status == 200)
        }
        #expect(try await client.send("GET", "/items/x%00y", session: "nul").json?["n"] == 1)
        // Every answer counted (the barrier waits for this replica's journal), nothing dropped, the replica healthy.
        let verified = try await client.send("POST", "/__doppel/verify", json: ["session": "nul", "endpoint": "put-item", "count": 22])
        #expect(verified.json?["pass"] == .bool(true), "\(verified.json.map { JSONWriter.encodeString($0) } ?? "")")
        try await Task.sleep(for: .milliseconds(300))
        let health = try await client.send("GET", "/__doppel/health")
        #expect(health.status == 200)
        #expect(health.json?["state_store"]?["journal_dropped"] == 0)
        #expect(health.json?["state_store"]?["last_error"] == .null, "\(health.json?["state_store"]?["last_error"] ?? .null)")
        let journal = try await client.send("GET", "/__doppel/journal?session=nul&endpoint=put-item")
        let stored = try #require(journal.json?["entries"]?.arrayValue?.first { $0["path"]?.stringValue == "/items/x%00y" })
        #expect(
            stored["changes"]?.arrayValue?.contains { $0.stringValue?.contains("\u{FFFD}") == true } == true, "\(JSONWriter.encodeString(stored))")
        let refused = try #require(journal.json?["entries"]?.arrayValue?.first { $0["status"] == 422 })
        #expect(refused["reason"]?.stringValue?.contains("a\u{FFFD}b") == true, "\(JSONWriter.encodeString(refused))")
        // Still alive to the namespace: another contract is refused on it.
        await #expect(throws: PostgresStateStore.OpeningError.self) {
            _ = try await SharedReplicas.start(1, contract: contractPath("currency.yaml"), namespace: replicas.namespace)
        }
        await replicas.stop()
    }
    @Test("A wrong store URL is said at once, in words that name what failed: a refused port, a missing database, an unknown user")
    func wrongStoreURLsAreSaidAtOnce() async throws {
        let base = try #require(URLComponents(string: TestDatabase.url!))
        let port = base.port ?? 5432
        let cases = [
            ("postgres://doppel@127.0.0.1:1/doppel", "the connection was refused"),
            ("postgres://\(base.user ?? "doppel")@127.0.0.1:\(port)/no_such_database", "database \"no_such_database\" does not exist"),
            ("postgres://no_such_role@127.0.0.1:\(port)/doppel", "role \"no_such_role\" does not exist"),
        ]
        for (url, words) in cases {
            let started = ContinuousClock.now
            await #expect {
                _ = try await SharedReplicas.start(1, contract: Self.tales, timeout: 2, url: url)
            } throws: { error in
                "\(error)".contains(words)
            }
            #expect(ContinuousClock.now - started < .seconds(5), "\(url) took \(ContinuousClock.now - started)")
        }
    }
}
