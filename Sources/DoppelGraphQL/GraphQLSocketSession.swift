import DoppelCore
import GraphQL

/// The server's side of `graphql-transport-ws` (the GraphQL over WebSocket
/// protocol of the graphql-ws project, which Apollo Client, urql, Relay's
/// examples, graphql-ws and Python's gql speak) for one socket.
///
/// No maintained Swift library serves this protocol over a socket Doppel
/// owns (GraphQLSwift's own `graphql-ws` package drives Vapor's WebSocket
/// type), and its messages are six small JSON objects, so it is written
/// here; the socket's frames, bounds and journal stay with the server's
/// `SocketConnection`.
///
/// Driven from one thread (the socket's event loop): `receive` takes a
/// client's message and `event` a value pushed to a subscription field;
/// each returns the steps to take now. An operation runs later as `Work`,
/// one at a time in the order given, so a subscription's events arrive in
/// the order they were pushed; `finished` takes a work's outcome.
package final class GraphQLSocketSession {
    /// The most operations one socket may have running or subscribed at once (`docs/limits.md`).
    package static let maximumOperations = 100
    /// Seconds a socket may stay open without `connection_init`; then it is closed with 4408.
    package static let initialisationTimeout = 10.0

    /// What the socket does next.
    package enum Step: Sendable {
        /// Send a text message.
        case send(String)
        /// Close the socket (graphql-transport-ws's 44xx codes).
        case close(code: Int, reason: String)
        /// Run an operation, after those already waiting.
        case run(Work)
        /// A journal entry: a client's message (`RECEIVE`) or what was sent for an operation (`SEND`).
        case journal(method: String, rule: String, message: String?, sent: [String], reason: String)
    }

    /// An operation to run: its answer to the subscriber `id`.
    package struct Work: Sendable {
        package let id: String
        package let body: @Sendable () async -> Outcome
    }

    /// What a run produced for subscriber `id`.
    package struct Outcome: Sendable {
        let id: String
        /// The protocol's messages for it (`next`, `error`, `complete`).
        var messages: [String] = []
        /// A subscription now open: its events run it.
        var subscription: Subscription?
        /// The operation is over (its `complete` or `error` is among the messages).
        var ends = true
        /// For the journal: what was run and why.
        var rule: String
        var reason: String
    }

    /// An open subscription: its prepared document, and the root field whose pushes it takes (`Subscription.storyReady`).
    struct Subscription: Sendable {
        let prepared: Prepared
        let field: String
        let fieldName: String
    }

    private enum Subscriber {
        /// Its operation waits to run or runs.
        case starting
        case subscribed(Subscription)
    }

    private let service: GraphQLService
    private let definition: GraphQLDefinition
    private let caller: any ContractCaller
    /// The upgrade's header fields, joined by the `connection_init` payload's.
    private var headers: [(name: String, value: String)]
    private var subscribers: [String: Subscriber] = [:]
    /// Subscriber ids in the order they subscribed: events reach them in that order.
    private var order: [String] = []
    package private(set) var acknowledged = false

    package init(service: GraphQLService, definition: GraphQLDefinition, caller: any ContractCaller, upgrade: RecordedRequest) {
        self.service = service
        self.definition = definition
        self.caller = caller
        self.headers = GraphQLService.forwarded(upgrade.headers).filter { !$0.name.lowercased().hasPrefix("sec-websocket-") }
    }

    /// A client's message.
    package func receive(_ text: String) -> [Step] {
        guard let parsed = try? JSONReader.parse(text), case .object(let message) = parsed, case .string(let type)? = message["type"] else {
            return refuse(text, rule: "invalid", "Invalid message received: a message is a JSON object with a string 'type'")
        }
        switch type {
        case "connection_init":
            guard !acknowledged else { return refuse(text, rule: type, code: 4429, "Too many initialisation requests") }
            switch message["payload"] {
            case nil, .null?: break
            case .object(let payload)?: take(payload)
            default: return refuse(text, rule: type, "Invalid message received: connection_init's payload must be an object")
            }
            acknowledged = true
            let ack = #"{"type":"connection_ack"}"#
            return [.send(ack), .journal(method: "RECEIVE", rule: type, message: text, sent: [ack], reason: "the connection is acknowledged")]
        case "ping":
            let pong = #"{"type":"pong"}"#
            return [.send(pong), .journal(method: "RECEIVE", rule: type, message: text, sent: [pong], reason: "a ping is answered with a pong")]
        case "pong":
            return [.journal(method: "RECEIVE", rule: type, message: text, sent: [], reason: "a pong needs no answer")]
        case "subscribe":
            return subscribe(message, text: text)
        case "complete":
            guard case .string(let id)? = message["id"], !id.isEmpty else {
                return refuse(text, rule: type, "Invalid message received: complete needs the 'id' of an operation")
            }
            let known = subscribers.removeValue(forKey: id) != nil
            order.removeAll { $0 == id }
            return [
                .journal(
                    method: "RECEIVE", rule: type, message: text, sent: [],
                    reason: known ? "the client ended operation \(id)" : "operation \(id) was not running; nothing to end")
            ]
        default:
            return refuse(text, rule: "invalid", "Invalid message received: unknown type '\(Journal.clip(type, to: 64))'")
        }
    }

    /// A value pushed to the subscription field `field` (`Subscription.storyReady`), as JSON text: a run for each subscriber of it.
    package func event(_ field: String, value text: String, from: String) -> [Step] {
        let value = MapJSON.map((try? JSONReader.parse(text)) ?? .string(text))
        var steps: [Step] = []
        for id in order {
            guard case .subscribed(let subscription)? = subscribers[id], subscription.field == field else { continue }
            let call = subscription.prepared.call(caller: caller, definition: definition, headers: headers)
            steps.append(
                .run(
                    Work(id: id) {
                        let (result, began) = await GraphQLService.execute(subscription.prepared, call: call, root: [subscription.fieldName: value])
                        var outcome = Outcome(id: id, ends: false, rule: "next", reason: "\(field) pushed by \(from)")
                        if result.errors.contains(where: { $0.extensions[GraphQLCall.skipMarker] != nil }) {
                            // The field's resolver answered `skip: true`: this subscriber does not hear of the event.
                            outcome.rule = "skip"
                            outcome.reason = "\(field) pushed by \(from); its resolver passed over it for this subscriber"
                        } else if began {
                            outcome.messages = [Self.message("next", id: id, payload: Self.result(result))]
                        } else {
                            // The event could not be run (its variables no longer hold): the subscription ends with its errors.
                            outcome.messages = [Self.message("error", id: id, payload: .array(result.errors.map(GraphQLService.errorJSON)))]
                            outcome.ends = true
                            outcome.rule = "error"
                        }
                        return outcome
                    }))
        }
        return steps
    }

    /// A run's outcome, on the socket's thread: sent unless the client ended the operation meanwhile.
    package func finished(_ outcome: Outcome) -> [Step] {
        guard let state = subscribers[outcome.id] else {
            return [
                .journal(
                    method: "SEND", rule: outcome.rule, message: nil, sent: [],
                    reason: "not sent: the client ended operation \(outcome.id) before its answer (\(outcome.reason))")
            ]
        }
        if outcome.ends {
            subscribers[outcome.id] = nil
            order.removeAll { $0 == outcome.id }
        } else if let subscription = outcome.subscription, case .starting = state {
            subscribers[outcome.id] = .subscribed(subscription)
        }
        return outcome.messages.map(Step.send) + [
            .journal(method: "SEND", rule: outcome.rule, message: nil, sent: outcome.messages, reason: "operation \(outcome.id): \(outcome.reason)")
        ]
    }

    // MARK: Subscribe

    private func subscribe(_ message: JSONObject, text: String) -> [Step] {
        guard acknowledged else { return refuse(text, rule: "subscribe", code: 4401, "Unauthorized") }
        guard case .string(let id)? = message["id"], !id.isEmpty, id.utf8.count <= 256 else {
            return refuse(text, rule: "subscribe", "Invalid message received: subscribe needs an 'id' of 1 to 256 bytes")
        }
        guard case .object(let payload)? = message["payload"] else {
            return refuse(text, rule: "subscribe", "Invalid message received: subscribe needs a 'payload' object")
        }
        guard subscribers[id] == nil else {
            return refuse(text, rule: "subscribe", code: 4409, "Subscriber for \(Journal.clip(id, to: 64)) already exists")
        }
        let received = Step.journal(method: "RECEIVE", rule: "subscribe", message: text, sent: [], reason: "operation \(id) is run")
        guard subscribers.count < Self.maximumOperations else {
            let refusal = Self.message(
                "error", id: id,
                payload: .array([
                    GraphQLService.errorJSON(
                        GraphQLError(
                            message: "this socket runs at most \(Self.maximumOperations) operations at once; complete one first",
                            extensions: ["code": "TOO_MANY_OPERATIONS"]))
                ]))
            return [.send(refusal), .journal(method: "RECEIVE", rule: "subscribe", message: text, sent: [refusal], reason: "too many operations")]
        }
        let parameters: Parameters
        switch Parameters.read(payload: payload) {
        case .success(let read): parameters = read
        case .failure(let refusal):
            let error = Self.message("error", id: id, payload: .array([GraphQLService.errorJSON(GraphQLError(message: refusal.message))]))
            return [.send(error), .journal(method: "RECEIVE", rule: "subscribe", message: text, sent: [error], reason: refusal.message)]
        }
        subscribers[id] = .starting
        order.append(id)
        let service = service
        let definition = definition
        let caller = caller
        let headers = headers
        return [
            received,
            .run(
                Work(id: id) {
                    await Self.start(id: id, parameters: parameters, service: service, definition: definition, caller: caller, headers: headers)
                }),
        ]
    }

    /// A subscribe's operation: prepared and bounded as over HTTP, put to
    /// the contract's `graphql` endpoint, then run (a query or a mutation:
    /// `next`, then `complete`) or opened (a subscription: its events run it).
    private static func start(
        id: String, parameters: Parameters, service: GraphQLService, definition: GraphQLDefinition, caller: any ContractCaller,
        headers: [(name: String, value: String)]
    ) async -> Outcome {
        func failed(_ errors: [JSON], _ reason: String) -> Outcome {
            Outcome(id: id, messages: [message("error", id: id, payload: .array(errors))], rule: "error", reason: reason)
        }
        let prepared: Prepared
        switch service.prepare(parameters, definition: definition) {
        case .success(let ready): prepared = ready
        case .failure(let refusal): return failed(refusal.errors.map(GraphQLService.errorJSON), "the operation cannot run")
        }
        if let exceeded = OperationBounds.check(prepared.operation, in: prepared.document, definition: definition) {
            return failed([GraphQLService.errorJSON(exceeded)], "the operation is past a bound")
        }
        let call = prepared.call(caller: caller, definition: definition, headers: headers)
        let opened = await GraphQLService.open(prepared, call: call)
        guard GraphQLService.admits(opened) else {
            return failed([refusal(opened)], "the contract refused the operation with \(opened.status)")
        }
        let operation = prepared.operation
        if operation.operation == .subscription {
            let schema = prepared.schema
            // The one root field it selects (validated already), by its name in the schema.
            let fieldName = GraphQLService.rootFields(of: operation, in: prepared.document).first?.name.value ?? ""
            let type = schema.subscriptionType?.name ?? "Subscription"
            var outcome = Outcome(id: id, ends: false, rule: "subscribe", reason: "subscribed to \(type).\(fieldName)")
            outcome.subscription = Subscription(prepared: prepared, field: type + "." + fieldName, fieldName: fieldName)
            return outcome
        }
        let (result, began) = await GraphQLService.execute(prepared, call: call, root: [:])
        guard began else { return failed(result.errors.map(GraphQLService.errorJSON), "the operation's variables cannot be used") }
        return Outcome(
            id: id, messages: [message("next", id: id, payload: Self.result(result)), message("complete", id: id)], rule: "next",
            reason: "the \(operation.operation.rawValue) ran")
    }

    /// The contract's refusal of an operation (no token, a rate limit) as a
    /// GraphQL error: the answer's `errors[0].message` or `detail`, its status
    /// and body in `extensions`.
    static func refusal(_ opened: MockResponse) -> JSON {
        let body = try? JSONReader.parse(opened.body)
        var message = "the operation was refused with status \(opened.status)"
        if let text = body?.objectValue?["errors"]?.arrayValue?.first?.objectValue?["message"]?.stringValue {
            message = text
        } else if let object = body?.objectValue {
            for key in ["detail", "message", "error"] {
                if let text = object[key]?.stringValue {
                    message = text
                    break
                }
            }
        }
        var extensions: [(String, JSON)] = [
            (
                "code",
                .string(
                    body?.objectValue?["errors"]?.arrayValue?.first?.objectValue?["extensions"]?.objectValue?["code"]?.stringValue
                        ?? "HTTP_\(opened.status)")
            ),
            ("status", .int(opened.status)),
        ]
        if let retry = opened.headers.first(where: { $0.name.lowercased() == "retry-after" })?.value {
            extensions.append(("retryAfter", .string(retry)))
        }
        if let body { extensions.append(("body", body)) }
        return .object(JSONObject([("message", .string(message)), ("extensions", .object(JSONObject(extensions)))]))
    }

    // MARK: Messages

    /// The `connection_init` payload's string members are header fields of
    /// every operation (`{"Authorization": "Bearer ..."}`, as browser
    /// clients send their token), and so are those of its `headers` object;
    /// they replace the upgrade's of the same name. The session stays the upgrade's.
    private func take(_ payload: JSONObject) {
        var given: [(name: String, value: String)] = []
        for (name, value) in payload.pairs {
            if case .string(let text) = value { given.append((name, text)) }
        }
        if let nested = payload["headers"]?.objectValue {
            for (name, value) in nested.pairs {
                if case .string(let text) = value { given.append((name, text)) }
            }
        }
        given = given.filter { HTTPToken.isValid($0.name) && $0.name.lowercased() != MockEngine.sessionHeader.lowercased() }
        let names = Set(given.map { $0.name.lowercased() })
        headers = headers.filter { !names.contains($0.name.lowercased()) } + GraphQLService.forwarded(given)
    }

    private func refuse(_ text: String, rule: String, code: Int = 4400, _ reason: String) -> [Step] {
        [.journal(method: "RECEIVE", rule: rule, message: text, sent: [], reason: reason), .close(code: code, reason: Journal.clip(reason, to: 123))]
    }

    static func message(_ type: String, id: String, payload: JSON? = nil) -> String {
        var members: [(String, JSON)] = [("id", .string(id)), ("type", .string(type))]
        if let payload { members.append(("payload", payload)) }
        return String(decoding: JSONWriter.encode(.object(JSONObject(members))), as: UTF8.self)
    }

    /// An execution result as a `next` payload: `errors` (when any) and `data`.
    static func result(_ result: GraphQLResult) -> JSON {
        var members: [(String, JSON)] = []
        if !result.errors.isEmpty { members.append(("errors", .array(result.errors.map(GraphQLService.errorJSON)))) }
        members.append(("data", result.data.map(MapJSON.json) ?? .null))
        return .object(JSONObject(members))
    }
}
