import DoppelCore
import Foundation
import HTTPTypes
import HummingbirdCore
import Hummingbird
import NIOCore

/// The HTTP adapter: turns a Hummingbird request into a `RecordedRequest`,
/// asks the admin API or the engine, and writes the `MockResponse` back.
public struct DoppelResponder: HTTPResponder {
    public typealias Context = DoppelRequestContext

    static let sessionField = HTTPField.Name(MockEngine.sessionHeader)!

    let slot: EngineSlot
    /// The engine answering now (a request reads it once).
    var engine: MockEngine { slot.current }
    let admin: AdminAPI
    let log: RequestLog
    let maxBodySize: Int
    let faults: FaultInjector

    public init(engine: MockEngine, log: RequestLog, maxBodySize: Int, hangLimit: Double = 30, adminToken: String? = nil,
                scenarios: ScenarioCatalog = ScenarioCatalog()) {
        self.init(slot: EngineSlot(engine), log: log, maxBodySize: maxBodySize, hangLimit: hangLimit, adminToken: adminToken, scenarios: scenarios)
    }

    /// The server behind Doppel (`--proxy`), if any.
    let upstream: Upstream?
    /// Keeps what the upstream answered (`doppel record`), if anything does.
    let recorder: Recorder?

    public init(slot: EngineSlot, log: RequestLog, maxBodySize: Int, hangLimit: Double = 30, adminToken: String? = nil,
                scenarios: ScenarioCatalog = ScenarioCatalog(), proxy: URL? = nil, proxyTimeout: Double = 30, recorder: Recorder? = nil) {
        self.slot = slot
        self.recorder = recorder
        self.upstream = proxy.map { Upstream(base: $0, timeout: proxyTimeout) }
        self.admin = AdminAPI(slot: slot, token: adminToken, catalog: scenarios, log: log)
        self.log = log
        self.maxBodySize = maxBodySize
        self.faults = FaultInjector(hangLimit: hangLimit)
    }

    public func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        // An answer `DirectResponder` already computed (with a delay, fault or
        // stream to produce here); nil when this responder computes it.
        let computed = try? await context.channel.pipeline.handler(type: DirectResponder.self).get().handoff.withLockedValue { pending in
            pending.isEmpty ? nil : pending.removeFirst()
        }
        var response: MockResponse
        switch await record(request, context: context) {
        case .success(let recorded):
            if let computed {
                response = computed
            } else {
                response = AdminAPI.handles(recorded.path) ? admin.respond(to: recorded) : engine.respond(to: recorded)
            }
            if response.forward {
                response = await forward(recorded, endpointID: response.endpointID, started: started)
            }
        case .failure(let problem):
            let refused = Self.recorded(request.head, uri: request.uri, body: [], remoteAddress: context.remoteAddress)
            response = engine.respond(refusing: refused, with: problem)
        }
        await faults.delay(response)
        var written = Self.response(from: response)
        if let fault = response.fault {
            written = await faults.apply(fault, to: written, body: response.body, channel: context.channel)
        }
        logAnswer(method: request.method.rawValue, path: request.uri.path, session: request.headers[Self.sessionField],
                  response: response, started: started)
        return written
    }

    /// The upstream's answer to a forwarded request, journaled as proxied.
    private func forward(_ request: RecordedRequest, endpointID: String?, started: ContinuousClock.Instant) async -> MockResponse {
        var (answer, answered) = await upstream?.forward(request)
            ?? (Problem.badGateway(upstream: "(none)", reason: "no upstream is configured (--proxy)").response(), false)
        if answered { recorder?.record(request, answer) }
        answer.endpointID = endpointID
        let elapsed = ContinuousClock.now - started
        engine.recordForwarded(request, status: answer.status, endpointID: endpointID,
                               durationMicros: Int(elapsed.components.seconds) * 1_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000))
        return answer
    }

    /// Writes a request's line to the request log.
    func logAnswer(method: String, path: String, session: String?, response: MockResponse, started: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - started
        log.request(method: method, path: path, status: response.status, endpointID: response.endpointID, session: session ?? SessionStore.defaultID,
                    durationMicros: Int(elapsed.components.seconds) * 1_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000))
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
        return .success(Self.recorded(request.head, uri: request.uri, body: Array(buffer.readableBytesView), remoteAddress: context.remoteAddress))
    }

    /// The engine's view of a request.
    static func recorded(_ head: HTTPRequest, uri: URI, body: [UInt8], remoteAddress: String?) -> RecordedRequest {
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(head.headerFields.count)
        for field in head.headerFields {
            headers.append((name: field.name.canonicalName, value: field.value))
        }
        return RecordedRequest(method: head.method.rawValue, path: uri.path, query: uri.query, headers: headers, body: body, remoteAddress: remoteAddress)
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
