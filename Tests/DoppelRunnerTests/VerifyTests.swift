import DoppelCore
import DoppelOpenAPI
import DoppelRunner
import DoppelTestSupport
import DoppelTesting
import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `doppel verify`: a provider checked against a contract, with requests
/// built from the contract. Doppel serving the same contract passes; a
/// provider that differs (a mutated contract served by Doppel, a small
/// Hummingbird app with a bug) fails, naming the endpoint and the difference.
// One at a time: each runs a server and a few hundred requests, and the full suite shares two cores.
@Suite("Verify a provider", .serialized)
struct VerifyTests {
    static let bundled = ["tales", "currency", "cleveroo", "imagen", "eknetwork-demo"]

    @Test(arguments: bundled)
    func doppelServingTheSameContractPasses(_ name: String) async throws {
        let file = repositoryRoot.appendingPathComponent("contracts/\(name).yaml").path
        let contract = try ContractDocument.load(file: file)
        try await DoppelTestServer.with(contract: file) { server in
            let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: .inTheSuite).run()
            #expect(report.failed == 0, "\(report.checks.filter { $0.outcome == .failed }.flatMap(VerifyReport.lines))")
            #expect(report.passed >= contract.endpoints.count, "\(report.summary)")
        }
    }

    // MARK: Mutations

    static let shop = """
        doppel: 1
        info: { title: Shop, version: "1" }
        auth: { default: bearer, schemes: { bearer: { type: bearer } } }
        schemas:
          Item:
            type: object
            required: [id, name, price]
            properties: { id: { type: integer }, name: { type: string }, price: { type: number, minimum: 0 } }
          NewItem:
            type: object
            required: [name, price]
            properties:
              name: { type: string, maxLength: 40 }
              price: { type: number, minimum: 0 }
              pay: { oneOf: [ { type: object, required: [card], properties: { card: { type: string } } }, { type: object, required: [iban], properties: { iban: { type: string } } } ] }
        responses:
          invalid: { status: 400, body: { error: invalid_item, message: "The item is not valid." } }
        endpoints:
          create-item:
            request: POST /items
            body: { schema: NewItem, example: { name: Lamp, price: 12.5 } }
            headers: { properties: { X-Priority: { type: integer, minimum: 1, maximum: 5 } } }
            on_invalid: invalid
            responses:
              - status: 201
                schema: Item
                body: { id: 7, name: "{{ body.name }}", price: "{{ body.price }}" }
          get-item:
            request: GET /items/{id}
            path: { properties: { id: { type: integer, minimum: 1 } } }
            responses:
              - when: path.id != 7
                status: 404
                body: { error: not_found, message: No such item. }
              - schema: Item
                body: { id: 7, name: Lamp, price: 12.5 }
        """

    /// A change to the shop a provider might make, what `verify` must say.
    struct Mutation: CustomTestStringConvertible, Sendable {
        let name: String
        let from: String
        let to: String
        let endpoint: String
        let says: String
        var testDescription: String { name }
    }

    static let mutations: [Mutation] = [
        Mutation(
            name: "a 401 turned 403", from: "schemes: { bearer: { type: bearer } }",
            to: "schemes: { bearer: { type: bearer, failure: { status: 403, body: { error: forbidden } } } }",
            endpoint: "get-item", says: "no credentials: expected 401 (unauthorized), got 403"),
        Mutation(
            name: "a renamed error field", from: "invalid: { status: 400, body: { error: invalid_item,",
            to: "invalid: { status: 400, body: { code: invalid_item,", endpoint: "create-item", says: "/error: missing"),
        Mutation(
            name: "a field of the wrong type", from: "      - schema: Item\n        body: { id: 7, name: Lamp, price: 12.5 }",
            to: "      - body: { id: 7, name: Lamp, price: \"12.50\" }", endpoint: "get-item", says: "/price: expected number, got string"),
        Mutation(
            name: "a required response field missing", from: "      - schema: Item\n        body: { id: 7, name: Lamp, price: 12.5 }",
            to: "      - body: { id: 7, price: 12.5 }", endpoint: "get-item", says: "/name: is required"),
        Mutation(
            name: "an undocumented status", from: "status: 404\n        body: { error: not_found",
            to: "status: 410\n        body: { error: not_found", endpoint: "get-item", says: "got 410"),
        Mutation(
            name: "a valid request refused", from: "body: { schema: NewItem, example: { name: Lamp, price: 12.5 } }",
            to:
                "body: { schema: { type: object, required: [name, price], properties: { name: { type: string, maxLength: 2 }, price: { type: number } } } }",
            endpoint: "create-item", says: "valid request: the target refused a request the contract accepts: got 400, the contract answers 201"),
        Mutation(
            name: "invalid input accepted", from: "    on_invalid: invalid\n", to: "", endpoint: "create-item",
            says: "expected 400 (invalid), got 422"),
        Mutation(
            name: "a header out of range accepted", from: "X-Priority: { type: integer, minimum: 1, maximum: 5 }",
            to: "X-Priority: { type: integer, minimum: 1 }",
            endpoint: "create-item", says: "header 'X-Priority' out of range (6): expected 400 (invalid), got 201"),
        Mutation(
            name: "a header of the wrong type accepted", from: "X-Priority: { type: integer, minimum: 1, maximum: 5 }",
            to: "X-Priority: { type: string }",
            endpoint: "create-item", says: "header 'X-Priority' of the wrong type: expected 400 (invalid), got 201"),
        Mutation(
            name: "a path value out of range accepted", from: "id: { type: integer, minimum: 1 }", to: "id: { type: integer }",
            endpoint: "get-item", says: "path parameter 'id' out of range (0): expected 422 (doppel:validation-failed), got 404"),
        Mutation(
            name: "a oneOf branch that fails", from: "    responses:\n      - status: 201",
            to: "    responses:\n      - { when: body.pay.iban != null, status: 500, body: { error: broken } }\n      - status: 201",
            endpoint: "create-item", says: "valid request, body 'pay' of branch 2 of its oneOf: "),
    ]

    @Test(arguments: mutations)
    func aProviderThatDiffersFails(_ mutation: Mutation) async throws {
        #expect(Self.shop.contains(mutation.from), "the mutation's text is in the shop")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("verify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let original = folder.appendingPathComponent("shop.yaml")
        let mutated = folder.appendingPathComponent("mutated.yaml")
        try Self.shop.write(to: original, atomically: true, encoding: .utf8)
        try Self.shop.replacingOccurrences(of: mutation.from, with: mutation.to).write(to: mutated, atomically: true, encoding: .utf8)
        let contract = try ContractDocument.load(file: original.path)

        // The shop itself passes, every check made.
        try await DoppelTestServer.with(contract: original.path) { server in
            let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: .inTheSuite).run()
            #expect(report.failed == 0 && report.notReached == 0, "\(report.checks.flatMap(VerifyReport.lines))")
        }
        try await DoppelTestServer.with(contract: mutated.path) { server in
            let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: .inTheSuite).run()
            let failed = report.checks.filter { $0.outcome == .failed }
            #expect(!failed.isEmpty)
            let text = failed.filter { $0.endpointID == mutation.endpoint }.flatMap(VerifyReport.lines).joined(separator: "\n")
            #expect(text.contains(mutation.says), "\(text)")
            // Each failure shows its request as a curl line, the token redacted
            // (a scenario printed for a failing sequence holds Doppel's own sample token, so that it runs).
            #expect(text.contains("curl -X "))
            #expect(!text.split(separator: "\n").contains { $0.contains("curl -X ") && $0.contains("eyJhbGciOiJub25l") })
        }
    }

    // MARK: A provider of its own

    /// The shop written by hand in Hummingbird, with one bug: an unknown
    /// item is a 200 with an empty body instead of the documented 404.
    @Test func aHandWrittenProviderWithABugIsCaught() async throws {
        let router = Router()
        @Sendable func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        router.post("/items") { request, _ -> Response in
            guard request.headers[.authorization]?.hasPrefix("Bearer ") == true else {
                return json(.unauthorized, #"{"type":"about:blank","title":"Unauthorized","status":401,"detail":"no token"}"#)
            }
            let body = try await request.body.collect(upTo: 1 << 16)
            guard let object = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any],
                let name = object["name"] as? String, name.count <= 40, let price = object["price"] as? Double, price >= 0,
                request.headers[HTTPField.Name("X-Priority")!].map({ Int($0).map { (1...5).contains($0) } ?? false }) ?? true
            else {
                return json(.badRequest, #"{"error":"invalid_item","message":"no"}"#)
            }
            return json(.created, #"{"id":7,"name":"\#(name)","price":\#(price)}"#)
        }
        router.get("/items/{id}") { request, context -> Response in
            guard request.headers[.authorization]?.hasPrefix("Bearer ") == true else {
                return json(.unauthorized, #"{"type":"about:blank","title":"Unauthorized","status":401,"detail":"no token"}"#)
            }
            guard context.parameters.get("id") == "7" else { return json(.ok, "{}") }  // the bug
            return json(.ok, #"{"id":7,"name":"Lamp","price":12.5}"#)
        }
        let (port, task) = try await startLoopbackApp(router)
        defer { task.cancel() }

        let contract = try ContractLoader.load(text: Self.shop, file: "shop.yaml")
        let report = await ProviderVerifier(contract: contract, target: URL(string: "http://127.0.0.1:\(port)")!, options: .inTheSuite).run()
        let failed = report.checks.filter { $0.outcome == .failed }
        // The unknown id, a path value of the wrong type or out of range (the same bug), and the sequences that reach get-item's 404.
        #expect(Set(failed.map(\.endpointID)) == ["get-item"], "\(report.checks.flatMap(VerifyReport.lines))")
        #expect(failed.first?.name == "unknown id")
        #expect(failed.first?.summary == "expected 404, got 200")
        #expect(
            failed.dropFirst().allSatisfy {
                $0.name.hasPrefix("sequence: ") || $0.name == "path parameter 'id' of the wrong type"
                    || $0.name == "path parameter 'id' out of range (0)"
            }, "\(failed.map(\.name))")
        #expect(failed.contains { $0.name == "sequence: get-item 404 (1 step)" })
        #expect(report.passed >= 6, "\(report.summary)")
    }

    // MARK: Bounds

    @Test func anUnreachableTargetFailsAtOnceAndSendsNoMore() async throws {
        // A port bound and not listening, held for the test: connecting is refused, and no other server can take it.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let contract = try ContractLoader.load(text: Self.shop, file: "shop.yaml")
        let report = await ProviderVerifier(contract: contract, target: URL(string: "http://127.0.0.1:\(port)")!, options: .inTheSuite).run()
        let lines = report.checks.flatMap(VerifyReport.lines)
        #expect(report.failed == 1, "\(lines)")
        #expect(report.checks.first { $0.outcome == .failed }?.summary.hasPrefix("could not connect to 127.0.0.1:\(port)") == true, "\(lines)")
        #expect(report.stopped?.contains("could not be reached") == true)
        #expect(report.checks.filter { $0.outcome == .notReached }.allSatisfy { $0.summary == report.stopped || !$0.summary.hasPrefix("not sent") })
    }

    @Test func aSlowTargetTimesOutAndMaxRequestsIsABound() async throws {
        // Answers nothing: each request ends at the timeout.
        let silent = try RawUpstream(answer: "", silent: true)
        defer { silent.stop() }
        let contract = try ContractLoader.load(text: Self.shop, file: "shop.yaml")
        var options = ProviderVerifier.Options.inTheSuite
        options.timeout = 1
        options.maxRequests = 3
        let report = await ProviderVerifier(contract: contract, target: URL(string: "http://127.0.0.1:\(silent.port)")!, options: options).run()
        let lines = report.checks.flatMap(VerifyReport.lines)
        #expect(report.checks.filter { $0.outcome == .failed }.allSatisfy { $0.summary == "no answer within 1s" }, "\(lines)")
        #expect(report.failed == 3)
        #expect(silent.heads.count <= 3)
        #expect(report.stopped == "not sent: --max-requests (3) reached")
    }

    /// `--rate` spaces the requests: however busy the machine, never closer
    /// than one in 1/rate seconds (a lower bound load cannot break).
    @Test func rateSpacesTheRequests() async throws {
        let arrivals = NIOLockedValueBox<[Date]>([])
        let router = Router()
        router.get("/items/{id}") { _, _ -> Response in
            arrivals.withLockedValue { $0.append(Date()) }
            return Response(status: .notFound)
        }
        router.post("/items") { _, _ -> Response in
            arrivals.withLockedValue { $0.append(Date()) }
            return Response(status: .badRequest)
        }
        let (port, task) = try await startLoopbackApp(router)
        defer { task.cancel() }
        var options = ProviderVerifier.Options.inTheSuite
        options.rate = 20
        options.maxRequests = 6
        let contract = try ContractLoader.load(text: Self.shop, file: "shop.yaml")
        let report = await ProviderVerifier(contract: contract, target: URL(string: "http://127.0.0.1:\(port)")!, options: options).run()
        #expect(arrivals.withLockedValue { $0.count } == 6)
        let sent = report.checks.compactMap(\.sentAt)
        #expect(sent.count == 6)
        let gaps = zip(sent.dropFirst(), sent).map { $0.timeIntervalSince($1) }
        #expect(gaps.allSatisfy { $0 >= 0.05 - 1e-6 }, "\(gaps)")
    }

    /// `doppel diff` prints each change, exits 1 on a breaking one, and writes JSON and Markdown.
    @Test func diffPrintsChangesAndExitsOneWhenAnyBreaks() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("diff-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let old = folder.appendingPathComponent("old.yaml")
        let new = folder.appendingPathComponent("new.yaml")
        let added = folder.appendingPathComponent("added.yaml")
        try Self.shop.write(to: old, atomically: true, encoding: .utf8)
        try Self.shop.replacingOccurrences(of: "required: [id, name, price]", with: "required: [id, price]").write(
            to: new, atomically: true, encoding: .utf8)
        try Self.shop.replacingOccurrences(
            of: "price: { type: number, minimum: 0 } }\n  NewItem", with: "price: { type: number, minimum: 0 }, tag: { type: string } }\n  NewItem"
        )
        .write(to: added, atomically: true, encoding: .utf8)

        let same = try await DoppelCommand.run(["diff", old.path, old.path])
        #expect(same.status == 0 && same.output == "no changes\n")
        let breaking = try await DoppelCommand.run(["diff", old.path, new.path])
        #expect(breaking.status == 1)
        #expect(
            breaking.output.contains("BREAKING   POST /items  201 response body /name: the field may now be absent  [response-field-now-optional]"),
            "\(breaking.output)")
        #expect(breaking.output.hasSuffix("2 breaking, 0 compatible\n"), "\(breaking.output)")
        let compatible = try await DoppelCommand.run(["diff", old.path, added.path, "--format", "json"])
        #expect(compatible.status == 0, "\(compatible.output)")
        let json = try JSONReader.parse(Array(compatible.output.utf8))
        #expect(json["breaking"] == 0 && json["compatible"] == 2)
        #expect(json["changes"]?.arrayValue?.first?["kind"] == "response-field-added")
        let markdown = try await DoppelCommand.run(["diff", old.path, new.path, "--format", "markdown"])
        #expect(markdown.output.hasPrefix("### Contract changes: 2 breaking, 0 compatible\n"))
        #expect(
            markdown.output.contains("| ❌ breaking | `GET /items/{}` | 200 response body /name | the field may now be absent |"), "\(markdown.output)"
        )
    }

    /// `doppel diff --journal`: clients in five sessions use Doppel serving
    /// tales; its journal, read over the admin API, tells which of them a
    /// narrowed query breaks (alice sent `limit=500`), and the event stream,
    /// which keeps bodies, which a newly required member breaks (bob sent no
    /// `hero_id`).
    @Test func diffTellsWhichObservedClientsAChangeBreaks() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("diff-journal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let old = contractPath("tales.yaml")
        let new = folder.appendingPathComponent("new.yaml")
        try String(contentsOfFile: old, encoding: .utf8)
            .replacingOccurrences(of: "    required: [language, child_id]\n", with: "    required: [language, child_id, hero_id]\n")
            .replacingOccurrences(
                of: "limit: { type: integer, minimum: 1, maximum: 1000 }", with: "limit: { type: integer, minimum: 1, maximum: 100 }"
            )
            .write(to: new, atomically: true, encoding: .utf8)
        let journal = folder.appendingPathComponent("journal.json")
        let events = folder.appendingPathComponent("events.txt")
        try await DoppelTestServer.with(contract: old) { server in
            let client = TestClient(base: server.baseURL)
            // The event stream, read while the clients work: a raw socket, read until the last request's event came.
            let port = try #require(server.baseURL.port)
            let stream = try await RawSocket.run { () -> RawSocket in
                let socket = try RawSocket(port: port)
                socket.send("GET /__doppel/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                return socket
            }
            // The stream is open (the hub counts its reader) before the clients start.
            try await eventually(within: 60) {
                try await client.send("GET", "/__doppel/health", token: nil).json?["event_streams"]?["open"]?.intValue == 1
            }
            for name in ["alice", "bob", "carol", "dave", "erin"] {
                _ = try await client.send("GET", "/api/v1/free-stories?limit=\(name == "alice" ? 500 : 10)", token: nil, session: name)
            }
            let child = "123e4567-e89b-12d3-a456-426614174000"
            _ = try await client.send("POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(child)], session: "bob")
            _ = try await client.send(
                "POST", "/api/v1/stories/generate",
                json: ["language": "en", "child_id": .string(child), "hero_id": "987fcdeb-51a2-43f7-b123-9876543210ab"], session: "carol")
            let answer = try await client.send("GET", "/__doppel/journal?limit=10000", token: nil)
            try answer.body.write(to: journal)
            // Carol's second request (her generate) is the last: read until its event, however loaded the machine.
            let streamed = try await RawSocket.run {
                stream.receive(timeout: 120) { $0.components(separatedBy: #""session":"carol""#).count > 2 }.text
            }
            // Saved as `curl -N` saves it: the body, its chunks joined.
            let reply = Array(streamed.utf8)
            let crlf = Array("\r\n".utf8)
            var at = try #require(reply.firstRange(of: crlf + crlf)).upperBound
            var joined: [UInt8] = []
            while let line = reply[at...].firstRange(of: crlf),
                let size = Int(String(decoding: reply[at..<line.lowerBound], as: UTF8.self), radix: 16), size > 0
            {
                let end = min(line.upperBound + size, reply.count)
                joined += reply[line.upperBound..<end]
                at = min(end + 2, reply.count)
            }
            try Data(joined).write(to: events)
        }
        let told = try await DoppelCommand.run(["diff", old, new.path, "--journal", journal.path])
        #expect(told.status == 1)
        #expect(
            told.output.contains(
                "BREAKING   GET /free-stories  query limit: maximum 1000 became 100  [request-range-narrowed]\n           observed: 1 call by 1 of 5 sessions (alice)\n"
            ), "\(told.output)")
        #expect(
            told.output.contains("observed: 2 calls by 2 of 5 sessions (bob, carol) reach it; the journal keeps no bodies or headers"),
            "\(told.output)")
        #expect(
            told.output.contains(
                "journal: 7 calls by 5 sessions; breaking for 1 of 5 (alice); 2 more call an endpoint whose body or headers changed"),
            "\(told.output)")
        let exact = try await DoppelCommand.run(["diff", old, new.path, "--journal", events.path, "--format", "json"])
        let json = try #require(try? JSONReader.parse(Array(exact.output.utf8)), "\(exact.errors)")
        #expect(json["journal"]?["broken_sessions"] == ["alice", "bob"], "\(exact.output)")
        let hero = json["changes"]?.arrayValue?.first { $0["kind"] == "request-field-now-required" }
        #expect(hero?["observed"]?["sessions"] == ["bob"] && hero?["observed"]?["exact"] == true, "\(exact.output)")
        let broken = try await DoppelCommand.run(["diff", old, new.path, "--journal", folder.appendingPathComponent("none.json").path])
        #expect(broken.status == 2 && broken.errors.contains("none.json: error:"), "\(broken.errors)")
    }

    @Test func theCommandPrintsEachCheckAndExitsOneOnFailure() async throws {
        let file = repositoryRoot.appendingPathComponent("contracts/currency.yaml").path
        try await DoppelTestServer.with(contract: file) { server in
            let passing = try await DoppelCommand.run([
                "verify", file, "--target", server.baseURL.absoluteString, "--rate", "200", "--timeout", "60",
            ])
            #expect(passing.status == 0, "\(passing.output)\(passing.errors)")
            #expect(passing.output.contains("ok   convert: valid request: 200 as documented"))
            #expect(passing.output.contains("ok   rates: sequence: random walk 1 (8 steps): 8 steps in lockstep with the contract"))
            #expect(passing.output.hasSuffix("15 passed, 0 failed\n"), "\(passing.output)")
        }
        let unknown = try await DoppelCommand.run(["verify", file, "--target", "http://127.0.0.1:9", "--endpoint", "nope"])
        #expect(unknown.status == 1 && unknown.errors.contains("has no endpoint 'nope'"))
        let badTarget = try await DoppelCommand.run(["verify", file, "--target", "ftp://x"])
        #expect(badTarget.status != 0 && badTarget.errors.contains("--target must be an http(s) URL"))
    }
}
