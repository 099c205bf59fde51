import DoppelCore
import DoppelRunner
import DoppelServer
import DoppelTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import Testing

/// Callbacks Doppel makes, to a receiver of the test's own on loopback:
/// an OpenAPI document's `callbacks` served as it is, a contract's
/// webhook with retries, and the allow list that keeps other hosts out.
@Suite("Callbacks over loopback")
struct CallbackTests {
    /// What the receiver got, in order.
    final class Received: Sendable {
        let requests = NIOLockedValueBox<[(method: String, path: String, body: String, contentType: String?, event: String?)]>([])
        /// Statuses to answer with, in turn; 200 once they run out.
        let statuses: NIOLockedValueBox<[Int]>

        init(statuses: [Int] = []) { self.statuses = NIOLockedValueBox(statuses) }

        var all: [(method: String, path: String, body: String, contentType: String?, event: String?)] { requests.withLockedValue { $0 } }
    }

    static func receiver(_ received: Received) async throws -> (port: Int, task: Task<Void, any Error>) {
        let router = Router()
        router.on("**", method: .post) { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            received.requests.withLockedValue {
                $0.append(
                    (
                        request.method.rawValue, request.uri.path, String(buffer: body), request.headers[.contentType],
                        request.headers[HTTPField.Name("X-Event")!]
                    ))
            }
            let status = received.statuses.withLockedValue { $0.isEmpty ? 200 : $0.removeFirst() }
            return Response(status: .init(code: status))
        }
        return try await startLoopbackApp(router)
    }

    /// Waits until `condition` holds (or 10 s pass).
    static func eventually(_ condition: () -> Bool) async throws {
        // Generous: what it waits for is not a timing promise, and a loaded suite may take long to reach it.
        await DoppelTestSupport.eventually(within: 120, every: .milliseconds(50)) { condition() }
    }

    @Test("An OpenAPI document's callback, served as it is, calls the receiver with a body valid against the callback's schema")
    func openAPICallbackFires() async throws {
        let received = Received()
        let (port, task) = try await Self.receiver(received)
        defer { task.cancel() }
        let document = repositoryRoot.appendingPathComponent("Tests/DoppelServerTests/Fixtures/openapi/callbacks-3.1.yaml").path
        try await DoppelTestServer.with(contract: document) { server in
            let answer = try await TestClient(base: server.baseURL).send(
                "POST", "/payments", json: ["amount": 5, "callbackUrl": .string("http://127.0.0.1:\(port)/events")],
                token: nil, session: "pay")
            #expect(answer.status == 201)
            try await Self.eventually { received.all.count == 1 }
            let request = try #require(received.all.first)
            #expect(request.method == "POST" && request.path == "/events")
            #expect(request.contentType == "application/json")
            let body = try JSONReader.parse(Array(request.body.utf8))
            let schema = try #require(server.engine.contract.schemas["PaymentEvent"])
            #expect(SchemaValidator(registry: server.engine.contract.schemas).validate(body, against: schema).isEmpty, "\(request.body)")
            try await Self.eventually { server.engine.journal.entries.contains { $0.method == "CALLBACK" } }
            let entry = try #require(server.engine.journal.entries.first { $0.method == "CALLBACK" })
            #expect(entry.endpointID == "createPayment.paymentEvent" && entry.session == "pay")
            #expect(entry.path == "http://127.0.0.1:\(port)/events")
            // The receiver answered 200 at once. The document says no timeout, so the attempt has the default 10 s;
            // the whole suite on two cores has held this process past that, and then the attempt is journaled as
            // failed on its timeout, saying so. Any other outcome (another status, another failure) fails the test.
            let timedOut =
                entry.status == 0 && entry.durationMicros >= 10_000_000
                && entry.reason?.hasSuffix("no answer within 10 s (the callback's timeout)") == true
            #expect(entry.status == 200 || timedOut, "\(entry.status): \(entry.reason ?? "")")
            #expect(
                Verification(
                    .init(endpoint: "createPayment.paymentEvent", status: timedOut ? 0 : 200), expected: .exactly(1), in: server.engine.journal
                )
                .passed)
        }
    }

    @Test("A host outside --callback-allow is never contacted: the attempt is journaled as refused")
    func disallowedHostIsNeverContacted() async throws {
        let received = Received()
        let (port, task) = try await Self.receiver(received)
        defer { task.cancel() }
        var configuration = ServerConfiguration.testing
        configuration.callbackAllow = ["hooks.example.com"]
        let document = repositoryRoot.appendingPathComponent("Tests/DoppelServerTests/Fixtures/openapi/callbacks-3.1.yaml").path
        try await DoppelTestServer.with(contract: document, configuration: configuration) { server in
            let answer = try await TestClient(base: server.baseURL).send(
                "POST", "/payments", json: ["amount": 5, "callbackUrl": .string("http://127.0.0.1:\(port)/events")],
                token: nil)
            #expect(answer.status == 201)
            try await Self.eventually { server.engine.journal.entries.contains { $0.method == "CALLBACK" } }
            let entry = try #require(server.engine.journal.entries.first { $0.method == "CALLBACK" })
            #expect(entry.status == 0)
            #expect(entry.reason == "refused, not sent: 127.0.0.1 is not allowed by --callback-allow (hooks.example.com)")
            try await Task.sleep(for: .milliseconds(300))
            #expect(received.all.isEmpty, "the receiver was contacted")
        }
    }

    static let webhook = """
        doppel: 1
        endpoints:
          pay:
            request: POST /pay
            auth: none
            responses:
              - status: 202
                let: { id: "'pay_1'" }
                body: { id: "{{ id }}" }
                callbacks:
                  - name: succeeded
                    url: "http://127.0.0.1:{{ query.port }}/hooks/{{ id }}"
                    headers: { X-Event: payment.succeeded }
                    body: { event: payment.succeeded, id: "{{ id }}", amount: "{{ body.amount }}" }
                    delay: 300ms
                    retries: 2
                    retry_delay: 100ms
        """

    @Test("A contract's webhook: sent after its delay with its templated body and headers, retried on 503 until it is taken")
    func webhookRetries() async throws {
        let received = Received(statuses: [503, 503])
        let (port, task) = try await Self.receiver(received)
        defer { task.cancel() }
        try await SocketTests.withContract(Self.webhook) { server in
            let asked = ContinuousClock.now
            #expect(try await TestClient(base: server.baseURL).send("POST", "/pay?port=\(port)", json: ["amount": 9], token: nil).status == 202)
            try await Self.eventually { received.all.count == 3 }
            #expect(ContinuousClock.now - asked >= .milliseconds(300 + 100 + 200), "its delay, then 100 ms and 200 ms between attempts")
            #expect(received.all.map(\.path) == ["/hooks/pay_1", "/hooks/pay_1", "/hooks/pay_1"])
            let first = try #require(received.all.first)
            #expect(try JSONReader.parse(Array(first.body.utf8)) == ["event": "payment.succeeded", "id": "pay_1", "amount": 9])
            #expect(first.event == "payment.succeeded" && first.contentType == "application/json")
            try await Self.eventually { server.engine.journal.entries.filter { $0.method == "CALLBACK" }.count == 3 }
            let attempts = server.engine.journal.entries.filter { $0.method == "CALLBACK" }
            #expect(attempts.map(\.status) == [503, 503, 200])
            #expect(attempts.last?.reason?.hasSuffix("answered 200 (attempt 3 of 3)") == true)
        }
    }

    @Test("A receiver that does not answer: each attempt fails within its timeout and is journaled; the server keeps serving")
    func unreachableReceiver() async throws {
        // A port nothing listens on: connection refused, twice (one retry).
        let contract = Self.webhook.replacingOccurrences(of: "retries: 2", with: "retries: 1")
        try await SocketTests.withContract(contract) { server in
            #expect(try await TestClient(base: server.baseURL).send("POST", "/pay?port=9", json: ["amount": 1], token: nil).status == 202)
            try await Self.eventually { server.engine.journal.entries.filter { $0.method == "CALLBACK" }.count == 2 }
            let attempts = server.engine.journal.entries.filter { $0.method == "CALLBACK" }
            #expect(attempts.map(\.status) == [0, 0])
            #expect(attempts.first?.reason?.contains("failed (attempt 1 of 2)") == true)
            #expect(try await TestClient(base: server.baseURL).send("GET", "/__doppel/health", token: nil).status == 200)
        }
    }

    @Test("The allow list: loopback by default, names, wildcards, ports, and values it refuses")
    func allowList() throws {
        let loopback = CallbackAllowList.loopback
        #expect(
            loopback.permits(host: "127.0.0.1", port: 80) && loopback.permits(host: "127.5.6.7", port: 1) && loopback.permits(host: "::1", port: 9)
                && loopback.permits(host: "localhost", port: 8080))
        #expect(
            !loopback.permits(host: "10.0.0.1", port: 80) && !loopback.permits(host: "127.0.0.1.evil.com", port: 80)
                && !loopback.permits(host: "example.com", port: 80) && !loopback.permits(host: "0x7f.0.0.1", port: 80))
        let list = try CallbackAllowList(["*.example.com", "api.test:8443", "[::1]:9000"])
        #expect(
            list.permits(host: "hooks.example.com", port: 443) && !list.permits(host: "example.com", port: 443)
                && !list.permits(host: "badexample.com", port: 443))
        #expect(list.permits(host: "api.test", port: 8443) && !list.permits(host: "api.test", port: 443))
        #expect(list.permits(host: "::1", port: 9000) && !list.permits(host: "::1", port: 9001) && !list.permits(host: "127.0.0.1", port: 9000))
        #expect(try CallbackAllowList(["*"]).permits(host: "anything.anywhere", port: 1))
        for bad in ["", "a b", "host:0", "host:x", "[::1"] {
            #expect(throws: CallbackAllowError.self) { try CallbackAllowList([bad]) }
        }
        #expect(URLParts("http://user@127.0.0.1/x") == nil, "credentials in a URL would hide its host from a reader")
        #expect(URLParts("https://[::1]:8443/a?b=1")?.host == "::1" && URLParts("https://[::1]:8443/a?b=1")?.target == "/a?b=1")
        #expect(URLParts("ftp://example.com/") == nil)
        // The request line cannot be broken: control characters refuse the URL, spaces and the like are percent-encoded.
        #expect(URLParts("http://127.0.0.1/a\r\nX-Evil: 1") == nil)
        #expect(URLParts("http://127.0.0.1/a b?q=é&x=\"y\"")?.target == "/a%20b?q=%C3%A9&x=%22y%22")
    }
}
