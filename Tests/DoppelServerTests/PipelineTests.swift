import DoppelCore
import DoppelRunner
import DoppelServer
import DoppelTestSupport
import Foundation
import Testing

/// One path from bytes in to bytes out (`HTTPDoor`): for every kind of
/// answer the engine can decide, the bytes a client reads off the socket and
/// the one journal entry the answer completes, present by the time the client
/// has read its answer.
@Suite("One pipeline, every kind of answer")
struct PipelineTests {
    /// What the upstream of `proxied` answers, byte for byte.
    static let upstreamAnswer = "HTTP/1.1 207 Multi-Status\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\nupstream"

    struct Kind: Sendable, CustomTestStringConvertible {
        let name: String
        /// The request as sent, one request closing its connection.
        let request: String
        /// What the client reads, and whether the server closed.
        let bytes: @Sendable (_ text: String, _ closed: Bool) -> Bool
        /// The journal entry's status, endpoint and whether it is marked proxied; nil where nothing is journaled.
        let entry: (status: Int, endpoint: String?, proxied: Bool)?
        var testDescription: String { name }
    }

    static func get(_ path: String) -> String { "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" }

    static let kinds: [Kind] = [
        Kind(
            name: "plain", request: get("/plain"),
            bytes: { text, closed in
                text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.contains("Content-Length: 16\r\n") && text.hasSuffix("\r\n\r\n{\"kind\":\"plain\"}")
                    && closed
            }, entry: (200, "plain", false)),
        Kind(
            name: "delayed", request: get("/delayed"),
            bytes: { text, closed in
                text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.hasSuffix("{\"kind\":\"delayed\"}") && closed
            }, entry: (200, "delayed", false)),
        Kind(
            name: "streamed", request: get("/streamed"),
            bytes: { text, closed in
                text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.contains("Transfer-Encoding: chunked\r\n") && !text.contains("Content-Length")
                    && text.hasSuffix("\r\n\r\n6\r\nfirst,\r\n7\r\nsecond,\r\n5\r\nthird\r\n0\r\n\r\n") && closed
            }, entry: (200, "streamed", false)),
        Kind(
            name: "HTTP/1.0 stream", request: "GET /streamed HTTP/1.0\r\n\r\n",
            bytes: { text, closed in
                // No chunked coding in HTTP/1.0: the body ends where the connection does.
                text.hasPrefix("HTTP/1.1 200 OK\r\n") && !text.contains("Transfer-Encoding") && text.hasSuffix("\r\n\r\nfirst,second,third") && closed
            }, entry: (200, "streamed", false)),
        Kind(
            name: "fault: connection reset", request: get("/reset"), bytes: { text, closed in text.isEmpty && closed },
            entry: (200, "reset", false)),
        Kind(
            name: "fault: empty reply", request: get("/empty"), bytes: { text, closed in text.isEmpty && closed },
            entry: (200, "empty", false)),
        Kind(
            name: "fault: truncated body", request: get("/truncated"),
            bytes: { text, closed in
                let body = #"{"message":"long enough to be cut in half"}"#
                return text.hasPrefix("HTTP/1.1 201 Created\r\n") && text.contains("Content-Length: \(body.utf8.count)\r\n")
                    && text.hasSuffix("\r\n\r\n" + String(body.prefix(body.utf8.count / 2))) && closed
            }, entry: (201, "truncated", false)),
        Kind(
            name: "fault: malformed JSON", request: get("/broken"),
            bytes: { text, closed in
                // A whole answer whose body is broken: its length is what is sent.
                text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.contains("Content-Length: \(AnswerKinds.brokenBody.utf8.count)\r\n")
                    && text.hasSuffix("\r\n\r\n" + AnswerKinds.brokenBody) && closed
            }, entry: (200, "broken", false)),
        Kind(
            name: "fault: no answer", request: get("/hang"), bytes: { text, closed in text.isEmpty && closed },
            entry: (202, "hang", false)),
        Kind(
            name: "proxied", request: get("/proxied"),
            bytes: { text, closed in
                text.hasPrefix("HTTP/1.1 207 Multi-Status\r\n") && text.contains("Content-Type: text/plain\r\n") && text.hasSuffix("\r\n\r\nupstream")
                    && closed
            }, entry: (207, "proxied", true)),
        Kind(
            name: "unmatched", request: get("/nowhere"),
            bytes: { text, closed in
                text.hasPrefix("HTTP/1.1 404 Not Found\r\n") && text.contains("Content-Type: application/problem+json")
                    && text.contains("no-matching-endpoint") && closed
            }, entry: (404, nil, false)),
        Kind(
            name: "refused: body over the limit",
            request: "POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000000\r\nConnection: close\r\n\r\n",
            bytes: { text, _ in text.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n") && text.contains("payload-too-large") },
            entry: (413, nil, false)),
        Kind(
            name: "refused: a target that is not a path", request: "GET http://elsewhere/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            bytes: { text, closed in text.hasPrefix("HTTP/1.1 400 Bad Request\r\n") && text.contains("invalid-target") && closed },
            entry: (400, nil, false)),
        Kind(
            name: "admin call", request: get("/__doppel/health"),
            bytes: { text, closed in
                text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.contains("\"status\"") && closed
            }, entry: nil),
        Kind(
            name: "malformed request", request: "GET /plain HTTP/1.1\r\nHost x\r\n\r\n",
            bytes: { text, closed in
                text.hasPrefix("HTTP/1.1 400 Bad Request\r\n") && text.contains("malformed-request") && text.contains("Connection: close\r\n")
                    && closed
            }, entry: nil),
    ]

    @Test(arguments: kinds)
    func eachKindOfAnswerHasItsBytesAndOneJournalEntry(_ kind: Kind) async throws {
        let upstream = try RawUpstream(answer: Self.upstreamAnswer)
        defer { upstream.stop() }
        var configuration = ServerConfiguration.testing
        configuration.proxy = upstream.url
        configuration.hangLimit = 1
        let contract = try ContractLoader.load(text: AnswerKinds.contract, file: "kinds.yaml")
        // Unmatched requests are answered (404), not forwarded: only `proxy: true` goes upstream.
        let engine = MockEngine(contract: contract)
        try await DoppelTestServer.with(engine: engine, configuration: configuration) { server in
            let port = server.port
            let request = kind.request
            let reply = try await RawSocket.run {
                let socket = try RawSocket(port: port)
                socket.send(request)
                return socket.receive(timeout: 30)
            }
            #expect(kind.bytes(reply.text, reply.closed), "\(reply.text.debugDescription), closed: \(reply.closed)")
            // Read as soon as the client has its answer: the entry is written before the answer's last bytes.
            let entries = engine.journal.entries
            if let expected = kind.entry {
                #expect(entries.count == 1)
                #expect(entries.first?.status == expected.status)
                #expect(entries.first?.endpointID == expected.endpoint)
                #expect(entries.first?.proxied == expected.proxied)
                #expect(entries.first?.session == "default")
                // A contract's own answer names the response chosen; an upstream's does not.
                if expected.endpoint != nil {
                    #expect((entries.first?.responseName != nil) == !expected.proxied)
                }
            } else {
                #expect(entries.isEmpty)
            }
        }
    }

    /// Answers keep the order of their requests whatever their kinds: a
    /// stream, a delayed answer, a forwarded one, a refused one and plain
    /// ones, pipelined on one connection, come back in the order sent, each
    /// journaled once.
    @Test func pipelinedAnswersOfEveryKindKeepTheirOrder() async throws {
        let upstream = try RawUpstream(answer: Self.upstreamAnswer)
        defer { upstream.stop() }
        var configuration = ServerConfiguration.testing
        configuration.proxy = upstream.url
        let contract = try ContractLoader.load(text: AnswerKinds.contract, file: "kinds.yaml")
        // Unmatched requests are answered (404), not forwarded: only `proxy: true` goes upstream.
        let engine = MockEngine(contract: contract)
        try await DoppelTestServer.with(engine: engine, configuration: configuration) { server in
            let port = server.port
            let order = ["/delayed", "/plain", "/streamed", "/proxied", "/nowhere", "/plain"]
            let requests =
                order.map { "GET \($0) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" }.joined()
                + "GET /delayed HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            let reply = try await RawSocket.run {
                let socket = try RawSocket(port: port)
                socket.send(requests)
                return socket.receive(timeout: 30)
            }
            #expect(reply.closed)
            let marks = [
                #"{"kind":"delayed"}"#, #"{"kind":"plain"}"#, "5\r\nthird\r\n0\r\n\r\n", "upstream", "no-matching-endpoint", #"{"kind":"plain"}"#,
                #"{"kind":"delayed"}"#,
            ]
            var rest = Substring(reply.text)
            for mark in marks {
                guard let found = rest.range(of: mark) else {
                    Issue.record("\(mark.debugDescription) missing or out of order in \(reply.text.debugDescription)")
                    return
                }
                rest = rest[found.upperBound...]
            }
            #expect(reply.text.components(separatedBy: "HTTP/1.1 ").count == 8)
            #expect(engine.journal.entries.map(\.path) == order + ["/delayed"])
        }
    }

    /// How a connection goes on, or ends, around an answer.
    struct Manner: Sendable, CustomTestStringConvertible {
        let name: String
        let request: String
        /// Close the sending half after the request.
        var halfClose = false
        /// Marks the reply must hold, in this order.
        let marks: [String]
        /// How many answers the reply holds.
        let answers: Int
        var testDescription: String { name }
    }

    static let manners: [Manner] = [
        Manner(
            name: "a malformed request behind a delayed one", request: "GET /delayed HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nNOT HTTP AT ALL\r\n\r\n",
            marks: [#"{"kind":"delayed"}"#, "HTTP/1.1 400 Bad Request\r\n", "Connection: close\r\n", "malformed-request"], answers: 2),
        Manner(
            name: "a body over the limit, then another request",
            request: "POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1100000\r\n\r\n" + String(repeating: "a", count: 1_100_000)
                + "GET /plain HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            marks: ["HTTP/1.1 413 Payload Too Large\r\n", "payload-too-large", "HTTP/1.1 200 OK\r\n", #"{"kind":"plain"}"#], answers: 2),
        Manner(
            name: "an upgrade that is not taken",
            request: "GET /plain HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /plain HTTP/1.1\r\n\r\n",
            marks: ["HTTP/1.1 200 OK\r\n", "Connection: close\r\n", #"{"kind":"plain"}"#], answers: 1),
        Manner(
            name: "the client stops sending after two requests",
            request: "GET /delayed HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /plain HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            halfClose: true, marks: [#"{"kind":"delayed"}"#, "Connection: close\r\n", #"{"kind":"plain"}"#], answers: 2),
    ]

    @Test(arguments: manners)
    func connectionsGoOnOrEndAsHTTPSays(_ manner: Manner) async throws {
        let contract = try ContractLoader.load(text: AnswerKinds.contract, file: "kinds.yaml")
        try await DoppelTestServer.with(engine: MockEngine(contract: contract)) { server in
            let port = server.port
            let reply = try await RawSocket.run {
                let socket = try RawSocket(port: port)
                socket.send(manner.request)
                if manner.halfClose { socket.finishSending() }
                return socket.receive(timeout: 30)
            }
            #expect(reply.closed, "the connection was left open: \(reply.text.suffix(300).debugDescription)")
            var rest = Substring(reply.text)
            for mark in manner.marks {
                guard let found = rest.range(of: mark) else {
                    Issue.record("\(mark.debugDescription) missing or out of order in \(reply.text.suffix(600).debugDescription)")
                    return
                }
                rest = rest[found.upperBound...]
            }
            #expect(reply.text.components(separatedBy: "HTTP/1.1 ").count - 1 == manner.answers)
            // And the server serves on.
            let next = try await RawSocket.run {
                let socket = try RawSocket(port: port)
                socket.send(Self.get("/plain"))
                return socket.receive(timeout: 30)
            }
            #expect(next.text.hasSuffix(#"{"kind":"plain"}"#))
        }
    }
}
