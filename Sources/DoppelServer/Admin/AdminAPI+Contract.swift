import DoppelCore
import Foundation

extension AdminAPI {
    func health() -> MockResponse {
        let contract = engine.contract
        let uptime = ContinuousClock.now - startedAt
        return json(
            200,
            .object(
                JSONObject([
                    ("status", "ok"), ("contract", .string(contract.info.title)), ("version", .string(contract.info.version)),
                    ("endpoints", .int(contract.endpoints.count)), ("sessions", .int(engine.sessions.count)),
                    ("sessions_evicted", evictionsJSON()), ("log_lines_dropped", .int(log?.dropped ?? 0)),
                    (
                        "event_streams",
                        .object(
                            JSONObject([
                                ("open", .int(events?.readerCount ?? 0)), ("limit", .int(events?.maximumReaders ?? 0)),
                                ("dropped", .int(events?.dropped ?? 0)),
                            ]))
                    ),
                    (
                        "sockets",
                        .object(
                            JSONObject([
                                ("open", .int(sockets?.count ?? 0)), ("per_session_limit", .int(sockets?.limits.perSession ?? 0)),
                                ("dropped", .int(sockets?.dropped ?? 0)),
                            ]))
                    ),
                    ("uptime_seconds", .int(Int(uptime.components.seconds))),
                ])))
    }

    /// How many sessions were evicted, and why.
    func evictionsJSON() -> JSON {
        let evictions = engine.sessions.evictions
        return .object(JSONObject([("for_room", .int(evictions.forRoom)), ("idle", .int(evictions.idle)), ("for_state", .int(evictions.forState))]))
    }

    func routeList() -> JSON {
        .array(
            engine.contract.endpoints.map { endpoint in
                // `auth` names the scheme, or the schemes joined by " or " when any of several admits.
                let auth: JSON = endpoint.auth.isEmpty ? .null : .string(endpoint.auth.joined(separator: " or "))
                return JSON.object(
                    JSONObject([
                        ("id", .string(endpoint.id)), ("method", .string(endpoint.method)), ("path", .string(endpoint.path.template)),
                        ("auth", auth), ("summary", endpoint.summary.map { .string($0) } ?? .null),
                        ("statuses", .array(engine.contract.statuses(of: endpoint).map { .int($0) })),
                    ]))
            })
    }

    func routes() -> MockResponse {
        json(200, .object(JSONObject([("routes", routeList())])))
    }

    func contractDescription() -> MockResponse {
        let contract = engine.contract
        let limits = contract.rateLimits.map { limit in
            JSON.object(
                JSONObject([
                    ("name", .string(limit.name)), ("key", .string(limit.key.source)), ("limit", .int(limit.limit)),
                    ("window_seconds", .double(limit.window)), ("algorithm", .string(limit.algorithm.rawValue)),
                    ("endpoints", limit.endpoints.map { .array($0.sorted().map { .string($0) }) } ?? .null),
                ]))
        }
        return json(
            200,
            .object(
                JSONObject([
                    ("title", .string(contract.info.title)), ("version", .string(contract.info.version)),
                    ("description", contract.info.description.map { .string($0) } ?? .null), ("file", .string(contract.file)),
                    ("base_path", .string(contract.basePath)), ("endpoints", routeList()), ("rate_limits", .array(limits)),
                    ("initial_state", .object(contract.state.initial)),
                    ("scenarios", .array(catalog.withLock { $0.names }.map { .string($0) })),
                ])))
    }
}
