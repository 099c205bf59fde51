import DoppelCore
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

package func contractPath(_ name: String) -> String {
    repositoryRoot.appendingPathComponent("contracts/\(name)").path
}

/// A response as a test client saw it.
package struct HTTPResult: Sendable {
    package let status: Int
    package let headers: [String: String]
    package let body: Data

    package var json: JSON? { try? JSONReader.parse([UInt8](body)) }

    package func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}

/// A small URLSession client for live tests. Its requests wait up to two
/// minutes: what a live test waits for is an answer, not a timing promise,
/// and a loaded suite (every test at once on two cores) may queue one long.
package struct TestClient: Sendable {
    package let base: URL
    package let session: URLSession

    package init(base: URL, maxConnections: Int = 8, timeout: TimeInterval = 120) {
        self.base = base
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = maxConnections
        configuration.timeoutIntervalForRequest = timeout
        self.session = URLSession(configuration: configuration)
    }

    package func send(
        _ method: String, _ target: String, json: JSON? = nil, token: String? = sampleJWT, session sessionID: String? = nil,
        headers: [String: String] = [:], body: Data? = nil
    ) async throws -> HTTPResult {
        var request = URLRequest(url: URL(string: base.absoluteString + target)!)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let sessionID { request.setValue(sessionID, forHTTPHeaderField: "Doppel-Session") }
        if let json {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(JSONWriter.encode(json))
        }
        if let body { request.httpBody = body }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: request) { data, response, error in
                if let error { return continuation.resume(throwing: error) }
                guard let http = response as? HTTPURLResponse else { return continuation.resume(throwing: URLError(.badServerResponse)) }
                var headers: [String: String] = [:]
                for (key, value) in http.allHeaderFields { headers["\(key)"] = "\(value)" }
                continuation.resume(returning: HTTPResult(status: http.statusCode, headers: headers, body: data ?? Data()))
            }.resume()
        }
    }
}

/// Sends raw bytes over a loopback TCP connection and reads until the server
/// closes or the reply is complete; for requests no well-behaved client sends.
package enum RawHTTP {
    /// How the server ended the exchange.
    package enum Ending: Equatable {
        /// The reply was complete (by Content-Length) before the connection ended.
        case complete
        /// The server closed the connection (FIN).
        case closed
        /// The server reset the connection (RST).
        case reset
        case timedOut
    }

    package static func exchange(port: Int, _ request: [UInt8], timeout: TimeInterval = 10) async throws -> String {
        String(decoding: try await exchangeDetailed(port: port, request, timeout: timeout).reply, as: UTF8.self)
    }

    /// Runs the blocking socket calls on a Dispatch thread: blocking one of
    /// the few cooperative threads could starve the in-process server that
    /// has to answer.
    package static func exchangeDetailed(port: Int, _ request: [UInt8], timeout: TimeInterval = 10) async throws -> (reply: [UInt8], endedBy: Ending)
    {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try blockingExchange(port: port, request, timeout: timeout) })
            }
        }
    }

    private static func blockingExchange(port: Int, _ request: [UInt8], timeout: TimeInterval) throws -> (reply: [UInt8], endedBy: Ending) {
        let fd = try connectLoopback(port: port)
        defer { close(fd) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }  // the server may close early, e.g. after a 413
            sent += n
        }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = receiveSome(fd, into: &buffer)
            if n == 0 { return (reply, .closed) }
            if n < 0 { return (reply, errno == ECONNRESET ? .reset : .timedOut) }
            reply.append(contentsOf: buffer[0..<n])
            if let text = String(bytes: reply, encoding: .utf8), isComplete(text) { return (reply, .complete) }
        }
    }

    private static func isComplete(_ text: String) -> Bool {
        guard let headerEnd = text.range(of: "\r\n\r\n") else { return false }
        let head = text[..<headerEnd.lowerBound].lowercased()
        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
            let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        else { return false }
        return text[headerEnd.upperBound...].utf8.count >= length
    }
}

/// A blocking TCP socket connected to 127.0.0.1:`port`; the caller closes it.
/// `receiveBuffer` sets the socket's receive buffer before it connects (a
/// client that reads nothing then holds little in its kernel).
package func connectLoopback(port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
    #if canImport(Glibc)
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw URLError(.cannotConnectToHost) }
    if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connectSocket(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected else {
        close(fd)
        throw URLError(.cannotConnectToHost)
    }
    return fd
}

/// A JWT for bearer schemes (tales takes only JWTs): `{"sub": "3f2b8c1e-...", "role": "authenticated"}`, no expiry, signature unchecked.
package let sampleJWT =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjJiOGMxZS03ZDRhLTRlNTktOWIxYy0yYTZmMGU4ZDRjNzEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCJ9.c2lnbmF0dXJl"
