import DoppelCore
import DoppelOpenAPI
import DoppelRunner
import DoppelServer
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Answers `URLSession` requests from a Doppel engine in-process, without a
/// socket: for unit tests of code that takes a `URLSessionConfiguration`.
/// Only requests to a registered base URL are answered (scheme, host and
/// port); any other request goes to the network as usual.
///
/// ```swift
/// let doppel = try DoppelTestServer.inProcess(contract: "contracts/tales.yaml").session()
/// let client = StoriesClient(baseURL: doppel.baseURL, configuration: doppel.configuration())
/// ```
///
/// Delays and streams are kept in time (on Linux, whose Foundation keeps
/// only one delivery of a task without a delegate, a stream's parts arrive
/// together when the last is due); faults become the `URLError` a
/// client sees from a real server: `networkConnectionLost` for a reset, an
/// empty reply or a truncated body, `timedOut` for no answer (after the
/// request's timeout, at most `hangLimit`).
public final class DoppelURLProtocol: URLProtocol {
    private static let engines = Locked<[String: MockEngine]>([:])
    private static let counter = Locked(0)
    private let cancelled = Locked(false)
    /// The longest a `no_answer` fault holds a request, in seconds.
    public static let hangLimit: Double = ServerConfiguration.defaults.hangLimit
    /// The largest request body taken, as `doppel serve`'s default `--max-body-size`; larger ones get its 413.
    public static let maxBodySize = ServerConfiguration.defaults.maxBodySize

    /// Registers `engine` to answer requests to `baseURL`.
    public static func register(_ engine: MockEngine, at baseURL: URL) {
        engines.withLock { $0[key(baseURL)] = engine }
    }

    /// Registers `engine` under a base URL of its own that no network
    /// resolves (`http://doppel-N.invalid`), and returns it.
    public static func register(_ engine: MockEngine) -> URL {
        let n = counter.withLock { count -> Int in
            count += 1
            return count
        }
        let url = URL(string: "http://doppel-\(n).invalid")!
        register(engine, at: url)
        return url
    }

    private static func key(_ url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? "http"
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(url.port ?? (scheme == "https" ? 443 : 80))"
    }

    private static func engine(for url: URL?) -> MockEngine? {
        guard let url else { return nil }
        return engines.withLock { $0[key(url)] }
    }

    override public class func canInit(with request: URLRequest) -> Bool { engine(for: request.url) != nil }

    override public class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override public func startLoading() {
        guard let url = request.url, let engine = Self.engine(for: url) else {
            client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
            return
        }
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = components?.percentEncodedPath.isEmpty == false ? components!.percentEncodedPath : "/"
        var headers = (request.allHTTPHeaderFields ?? [:]).map { (name: $0.key, value: $0.value) }
        if !headers.contains(where: { $0.name.lowercased() == "host" }), let host = url.host {
            headers.append((name: "host", value: url.port.map { "\(host):\($0)" } ?? host))
        }
        let body = Self.body(of: request)
        let recorded = RecordedRequest(
            method: request.httpMethod ?? "GET", path: path, query: components?.percentEncodedQuery,
            headers: headers, body: body.count > Self.maxBodySize ? [] : body, remoteAddress: "in-process")
        let started = ContinuousClock.now
        let decision =
            body.count > Self.maxBodySize
            ? engine.decide(recorded, refusing: .payloadTooLarge(limit: Self.maxBodySize))
            : engine.decide(recorded)
        after(decision.delay) { self.deliver(decision, engine: engine, started: started, to: url) }
    }

    override public func stopLoading() {
        cancelled.withLock { $0 = true }
    }

    private var isCancelled: Bool { cancelled.withLock { $0 } }

    private func deliver(_ decision: Decision, engine: MockEngine, started: ContinuousClock.Instant, to url: URL) {
        var response: MockResponse
        var fault: Fault?
        var stream: [StreamPart]?
        switch decision.delivery {
        case .whole(let whole): response = whole
        case .fault(let broken, let kind): (response, fault) = (broken, kind)
        case .stream(let head, let parts): (response, stream) = (head, parts)
        // No upstream in process: the 502 `doppel serve` gives without `--proxy`.
        case .forward: response = decision.responseInFull
        }
        engine.complete(decision, status: response.status, durationMicros: (ContinuousClock.now - started).wholeMicroseconds)
        guard !isCancelled, let client else { return }
        switch fault {
        case .connectionReset?, .emptyReply?:
            client.urlProtocol(self, didFailWithError: URLError(.networkConnectionLost))
            return
        case .noAnswer?:
            after(min(request.timeoutInterval, Self.hangLimit)) {
                guard !self.isCancelled else { return }
                self.client?.urlProtocol(self, didFailWithError: URLError(.timedOut))
            }
            return
        case .truncatedBody?, .malformedJSON?, nil:
            break
        }
        var fields: [String: String] = [:]
        for header in response.headers {
            // Repeated headers are joined, as HTTP allows.
            fields[header.name] = fields[header.name].map { "\($0), \(header.value)" } ?? header.value
        }
        // A HEAD's answer is the GET's head alone: its length, no body (a stream's: neither).
        let isHead = request.httpMethod?.uppercased() == "HEAD"
        if isHead {
            if stream == nil { fields["Content-Length"] = String(response.body.count) }
            stream = nil
            response.body = []
        }
        guard let head = HTTPURLResponse(url: url, statusCode: response.status, httpVersion: "HTTP/1.1", headerFields: fields) else {
            client.urlProtocol(self, didFailWithError: URLError(.badServerResponse))
            return
        }
        client.urlProtocol(self, didReceive: head, cacheStoragePolicy: .notAllowed)
        if fault == .truncatedBody {
            client.urlProtocol(self, didLoad: Data(response.body.prefix(response.body.count / 2)))
            client.urlProtocol(self, didFailWithError: URLError(.networkConnectionLost))
            return
        }
        if let stream {
            // Off the caller's thread: the parts wait out their delays.
            nonisolated(unsafe) let this = self
            DispatchQueue.global().async { this.send(stream[...]) }
            return
        }
        if !response.body.isEmpty { client.urlProtocol(self, didLoad: Data(response.body)) }
        client.urlProtocolDidFinishLoading(self)
    }

    /// Stream parts, each after its delay.
    private func send(_ parts: ArraySlice<StreamPart>) {
        #if canImport(FoundationNetworking)
        // swift-corelibs-foundation keeps only the last `didLoad` of a data
        // task without a delegate, so the parts are delivered at once when
        // the last is due.
        var body = Data()
        for part in parts {
            if part.delay > 0 { Thread.sleep(forTimeInterval: part.delay) }
            guard !isCancelled else { return }
            body.append(contentsOf: part.bytes)
        }
        client?.urlProtocol(self, didLoad: body)
        #else
        for part in parts {
            if part.delay > 0 { Thread.sleep(forTimeInterval: part.delay) }
            guard !isCancelled else { return }
            client?.urlProtocol(self, didLoad: Data(part.bytes))
        }
        #endif
        client?.urlProtocolDidFinishLoading(self)
    }

    private func after(_ seconds: Double, _ work: @escaping () -> Void) {
        guard seconds > 0 else { return work() }
        // URLProtocol is not Sendable; the client may be called from any thread.
        nonisolated(unsafe) let work = work
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { work() }
    }

    /// The body, whether set as data or as a stream (as URLSession does for
    /// uploads); a stream is read to one byte past `maxBodySize` at most.
    private static func body(of request: URLRequest) -> [UInt8] {
        if let data = request.httpBody { return Array(data) }
        guard let stream = request.httpBodyStream else { return [] }
        stream.open()
        defer { stream.close() }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while stream.hasBytesAvailable, bytes.count <= maxBodySize {
            let read = stream.read(&buffer, maxLength: buffer.count)
            if read <= 0 { break }
            bytes += buffer[0..<read]
        }
        return bytes
    }
}

extension DoppelTestServer {
    /// A server for a contract that listens on no port: requests made
    /// through its sessions' `configuration()` are answered in-process by
    /// `DoppelURLProtocol`. Each call makes a new one, with sessions of its own.
    public static func inProcess(contract: String, filePath: String = #filePath) throws -> DoppelTestServer {
        let engine = MockEngine(contract: try ContractDocument.load(file: TestFiles.resolve(contract, relativeTo: filePath)))
        return unlistened(engine: engine, baseURL: DoppelURLProtocol.register(engine))
    }
}
