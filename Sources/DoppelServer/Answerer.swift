import DoppelCore
import Foundation

/// What answers requests, independent of the connection: the engine (through
/// its slot, so `--watch` reloads are seen), the admin API, the upstream
/// (`--proxy`) and the recorder (`doppel record`), and the request log.
/// `HTTPDoor` asks it for a decision, delivers the decision, and calls
/// `finish` once, whatever the kind of answer.
struct Answerer: Sendable {
    let slot: EngineSlot
    let admin: AdminAPI
    let log: RequestLog
    let maxBodySize: Int
    /// The longest a `no_answer` fault holds a connection, in seconds.
    let hangLimit: Double
    /// The server behind Doppel (`--proxy`), if any.
    let upstream: Upstream?
    /// Keeps what the upstream answered (`doppel record`), if anything does.
    let recorder: Recorder?
    /// Sessions and journal shared by replicas (`--state-store`), if any.
    let shared: (any SharedState)?

    init(slot: EngineSlot, log: RequestLog, maxBodySize: Int, hangLimit: Double = 30, adminToken: String? = nil,
         scenarios: ScenarioCatalog = ScenarioCatalog(), proxy: URL? = nil, proxyTimeout: Double = 30, recorder: Recorder? = nil,
         shared: (any SharedState)? = nil) {
        self.slot = slot
        self.shared = shared
        self.recorder = recorder
        self.upstream = proxy.map { Upstream(base: $0, timeout: proxyTimeout) }
        self.admin = AdminAPI(slot: slot, token: adminToken, catalog: scenarios, log: log)
        self.log = log
        self.maxBodySize = maxBodySize
        self.hangLimit = hangLimit
    }

    /// The decision for a request read whole: the admin API's answer (not
    /// journaled) for a path under `/__doppel`, else the engine's; a request
    /// the transport refused (`refusal`) gets the engine's answer to the problem.
    func decide(_ request: RecordedRequest, refusal: Problem?, engine: MockEngine) -> Decision {
        if let refusal { return engine.decide(refusing: request, with: refusal) }
        if AdminAPI.handles(request.path) { return Decision(unjournaled: admin.respond(to: request)) }
        return engine.decide(request)
    }

    /// A decision now, or one that waits for the shared state store.
    enum Pending {
        case now(Decision)
        case later(@Sendable () async -> Decision)
    }

    /// As `decide(_:refusal:engine:)`; with a shared store, the requests
    /// that need it (and admin calls) are decided later, by the store.
    func decision(for request: RecordedRequest, refusal: Problem?, engine: MockEngine) -> Pending {
        guard let shared else { return .now(decide(request, refusal: refusal, engine: engine)) }
        if refusal == nil, AdminAPI.handles(request.path) {
            let admin = self.admin
            // The token is checked here, before the store is touched.
            if let token = admin.token, !AdminAPI.carries(token, request) { return .now(Decision(unjournaled: Problem.adminUnauthorized().response())) }
            return .later { Decision(unjournaled: await shared.admin(request, api: admin)) }
        }
        let needed = refusal.map { engine.contract.fallback(for: $0) != nil && SessionStore.isValid(id: request.sessionID) }
            ?? shared.needsStore(request, engine: engine)
        guard needed else { return .now(decide(request, refusal: refusal, engine: engine)) }
        return .later { await shared.decide(request, refusal: refusal, engine: engine) }
    }

    /// The upstream's answer to a forwarded request, or Doppel's 502/504
    /// problem naming it; kept by the recorder when the upstream answered.
    func forward(_ request: RecordedRequest) async -> MockResponse {
        guard let upstream else {
            return Problem.badGateway(upstream: "(none)", reason: "no upstream is configured (--proxy)").response()
        }
        let (answer, answered) = await upstream.forward(request)
        if answered { recorder?.record(request, answer) }
        return answer
    }

    /// The one place an answer is completed, once delivered: its journal
    /// entry (with the status sent, an upstream's for a forwarded request)
    /// and its request log line.
    func finish(_ decision: Decision, of request: RecordedRequest, sent status: Int, engine: MockEngine, started: ContinuousClock.Instant) {
        let micros = (ContinuousClock.now - started).wholeMicroseconds
        if let shared { shared.complete(decision, status: status, durationMicros: micros) } else { engine.complete(decision, status: status, durationMicros: micros) }
        log.request(method: request.method, path: request.path, status: status, endpointID: decision.response.endpointID,
                    session: request.sessionID, durationMicros: micros)
    }
}
