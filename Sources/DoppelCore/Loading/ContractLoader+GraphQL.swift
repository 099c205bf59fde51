import Foundation

/// `graphql:`: a GraphQL API the contract describes (an SDL schema, and
/// resolvers per `Type.field` answered by responses chosen as an endpoint's
/// are), served at `path` by the GraphQL door (DoppelGraphQL).
///
/// As `mcp:`, the section is rewritten into endpoints before they are read:
/// `graphql` for the operation (its auth and rate limits act once per
/// request, and its journal entry names the operation) and one per resolver
/// (`Type.field`), each picked by `match` from the call the door makes. So
/// a resolver's answers are chosen by the same `when`, `let`, state and
/// effects as an HTTP response's, each call one transaction of its
/// session; calls are journaled, counted by verify and coverage, and can be
/// forced (`POST /__doppel/next`) like any endpoint's. The SDL itself is
/// parsed and checked by the door, which owns the GraphQL library.
extension ContractLoader {
    static let graphqlKeys: Set<String> = ["path", "schema", "auth", "resolvers", "max_depth", "max_fields"]
    static let graphqlResolverKeys: Set<String> = ["description", "let", "value", "error", "status", "responses", "push"]
    static let graphqlResponseKeys: Set<String> = [
        "name", "when", "let", "effects", "value", "error", "status", "description", "push", "skip",
    ]
    static let graphqlErrorKeys: Set<String> = ["message", "extensions"]

    /// The endpoints `graphql:` stands for, as (id, node) entries of `endpoints`, and the section itself.
    mutating func graphqlEndpoints(_ node: SourceNode?) -> (entries: [(name: String, node: SourceNode)], definition: GraphQLDefinition?) {
        guard let node else { return ([], nil) }
        guard let section = MappingReader(node, allowed: Self.graphqlKeys, context: "'graphql'", diagnostics: &diagnostics) else { return ([], nil) }
        let make = NodeMaker(at: node)
        let path = section.string("path", diagnostics: &diagnostics) ?? "/graphql"
        guard path.hasPrefix("/"), !path.contains("{"), !path.contains("?") else {
            diagnostics.error("'path' of 'graphql' must be a path like /graphql, without parameters", at: section["path"]?.location ?? node.location)
            return ([], nil)
        }
        guard let schemaNode = section.required("schema", diagnostics: &diagnostics), let schema = readGraphQLSchema(schemaNode) else {
            return ([], nil)
        }
        var limits = (depth: GraphQLDefinition.defaultMaxDepth, fields: GraphQLDefinition.defaultMaxFields)
        for (key, bound) in [("max_depth", 1_000), ("max_fields", 1_000_000)] {
            guard let given = section.int(key, diagnostics: &diagnostics) else { continue }
            guard (1...bound).contains(given) else {
                diagnostics.error("'\(key)' of 'graphql' must be from 1 to \(bound)", at: section[key]!.location)
                continue
            }
            if key == "max_depth" { limits.depth = given } else { limits.fields = given }
        }
        let request = make.text("POST \(path)")
        func endpoint(_ pairs: [(String, SourceNode)]) -> SourceNode {
            make.mapping([("request", request)] + (section["auth"].map { [("auth", $0)] } ?? []) + pairs)
        }
        var entries: [(name: String, node: SourceNode)] = [
            (
                "graphql",
                endpoint([
                    ("summary", make.text("GraphQL operation at \(path)")), ("match", make.plain("body.graphql == 'operation'")),
                    (
                        "responses",
                        make.sequence([make.mapping([("status", make.plain("200")), ("body", make.mapping([("ok", make.plain("true"))]))])])
                    ),
                ])
            )
        ]
        // Subscriptions: a WebSocket at the same path speaking graphql-transport-ws, open to anyone (browsers
        // cannot send headers with an upgrade); each operation sent over it is the `graphql` endpoint's
        // request, with the upgrade's headers and the `connection_init` payload's, so auth acts there.
        entries.append(
            (
                GraphQLDefinition.socketEndpointID,
                make.mapping([
                    ("request", make.text("GET \(path)")), ("auth", make.plain("none")),
                    ("summary", make.text("GraphQL subscriptions at \(path) (graphql-transport-ws)")),
                    ("websocket", make.mapping([("protocols", make.sequence([make.text(GraphQLDefinition.socketProtocol)]))])),
                ])
            ))
        var resolvers: [String] = []
        for entry in section.entries("resolvers", diagnostics: &diagnostics) {
            guard let pairs = graphqlResolver(entry, make: make) else { continue }
            entries.append((entry.name, endpoint(pairs)))
            resolvers.append(entry.name)
        }
        let definition = GraphQLDefinition(
            path: path, schema: schema.text, schemaOrigin: schema.origin, schemaIsFile: schema.isFile, resolvers: resolvers,
            maxDepth: limits.depth, maxFields: limits.fields)
        return (entries, definition)
    }

    /// A resolver (`Type.field`) of the section: the pairs of its endpoint, or nil (its problems reported).
    mutating func graphqlResolver(_ entry: (name: String, keyNode: SourceNode, value: SourceNode), make: NodeMaker) -> [(String, SourceNode)]? {
        let parts = entry.name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ Self.isGraphQLName($0) }) else {
            diagnostics.error("a resolver is named 'Type.field' (like 'Query.story'), not '\(entry.name)'", at: entry.keyNode.location)
            return nil
        }
        guard
            let reader = MappingReader(
                entry.value, allowed: Self.graphqlResolverKeys, context: "resolver '\(entry.name)'", diagnostics: &diagnostics)
        else { return nil }
        var answers: [SourceNode] = []
        if let list = reader["responses"] {
            if reader.has("value") || reader.has("error") {
                diagnostics.error("resolver '\(entry.name)' has 'responses', so its 'value' or 'error' belongs in one of them", at: list.location)
            }
            guard let items = list.sequenceItems, !items.isEmpty else {
                diagnostics.error("'responses' of resolver '\(entry.name)' must be a list of responses", at: list.location)
                return nil
            }
            for item in items {
                if let answer = graphqlResponse(item, resolver: entry.name, make: make) { answers.append(answer) }
            }
        } else if reader.has("value") || reader.has("error") {
            if let answer = graphqlResponse(entry.value, resolver: entry.name, make: make, single: true) { answers.append(answer) }
        } else {
            diagnostics.error("resolver '\(entry.name)' needs a 'value', an 'error' or 'responses'", at: entry.keyNode.location)
            return nil
        }
        var pairs: [(String, SourceNode)] = [
            ("summary", make.text(reader.string("description", diagnostics: &diagnostics) ?? "GraphQL field \(entry.name)")),
            ("match", make.plain("body.graphql == '\(entry.name)'")),
        ]
        // `args`, `parent` and `operation` first, so that the resolver's own `let`s may use them.
        var lets: [(String, SourceNode)] = [
            ("args", make.plain("body.args ?? {}")), ("parent", make.plain("body.parent")), ("operation", make.plain("body.operation")),
        ]
        if let own = reader["let"]?.mappingPairs { lets += own.compactMap { pair in pair.key.scalarText.map { ($0, pair.value) } } }
        pairs.append(("let", make.mapping(lets)))
        pairs.append(("responses", make.sequence(answers)))
        return pairs
    }

    /// A GraphQL name (`[_A-Za-z][_0-9A-Za-z]*`).
    package static func isGraphQLName(_ text: some StringProtocol) -> Bool {
        guard let first = text.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else { return false }
        return text.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }

    /// `schema:`: SDL written in the contract, or a `.graphql` file beside it (watched by `--watch`).
    private mutating func readGraphQLSchema(_ node: SourceNode) -> (text: String, origin: SourceLocation, isFile: Bool)? {
        guard let text = node.scalarText, !text.isEmpty else {
            diagnostics.error("'schema' of 'graphql' must be SDL text or the name of a .graphql file beside the contract", at: node.location)
            return nil
        }
        let isFileName = !text.contains("\n") && [".graphql", ".graphqls", ".gql"].contains { text.lowercased().hasSuffix($0) }
        guard isFileName else {
            // A block scalar's (`|`) text starts on the line after it, at its indentation.
            var origin = node.location
            let lines = (try? String(contentsOfFile: file, encoding: .utf8))?.split(separator: "\n", omittingEmptySubsequences: false) ?? []
            if origin.line < lines.count, let marker = lines[origin.line - 1].dropFirst(origin.column - 1).first, marker == "|" || marker == ">" {
                origin.line += 1
                origin.column = lines[origin.line - 1].prefix { $0 == " " }.count + 1
            }
            return (text, origin, false)
        }
        guard let url = fileInFolder(text) else {
            diagnostics.error("schema file '\(text)' resolves outside the contract's folder", at: node.location)
            return nil
        }
        bodyFiles.withLock { _ = $0.insert(url.path) }
        switch SourceReader.readBytes(url.path, what: "schema file") {
        case .success(let bytes):
            guard let sdl = String(validating: bytes, as: UTF8.self) else {
                diagnostics.error("schema file '\(text)' is not UTF-8 text", at: node.location)
                return nil
            }
            // Named as the contract was (relative when it was), in the contract's folder.
            let folder = file.contains("/") ? String(file[...file.lastIndex(of: "/")!]) : ""
            return (sdl, SourceLocation(file: folder + text, line: 1, column: 1), true)
        case .failure(let reason):
            diagnostics.error("cannot read schema file '\(text)': \(reason.message)", at: node.location)
            return nil
        }
    }

    /// One of a resolver's responses, as an endpoint's: its `when`, `let`
    /// and `effects` as written; its `value` (the field's
    /// value, templates rendered) or `error` (a GraphQL error, the field
    /// null) wrapped for the door. `status` is what the answer is forced and
    /// covered by: 200 for a value, 400 for an error unless given.
    private mutating func graphqlResponse(_ item: SourceNode, resolver: String, make: NodeMaker, single: Bool = false) -> SourceNode? {
        let allowed = single ? Self.graphqlResolverKeys : Self.graphqlResponseKeys
        guard let reader = MappingReader(item, allowed: allowed, context: "a response of resolver '\(resolver)'", diagnostics: &diagnostics)
        else { return nil }
        var pairs: [(String, SourceNode)] = []
        for key in ["name", "when", "let", "effects", "description", "push"] where !single || key == "description" || key == "push" {
            if let value = reader[key] { pairs.append((key, value)) }
        }
        if reader.has("value"), let error = reader["error"] {
            diagnostics.error("a response of resolver '\(resolver)' has a 'value' or an 'error', not both", at: error.location)
            return nil
        }
        var status = 200
        if let skip = reader.bool("skip", diagnostics: &diagnostics) {
            // A subscription field's resolver passes over an event (DoppelGraphQL checks it is one).
            guard skip, !reader.has("value"), !reader.has("error") else {
                diagnostics.error(
                    "'skip' of a response of resolver '\(resolver)' is written 'skip: true', without a 'value' or an 'error'",
                    at: reader["skip"]!.location)
                return nil
            }
            pairs.append(("body", NodeMaker(at: item).mapping([("skip", make.plain("true"))])))
        } else if let error = reader["error"] {
            status = 400
            guard
                let errorReader = MappingReader(
                    error, allowed: Self.graphqlErrorKeys, context: "an error of resolver '\(resolver)'", diagnostics: &diagnostics),
                errorReader.required("message", diagnostics: &diagnostics) != nil
            else { return nil }
            pairs.append(("body", make.mapping([("error", error)])))
        } else if let value = reader["value"] {
            pairs.append(("body", make.mapping([("value", value)])))
        } else {
            diagnostics.error("a response of resolver '\(resolver)' needs a 'value', an 'error' or 'skip: true'", at: item.location)
            return nil
        }
        if let given = reader.int("status", diagnostics: &diagnostics) {
            guard (200...599).contains(given) else {
                diagnostics.error("'status' of a response of resolver '\(resolver)' must be from 200 to 599", at: reader["status"]!.location)
                return nil
            }
            status = given
        }
        pairs.append(("status", make.plain(String(status))))
        // Placed where the response is written, so what is said of it later (by the schema's checks) points there.
        return NodeMaker(at: item).mapping(pairs)
    }
}
