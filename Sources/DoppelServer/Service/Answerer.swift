import DoppelCore
import DoppelGraphQL
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
    package let maxBodySize: Int
    /// The longest a `no_answer` fault holds a connection, in seconds.
    let hangLimit: Double
    /// The server behind Doppel (`--proxy`), if any.
    let upstream: Upstream?
    /// Keeps what the upstream answered (`doppel record`), if anything does.
    let recorder: Recorder?
    /// Where sessions and the journal live: the engine's own, in memory, or
    /// a store shared by replicas (`--state-store`).
    let store: any StateStore
    /// The live feed of answers and admin changes (`GET /__doppel/events`).
    let events: EventHub
    /// The open WebSockets, by session.
    let sockets: SocketHub
    /// The callbacks answers ask for, on their way out.
    let callbacks: CallbackSender
    /// Web origins besides this server's own and loopback ones whose pages may open sockets (`--allow-origin`).
    let allowedOrigins: [String]
    /// An agent's tools over MCP (`/__doppel/mcp`), if the server offers them.
    let agents: (any AgentDoor)?
    /// The contract's GraphQL API (`graphql:`).
    let graphql = GraphQLService()

    init(
        slot: EngineSlot, log: RequestLog, maxBodySize: Int, hangLimit: Double = ServerConfiguration.defaults.hangLimit, adminToken: String? = nil,
        scenarios: ScenarioCatalog = ScenarioCatalog(), proxy: URL? = nil, proxyTimeout: Double = 30, recorder: Recorder? = nil,
        shared: (any StateStore)? = nil, maxEventStreams: Int = 1_000, socketLimits: SocketHub.Limits = SocketHub.Limits(),
        callbackAllow: CallbackAllowList = .loopback, allowedHosts: [String] = [], allowedOrigins: [String] = [],
        agents: (any AgentDoor)? = nil
    ) {
        self.slot = slot
        self.agents = agents
        self.allowedOrigins = allowedOrigins
        self.sockets = SocketHub(limits: socketLimits)
        self.callbacks = CallbackSender(allowed: callbackAllow)
        self.events = EventHub(maximumReaders: maxEventStreams)
        self.store = shared ?? MemoryState(slot: slot)
        // Pushes (a shared store's, this replica's own among them) reach the sockets held here; the other replicas' events, the readers here.
        store.receive(
            { [sockets, events] message in
                switch message {
                case .pushes(let pushes, let session, let from): sockets.push(pushes, session: session, from: from)
                case .event(let event, let session, let json): events.publish(event, session: session, json: json)
                }
            }, followsEvents: { [events] in events.isObserved })
        self.recorder = recorder
        self.upstream = proxy.map { Upstream(base: $0, timeout: proxyTimeout) }
        var admin = AdminAPI(slot: slot, token: adminToken, catalog: scenarios, log: log)
        admin.allowedHosts = allowedHosts
        admin.events = events
        admin.sockets = sockets
        self.admin = admin
        self.log = log
        self.maxBodySize = maxBodySize
        self.hangLimit = hangLimit
    }

    /// Whether a page of `origin` may open a socket: it is this server's
    /// own, a loopback one (a page on the developer's machine), or one
    /// `--allow-origin` names. A page on any other site could otherwise act
    /// on a session's sockets from a visitor's browser (cross-site
    /// WebSocket hijacking).
    func permits(origin: String, of request: RecordedRequest) -> Bool {
        if allowedOrigins.contains("*") || allowedOrigins.contains(where: { $0.caseInsensitiveCompare(origin) == .orderedSame }) { return true }
        if AdminAPI.isSameOrigin(origin, host: request.header("host")) { return true }
        guard let separator = origin.range(of: "://"), ["http", "https"].contains(origin[..<separator.lowerBound].lowercased()) else { return false }
        let name = AdminAPI.hostName(String(origin[separator.upperBound...]))
        return name == "localhost" || name.hasSuffix(".localhost") || CallbackAllowList.isLoopback(name)
    }

    /// A decision now, one that waits for the shared state store, or an event stream to open.
    enum Pending {
        case now(Decision)
        case later(@Sendable () async -> Decision)
        /// `GET /__doppel/events`: the events of one session (nil: of all).
        case events(session: String?)
    }

    /// `GET /__doppel/events`, its token and `?session=` checked: the stream
    /// to open, or the refusal; nil for any other request.
    private func eventStream(_ request: RecordedRequest) -> Pending? {
        guard request.path == AdminAPI.prefix + "/events", request.method == "GET" else { return nil }
        if let refused = admin.gate(request) { return .now(Decision(unjournaled: refused)) }
        let session = request.queryItems.last { $0.0 == "session" }?.1
        if let session, !SessionStore.isValid(id: session) { return .now(Decision(unjournaled: Problem.invalidSession(session).response())) }
        return .events(session: session)
    }

    /// An admin call's answer, after what follows from it: a reset ends the
    /// callbacks its sessions still wait to send, and the event stream is
    /// told what changed.
    func announced(_ response: MockResponse, for request: RecordedRequest) -> MockResponse {
        if request.method == "POST", request.path == AdminAPI.prefix + "/reset", (200..<300).contains(response.status) {
            if admin.namesNoSession(request) {
                callbacks.cancelAll()
            } else if let session = admin.namedSession(request) {
                callbacks.cancel(session: session)
            }
        }
        // Calls that change no session's state, clock or scenario, nor the journal, are not events.
        guard events.isObserved || store.othersFollowEvents, (200..<300).contains(response.status), let call = AdminCall.of(request), call.changes
        else { return response }
        let everyone = call.reach == .journal || (call.reach == .sessionOrEvery && admin.namesNoSession(request))
        let session: String? = everyone ? nil : admin.namedSession(request)
        let data = JSONObject([("session", session.map(JSON.string) ?? .null), ("call", .string("\(request.method) \(request.path)"))])
        announce(call.reach == .journal ? "journal" : "state", session: session, json: JSONWriter.encode(.object(data)))
        return response
    }

    /// The decision for a request read whole: the admin API's answer (not
    /// journaled) for a path under `/__doppel`, else the engine's, in the
    /// request's session (`StateStore.decide`): now in memory, later when a
    /// shared store answers. A request the transport refused (`refusal`)
    /// gets the engine's answer to the problem.
    /// `throughDoors` false: a call the GraphQL door makes of the contract's endpoints, not asked of the door again.
    func decision(for request: RecordedRequest, refusal: Problem?, engine: MockEngine, throughDoors: Bool = true) -> Pending {
        if refusal == nil, let stream = eventStream(request) { return stream }
        if refusal == nil, let agents, request.path == AdminAPI.prefix + "/mcp" {
            // The gate first, as for every admin call; the tools then reach the server as a client would.
            if let refused = admin.gate(request) { return .now(Decision(unjournaled: refused)) }
            return .later { [self] in Decision(unjournaled: await agents.answer(request, host: self)) }
        }
        if throughDoors, refusal == nil, let definition = engine.contract.graphql, request.path == definition.path,
            request.header("upgrade") == nil
        {
            // (An upgrade at the path opens the section's WebSocket for subscriptions, an endpoint of the contract.)
            // The operation and each resolver are requests of their own, through this same path (so a shared store too).
            let caller = DoorCalls(answerer: self)
            return .later { [graphql] in
                let served = await graphql.respond(request, definition: definition, caller: caller, contract: engine.contract)
                // The contract journaled what it answered; what the door refused before, it journals here (`graphql`, with why).
                guard let refusal = served.refusal else { return Decision(unjournaled: served.response) }
                return engine.decision(journaling: served.response, of: request, endpointID: "graphql", reason: refusal)
            }
        }
        if refusal == nil, AdminAPI.handles(request.path) {
            // Refusals, the token and the dashboard's files are answered here, before any state is read.
            if let refused = admin.gate(request) { return .now(Decision(unjournaled: refused)) }
            switch store.admin(request, api: admin) {
            case .now(let response): return .now(Decision(unjournaled: announced(response, for: request)))
            case .later(let answer): return .later { [self] in Decision(unjournaled: announced(await answer(), for: request)) }
            }
        }
        // Names are lowercase already: one pass, no allocation, on every request.
        if refusal == nil, request.headers.contains(where: { $0.name == "upgrade" }) {
            if let origin = request.header("origin"), !permits(origin: origin, of: request) {
                return .now(engine.decide(request, refusing: .socketOriginRefused(origin)))
            }
        }
        switch store.decide(request, refusal: refusal, engine: engine) {
        case .now(let decision): return .now(decision)
        case .later(let decide): return .later(decide)
        }
    }

    /// The upstream's answer to a forwarded request, or Doppel's 502/504
    /// problem naming it; kept by the recorder when the upstream answered.
    func forward(_ request: RecordedRequest) async -> MockResponse {
        guard let upstream else {
            return Problem.noUpstream.response()
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
        let sequence = store.append(decision, status: status, durationMicros: micros, engine: engine)
        // Built only while someone follows the events.
        if events.wants(session: decision.entry?.session) || store.othersFollowEvents,
            let event = EventHub.answer(decision, of: request, sent: status, sequence: sequence, durationMicros: micros)
        {
            announce("request", session: event.session, json: event.json)
        }
        log.request(
            method: request.method, path: request.path, status: status, endpointID: decision.entry?.endpointID,
            session: request.sessionID, durationMicros: micros)
        guard let effects = decision.effects, let entry = decision.entry else { return }
        // Messages for the session's open sockets, once the answer that sends them is out.
        push(effects.pushes, session: entry.session, from: entry.responseName ?? entry.endpointID ?? "a response")
        if !effects.callbacks.isEmpty {
            let slot = self.slot
            // A request Doppel sent as a callback says how deep in a chain of them it is.
            // (A depth below 0 is a client's, and counts as 0: a chain cannot be lengthened by sending one.)
            let depth = max(0, request.header(CallbackSender.depthHeader).flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0)
            callbacks.send(
                effects.callbacks, endpointID: entry.endpointID, session: entry.session, depth: depth,
                engine: { slot.versioned.engine },
                publish: { [self] entry in publish(entry, as: "callback") })
        }
    }

    /// An event for `/__doppel/events` and the dashboard: to the readers
    /// here, and through a shared store to the other replicas' while any
    /// follows.
    func announce(_ event: String, session: String?, json: [UInt8]) {
        if events.isObserved { events.publish(event, session: session, json: json) }
        if store.othersFollowEvents { store.broadcast(.event(event, session: session, json: json)) }
    }

    /// Hands pushed messages to the session's sockets: in memory to those
    /// held here, at once; through a shared store to every replica's, this
    /// one's included, in the one order the store gives them all.
    func push(_ pushes: [RenderedPush], session: String, from: String) {
        guard !pushes.isEmpty else { return }
        if !store.broadcast(.pushes(pushes, session: session, from: from)) { sockets.push(pushes, session: session, from: from) }
    }

    /// An entry the engine journaled beside the answers (a socket's or a
    /// stream's message, a callback's attempt): kept where the store's
    /// journal is read, published as an `event` of that kind to the
    /// dashboard and `/__doppel/events`, and logged.
    func publish(_ entry: Journal.Entry, as event: String) {
        store.keep(entry)
        if events.wants(session: entry.session) || store.othersFollowEvents {
            announce(event, session: entry.session, json: JSONWriter.encode(entry.json))
        }
        log.request(
            method: entry.method, path: entry.path, status: entry.status, endpointID: entry.endpointID, session: entry.session,
            durationMicros: entry.durationMicros)
    }
}
