import DoppelCore
import DoppelGraphQL
import DoppelServer
import Foundation

/// `doppel verify` of a contract's GraphQL API (`graphql:`): its schema by
/// introspection, a query per field of the query type, invalid operations,
/// and the operation without credentials, each answer held to the schema
/// and to the contract's own answer to the same request.
extension ProviderVerifier.Run {
    /// The contract's in-process engine as the GraphQL door's calls reach it (the oracle).
    struct OracleCalls: ContractCaller {
        let engine: MockEngine

        func send(_ request: RecordedRequest) async -> MockResponse {
            engine.respond(to: request)
        }
    }

    /// Every check of the GraphQL API: none without a `graphql:` section, or when other endpoints were asked for.
    mutating func graphQLChecks() async -> [ProviderVerifier.Check] {
        guard let definition = contract.graphql, let endpoint = contract.endpoint(id: "graphql") else { return [] }
        let asked = options.endpointIDs
        let all = asked.isEmpty || asked.contains("graphql")
        let service = GraphQLService()
        var checks: [ProviderVerifier.Check] = []
        if all { checks.append(await schemaCheck(definition, endpoint: endpoint)) }
        for probe in GraphQLProbe.probes(for: definition, seed: options.seed) where all || asked.contains(probe.field) {
            checks.append(await probeCheck(probe, definition: definition, endpoint: endpoint, service: service))
        }
        guard all else { return checks }
        for (name, body) in Self.invalidOperations {
            checks.append(await invalidCheck(name, body: body, definition: definition, endpoint: endpoint, service: service))
        }
        if !endpoint.auth.isEmpty {
            checks.append(await withoutCredentials(definition: definition, endpoint: endpoint, service: service))
        }
        return checks
    }

    /// A GraphQL request to the section's path, with the credentials and session the side's `graphql` request carries.
    func graphQLRequest(_ body: JSON, endpoint: Endpoint, oracle: Bool, credentials: Bool = true) -> RecordedRequest {
        var request = self.request(for: endpoint, side: oracle ? mirror : target, oracle: oracle, credentials: credentials)
        request.headers.removeAll { ["content-type", "accept", "content-length"].contains($0.name.lowercased()) }
        // (Lowercase: the oracle's engine reads names as the server's transport gives them.)
        request.headers += [
            (name: "content-type", value: "application/json"),
            (name: "accept", value: "application/graphql-response+json, application/json;q=0.9"),
        ]
        request.body = JSONWriter.encode(body)
        return request
    }

    // MARK: Checks

    /// The provider's schema, read by introspection, keeps everything the contract's does.
    mutating func schemaCheck(_ definition: GraphQLDefinition, endpoint: Endpoint) async -> ProviderVerifier.Check {
        var check = ProviderVerifier.Check(endpointID: "graphql", name: "schema by introspection", outcome: .notReached, summary: "")
        let request = graphQLRequest(["query": .string(IntrospectedSchema.query)], endpoint: endpoint, oracle: false)
        guard let answer = await send(request, for: &check) else { return check }
        check.status = answer.status
        check.details = [curl(request)]
        let body = try? JSONReader.parse([UInt8](answer.body))
        switch body.map(IntrospectedSchema.sdl(from:)) ?? .failure(FailureReason("the answer is not JSON")) {
        case .failure(let reason):
            if let refusal = body?["errors"]?.arrayValue?.first?["message"]?.stringValue {
                check.summary = "the provider does not answer introspection (\(answer.status): \(refusal)); its schema is not compared"
            } else {
                check.outcome = .failed
                check.summary = "the introspection answer (\(answer.status)) cannot be read: \(reason.message)"
                check.details += bodyLines(answer)
            }
        case .success(let sdl):
            guard let changes = SchemaDiff.changes(from: definition.schema, to: sdl) else {
                check.outcome = .failed
                check.summary = "the provider's schema, as introspected, cannot be built"
                check.details.append(sdl)
                return check
            }
            let breaking = changes.filter(\.breaking)
            check.outcome = breaking.isEmpty ? .passed : .failed
            check.summary =
                breaking.isEmpty
                ? "the provider's schema keeps the contract's" + (changes.isEmpty ? "" : " (\(changes.count) compatible differences)")
                : "\(breaking.count) of the contract's schema differ in the provider's, breaking clients written to the contract"
            check.details += changes.map { ($0.breaking ? "breaking: " : "compatible: ") + "\($0.kind) \($0.place): \($0.detail)" }
        }
        return check
    }

    /// One query type field: the answer keeps the schema and the selection,
    /// and the field's outcome is one the contract documents (a value, null
    /// where the contract answers null for an unknown id, an error of a code
    /// the contract gives the field).
    mutating func probeCheck(
        _ probe: GraphQLProbe, definition: GraphQLDefinition, endpoint: Endpoint, service: GraphQLService
    ) async
        -> ProviderVerifier.Check
    {
        var check = ProviderVerifier.Check(
            endpointID: probe.field, name: probe.unknownID ? "valid query, unknown id" : "valid query", outcome: .notReached, summary: "")
        let body = JSON.object(JSONObject([("query", .string(probe.query)), ("variables", probe.variables)]))
        let oracleAnswer = await service.answer(
            graphQLRequest(body, endpoint: endpoint, oracle: true), definition: definition, caller: OracleCalls(engine: oracle))
        let expected = (try? JSONReader.parse(oracleAnswer.body)).flatMap(probe.outcome(in:))
        let request = graphQLRequest(body, endpoint: endpoint, oracle: false)
        guard let answer = await send(request, for: &check) else { return check }
        check.status = answer.status
        check.details = [curl(request)]
        guard let json = try? JSONReader.parse([UInt8](answer.body)) else {
            check.outcome = .failed
            check.summary = "the answer (\(answer.status)) is not JSON"
            check.details += bodyLines(answer)
            return check
        }
        var problems = probe.problems(in: json)
        if answer.status != 200 { problems.insert("the status is \(answer.status); a query that runs is answered 200", at: 0) }
        let got = probe.outcome(in: json)
        let codes = documentedCodes(of: probe.field)
        switch (expected, got) {
        case (_, .error(let code, _)?):
            let known = code.map { codes.contains($0) } ?? false
            if case .error(let expectedCode, _)? = expected, expectedCode == code {
                break
            } else if !known {
                let documented = codes.isEmpty ? "none" : codes.sorted().joined(separator: ", ")
                problems.append(
                    "\(probe.name) failed with \(got!), a code the contract does not give \(probe.field) (it gives: \(documented); the contract answers \(expected?.description ?? "nothing"))"
                )
            }
        case (.null?, .value?) where probe.unknownID:
            problems.append("the contract answers null for an id no record has; the provider answered a value")
        default:
            break
        }
        check.outcome = problems.isEmpty ? .passed : .failed
        check.summary =
            problems.isEmpty
            ? "\(probe.name) answered \(got?.description ?? "nothing"), as the schema and the contract have it"
            : "\(problems.count) problem\(problems.count == 1 ? "" : "s"): \(problems[0])"
        check.details += problems.dropFirst().map { $0 } + bodyLines(answer)
        return check
    }

    /// Operations no GraphQL server may run: each must be a request error (errors, no data, no 5xx).
    static let invalidOperations: [(String, JSON)] = [
        ("unknown field", ["query": "query Verify_unknown { __typename doppelVerifyNoSuchField }"]),
        ("syntax error", ["query": "query Verify_syntax { __typename "]),
        (
            "variable of the wrong type",
            ["query": "query Verify_variable($flag: Boolean!) { __typename @include(if: $flag) }", "variables": ["flag": "yes"]]
        ),
    ]

    mutating func invalidCheck(
        _ name: String, body: JSON, definition: GraphQLDefinition, endpoint: Endpoint, service: GraphQLService
    ) async
        -> ProviderVerifier.Check
    {
        var check = ProviderVerifier.Check(endpointID: "graphql", name: name, outcome: .notReached, summary: "")
        let oracleAnswer = await service.answer(
            graphQLRequest(body, endpoint: endpoint, oracle: true), definition: definition, caller: OracleCalls(engine: oracle))
        let request = graphQLRequest(body, endpoint: endpoint, oracle: false)
        guard let answer = await send(request, for: &check) else { return check }
        check.status = answer.status
        check.details = [curl(request)]
        let json = try? JSONReader.parse([UInt8](answer.body))
        var problems: [String] = []
        if answer.status >= 500 { problems.append("the status is \(answer.status), a server error") }
        if json?["errors"]?.arrayValue?.first?["message"]?.stringValue == nil { problems.append("the answer has no errors with a message") }
        if let data = json?["data"], !data.isNull { problems.append("the answer has data; a request error has none") }
        check.outcome = problems.isEmpty ? .passed : .failed
        check.summary =
            problems.isEmpty
            ? "refused with \(answer.status) and errors, as a request error is (the contract: \(oracleAnswer.status))"
            : problems.joined(separator: "; ")
        check.details += bodyLines(answer)
        return check
    }

    /// The operation without credentials gets the contract's refusal status.
    mutating func withoutCredentials(definition: GraphQLDefinition, endpoint: Endpoint, service: GraphQLService) async -> ProviderVerifier.Check {
        var check = ProviderVerifier.Check(endpointID: "graphql", name: "no credentials", outcome: .notReached, summary: "")
        let body: JSON = ["query": "query Verify_credentials { __typename }"]
        let oracleAnswer = await service.answer(
            graphQLRequest(body, endpoint: endpoint, oracle: true, credentials: false), definition: definition,
            caller: OracleCalls(engine: oracle))
        let request = graphQLRequest(body, endpoint: endpoint, oracle: false, credentials: false)
        guard let answer = await send(request, for: &check) else { return check }
        check.status = answer.status
        check.statuses = [oracleAnswer.status]
        check.details = [curl(request)]
        check.outcome = answer.status == oracleAnswer.status ? .passed : .failed
        check.summary =
            answer.status == oracleAnswer.status
            ? "refused with \(answer.status), as the contract refuses it"
            : "the contract refuses an operation without credentials with \(oracleAnswer.status); the provider answered \(answer.status)"
        if check.outcome == .failed { check.details += bodyLines(answer) }
        return check
    }

    /// The `extensions.code`s of the errors a resolver's responses give (written as constants).
    func documentedCodes(of field: String) -> Set<String> {
        guard let endpoint = contract.endpoint(id: field) else { return [] }
        var codes: Set<String> = []
        func member(_ template: ValueTemplate?, _ key: String) -> ValueTemplate? {
            switch template {
            case .constant(let json)?: json[key].map(ValueTemplate.constant)
            case .object(let object)?: object.pairs.first { $0.0 == key }?.1
            default: nil
            }
        }
        for response in contract.documentedResponses(of: endpoint) {
            guard case .json(let body, _, _) = response.body,
                let code = member(member(member(body, "error"), "extensions"), "code")?.constantValue?.stringValue
            else { continue }
            codes.insert(code)
        }
        return codes
    }
}
