import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

@Suite struct PipelineStageTests {
    @Test func bearerTokensMustBeWellFormed() throws {
        let contract = try loadContract(
            """
            doppel: 1
            auth:
              default: bearer
              schemes:
                bearer: { type: bearer, failure: denied }
                key: { type: api_key, header: X-Api-Key, query: api_key, keys: [secret] }
            responses:
              denied: { status: 401, body: { detail: Not authenticated } }
            endpoints:
              private: { request: GET /private, responses: [ { body: { who: "{{ auth.token }}" } } ] }
              keyed: { request: GET /keyed, auth: key, responses: [ { status: 200 } ] }
              public: { request: GET /public, auth: none, responses: [ { status: 200 } ] }
            """)
        let engine = MockEngine(contract: contract)
        #expect(engine.send("GET", "/private", token: "abc.def-1").json == ["who": "abc.def-1"])
        for header in ["", "Bearer", "Bearer ", "Basic abc", "Bearer a b", "Bearer ünicode"] {
            let response = engine.send("GET", "/private", token: nil, headers: [(name: "Authorization", value: header)])
            #expect(response.status == 401, "\(header)")
            #expect(response.json == ["detail": "Not authenticated"])
        }
        #expect(engine.send("GET", "/private", token: nil).status == 401)
        #expect(engine.send("GET", "/keyed", token: nil, headers: [(name: "x-api-key", value: "secret")]).status == 200)
        #expect(engine.send("GET", "/keyed", token: nil, headers: [(name: "X-API-KEY", value: "wrong")]).status == 401)
        #expect(engine.send("GET", "/keyed?api_key=secret", token: nil).status == 200)
        #expect(engine.send("GET", "/keyed?api_key=", token: nil).status == 401)
        // An API key's 401 says where the key goes, never a Bearer challenge (it said Bearer).
        #expect(engine.send("GET", "/keyed", token: nil).header("www-authenticate") == #"ApiKey header="x-api-key", query="api_key""#)
        #expect(engine.send("GET", "/public", token: nil).status == 200)
    }

    @Test func credentialsAreReadBeforeTheLockAndCheckedAgainstStateInside() throws {
        let contract = try ContractLoader.load(
            text: """
                doppel: 1
                info: { title: Auth stage, version: "1" }
                state: { collections: { tokens: [] } }
                auth:
                  default: bearer
                  schemes:
                    bearer: { type: bearer, issued: tokens, failure: denied }
                responses:
                  denied: { status: 401, body: { detail: denied } }
                endpoints:
                  me:
                    request: GET /me
                    responses: [ { status: 200, body: "{{ auth.claims }}" } ]
                """, file: "auth.yaml")
        let authenticator = Authenticator(schemes: contract.authSchemes)
        let endpoint = try #require(contract.endpoints.first)
        let request = RecordedRequest(method: "GET", target: "/me", headers: [(name: "Authorization", value: "Bearer abc")])
        // Read once, from the request alone; then judged against two states.
        let presented = authenticator.present(request, queryItems: [], endpoint: endpoint)
        var issued = contract.state.initial
        issued["tokens"] = .object(JSONObject([("abc", .object(JSONObject([("user", .int(1))])))]))
        guard case .accepted(let auth) = authenticator.authenticate(presented, endpoint: endpoint, state: issued, now: 0) else {
            Issue.record("an issued token is accepted")
            return
        }
        #expect(auth["claims"]?["user"] == .int(1))
        guard case .rejected(let response, let why) = authenticator.authenticate(presented, endpoint: endpoint, state: contract.state.initial, now: 0)
        else {
            Issue.record("a token revoked since it was read is refused")
            return
        }
        #expect(response.status == 401)
        #expect(why.contains("not among the issued ones (state.tokens)"))
        // Nothing sent: refused with the scheme's failure too.
        let bare = authenticator.present(RecordedRequest(method: "GET", target: "/me"), queryItems: [], endpoint: endpoint)
        guard case .rejected(_, let bareWhy) = authenticator.authenticate(bare, endpoint: endpoint, state: issued, now: 0) else {
            Issue.record("no credential is refused")
            return
        }
        #expect(bareWhy.hasSuffix("no credential was sent"))
    }

    @Test func validationFailuresListEveryFieldOrUseTheDocumentedResponse() throws {
        let contract = try loadContract(
            """
            doppel: 1
            endpoints:
              plain:
                request: POST /plain
                query: { properties: { limit: { type: integer, maximum: 10 } } }
                body: { schema: { type: object, required: [name, age], properties: { name: { type: string }, age: { type: integer } } } }
                responses: [ { status: 201 } ]
              documented:
                request: POST /documented
                body: { schema: { type: object, required: [name] } }
                on_invalid: { status: 400, body: { detail: "Invalid request: {{ errors[0].pointer }} {{ errors[0].message }}" } }
                responses: [ { status: 201 } ]
            """)
        let engine = MockEngine(contract: contract)
        let problem = engine.send("POST", "/plain?limit=11", json: ["age": "seven"])
        #expect(problem.status == 422)
        #expect(problem.header("content-type") == "application/problem+json")
        #expect(
            problem.json?["errors"] == [
                ["pointer": "/query/limit", "message": "must be at most 10, got 11"],
                ["pointer": "/body/name", "message": "is required"],
                ["pointer": "/body/age", "message": "expected integer, got string"],
            ])
        #expect(
            engine.send("POST", "/plain?limit=ten", json: ["name": "a", "age": 1]).json?["errors"] == [
                ["pointer": "/query/limit", "message": "expected integer, got 'ten'"]
            ])
        #expect(engine.send("POST", "/plain").json?["errors"] == [["pointer": "/body", "message": "a request body is required"]])
        let documented = engine.send("POST", "/documented", json: [:])
        #expect(documented.status == 400)
        #expect(documented.json == ["detail": "Invalid request: /body/name is required"])
        #expect(engine.send("POST", "/plain", json: ["name": "a", "age": 1]).status == 201)
    }

    @Test func unreadableBodiesAreRejectedBeforeValidation() throws {
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                endpoints:
                  e: { request: POST /e, body: { schema: { type: object } }, responses: [ { status: 200 } ] }
                """))
        let malformed = engine.respond(
            to: RecordedRequest(
                method: "POST", target: "/e", headers: [(name: "Content-Type", value: "application/json")], body: Array("{\"a\": ".utf8)))
        #expect(malformed.status == 400)
        #expect(malformed.json?["type"] == "urn:doppel:problem:malformed-json")
        let wrongType = engine.respond(
            to: RecordedRequest(method: "POST", target: "/e", headers: [(name: "Content-Type", value: "text/plain")], body: Array("x".utf8)))
        #expect(wrongType.status == 415)
        let charset = engine.respond(
            to: RecordedRequest(
                method: "POST", target: "/e", headers: [(name: "Content-Type", value: "application/json; charset=utf-8")], body: Array("{}".utf8)))
        #expect(charset.status == 200)
    }

    @Test func effectsAreAllOrNothing() throws {
        let contract = try loadContract(
            """
            doppel: 1
            state:
              counters: { a: 0, b: 0 }
            endpoints:
              broken:
                request: POST /broken
                responses:
                  - effects: [ "state.a += 1", "state.b += 'x'" ]
                    status: 200
            """)
        let engine = MockEngine(contract: contract)
        let response = engine.send("POST", "/broken")
        #expect(response.status == 500)
        #expect(response.json?["type"] == "urn:doppel:problem:expression-failed")
        #expect(engine.sessions.existing("default")?.snapshot["a"] == 0)
    }

    @Test func extremeRequestValuesGetAProblemNotACrash() throws {
        let engine = MockEngine(
            contract: try loadContract(
                """
                doppel: 1
                endpoints:
                  when: { request: POST /when, responses: [ { body: { at: "{{ date(body.t) }}", n: "{{ int(body.t) }}" } } ] }
                """))
        let response = engine.respond(
            to: RecordedRequest(
                method: "POST", target: "/when", headers: [(name: "Content-Type", value: "application/json")], body: Array(#"{"t": 1e300}"#.utf8)))
        #expect(response.status == 500)
        #expect(response.json?["type"] == "urn:doppel:problem:expression-failed")
        #expect(engine.send("POST", "/when", json: ["t": 0]).json == ["at": "1970-01-01T00:00:00Z", "n": 0])
    }

    @Test func collectionsInsertFindAndDelete() throws {
        let contract = try loadContract(
            """
            doppel: 1
            state:
              collections: { items: [ { id: seed, name: Seed } ] }
            endpoints:
              create:
                request: POST /items
                body: { schema: { type: object, required: [name] } }
                responses:
                  - status: 201
                    let: { item: { id: "{{ uuid() }}", name: "{{ body.name }}" } }
                    effects: [ "state.items[item.id] = item" ]
                    body: "{{ item }}"
              get:
                request: "GET /items/{id}"
                responses:
                  - when: path.id not in state.items
                    status: 404
                    body: { detail: "Item {{ path.id }} not found" }
                  - body: "{{ state.items[path.id] }}"
              delete:
                request: "DELETE /items/{id}"
                responses:
                  - status: 204
                    effects: [ "delete state.items[path.id]" ]
            """)
        let engine = MockEngine(contract: contract)
        let created = engine.send("POST", "/items", json: ["name": "New"])
        let id = try #require(created.json?["id"]?.stringValue)
        #expect(engine.send("GET", "/items/\(id)").json?["name"] == "New")
        #expect(engine.send("GET", "/items/seed").json == ["id": "seed", "name": "Seed"])
        #expect(engine.send("DELETE", "/items/\(id)").status == 204)
        #expect(engine.send("GET", "/items/\(id)").json == ["detail": .string("Item \(id) not found")])
    }

    /// The race a per-request lock prevents: without it, concurrent requests
    /// all read "4 used" and all succeed.
    @Test(arguments: 1...5)
    func concurrentRequestsAgainstALimitGetExactlyTheLimit(round: Int) async throws {
        let engine = MockEngine(contract: try ContractLoader.load(file: contractPath("tales.yaml")))
        let session = "round-\(round)"
        let childID = try #require(
            engine.send(
                "POST", "/api/v1/children", json: ["name": "A", "age_category": "3-5", "gender": "male", "interests": ["x"]], session: session
            ).json?["id"]?.stringValue)
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    engine.send("POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(childID)], session: session).status
                }
            }
            return await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
        }
        #expect(statuses == [200: 5, 402: 195])
    }

    @Test func sessionIdsAreCheckedAndTheLeastRecentlyUsedIsEvicted() throws {
        let engine = MockEngine(
            contract: try loadContract("doppel: 1\nendpoints:\n  e: { request: GET /e, responses: [ { status: 200 } ] }"), sessionLimit: 3)
        #expect(engine.send("GET", "/e", session: "has space").status == 400)
        #expect(engine.send("GET", "/e").status == 200)
        #expect(engine.send("GET", "/e", session: "a").status == 200)
        #expect(engine.send("GET", "/e", session: "b").status == 200)
        #expect(engine.send("GET", "/e", session: "a").status == 200)
        // Full: "b" is the least recently used (the default session is never evicted).
        #expect(engine.send("GET", "/e", session: "c").status == 200)
        #expect(engine.sessions.ids == ["a", "c", "default"])
        #expect(engine.sessions.evictions == SessionStore.Evictions(forRoom: 1, idle: 0))
        // The evicted session's tally went with it; the invalid id was never kept.
        let sessions = Set(engine.journal.tally.counts.keys.map(\.session))
        #expect(sessions == ["a", "c", "default", Journal.invalidSession])
    }

    @Test func idleSessionsAreEvicted() {
        let monotonic = Locked(0.0)
        let store = SessionStore(initial: JSONObject(), limit: 100, idleLimit: 60, monotonic: { monotonic.withLock { $0 } })
        _ = store.session("old")
        monotonic.withLock { $0 = 50 }
        _ = store.session("recent")
        monotonic.withLock { $0 = 100 }
        #expect(store.evictions == SessionStore.Evictions(forRoom: 0, idle: 1))
        #expect(store.ids == ["recent"])
    }

    @Test func twentyThousandSessionsOneAfterAnotherAllGetTheirAnswer() throws {
        let engine = MockEngine(contract: try loadContract("doppel: 1\nendpoints:\n  e: { request: GET /e, responses: [ { status: 200 } ] }"))
        var statuses: [Int: Int] = [:]
        for i in 0..<20_000 { statuses[engine.send("GET", "/e", session: "job-\(i)").status, default: 0] += 1 }
        #expect(statuses == [200: 20_000])
        #expect(engine.sessions.count == 10_000)
        #expect(engine.sessions.evictions.forRoom == 10_000)
        #expect(engine.send("GET", "/e").status == 200)
    }

    @Test func perKeyStateStaysBounded() {
        var map = BoundedMap<Int>(capacity: 100)
        for i in 0..<10_000 { map["k\(i)"] = i }
        #expect(map.count <= 100)
        #expect(map["k9999"] == 9999)
        #expect(map["k0"] == nil)
    }

    @Test func journalKeepsTheNewestEntriesWithinItsBound() throws {
        let engine = MockEngine(
            contract: try loadContract("doppel: 1\nendpoints:\n  e: { request: GET /e, responses: [ { status: 200 } ] }"), journalCapacity: 3)
        for _ in 0..<5 { _ = engine.send("GET", "/e") }
        _ = engine.send("GET", "/missing")
        let entries = engine.journal.entries
        #expect(entries.map(\.sequence) == [4, 5, 6])
        #expect(entries.map(\.status) == [200, 200, 404])
        #expect(entries.first?.endpointID == "e")
    }
}

/// The roots built from the request only where an expression reads them.
@Suite struct RequestRootTests {
    let engine: MockEngine

    init() throws {
        let contract = try loadContract(
            """
            doppel: 1
            endpoints:
              echo:
                request: GET /echo/{id}
                responses:
                  - body:
                      method: "{{ request.method }}"
                      path: "{{ request.path }}"
                      query_string: "{{ request.query_string }}"
                      tag: "{{ headers['x-tag'] }}"
                      tags: "{{ len(keys(headers)) }}"
                      client: "{{ client.address }}"
                      raw: "{{ query.q }}"
                      id: "{{ path.id }}"
                      at: "{{ clock.now }}"
                      epoch: "{{ clock.epoch }}"
              typed:
                request: GET /typed
                query: { properties: { n: { type: integer } } }
                headers: { properties: { x-count: { type: integer } } }
                responses:
                  - body: { n: "{{ query.n }}", count: "{{ headers['x-count'] }}", clock: "{{ clock }}" }
              chosen:
                request: GET /chosen
                match: headers['x-pick'] == 'yes' and query.k == 'v' and request.method == 'GET'
                responses: [ { body: picked } ]
              other:
                request: GET /chosen
                responses: [ { body: other } ]
            """)
        engine = MockEngine(contract: contract, clock: { 86_400 })
    }

    @Test func requestHeadersClientAndRawQueryAreReadFromTheRequest() {
        var request = RecordedRequest(
            method: "get", target: "/echo/a%20b?q=1&q=2&z", headers: [(name: "X-Tag", value: "one"), (name: "x-tag", value: "two")])
        request.remoteAddress = "127.0.0.1"
        let response = engine.respond(to: request)
        #expect(
            response.json == [
                "method": "GET", "path": "/echo/a%20b", "query_string": "q=1&q=2&z", "tag": "two", "tags": 1, "client": "127.0.0.1",
                "raw": "2", "id": "a b", "at": "1970-01-02T00:00:00Z", "epoch": 86_400,
            ])
    }

    @Test func whatValidationReadsByTypeTakesThePlaceOfTheRawRoots() {
        let response = engine.send("GET", "/typed?n=7", token: nil, headers: [(name: "X-Count", value: "3")])
        #expect(response.json == ["n": 7, "count": 3, "clock": ["now": "1970-01-02T00:00:00Z", "epoch": 86_400]])
    }

    @Test func matchConditionsReadTheRequestToo() {
        #expect(engine.send("GET", "/chosen?k=v", token: nil, headers: [(name: "X-Pick", value: "yes")]).json == "picked")
        #expect(engine.send("GET", "/chosen?k=v", token: nil).json == "other")
        #expect(engine.send("GET", "/chosen", token: nil, headers: [(name: "X-Pick", value: "yes")]).json == "other")
    }
}
