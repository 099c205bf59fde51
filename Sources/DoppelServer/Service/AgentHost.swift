import DoppelCore

/// What an agent's tools (DoppelMCP) act through: the admin API and the
/// contract, as a client over HTTP reaches them. In a process of its own
/// (`doppel mcp`) that is the admin API and engine alone (`LocalAgentHost`);
/// inside `doppel serve` it is the server's own path (`Answerer`), so a
/// call reaches a shared state store, tells the event stream, and is
/// journaled and logged as any request.
package protocol AgentHost: ContractCaller {
    /// The engine answering now (for the contract's name and endpoints).
    var engine: MockEngine { get }
    /// An admin call's answer, past the gate (the host adds its token).
    func admin(_ request: RecordedRequest) async -> MockResponse
    /// The largest request body the host takes (`--max-body-size`).
    var maxBodySize: Int { get }
    /// The scenarios loaded with the server (`--scenarios`, `--scenario`), by name.
    var scenarios: ScenarioCatalog { get }
}

/// An agent's host of its own: the admin API and its engine, in this process.
package struct LocalAgentHost: AgentHost {
    let api: AdminAPI

    package init(api: AdminAPI) {
        self.api = api
    }

    package var engine: MockEngine { api.engine }
    package var maxBodySize: Int { ServerConfiguration.defaults.maxBodySize }
    package var scenarios: ScenarioCatalog { api.catalog.withLock { $0 } }

    package func admin(_ request: RecordedRequest) async -> MockResponse {
        api.respond(to: api.token.map { request.adding(header: AdminAPI.tokenHeader, $0) } ?? request)
    }

    package func send(_ request: RecordedRequest) async -> MockResponse {
        api.engine.respond(to: request)
    }
}

extension Answerer: AgentHost {
    package var engine: MockEngine { slot.current }
    package var scenarios: ScenarioCatalog { admin.catalog.withLock { $0 } }

    package func admin(_ request: RecordedRequest) async -> MockResponse {
        let request = admin.token.map { request.adding(header: AdminAPI.tokenHeader, $0) } ?? request
        switch decision(for: request, refusal: nil, engine: slot.current) {
        case .now(let decision): return decision.responseInFull
        case .later(let decide): return await decide().responseInFull
        case .events: return Problem.eventStreamNeedsServer().response()
        }
    }

    package func send(_ request: RecordedRequest) async -> MockResponse {
        await send(request, throughDoors: true)
    }

    /// As `send(_:)`; `throughDoors` false for the GraphQL door's own calls of the contract's endpoints.
    func send(_ request: RecordedRequest, throughDoors: Bool) async -> MockResponse {
        let started = ContinuousClock.now
        let engine = slot.current
        let decision: Decision
        switch self.decision(for: request, refusal: nil, engine: engine, throughDoors: throughDoors) {
        case .now(let now): decision = now
        case .later(let decide): decision = await decide()
        case .events: return Problem.eventStreamNeedsServer().response()
        }
        let response = decision.forwards ? await forward(request) : decision.responseInFull
        finish(decision, of: request, sent: response.status, engine: engine, started: started)
        return response
    }
}

/// The GraphQL door's calls of the contract's endpoints (the operation's,
/// each resolver's): the server's own path, past the door itself.
struct DoorCalls: ContractCaller {
    let answerer: Answerer

    func send(_ request: RecordedRequest) async -> MockResponse {
        await answerer.send(request, throughDoors: false)
    }
}

extension RecordedRequest {
    /// The request with one more header field.
    fileprivate func adding(header name: String, _ value: String) -> RecordedRequest {
        var request = self
        request.headers.append((name: name, value: value))
        return request
    }
}

/// `/__doppel/mcp`: an agent's tools over HTTP, provided by DoppelMCP
/// (`doppel serve` gives the server one). Asked once the admin API's gate
/// has passed, with the server's own path as the tools' host.
package protocol AgentDoor: Sendable {
    func answer(_ request: RecordedRequest, host: any AgentHost) async -> MockResponse
}
