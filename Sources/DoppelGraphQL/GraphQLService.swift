import DoppelCore
import GraphQL
import OrderedCollections

/// A contract's GraphQL API (`graphql:`), over HTTP as the GraphQL-over-HTTP
/// specification has it: POST with a JSON body, GET for queries, answers as
/// `application/graphql-response+json` (request errors with 400) or, for
/// clients that accept only `application/json`, with 200.
///
/// A request is parsed and validated by the library (every rule it
/// specifies), bounded (`max_depth`, `max_fields`), then put to the
/// contract as the `graphql` endpoint (its auth and rate limits, its
/// journal entry), then executed: each field the contract resolves is a
/// request of its own to that field's endpoint, in the same session.
package struct GraphQLService: Sendable {
    /// The longest operation text taken, in bytes.
    package static let maxQueryBytes = 100_000
    /// Schemas already built, by SDL and resolvers (a `--watch` reload builds anew).
    private let schemas = Locked<[String: ServedSchema]>([:])
    /// Queries clients sent with their hash (automatic persisted queries).
    private let persisted = PersistedQueries()

    package init() {}

    /// The problems of a contract's `graphql:` section that only the library
    /// finds (its SDL, resolvers naming no field); none without one.
    package static func problems(of contract: Contract) -> [Diagnostic] {
        guard let definition = contract.graphql else { return [] }
        let schema: ServedSchema
        switch ServedSchema.build(definition) {
        case .success(let built): schema = built
        case .failure(let problems): return problems.diagnostics
        }
        // Every `push: {subscription: Type.field}` names a field of the schema's subscription type.
        let pushes = SocketPush.all(in: contract.endpoints, responses: contract.responses.values)
        var problems: [Diagnostic] = []
        var reported: Set<String> = []
        let type = schema.schema.subscriptionType
        let fields = (try? type?.fields().keys.map { $0 }) ?? []
        for push in pushes {
            guard let named = push.subscription, reported.insert("\(push.location)").inserted else { continue }
            let parts = named.split(separator: ".").map(String.init)
            guard let type else {
                problems.append(Diagnostic(at: push.location, "push names subscription '\(named)', but the GraphQL schema has no Subscription type"))
                continue
            }
            guard parts[0] == type.name, fields.contains(parts[1]) else {
                let known = fields.map { type.name + "." + $0 }
                problems.append(
                    Diagnostic(
                        at: push.location,
                        "push names subscription '\(named)', which is no field of the schema's \(type.name) type"
                            + Suggestion.hint(for: named, in: known)))
                continue
            }
        }
        // A subscription field's resolver runs for each event: a push of its own to a subscription would feed it forever.
        if let type {
            for id in definition.resolvers where id.hasPrefix(type.name + ".") {
                for response in contract.endpoint(id: id)?.responses ?? [] {
                    for push in response.pushes where push.subscription != nil {
                        problems.append(
                            Diagnostic(
                                at: push.location,
                                "\(id) runs for each event of its subscription; its push to '\(push.subscription!)' would make events without end"))
                    }
                }
            }
        }
        // `skip: true` passes over a subscription's event: only a subscription field's resolver may answer it.
        for id in definition.resolvers where !id.hasPrefix((type?.name ?? "\u{0}") + ".") {
            guard let endpoint = contract.endpoint(id: id) else { continue }
            for response in endpoint.responses {
                guard case .json(.constant(let body), _, _) = response.body, body["skip"] == .bool(true) else { continue }
                problems.append(
                    Diagnostic(
                        at: response.location,
                        "'skip: true' passes over a subscription's event; \(id) is not a field of the subscription type"
                            + (type.map { " (\($0.name))" } ?? "")))
            }
        }
        return problems
    }

    private func served(_ definition: GraphQLDefinition) -> Result<ServedSchema, SchemaProblems> {
        let key = definition.resolvers.joined(separator: ",") + "\n" + definition.schema
        if let known = schemas.withLock({ $0[key] }) { return .success(known) }
        let built = ServedSchema.build(definition)
        if case .success(let schema) = built {
            // One contract's schema at a time (a reload replaces it).
            schemas.withLock { $0 = [key: schema] }
        }
        return built
    }

    /// How the answer is written: the specification's media type, or plain JSON for older clients.
    enum Form {
        case graphQLResponse, json
        var contentType: String {
            self == .json ? "application/json; charset=utf-8" : "application/graphql-response+json; charset=utf-8"
        }
    }

    package func answer(_ request: RecordedRequest, definition: GraphQLDefinition, caller: any ContractCaller) async -> MockResponse {
        await respond(request, definition: definition, caller: caller).response
    }

    /// The door's answer, and why it refused the request before the contract saw it (nil when the contract did).
    package struct Served: Sendable {
        package var response: MockResponse
        /// The door's own refusal (a request it cannot read or run), for the journal: the contract journaled everything else.
        package var refusal: String?
    }

    /// As `answer`, saying whether the door itself refused the request, so that the server journals the refusal.
    ///
    /// With `contract`, a request's `Prefer` (`code=402`, `example=monthly-limit`) goes with the calls of the
    /// endpoints that document what it asks for (the operation's, resolvers'); one that none documents is refused.
    package func respond(
        _ request: RecordedRequest, definition: GraphQLDefinition, caller: any ContractCaller, contract: Contract? = nil
    ) async -> Served {
        func refused(_ response: MockResponse, _ why: String) -> Served { Served(response: response, refusal: why) }
        guard let form = Self.form(accepting: request.header("accept")) else {
            let message = "Accept names no form this server answers in; ask for application/graphql-response+json or application/json"
            return refused(Self.failure(message, status: 406, form: .json), message)
        }
        var parameters: Parameters
        switch Parameters.read(request) {
        case .success(let read): parameters = read
        case .failure(let refusal):
            return refused(Self.failure(refusal.message, status: refusal.status, form: form, headers: refusal.headers), refusal.message)
        }
        // Request errors (the document cannot be executed) are 400 in the specification's form, 200 in plain JSON.
        let requestError = form == .json ? 200 : 400
        if let refusal = resolvePersisted(&parameters, requestError: requestError, form: form) { return refusal }
        let prepared: Prepared
        switch prepare(parameters, definition: definition) {
        case .success(let ready): prepared = ready
        case .failure(let refusal):
            let why =
                (refusal.errors.first?.message.split(separator: "\n").first.map(String.init) ?? "the operation cannot run")
                + (refusal.errors.count > 1 ? " (and \(refusal.errors.count - 1) more)" : "")
            return refused(Self.answer(data: nil, errors: refusal.errors, status: refusal.serverFault ? 500 : requestError, form: form), why)
        }
        let operation = prepared.operation
        if request.method == "GET", operation.operation != .query {
            let message = "a \(operation.operation.rawValue) is sent with POST; GET carries queries only"
            return refused(Self.failure(message, status: 405, form: form, headers: [(name: "Allow", value: "POST")]), message)
        }
        if operation.operation == .subscription {
            let message = "subscriptions are answered over a WebSocket at this path (graphql-transport-ws), not over HTTP"
            return refused(Self.failure(message, status: requestError, form: form), message)
        }
        if let exceeded = OperationBounds.check(operation, in: prepared.document, definition: definition) {
            return refused(Self.answer(data: nil, errors: [exceeded], status: requestError, form: form), exceeded.message)
        }
        var preferring: (header: String, endpoints: Set<String>)?
        if let contract, let header = request.header("prefer"), let preference = Preference(header: header) {
            guard let endpoints = Self.documenting(preference, definition: definition, contract: contract) else {
                let message = "Prefer: \(preference.description) names a response neither the operation nor any resolver documents"
                return refused(Self.failure(message, status: 400, form: form), message)
            }
            preferring = (header, endpoints)
        }
        let call = prepared.call(caller: caller, definition: definition, headers: Self.forwarded(request.headers), preference: preferring)
        let opened = await Self.open(prepared, call: call)
        guard Self.admits(opened) else {
            // Refused as a whole (no token, a rate limit, an answer forced on the operation): that answer, as the contract has it.
            return Served(response: opened)
        }
        let (result, began) = await Self.execute(prepared, call: call, root: [:])
        var answer = Self.answer(
            data: began ? (result.data ?? .null) : Map?.none, errors: result.errors, status: began ? 200 : requestError, form: form)
        // The operation's own headers (a rate limit's) go out with the answer.
        answer.headers += opened.headers.filter { !["content-type", "content-length"].contains($0.name.lowercased()) }
        // Admitted, but it could not begin (its variables cannot be coerced): a request error of the door's.
        let why = began ? nil : result.errors.first.map { $0.message.split(separator: "\n").first.map(String.init) ?? $0.message }
        return Served(response: answer, refusal: why)
    }

    /// Apollo's automatic persisted queries: a hash alone runs the query
    /// kept for it; a query sent with its hash is kept. The refusal when the
    /// hash is not known yet, or is not the query's.
    private func resolvePersisted(_ parameters: inout Parameters, requestError: Int, form: Form) -> Served? {
        guard let hash = parameters.persistedHash else { return nil }
        if parameters.query.isEmpty {
            guard let known = persisted.query(for: hash) else {
                // The client sends the query with its hash next.
                let notFound = GraphQLError(message: "PersistedQueryNotFound", extensions: ["code": "PERSISTED_QUERY_NOT_FOUND"])
                return Served(
                    response: Self.answer(data: nil, errors: [notFound], status: requestError, form: form),
                    refusal: "persisted query \(hash) is not known yet (the client sends it with its query next)")
            }
            parameters.query = known
        } else if PersistedQueries.hash(parameters.query) != hash {
            let message = "provided sha does not match query"
            return Served(response: Self.failure(message, status: 400, form: form), refusal: "persisted query \(hash): \(message)")
        } else {
            persisted.keep(parameters.query, hash: hash)
        }
        return nil
    }

    /// The endpoints of the section (the operation's, resolvers') that document what `preference` asks for; nil when none does.
    private static func documenting(_ preference: Preference, definition: GraphQLDefinition, contract: Contract) -> Set<String>? {
        let endpoints = (["graphql"] + definition.resolvers).filter { id in
            contract.endpoint(id: id).map { preference.response(in: contract.documentedResponses(of: $0)) != nil } ?? false
        }
        return endpoints.isEmpty ? nil : Set(endpoints)
    }

    /// A request's document made ready to run: parsed, validated against
    /// the schema with every rule, its operation chosen; or the request
    /// errors that stop it (`serverFault` when the contract's schema is at fault).
    func prepare(_ parameters: Parameters, definition: GraphQLDefinition) -> Result<Prepared, PrepareFailure> {
        let document: Document
        do {
            document = try parse(source: Source(body: parameters.query, name: "GraphQL request"))
        } catch let error as GraphQLError {
            return .failure(PrepareFailure(errors: [error]))
        } catch {
            return .failure(PrepareFailure(errors: [GraphQLError(message: "the query cannot be read: \(error)")]))
        }
        let schema: GraphQLSchema
        switch served(definition) {
        case .success(let built): schema = built.schema
        case .failure(let problems):
            let message = "the contract's GraphQL schema cannot be served: " + problems.diagnostics.map(\.description).joined(separator: "; ")
            return .failure(PrepareFailure(errors: [GraphQLError(message: message)], serverFault: true))
        }
        let invalid = validate(schema: schema, ast: document)
        if !invalid.isEmpty { return .failure(PrepareFailure(errors: invalid)) }
        let operation: OperationDefinition
        switch Self.operation(in: document, named: parameters.operationName) {
        case .success(let found): operation = found
        case .failure(let refusal): return .failure(PrepareFailure(errors: [GraphQLError(message: refusal.message)]))
        }
        if operation.operation == .subscription, let problem = Self.singleRootField(operation, in: document) {
            return .failure(PrepareFailure(errors: [problem]))
        }
        return .success(Prepared(schema: schema, document: document, operation: operation, parameters: parameters))
    }

    /// The specification's "Single root field" rule for subscriptions, which
    /// the library's validation leaves out (its `SingleFieldSubscriptionsRule`
    /// is commented out in 4.3.0): one root field, not an introspection one.
    static func singleRootField(_ operation: OperationDefinition, in document: Document) -> GraphQLError? {
        let fields = rootFields(of: operation, in: document)
        let keys = Set(fields.map { $0.alias?.value ?? $0.name.value })
        let introspection = fields.contains { $0.name.value.hasPrefix("__") }
        let name = operation.name.map { "Subscription \"\($0.value)\"" } ?? "Anonymous Subscription"
        if keys.count != 1 {
            return GraphQLError(message: "\(name) must select only one top level field.", nodes: [operation])
        }
        if introspection {
            return GraphQLError(message: "\(name) must not select an introspection top level field.", nodes: [operation])
        }
        return nil
    }

    /// The fields an operation selects at its root, in order, its fragments spread (each once).
    static func rootFields(of operation: OperationDefinition, in document: Document) -> [Field] {
        var fragments: [String: FragmentDefinition] = [:]
        for case let fragment as FragmentDefinition in document.definitions { fragments[fragment.name.value] = fragment }
        var fields: [Field] = []
        var seen: Set<String> = []
        func collect(_ set: SelectionSet) {
            for selection in set.selections {
                switch selection {
                case let field as Field:
                    fields.append(field)
                case let spread as FragmentSpread:
                    if seen.insert(spread.name.value).inserted, let fragment = fragments[spread.name.value] { collect(fragment.selectionSet) }
                case let inline as InlineFragment:
                    collect(inline.selectionSet)
                default: break
                }
            }
        }
        collect(operation.selectionSet)
        return fields
    }

    /// The operation put to the contract as its `graphql` endpoint (auth,
    /// rate limits, a journal entry naming it): `{"ok": true}` from that
    /// endpoint lets it run; any other answer is the contract's refusal.
    static func open(_ prepared: Prepared, call: GraphQLCall) async -> MockResponse {
        let operation = prepared.operation
        return await call.caller.send(
            call.request(
                .object(
                    JSONObject([
                        ("graphql", "operation"), ("operation", call.operation), ("variables", .object(prepared.parameters.variables)),
                    ])),
                naming: "operation=" + FormEncoding.percentEncoded(operation.operation.rawValue + (operation.name.map { " " + $0.value } ?? "")),
                to: "graphql"))
    }

    /// Whether `opened` (the `graphql` endpoint's answer) lets the operation run.
    static func admits(_ opened: MockResponse) -> Bool {
        opened.status == 200 && opened.endpointID == "graphql" && (try? JSONReader.parse(opened.body)) == ["ok": true]
    }

    /// Runs a prepared operation from `root` (empty for a query or a
    /// mutation, `{field: event}` for one event of a subscription); whether
    /// execution began, so `data` is in the answer.
    static func execute(_ prepared: Prepared, call: GraphQLCall, root: OrderedDictionary<String, Map>) async -> (GraphQLResult, began: Bool) {
        var variables: [String: Map] = [:]
        for (name, value) in prepared.parameters.variables.pairs { variables[name] = MapJSON.map(value) }
        let result: GraphQLResult
        do {
            result = try await GraphQL.execute(
                schema: prepared.schema, documentAST: prepared.document, rootValue: Map.dictionary(root), context: call,
                variableValues: variables, operationName: prepared.parameters.operationName)
        } catch let error as GraphQLError {
            result = GraphQLResult(errors: [error])
        } catch {
            result = GraphQLResult(errors: [GraphQLError(error)])
        }
        // A field error that reached the root (a non-null field failed) leaves the library no data: execution
        // began, so `data` is null and the status 200. Errors without a path (variables that cannot be coerced)
        // stopped it before it began: a request error.
        let began = result.data != nil || result.errors.contains { !$0.path.elements.isEmpty }
        return (result, began)
    }

    /// The form an `Accept` asks for: the specification's media type when
    /// named, plain JSON when only it (or a wildcard) is; a missing `Accept`
    /// is plain JSON, as the specification advises for older clients.
    static func form(accepting accept: String?) -> Form? {
        guard let accept, !accept.trimmingCharacters(in: .whitespaces).isEmpty else { return .json }
        var best: (form: Form, quality: Double)?
        for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            guard quality > 0, let type = parts.first else { continue }
            let form: Form? =
                switch type {
                case "application/graphql-response+json": .graphQLResponse
                case "application/json", "application/*", "*/*": .json
                default: nil
                }
            guard let form else { continue }
            if best == nil || quality > best!.quality || (quality == best!.quality && form == .graphQLResponse) { best = (form, quality) }
        }
        return best?.form
    }

    /// The operation to run: the one named, or the only one.
    static func operation(in document: Document, named name: String?) -> Result<OperationDefinition, FailureReason> {
        let operations = document.definitions.compactMap { $0 as? OperationDefinition }
        if let name {
            guard let found = operations.first(where: { $0.name?.value == name }) else {
                return .failure(FailureReason("the document has no operation named '\(name)'"))
            }
            return .success(found)
        }
        guard operations.count == 1 else {
            return .failure(FailureReason("the document has \(operations.count) operations; name the one to run (operationName)"))
        }
        return .success(operations[0])
    }

    /// The header fields the contract's calls carry: all but those about this request's own body and form.
    static func forwarded(_ headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
        let own: Set<String> = ["content-type", "content-length", "transfer-encoding", "accept", "prefer", "expect", "connection", "upgrade"]
        return headers.filter { !own.contains($0.name.lowercased()) }
    }

    /// A GraphQL response: `errors` (each with its message, locations, path
    /// and extensions) and `data` when execution began.
    static func answer(data: Map?, errors: [GraphQLError], status: Int, form: Form) -> MockResponse {
        var members: [(String, JSON)] = []
        if !errors.isEmpty { members.append(("errors", .array(errors.map(errorJSON)))) }
        if let data { members.append(("data", MapJSON.json(data))) }
        return MockResponse(
            status: status, headers: [(name: "Content-Type", value: form.contentType)], body: JSONWriter.encode(.object(JSONObject(members))))
    }

    /// A request error of Doppel's own, as a GraphQL response with no `data`.
    static func failure(_ message: String, status: Int, form: Form, headers: [(name: String, value: String)] = []) -> MockResponse {
        var response = answer(data: nil, errors: [GraphQLError(message: message)], status: status, form: form)
        response.headers += headers
        return response
    }

    static func errorJSON(_ error: GraphQLError) -> JSON {
        var members: [(String, JSON)] = [("message", .string(error.message))]
        if !error.locations.isEmpty {
            members.append(
                ("locations", .array(error.locations.map { .object(JSONObject([("line", .int($0.line)), ("column", .int($0.column))])) })))
        }
        if !error.path.elements.isEmpty {
            members.append(
                (
                    "path",
                    .array(error.path.elements.map { element in if case .index(let i) = element { .int(i) } else { .string(element.description) } })
                ))
        }
        if !error.extensions.isEmpty {
            members.append(("extensions", .object(JSONObject(error.extensions.sorted { $0.key < $1.key }.map { ($0.key, MapJSON.json($0.value)) }))))
        }
        return .object(JSONObject(members))
    }
}
