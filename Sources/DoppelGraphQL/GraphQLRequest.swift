import DoppelCore
import GraphQL
import OrderedCollections

/// A request's document, ready to run (`GraphQLService.prepare`).
struct Prepared: @unchecked Sendable {
    // The library's AST and schema are classes it does not mark Sendable; neither is changed once built.
    let schema: GraphQLSchema
    let document: Document
    let operation: OperationDefinition
    let parameters: Parameters

    /// `{type, name}` of the operation, as the contract's calls see it (`operation`).
    var described: JSON {
        .object(
            JSONObject([
                ("type", .string(operation.operation.rawValue)), ("name", operation.name.map { .string($0.value) } ?? .null),
            ]))
    }

    /// One run's calls of the contract (each run has its own `max_fields`).
    func call(
        caller: any ContractCaller, definition: GraphQLDefinition, headers: [(name: String, value: String)],
        preference: (header: String, endpoints: Set<String>)? = nil
    ) -> GraphQLCall {
        GraphQLCall(caller: caller, definition: definition, headers: headers, operation: described, preference: preference)
    }
}

/// Why a document cannot run: its request errors.
struct PrepareFailure: Error {
    let errors: [GraphQLError]
    var serverFault = false
}

/// A GraphQL request's parameters, from a GET's query or a POST's JSON body.
struct Parameters: Sendable {
    /// The operation's text; empty when a persisted query's hash stands for it.
    var query: String
    var operationName: String?
    var variables: JSONObject
    /// `extensions.persistedQuery.sha256Hash` (automatic persisted queries), if given.
    var persistedHash: String?

    struct Refusal: Error {
        let message: String
        let status: Int
        var headers: [(name: String, value: String)] = []
    }

    static func read(_ request: RecordedRequest) -> Result<Parameters, Refusal> {
        let query: JSON?
        let operationName: JSON?
        let variables: JSON?
        let extensions: JSON?
        switch request.method {
        case "GET":
            let items = request.queryItems
            query = items.last { $0.0 == "query" }.map { .string($0.1) }
            operationName = items.last { $0.0 == "operationName" }.map { .string($0.1) }
            var given: [String: JSON] = [:]
            for name in ["variables", "extensions"] {
                guard let text = items.last(where: { $0.0 == name })?.1, !text.isEmpty else { continue }
                guard let parsed = try? JSONReader.parse(text) else { return .failure(Refusal(message: "'\(name)' is not JSON", status: 400)) }
                given[name] = parsed
            }
            variables = given["variables"]
            extensions = given["extensions"]
        case "POST":
            let type = request.header("content-type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            guard type == "application/json" || type == "application/graphql-response+json" else {
                let given = type.map { "; this one is \($0)" } ?? "; this one has no Content-Type"
                return .failure(Refusal(message: "a GraphQL POST carries its request as application/json" + given, status: 415))
            }
            let body: JSON
            do {
                body = try JSONReader.parse(request.body)
            } catch {
                return .failure(Refusal(message: "the body is not JSON: \(error)", status: 400))
            }
            guard case .object(let object) = body else { return .failure(Refusal(message: "the body must be a JSON object", status: 400)) }
            query = object["query"]
            operationName = object["operationName"]
            variables = object["variables"]
            extensions = object["extensions"]
        default:
            return .failure(
                Refusal(message: "GraphQL is sent with POST (or GET for queries)", status: 405, headers: [(name: "Allow", value: "GET, POST")]))
        }
        return checked(query: query, operationName: operationName, variables: variables, extensions: extensions)
    }

    /// The parameters of a `subscribe` message's payload (graphql-transport-ws), as a POST body's.
    static func read(payload: JSONObject) -> Result<Parameters, Refusal> {
        checked(query: payload["query"], operationName: payload["operationName"], variables: payload["variables"])
    }

    private static func checked(query: JSON?, operationName: JSON?, variables: JSON?, extensions: JSON? = nil) -> Result<Parameters, Refusal> {
        var variables = variables
        var hash: String?
        if let persisted = extensions?["persistedQuery"] {
            guard persisted["version"] == 1 else {
                return .failure(Refusal(message: "Unsupported persisted query version; version 1 is spoken", status: 400))
            }
            guard let given = persisted["sha256Hash"]?.stringValue, given.count == 64, given.allSatisfy({ $0.isHexDigit && !$0.isUppercase })
            else {
                return .failure(Refusal(message: "'persistedQuery.sha256Hash' must be a SHA-256 in lowercase hex", status: 400))
            }
            hash = given
        }
        let text: String
        switch query {
        case .string(let given)? where !given.isEmpty: text = given
        case nil, .null?, .string?:
            guard hash != nil else { return .failure(Refusal(message: "the request has no 'query' (the operation's text)", status: 400)) }
            text = ""
        default:
            return .failure(Refusal(message: "'query' must be a string", status: 400))
        }
        guard text.utf8.count <= GraphQLService.maxQueryBytes else {
            return .failure(Refusal(message: "the query is \(text.utf8.count) bytes; at most \(GraphQLService.maxQueryBytes) are taken", status: 413))
        }
        var name: String?
        switch operationName {
        case nil, .null?: name = nil
        case .string(let given)?: name = given.isEmpty ? nil : given
        default: return .failure(Refusal(message: "'operationName' must be a string", status: 400))
        }
        switch variables {
        case nil, .null?: variables = .object(JSONObject())
        case .object?: break
        default: return .failure(Refusal(message: "'variables' must be a JSON object", status: 400))
        }
        return .success(Parameters(query: text, operationName: name, variables: variables?.objectValue ?? JSONObject(), persistedHash: hash))
    }
}
