import DoppelCore
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Answers written at once and answers delivered over time (delayed) or by
/// the admin API share one connection (`HTTPDoor`): each keeps its place and
/// its framing, a HEAD's answer included.
@Suite struct ConnectionOrderTests {
    static let contract = """
        doppel: 1
        endpoints:
          ok: { request: GET /ok, responses: [ { body: { ok: true } } ] }
          later: { request: GET /later, responses: [ { delay: 30ms, body: { later: true } } ] }
        """

    /// The responses in `text`, read in order as answers to `methods`: a
    /// HEAD's answer has no body whatever its `Content-Length` says.
    static func responses(_ text: String, methods: [String]) -> [(status: Int, body: String)]? {
        var rest = Substring(text)
        var found: [(Int, String)] = []
        for method in methods {
            guard let end = rest.range(of: "\r\n\r\n") else { return nil }
            let head = rest[..<end.lowerBound]
            rest = rest[end.upperBound...]
            let lines = head.split(separator: "\r\n")
            guard let status = lines.first.flatMap({ Int($0.split(separator: " ")[1]) }),
                !lines.contains(where: { $0.lowercased().hasPrefix("transfer-encoding") })
            else { return nil }
            let length =
                lines.first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            let bodyLength = method == "HEAD" ? 0 : length
            guard rest.utf8.count >= bodyLength else { return nil }
            let body = String(rest.utf8.prefix(bodyLength))!
            rest = rest.dropFirst(body.count)
            found.append((status, body))
        }
        return rest.isEmpty ? found : nil
    }

    static let heads = """
        doppel: 1
        data: { names: [a, b, c] }
        endpoints:
          plain: { request: GET /plain, responses: [ { body: { ok: true, text: "some words here" } } ] }
          templated: { request: GET /templated, responses: [ { body: { names: "{{ data.names }}", session: "{{ session }}" } } ] }
          streamed: { request: GET /streamed, responses: [ { events: [ { data: one }, { delay: 50ms, data: two } ] } ] }
        """

    /// The head of an answer and what followed it.
    static func split(_ reply: String) -> (head: [Substring], rest: Substring)? {
        guard let end = reply.range(of: "\r\n\r\n") else { return nil }
        return (reply[..<end.lowerBound].split(separator: "\r\n"), reply[end.upperBound...])
    }

    static func field(_ name: String, in head: [Substring]) -> String? {
        head.first { $0.lowercased().hasPrefix(name + ":") }.map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) }
    }

    /// RFC 9110 section 9.3.2: a HEAD's answer is the GET's head without a
    /// body: the GET's `Content-Length` (a plain, a templated and an admin
    /// answer), a stream's chunked framing and no chunk; over the server
    /// and in process alike.
    @Test(arguments: ["/plain", "/templated", "/streamed", "/__doppel/routes"])
    func aHeadsAnswerIsTheGetsHead(_ target: String) async throws {
        let engine = MockEngine(contract: try ContractLoader.load(text: Self.heads, file: "heads.yaml"))
        let server = try await DoppelTestServer.start(engine: engine)
        defer { Task { await server.stop() } }
        let port = server.baseURL.port!
        func exchange(_ method: String) async throws -> (head: [Substring], rest: Substring) {
            let reply = try await RawHTTP.exchange(
                port: port, Array("\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
            return try #require(Self.split(reply), "\(reply)")
        }
        let get = try await exchange("GET")
        let head = try await exchange("HEAD")
        #expect(head.rest.isEmpty, "\(head.rest)")
        #expect(head.head.first == get.head.first)
        if target == "/streamed" {
            #expect(Self.field("transfer-encoding", in: get.head) == "chunked" && Self.field("transfer-encoding", in: head.head) == "chunked")
            #expect(Self.field("content-length", in: head.head) == nil)
        } else {
            let length = try #require(Self.field("content-length", in: get.head).flatMap(Int.init))
            #expect(length > 0 && length == get.rest.utf8.count)
            #expect(Self.field("content-length", in: head.head) == String(length), "\(head.head)")
        }
        // A connection that answered a HEAD of a stream carries the next answer whole.
        if target == "/streamed" {
            let reply = try await RawHTTP.exchange(
                port: port,
                Array(
                    "HEAD /streamed HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /plain HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
            let first = try #require(Self.split(reply))
            let second = try #require(Self.split(String(first.rest)))
            #expect(second.head.first == "HTTP/1.1 200 OK" && second.rest == #"{"ok":true,"text":"some words here"}"#, "\(reply)")
        }
        // In process: the same head, no body.
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [DoppelURLProtocol.self]
        let session = URLSession(configuration: configuration)
        var request = URLRequest(url: DoppelURLProtocol.register(engine).appendingPathComponent(String(target.dropFirst())))
        if !target.hasPrefix(AdminAPI.prefix) {  // the in-process transport has no admin API
            request.httpMethod = "GET"
            let (getBody, getAnswer) = try await session.data(for: request)
            request.httpMethod = "HEAD"
            let (headBody, headAnswer) = try await session.data(for: request)
            #expect(headBody.isEmpty && (headAnswer as? HTTPURLResponse)?.statusCode == (getAnswer as? HTTPURLResponse)?.statusCode)
            if target != "/streamed" {
                #expect((headAnswer as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Length") == String(getBody.count))
            }
        }
    }

    @Test(arguments: [false, true])
    func aHeadAnsweredDirectlyLeavesTheNextAnswersWhole(pipelined: Bool) async throws {
        let server = try await DoppelTestServer.start(engine: MockEngine(contract: try ContractLoader.load(text: Self.contract, file: "order.yaml")))
        defer { Task { await server.stop() } }
        let port = server.baseURL.port!
        let requests: [(method: String, target: String)] = [
            ("HEAD", "/ok"), ("GET", "/later"), ("GET", "/__doppel/health"), ("HEAD", "/later"), ("HEAD", "/__doppel/health"), ("GET", "/ok"),
            ("GET", "/later"),
        ]
        let methods = requests.map(\.method)
        let text = try await RawSocket.run {
            let socket = try RawSocket(port: port)
            var text = ""
            for (index, request) in requests.enumerated() {
                socket.send("\(request.method) \(request.target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                if !pipelined || index == requests.count - 1 {
                    // Ends as soon as every answer is in; the bound only catches answers that never come (the full suite loads the machine).
                    text += socket.receive(timeout: 30) { Self.responses(text + $0, methods: Array(methods.prefix(index + 1))) != nil }.text
                }
            }
            return text
        }
        let answers = try #require(Self.responses(text, methods: methods), "\(text)")
        #expect(answers.map(\.status) == [200, 200, 200, 200, 200, 200, 200])
        #expect(answers.map(\.body) == ["", #"{"later":true}"#, answers[2].body, "", "", #"{"ok":true}"#, #"{"later":true}"#])
        #expect(answers[2].body.contains("\"status\""))
    }
}
