import DoppelTesting
import Foundation
import Testing

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
                  !lines.contains(where: { $0.lowercased().hasPrefix("transfer-encoding") }) else { return nil }
            let length = lines.first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            let bodyLength = method == "HEAD" ? 0 : length
            guard rest.utf8.count >= bodyLength else { return nil }
            let body = String(rest.utf8.prefix(bodyLength))!
            rest = rest.dropFirst(body.count)
            found.append((status, body))
        }
        return rest.isEmpty ? found : nil
    }

    @Test(arguments: [false, true])
    func aHeadAnsweredDirectlyLeavesTheNextAnswersWhole(pipelined: Bool) async throws {
        let server = try await DoppelTestServer.start(engine: MockEngine(contract: try ContractLoader.load(text: Self.contract, file: "order.yaml")))
        defer { Task { await server.stop() } }
        let port = server.baseURL.port!
        let requests: [(method: String, target: String)] = [
            ("HEAD", "/ok"), ("GET", "/later"), ("GET", "/__doppel/health"), ("HEAD", "/later"), ("HEAD", "/__doppel/health"), ("GET", "/ok"), ("GET", "/later"),
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
