import DoppelCore
import Foundation

/// `doppel diff --journal FILE`: which calls a journal observed (a Doppel
/// that clients used, serving the old version) each breaking change would
/// break, and by how many of the journal's sessions (its clients).
///
/// A journal keeps each call's session, method, path, query, status and
/// endpoint, but no request bodies or headers. So a change to a status's
/// answer is told for the calls that got that status, a query or path
/// value by checking each call's own value against the new version, and
/// a change to a body or header only for the calls that reach the
/// endpoint (`exact` is false: which of them break the journal cannot tell).
/// The `request` events of `GET /__doppel/events`, saved as they stream,
/// do carry each request's headers and body (its first 16 KiB): read
/// instead of the journal, every request-side change is told call by call
/// (a call breaks when the old version took it and the new one refuses it
/// at the change's place).
extension ContractDiff {
    /// One call a journal recorded.
    public struct ObservedCall: Sendable {
        /// The session that made it (`default` without `Doppel-Session`): a client.
        public let session: String
        /// `GET`, or `RECEIVE`/`SEND`/`CLOSE` for a socket's entries, `CALLBACK` for a callback's.
        public let method: String
        /// The path as sent, percent-encoded.
        public let path: String
        /// The query string, without `?`.
        public let query: String?
        /// The status sent (a close code for `CLOSE`).
        public let status: Int
        /// The endpoint (or `<socket>.<rule>`, `<endpoint>.<callback>`) that took it; nil when none did.
        public let endpoint: String?
        /// The request's headers and whole body, where the source kept them (`request` events); nil otherwise.
        public var request: (headers: [(name: String, value: String)], body: [UInt8])?

        /// A call as the journal records it.
        public init(session: String, method: String, path: String, query: String?, status: Int, endpoint: String?) {
            self.session = session
            self.method = method
            self.path = path
            self.query = query
            self.status = status
            self.endpoint = endpoint
        }
    }

    /// The largest journal file read (a journal of 10,000 entries, the
    /// default `--journal-size`, is about 3 MiB).
    public static let maximumJournalBytes = 64 << 20

    /// The calls of a journal: `GET /__doppel/journal`'s answer (its
    /// `entries`), a JSON array of entries, one entry per line, or the
    /// event stream of `GET /__doppel/events` as it was sent (`data:` lines;
    /// events that are not calls are passed over).
    public static func observedCalls(_ bytes: [UInt8]) throws(JournalError) -> [ObservedCall] {
        guard bytes.count <= maximumJournalBytes else {
            throw JournalError(message: "the journal is \(bytes.count) bytes; at most \(maximumJournalBytes) are read")
        }
        var entries: [JSON]
        var stream = false
        do {
            let document = try JSONReader.parse(bytes)
            if let array = document.arrayValue {
                entries = array
            } else if let array = document["entries"]?.arrayValue {
                entries = array
            } else if document.objectValue?["method"] != nil {
                entries = [document]
            } else {
                throw JournalError(
                    message:
                        "not a journal: expected GET /__doppel/journal's answer ({\"entries\": [...]}), an array of entries, or one entry per line")
            }
        } catch let error as JournalError {
            throw error
        } catch {
            // One entry per line (JSON lines), or an event stream's `data:` lines.
            entries = []
            var line = 1
            for var text in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                defer { line += 1 }
                guard text.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\t") }) else { continue }
                if text.starts(with: "data:".utf8) {
                    stream = true
                    text = text.dropFirst(5)
                } else if [":", "event:", "id:", "retry:"].contains(where: { text.starts(with: $0.utf8) }) {
                    stream = true
                    continue
                }
                do {
                    entries.append(try JSONReader.parse(Array(text)))
                } catch {
                    throw JournalError(message: "line \(line): not JSON (\(error))")
                }
            }
        }
        var calls: [ObservedCall] = []
        calls.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            guard let method = entry["method"]?.stringValue, let path = entry["path"]?.stringValue, let status = entry["status"]?.intValue else {
                if stream { continue }  // a `journal` or `dropped` event
                throw JournalError(message: "entry \(index + 1): a journal entry has `method`, `path` and `status`")
            }
            var call = ObservedCall(
                session: entry["session"]?.stringValue ?? "default", method: method, path: path,
                query: entry["query"]?.stringValue, status: status, endpoint: entry["endpoint"]?.stringValue)
            // A `request` event's request, when its body was kept whole.
            if let request = entry["request"], request["truncated"] == .bool(false), let pairs = request["headers"]?.arrayValue {
                let headers = pairs.compactMap { pair -> (name: String, value: String)? in
                    guard let both = pair.arrayValue, both.count == 2, let name = both[0].stringValue, let value = both[1].stringValue else {
                        return nil
                    }
                    return (name, value)
                }
                if let text = request["body"]?.stringValue {
                    call.request = (headers, Array(text.utf8))
                } else if let encoded = request["body_base64"]?.stringValue, let body = Data(base64Encoded: encoded) {
                    call.request = (headers, [UInt8](body))
                }
            }
            calls.append(call)
        }
        return calls
    }

    /// Why a journal could not be read.
    public struct JournalError: Error, Sendable, CustomStringConvertible {
        /// What is wrong, and where.
        public let message: String
        /// The message.
        public var description: String { message }

        /// An error saying `message`.
        public init(message: String) {
            self.message = message
        }
    }

    /// The calls of a journal one breaking change would break.
    public struct Exposure: Sendable, Equatable {
        /// How many calls.
        public let calls: Int
        /// The sessions that made them, sorted.
        public let sessions: [String]
        /// The sessions in the whole journal.
        public let totalSessions: Int
        /// Whether the journal tells which calls break (a status they got,
        /// a query or path value they sent); false where a change is to a
        /// body or header the journal does not keep, and `calls` are those
        /// that reach the endpoint.
        public let exact: Bool

        /// The exposure as JSON, for `--format json`.
        public var json: JSON {
            .object(
                JSONObject([
                    ("calls", .int(calls)), ("sessions", .array(sessions.map(JSON.string))),
                    ("of_sessions", .int(totalSessions)), ("exact", .bool(exact)),
                ]))
        }

        /// In words: `12 calls by 3 of 5 sessions (alice, bob, carol)`.
        public var text: String {
            guard calls > 0 else { return "no call in the journal" + (exact ? "" : " reaches it") }
            let names = sessions.prefix(5).joined(separator: ", ") + (sessions.count > 5 ? ", …" : "")
            let who =
                "\(calls) call\(calls == 1 ? "" : "s") by \(sessions.count) of \(totalSessions) session\(totalSessions == 1 ? "" : "s") (\(names))"
            return exact ? who : who + " reach it; the journal keeps no bodies or headers, so which of them break cannot be told"
        }
    }

    /// For each change, the calls of `calls` it would break; nil for a compatible change.
    public static func exposures(of changes: [Change], from old: Contract, to new: Contract, calls: [ObservedCall]) -> [Exposure?] {
        let matcher = CallMatcher(old: old, new: new, calls: calls)
        return changes.map { $0.breaking ? matcher.exposure(of: $0) : nil }
    }

    /// Calls grouped by the old version's endpoint they reached, and the checks of a change against them.
    struct CallMatcher {
        let old: Contract
        let new: Contract
        let calls: [ObservedCall]
        let totalSessions: Int
        /// Old endpoint id → indices of its calls (a socket's rules' and a callback's entries with it).
        let byEndpoint: [String: [Int]]
        let oldBySignature: [String: Endpoint]
        let newBySignature: [String: Endpoint]
        let validator: SchemaValidator
        /// Each call's request validated once by each version, however many changes ask.
        let outcomes = Outcomes()

        /// A call's request as each version's endpoint reads it: the work a
        /// diff does per call, not per change and call (a long journal and a
        /// long list of changes would otherwise multiply).
        final class Outcomes {
            var old: [Int: Bool] = [:]
            var new: [Int: RequestValidator.Outcome] = [:]
        }

        init(old: Contract, new: Contract, calls: [ObservedCall]) {
            self.old = old
            self.new = new
            self.calls = calls
            totalSessions = Set(calls.map(\.session)).count
            // The first endpoint of a signature, as `ContractDiff` compares it.
            oldBySignature = Dictionary(old.endpoints.map { (Differ.signature($0, basePath: old.basePath), $0) }) { first, _ in first }
            newBySignature = Dictionary(new.endpoints.map { (Differ.signature($0, basePath: new.basePath), $0) }) { first, _ in first }
            validator = SchemaValidator(registry: new.schemas)
            var byEndpoint: [String: [Int]] = [:]
            for (index, call) in calls.enumerated() {
                if let id = Self.endpoint(of: call, in: old) { byEndpoint[id, default: []].append(index) }
            }
            self.byEndpoint = byEndpoint
        }

        /// The old version's endpoint a call reached: by the id the journal
        /// names (`live.ping` is `live`'s), else by its method and path.
        static func endpoint(of call: ObservedCall, in contract: Contract) -> String? {
            if let id = call.endpoint {
                if contract.endpoint(id: id) != nil { return id }
                if let dot = id.lastIndex(of: "."), contract.endpoint(id: String(id[..<dot])) != nil { return String(id[..<dot]) }
            }
            guard !Journal.Entry.socketMethods.contains(call.method) else { return nil }
            let segments = EndpointRouter.segments(of: call.path)
            return contract.endpoints.first {
                ($0.method == call.method || ($0.method == "GET" && call.method == "HEAD")) && $0.path.match(segments) != nil
            }?.id
        }

        func exposure(of change: Change) -> Exposure {
            let indices: [Int]
            if change.endpoint.isEmpty {
                indices = Array(calls.indices)  // the base path: every call
            } else if let endpoint = oldBySignature[change.endpoint] {
                indices = byEndpoint[endpoint.id] ?? []
            } else {
                indices = []
            }
            let (chosen, exact) = select(indices, for: change)
            let sessions = Set(chosen.map { calls[$0].session })
            return Exposure(calls: chosen.count, sessions: sessions.sorted(), totalSessions: totalSessions, exact: exact)
        }

        /// The calls of an endpoint the change breaks, and whether the journal can tell.
        func select(_ indices: [Int], for change: Change) -> ([Int], Bool) {
            let words = change.place.split(separator: " ", maxSplits: 2).map(String.init)
            // `404 response…`: the calls that got that status (callbacks and pushes came with it).
            if let first = words.first, let status = Int(first), words.count > 1, words[1] == "response" {
                return (indices.filter { calls[$0].status == status && !Journal.Entry.socketMethods.contains(calls[$0].method) }, true)
            }
            if words.count >= 2, words[0] == "query" || words[0] == "path" {
                return (indices.filter { breaks(calls[$0], parameter: words[1], in: words[0], change: change) }, true)
            }
            if words.first == "websocket" {
                guard let endpoint = oldBySignature[change.endpoint] else { return ([], true) }
                // A rule's change: its own entries; a close code's: the closes with it; else every entry of the socket.
                if change.kind.hasPrefix("close-code"), let code = change.detail.split(separator: " ").compactMap({ Int($0) }).first {
                    return (indices.filter { calls[$0].method == "CLOSE" && calls[$0].status == code }, true)
                }
                // `websocket on_message ping …` or `websocket on_unmatched …`: the rule is the first word that names one.
                let names = Set(endpoint.socket?.rules.map(\.name) ?? [])
                if let rule = change.place.split(separator: " ").dropFirst().prefix(2).map(String.init).first(where: names.contains) {
                    let id = "\(endpoint.id).\(rule)"
                    return (indices.filter { calls[$0].endpoint == id }, true)
                }
                // The socket itself (its subprotocols): the upgrades.
                return (indices.filter { !Journal.Entry.socketMethods.contains(calls[$0].method) }, change.kind != "socket-protocol-removed")
            }
            let http = indices.filter { !Journal.Entry.socketMethods.contains(calls[$0].method) }
            // A body's or a header's change, told call by call where the source kept the requests.
            if change.place.hasPrefix("request body") || words.first == "header", !http.isEmpty,
                http.allSatisfy({ calls[$0].request != nil })
            {
                return (http.filter { refusedAnew(call: $0, change: change) }, true)
            }
            switch change.kind {
            // Every call an old client makes is refused: the journal tells exactly.
            case "endpoint-removed", "base-path-changed", "auth-added", "auth-scheme-changed", "request-body-added-required",
                "request-field-added-required",
                "socket-removed":
                return (change.endpoint.isEmpty ? indices : http, true)
            default:
                // A body's or a header's change: which calls sent what the journal does not keep.
                return (http, false)
            }
        }

        /// Whether the old version took a call's request and the new one
        /// refuses it at the change's place (a body's member, a header).
        func refusedAnew(call index: Int, change: Change) -> Bool {
            let call = calls[index]
            guard let (headers, body) = call.request, let oldEndpoint = oldBySignature[change.endpoint],
                let newEndpoint = newBySignature[change.endpoint]
            else { return false }
            let request = RecordedRequest(method: call.method, path: call.path, query: call.query, headers: headers, body: body)
            let segments = EndpointRouter.segments(of: call.path)
            func outcome(_ endpoint: Endpoint, _ schemas: [String: Schema]) -> RequestValidator.Outcome {
                RequestValidator(schemas: schemas).validate(
                    request, queryItems: request.queryItems,
                    pathParameters: endpoint.path.match(segments) ?? [:], for: endpoint)
            }
            // The change's endpoint is the call's own, so each call's outcomes serve every change.
            let validBefore: Bool
            if let known = outcomes.old[index] {
                validBefore = known
            } else {
                if case .valid = outcome(oldEndpoint, old.schemas) { validBefore = true } else { validBefore = false }
                outcomes.old[index] = validBefore
            }
            guard validBefore else { return false }  // refused before: not this change's doing
            let after: RequestValidator.Outcome
            if let known = outcomes.new[index] {
                after = known
            } else {
                after = outcome(newEndpoint, new.schemas)
                outcomes.new[index] = after
            }
            switch after {
            case .valid:
                return false
            case .rejected:
                return change.place.hasPrefix("request body")
            case .invalid(let issues, _):
                // `request body /hero_id` is `/body/hero_id`; a parent's issue (a member now required) counts too.
                let target: String
                if change.place.hasPrefix("request body") {
                    target = "/body" + (change.place.dropFirst("request body".count).split(separator: " ").first.map(String.init) ?? "")
                } else {
                    target = "/headers/" + SchemaValidator.escape(String(change.place.dropFirst("header ".count)).lowercased())
                }
                let member = target.split(separator: "/").last.map(String.init) ?? ""
                return issues.contains {
                    $0.pointer.hasPrefix(target) || (target.hasPrefix($0.pointer + "/") && $0.message.contains(member))
                }
            }
        }

        /// Whether a call's query or path value is one the new version refuses.
        func breaks(_ call: ObservedCall, parameter name: String, in place: String, change: Change) -> Bool {
            guard !Journal.Entry.socketMethods.contains(call.method) else { return false }
            let value: String?
            let schema: Schema?
            let newEndpoint = newBySignature[change.endpoint]
            if place == "query" {
                value = RecordedRequest(method: call.method, path: call.path, query: call.query).queryItems.last { $0.0 == name }?.1
                schema = newEndpoint?.query
            } else {
                guard let oldEndpoint = oldBySignature[change.endpoint], let newEndpoint else { return false }
                let captured = oldEndpoint.path.match(EndpointRouter.segments(of: call.path)) ?? [:]
                // Path parameters may be renamed between versions (`{id}`, `{childId}`): by position.
                let position = newEndpoint.path.parameterNames.firstIndex(of: name)
                value =
                    captured[name]
                    ?? position.flatMap { $0 < oldEndpoint.path.parameterNames.count ? captured[oldEndpoint.path.parameterNames[$0]] : nil }
                schema = newEndpoint.pathParameters
            }
            guard let value else {
                // Not sent: broken only where it is now required.
                return ["parameter-added-required", "parameter-now-required"].contains(change.kind)
            }
            guard let schema else { return false }
            let (coerced, coercion) = validator.coerceParameters([(name, value)], by: schema)
            let pointer = "/" + SchemaValidator.escape(name)
            if coercion.contains(where: { $0.pointer == pointer || $0.pointer.hasPrefix(pointer + "/") }) { return true }
            return validator.validate(coerced, against: schema).contains { $0.pointer == pointer || $0.pointer.hasPrefix(pointer + "/") }
        }
    }
}
