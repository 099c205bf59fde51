import DoppelCore
import HTTPTypes
import Hummingbird
import NIOCore

/// The HTTP adapter: turns a Hummingbird request into a `RecordedRequest`,
/// asks the admin API or the engine, and writes the `MockResponse` back.
public struct DoppelResponder: HTTPResponder {
    public typealias Context = DoppelRequestContext

    static let sessionField = HTTPField.Name(MockEngine.sessionHeader)!

    let engine: MockEngine
    let admin: AdminAPI
    let log: RequestLog
    let maxBodySize: Int
    let faults: FaultInjector

    public init(engine: MockEngine, log: RequestLog, maxBodySize: Int, hangLimit: Double = 30, adminToken: String? = nil,
                scenarios: ScenarioCatalog = ScenarioCatalog()) {
        self.engine = engine
        self.admin = AdminAPI(engine: engine, token: adminToken, catalog: scenarios, log: log)
        self.log = log
        self.maxBodySize = maxBodySize
        self.faults = FaultInjector(hangLimit: hangLimit)
    }

    public func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        let path = request.uri.path
        let session = request.headers[Self.sessionField] ?? SessionStore.defaultID
        let response: MockResponse
        switch await record(request, context: context) {
        case .success(let recorded):
            response = AdminAPI.handles(path) ? admin.respond(to: recorded) : engine.respond(to: recorded)
        case .failure(let problem):
            response = problem.response()
        }
        await faults.delay(response)
        var written = Self.response(from: response)
        if let fault = response.fault {
            written = await faults.apply(fault, to: written, body: response.body, channel: context.channel)
        }
        let elapsed = ContinuousClock.now - started
        log.request(method: request.method.rawValue, path: path, status: response.status, endpointID: response.endpointID, session: session,
                    durationMicros: Int(elapsed.components.seconds) * 1_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000))
        return written
    }

    /// Reads the request, refusing bodies over the limit with 413 before or while reading them.
    private func record(_ request: Request, context: Context) async -> Result<RecordedRequest, Problem> {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maxBodySize {
            return .failure(.payloadTooLarge(limit: maxBodySize))
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maxBodySize)
        } catch is NIOTooManyBytesError {
            return .failure(.payloadTooLarge(limit: maxBodySize))
        } catch {
            return .failure(.unreadableBody("\(error)"))
        }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(request.headers.count)
        for field in request.headers {
            headers.append((name: field.name.canonicalName, value: field.value))
        }
        return .success(RecordedRequest(
            method: request.method.rawValue, path: request.uri.path, query: request.uri.query, headers: headers,
            body: Array(buffer.readableBytesView), remoteAddress: context.remoteAddress))
    }

    static func response(from mock: MockResponse) -> Response {
        var fields = HTTPFields()
        for header in mock.headers {
            if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
        }
        let status = HTTPResponse.Status(code: mock.status)
        if let stream = mock.stream {
            return Response(status: status, headers: fields, body: FaultInjector.streamed(stream))
        }
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: mock.body)))
    }
}
