import AsyncHTTPClient
import DoppelCore
import Foundation
import NIOCore
import NIOHTTP1

/// The server behind Doppel (`doppel serve --proxy URL`): requests the
/// contract does not answer are sent to it with their method, path, query,
/// headers and body, and its answer is passed back as it came. Failures
/// become a 502 or 504 problem naming the upstream, within the timeout.
final class Upstream: Sendable {
    /// `http://host:port/base`, without a trailing slash.
    let base: String
    let timeout: Double
    let client: HTTPClient
    /// The largest upstream body passed back; a larger one is a 502.
    static let maxBodySize = 16 << 20
    /// Per-connection headers, never forwarded either way (RFC 9110 section 7.6.1).
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade", "host", "content-length",
    ]

    init(base: URL, timeout: Double) {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        self.base = text
        self.timeout = timeout
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled)
        configuration.timeout = .init(connect: .milliseconds(Int64(timeout * 1000)), read: .milliseconds(Int64(timeout * 1000)))
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// The upstream's answer to a request, or Doppel's 502/504 problem (`answered` false).
    func forward(_ request: RecordedRequest) async -> (response: MockResponse, answered: Bool) {
        var outgoing = HTTPClientRequest(url: base + request.path + (request.query.map { "?" + $0 } ?? ""))
        outgoing.method = HTTPMethod(rawValue: request.method)
        for header in request.headers where !Self.hopByHop.contains(header.name) {
            outgoing.headers.add(name: header.name, value: header.value)
        }
        if !request.body.isEmpty || !["GET", "HEAD", "DELETE", "OPTIONS"].contains(request.method) {
            outgoing.body = .bytes(ByteBuffer(bytes: request.body))
        }
        do {
            let response = try await client.execute(outgoing, timeout: .milliseconds(Int64(timeout * 1000)))
            let body = try await response.body.collect(upTo: Self.maxBodySize)
            var answer = MockResponse(status: Int(response.status.code), body: Array(body.readableBytesView))
            answer.headers = response.headers.filter { !Self.hopByHop.contains($0.name.lowercased()) }.map { (name: $0.name, value: $0.value) }
            return (answer, true)
        } catch let error as HTTPClientError where [.deadlineExceeded, .readTimeout, .connectTimeout].contains(error) {
            return (Problem.gatewayTimeout(upstream: base, seconds: timeout).response(), false)
        } catch is NIOTooManyBytesError {
            return (Problem.badGateway(upstream: base, reason: "its response body is larger than \(Self.maxBodySize) bytes").response(), false)
        } catch {
            return (Problem.badGateway(upstream: base, reason: Self.describe(error)).response(), false)
        }
    }

    static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("connectionRefused") || text.contains("Connection refused") { return "the connection was refused" }
        return text
    }

    func shutdown() async {
        try? await client.shutdown()
    }
}
