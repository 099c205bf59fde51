/// The catalogue of responses Doppel itself produces, as RFC 9457
/// `application/problem+json` bodies. Each has a stable `type` URN that
/// clients and tests can match on; `docs/contract-format.md` lists them.
public struct Problem: Sendable, Error {
    /// The HTTP status.
    public let status: Int
    /// A URI naming the case, `urn:doppel:problem:…`.
    public let type: String
    /// A short summary of the case.
    public let title: String
    /// What happened to this request.
    public let detail: String
    package var extra: [(String, JSON)] = []
    package var headers: [(name: String, value: String)] = []

    package init(
        status: Int, type: String, title: String, detail: String, extra: [(String, JSON)] = [], headers: [(name: String, value: String)] = []
    ) {
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.extra = extra
        self.headers = headers
    }

    /// The problem+json body, also what a fallback's templates see as `problem`.
    package var json: JSON {
        var object = JSONObject([("type", .string(type)), ("title", .string(title)), ("status", .int(status)), ("detail", .string(detail))])
        for (key, value) in extra { object[key] = value }
        return .object(object)
    }

    /// The problem as a response.
    public func response(endpointID: String? = nil) -> MockResponse {
        var response = MockResponse(
            status: status,
            headers: [(name: "Content-Type", value: "application/problem+json")] + headers,
            body: JSONWriter.encode(json),
            endpointID: endpointID,
            responseName: "doppel:" + (type.split(separator: ":").last.map(String.init) ?? "problem"))
        response.reason = Reason(detail)
        return response
    }

    /// The most characters of a reason the journal keeps.
    package static let maximumReason = 600

    /// `text` cut to `maximumReason` characters, marked where cut.
    package static func clipped(_ text: String) -> String {
        // The byte count is free; characters are counted only for a long text.
        text.utf8.count <= maximumReason || text.count <= maximumReason ? text : String(text.prefix(maximumReason - 1)) + "…"
    }

    static func urn(_ name: String) -> String { "urn:doppel:problem:\(name)" }

    /// 404: no endpoint has this path; names the nearest ones and why they missed.
    package static func noMatchingEndpoint(method: String, path: String, nearMisses: [NearMiss], hint basePathHint: String? = nil) -> Problem {
        let misses = nearMisses.map { miss in
            JSON.object(
                JSONObject([
                    ("endpoint", .string(miss.endpointID)), ("request", .string(miss.signature)),
                    ("mismatches", .array(miss.reasons.map { .string($0) })),
                ]))
        }
        let hint =
            basePathHint.map { " " + $0 } ?? nearMisses.first.map {
                " The nearest is \($0.endpointID) (\($0.signature)): \($0.reasons.joined(separator: "; "))."
            } ?? ""
        return Problem(
            status: 404, type: urn("no-matching-endpoint"), title: "No matching endpoint",
            detail: "No endpoint of the contract matches \(method) \(path).\(hint)", extra: [("near_misses", .array(misses))])
    }

    /// 405: the path exists, the method does not.
    package static func methodNotAllowed(method: String, path: String, allowed: [String]) -> Problem {
        Problem(
            status: 405, type: urn("method-not-allowed"), title: "Method not allowed",
            detail: "\(path) does not accept \(method); it accepts \(allowed.joined(separator: ", ")).",
            extra: [("allowed", .array(allowed.map { .string($0) }))], headers: [(name: "Allow", value: allowed.joined(separator: ", "))])
    }

    /// 426: a plain request to a WebSocket endpoint, or an upgrade of a
    /// WebSocket version other than 13; says how to ask (RFC 6455 section 4.2.2).
    package static func upgradeRequired(_ reason: String) -> Problem {
        Problem(
            status: 426, type: urn("websocket-upgrade-required"), title: "WebSocket upgrade required",
            detail: "This endpoint is a WebSocket: \(reason).",
            headers: [(name: "Upgrade", value: "websocket"), (name: "Connection", value: "Upgrade"), (name: "Sec-WebSocket-Version", value: "13")])
    }

    /// 400: an upgrade whose `Sec-WebSocket-Key` is not 16 bytes in base64.
    package static func malformedUpgrade(_ reason: String) -> Problem {
        Problem(
            status: 400, type: urn("malformed-websocket-upgrade"), title: "Malformed WebSocket upgrade",
            detail: "The upgrade cannot be taken: \(reason).")
    }

    /// 429: the session has as many open sockets as the server allows.
    package static func tooManySockets(limit: Int) -> Problem {
        Problem(
            status: 429, type: urn("too-many-sockets"), title: "Too many WebSockets",
            detail: "This session has \(limit) WebSockets open, the most the server allows (--max-sockets-per-session); close one first.",
            headers: [(name: "Retry-After", value: "1")])
    }

    /// 400: the body claims to be JSON and is not.
    package static func malformedJSON(_ message: String) -> Problem {
        Problem(status: 400, type: urn("malformed-json"), title: "Malformed JSON", detail: "The request body is not valid JSON: \(message).")
    }

    /// 400: a multipart body that does not follow RFC 7578.
    package static func malformedMultipart(_ reason: String) -> Problem {
        Problem(
            status: 400, type: urn("malformed-multipart"), title: "Malformed multipart body", detail: "The multipart body cannot be read: \(reason).")
    }

    /// 400: `Prefer` asks for a response the endpoint does not document.
    package static func unknownPreference(_ preference: Preference, endpointID: String, documented: [ResponseDefinition]) -> Problem {
        var seen: Set<String> = []
        let offered = documented.map { "\($0.status) \($0.name)" }.filter { seen.insert($0).inserted }
        return Problem(
            status: 400, type: urn("unknown-preference"), title: "No such documented response",
            detail:
                "Prefer asks for \(preference.description), which endpoint \(endpointID) does not document; it documents \(offered.joined(separator: ", ")).",
            extra: [("documented", .array(documented.map { .object(JSONObject([("status", .int($0.status)), ("name", .string($0.name))])) }))])
    }

    /// 415: the endpoint does not accept this content type.
    package static func unsupportedMediaType(_ received: String?, accepted: [String]) -> Problem {
        Problem(
            status: 415, type: urn("unsupported-media-type"), title: "Unsupported media type",
            detail:
                "The request body is \(received.map { "'\($0)'" } ?? "sent without a Content-Type"); this endpoint accepts \(accepted.joined(separator: ", ")).",
            extra: [("accepted", .array(accepted.map { .string($0) }))])
    }

    /// 408: the request's headers or body did not arrive within the connection's deadlines.
    public static func requestTimeout() -> Problem {
        Problem(
            status: 408, type: urn("request-timeout"), title: "Request timeout",
            detail: "The request did not arrive in time; see docs/limits.md.")
    }

    /// 400: a request target that is not a path (absolute-form, authority-form,
    /// `*`), or a `CONNECT`: Doppel serves paths, and is no forward proxy.
    public static func invalidTarget(method: String, target: String) -> Problem {
        let shown = target.utf8.count > 200 ? String(decoding: target.utf8.prefix(200), as: UTF8.self) + "…" : target
        return Problem(
            status: 400, type: urn("invalid-target"), title: "Request target is not a path",
            detail: method == "CONNECT"
                ? "CONNECT \(shown) is not served: Doppel serves the paths of its contract and is not a forward proxy."
                : "The request target '\(shown)' is not a path: send the path and query alone (origin form, starting with '/').")
    }

    /// 400: the request's head cannot be trusted (two `Host` fields, RFC 9112 section 3.2).
    public static func invalidHeaders(_ reason: String) -> Problem {
        Problem(status: 400, type: urn("invalid-headers"), title: "Invalid request headers", detail: reason)
    }

    /// 400: the request could not be read as HTTP/1.1 (a malformed request
    /// line or header, a header block over the limit); the connection closes.
    public static func malformedRequest(_ reason: String) -> Problem {
        Problem(
            status: 400, type: urn("malformed-request"), title: "Malformed request", detail: "The request could not be read as HTTP/1.1: \(reason).")
    }

    /// 406: the endpoint documents this answer in media types `Accept` admits none of.
    static func notAcceptable(_ accept: String, available: [String]) -> Problem {
        Problem(
            status: 406, type: urn("not-acceptable"), title: "Not acceptable",
            detail: "Accept: \(accept.prefix(200)) admits none of the media types this answer is documented in: \(available.joined(separator: ", "))."
        )
    }

    /// 413: the body is larger than the server's limit.
    public static func payloadTooLarge(limit: Int) -> Problem {
        Problem(
            status: 413, type: urn("payload-too-large"), title: "Payload too large",
            detail: "The request body is larger than the limit of \(limit) bytes.", extra: [("limit", .int(limit))])
    }

    /// 502: the upstream server (`doppel serve --proxy`) could not be reached or gave no usable answer.
    public static func badGateway(upstream: String, reason: String) -> Problem {
        Problem(
            status: 502, type: urn("bad-gateway"), title: "Bad gateway",
            detail: "The upstream \(upstream) gave no answer: \(reason).", extra: [("upstream", .string(upstream))])
    }

    /// 502 for a request the contract forwards where no upstream is
    /// configured: the one answer both transports give it.
    public static let noUpstream = badGateway(upstream: "(none)", reason: "no upstream is configured (--proxy)")

    /// 504: the upstream server did not answer in time.
    public static func gatewayTimeout(upstream: String, seconds: Double) -> Problem {
        Problem(
            status: 504, type: urn("gateway-timeout"), title: "Gateway timeout",
            detail: "The upstream \(upstream) did not answer within \(seconds.formatted())s (--proxy-timeout).",
            extra: [("upstream", .string(upstream))])
    }

    /// 400: the request body could not be read from the connection.
    public static func unreadableBody(_ reason: String) -> Problem {
        Problem(status: 400, type: urn("unreadable-body"), title: "Unreadable body", detail: "The request body could not be read: \(reason).")
    }

    /// 404: an admin path that does not exist; lists the ones that do.
    package static func unknownAdminCall(method: String, path: String, known: [String]) -> Problem {
        Problem(
            status: 404, type: urn("unknown-admin-call"), title: "Unknown admin call",
            detail: "\(method) \(path) is not part of the admin API; it has \(known.joined(separator: ", ")).")
    }

    /// 400: a change to a session's clock that cannot be made.
    package static func invalidClockChange(_ reason: String) -> Problem {
        Problem(status: 400, type: urn("invalid-clock-change"), title: "Invalid clock change", detail: reason + ".")
    }

    /// 401: an admin call without the server's admin token.
    package static func adminUnauthorized() -> Problem {
        Problem(
            status: 401, type: urn("admin-unauthorized"), title: "Admin token required",
            detail: "This server guards /__doppel/ with a token: send it as Doppel-Admin-Token or Authorization: Bearer.",
            headers: [(name: "WWW-Authenticate", value: "Bearer realm=\"doppel-admin\"")])
    }

    /// 403: an admin call addressed by a host name that is not this server's (a rebound name).
    package static func adminHostRefused(host: String) -> Problem {
        Problem(
            status: 403, type: urn("admin-host-refused"), title: "Host not allowed",
            detail: "The admin API answers requests addressed to an IP address, localhost or a name given with --allow-host; "
                + "'\(String(host.prefix(200)))' is none of them (start doppel serve with --allow-host \(host.split(separator: ":").first.map(String.init) ?? host) to allow it)."
        )
    }

    /// 403: an admin call a web page on another origin made a browser send.
    package static func adminCrossSite(_ evidence: String) -> Problem {
        Problem(
            status: 403, type: urn("admin-cross-site"), title: "Cross-site admin call refused",
            detail: "A web page on another origin cannot call the admin API (\(String(evidence.prefix(200)))); "
                + "call it from the dashboard, a test or curl, which send no Origin of another site.")
    }

    /// 415: an admin call whose body is not sent as JSON.
    package static func adminBodyNotJSON(contentType: String?) -> Problem {
        Problem(
            status: 415, type: urn("admin-body-not-json"), title: "Admin bodies are JSON",
            detail: "An admin call's body must be sent with Content-Type: application/json"
                + (contentType.map { ", not '\(String($0.prefix(100)))'" } ?? " (none was sent)")
                + "; with curl, add -H 'Content-Type: application/json'.",
            headers: [(name: "Accept-Post", value: "application/json")])
    }

    /// 403: a WebSocket upgrade from a web page of another origin.
    package static func socketOriginRefused(_ origin: String) -> Problem {
        Problem(
            status: 403, type: urn("websocket-origin-refused"), title: "WebSocket origin refused",
            detail: "A page of '\(String(origin.prefix(200)))' may not open this server's WebSockets: only its own pages, "
                + "loopback ones and origins given with --allow-origin may.")
    }

    /// 400: a state replacement that does not fit the contract's declaration.
    package static func invalidState(_ problems: [String]) -> Problem {
        Problem(
            status: 400, type: urn("invalid-state"), title: "Invalid state", detail: problems.joined(separator: "; ") + ".",
            extra: [("problems", .array(problems.map { .string($0) }))])
    }

    /// 404: a scenario name the server did not load.
    package static func unknownScenario(_ name: String, known: [String]) -> Problem {
        Problem(
            status: 404, type: urn("unknown-scenario"), title: "Unknown scenario",
            detail:
                "No scenario '\(name)' is loaded\(Suggestion.hint(for: name, in: known)); loaded: \(known.isEmpty ? "none (start the server with --scenarios DIR)" : known.joined(separator: ", "))."
        )
    }

    /// 400: an inline scenario with problems.
    package static func invalidScenario(_ problems: [String]) -> Problem {
        Problem(
            status: 400, type: urn("invalid-scenario"), title: "Invalid scenario", detail: problems.joined(separator: "; ") + ".",
            extra: [("problems", .array(problems.map { .string($0) }))])
    }

    /// 503: `GET /__doppel/events` while `limit` streams are open already.
    package static func tooManyEventStreams(limit: Int) -> Problem {
        Problem(
            status: 503, type: urn("too-many-event-streams"), title: "Too many event streams",
            detail: "\(limit) event streams are open already (--max-event-streams); close one, or try again later.",
            headers: [(name: "Retry-After", value: "5")])
    }

    /// 501: `GET /__doppel/events` asked of the admin API without the HTTP server, which alone can stream it.
    package static func eventStreamNeedsServer() -> Problem {
        Problem(
            status: 501, type: urn("event-stream-needs-server"), title: "Event stream needs the server",
            detail: "GET /__doppel/events is streamed by Doppel's HTTP server only; ask it over HTTP.")
    }

    /// 400: a verification or journal query that cannot be answered.
    package static func invalidVerification(_ problems: [String]) -> Problem {
        Problem(
            status: 400, type: urn("invalid-query"), title: "Invalid query", detail: problems.joined(separator: "; ") + ".",
            extra: [("problems", .array(problems.map { .string($0) }))])
    }

    /// 422: the request broke the endpoint's schema; lists every failing field.
    package static func validationFailed(_ issues: [ValidationIssue]) -> Problem {
        let summary = issues.prefix(3).map(\.description).joined(separator: "; ")
        return Problem(
            status: 422, type: urn("validation-failed"), title: "Request does not match the contract",
            detail: "\(issues.count) problem\(issues.count == 1 ? "" : "s"): \(summary)\(issues.count > 3 ? "; ..." : "")",
            extra: [("errors", .array(issues.map(\.json)))])
    }

    /// 400: the `Doppel-Session` header is not a usable session id.
    package static func invalidSession(_ id: String) -> Problem {
        Problem(
            status: 400, type: urn("invalid-session"), title: "Invalid session",
            detail: "Doppel-Session must be 1 to 128 letters, digits or . _ : - characters; got '\(id.prefix(140))'.")
    }

    /// 503: the shared state store (`--state-store`) could not be used in
    /// time; nothing of the request was kept. `Retry-After` says when to try again.
    package static func stateStoreUnavailable(_ reason: String, retryAfter: Int) -> Problem {
        Problem(
            status: 503, type: urn("state-store-unavailable"), title: "State store unavailable",
            detail: "The shared state store could not be used: \(reason). Nothing of this request was kept; retry after \(retryAfter) s.",
            extra: [("retry_after", .int(retryAfter))], headers: [(name: "Retry-After", value: String(retryAfter))])
    }

    /// 500: no response of the endpoint had a `when` that held.
    package static func noResponseMatched(endpointID: String) -> Problem {
        Problem(
            status: 500, type: urn("no-response-matched"), title: "No response matched",
            detail: "No response of endpoint \(endpointID) has a 'when' that holds for this request; give the last response no 'when'.")
    }

    /// 500 for a failed expression; 413 when it failed because the request's
    /// input would make it build more than the evaluation budget.
    static func evaluationFailed(_ error: EvaluationError, endpointID: String, response: String) -> Problem {
        guard error.exceedsBudget else { return expressionFailed(endpointID: endpointID, response: response, message: error.message) }
        return Problem(
            status: 413, type: urn("evaluation-budget-exceeded"), title: "Request too large for its templates",
            detail: "While answering with \(response) of \(endpointID): \(error.message); send smaller input (see docs/limits.md).")
    }

    /// 500: an expression failed while answering (a type error in a template or effect).
    package static func expressionFailed(endpointID: String, response: String, message: String) -> Problem {
        Problem(
            status: 500, type: urn("expression-failed"), title: "Contract expression failed",
            detail: "While answering with \(response) of \(endpointID): \(message). State was left unchanged.")
    }
}

/// An endpoint that nearly matched a request, and how it did not.
package struct NearMiss: Sendable {
    package let endpointID: String
    package let signature: String
    package let reasons: [String]
}
