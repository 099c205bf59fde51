import Foundation

/// The requests of scenario steps: HTTP (`request:`), MCP (`tool:`, `mcp:`) and GraphQL (`graphql:`).
extension ScenarioLoader {
    /// An MCP step (`tool: add_task` with `arguments`, or `mcp: tools/list`
    /// with `params`): the JSON-RPC request a client sends to the contract's
    /// MCP server (its `mcp:` section), with the step's number as its id.
    static func readMCPCall(
        _ reader: MappingReader, index: Int, contract: Contract, roots: Set<String>, loader: inout ContractLoader
    ) -> RequestTemplate? {
        let at = (reader["tool"] ?? reader["mcp"])!.location
        for key in ["request", "json", "text", "form", "multipart", "clock"] where reader.has(key) {
            loader.diagnostics.error(
                "an MCP step sends its JSON-RPC request itself; '\(key)' does not belong beside 'tool' or 'mcp'", at: reader[key]!.location)
        }
        guard let path = contract.endpoints.first(where: { $0.id == "mcp.initialize" })?.path.template else {
            loader.diagnostics.error("an MCP step calls the contract's MCP server, and the contract has no 'mcp:' section", at: at)
            return nil
        }
        var call: [(String, ValueTemplate)] = [("jsonrpc", .constant("2.0")), ("id", .constant(.int(index + 1)))]
        switch (reader["tool"], reader["mcp"]) {
        case (let tool?, nil):
            guard let name = tool.scalarText else {
                loader.diagnostics.error("'tool' must be a tool's name", at: tool.location)
                return nil
            }
            if reader.has("params") { loader.diagnostics.error("a 'tool' step takes 'arguments', not 'params'", at: reader["params"]!.location) }
            let arguments = reader["arguments"].flatMap { loader.compileTemplate($0, roots: roots) } ?? .constant(.object(JSONObject()))
            call += [
                ("method", .constant("tools/call")),
                ("params", .object(ObjectTemplate([("name", .constant(.string(name))), ("arguments", arguments)]))),
            ]
        case (nil, let method?):
            guard let name = method.scalarText else {
                loader.diagnostics.error("'mcp' must be a JSON-RPC method, such as tools/list", at: method.location)
                return nil
            }
            if reader.has("arguments") {
                loader.diagnostics.error("an 'mcp' step takes 'params', not 'arguments'", at: reader["arguments"]!.location)
            }
            call.append(("method", .constant(.string(name))))
            if let params = reader["params"].flatMap({ loader.compileTemplate($0, roots: roots) }) { call.append(("params", params)) }
        default:
            loader.diagnostics.error("a step calls one tool ('tool') or one method ('mcp'), not both", at: at)
            return nil
        }
        let headers = loader.diagnosticsEntries(reader, "headers").compactMap { entry in
            loader.compileTemplate(entry.value, roots: roots).map { (entry.name, $0) }
        }
        return RequestTemplate(
            method: "POST", path: .constant(.string(path)), query: [], headers: headers, body: .json(.object(ObjectTemplate(call))), timeout: 30)
    }

    /// A GraphQL step (`graphql:` an operation's text, with `variables` and
    /// `operation_name`): the POST a GraphQL client sends to the contract's
    /// GraphQL API (its `graphql:` section), asking for the GraphQL response
    /// media type. Its answer is checked with `expect` as any request's.
    static func readGraphQLCall(_ reader: MappingReader, contract: Contract, roots: Set<String>, loader: inout ContractLoader) -> RequestTemplate? {
        let node = reader["graphql"]!
        for key in ["request", "json", "text", "form", "multipart", "clock", "tool", "mcp", "arguments", "params"] where reader.has(key) {
            loader.diagnostics.error(
                "a GraphQL step sends its operation itself; '\(key)' does not belong beside 'graphql'", at: reader[key]!.location)
        }
        guard let definition = contract.graphql else {
            loader.diagnostics.error("a GraphQL step calls the contract's GraphQL API, and the contract has no 'graphql:' section", at: node.location)
            return nil
        }
        guard node.scalarText != nil, let query = loader.compileTemplate(node, roots: roots) else {
            if node.scalarText == nil { loader.diagnostics.error("'graphql' must be an operation's text", at: node.location) }
            return nil
        }
        var call: [(String, ValueTemplate)] = [("query", query)]
        if let name = reader["operation_name"] {
            guard let text = name.scalarText else {
                loader.diagnostics.error("'operation_name' must be an operation's name", at: name.location)
                return nil
            }
            call.append(("operationName", .constant(.string(text))))
        }
        if let variables = reader["variables"] {
            if variables.mappingPairs == nil, !(variables.scalarText?.contains("{{") ?? false) {
                loader.diagnostics.error("'variables' must be a mapping of the operation's variables", at: variables.location)
            }
            if let template = loader.compileTemplate(variables, roots: roots) { call.append(("variables", template)) }
        }
        var headers = loader.diagnosticsEntries(reader, "headers").compactMap { entry in
            loader.compileTemplate(entry.value, roots: roots).map { (entry.name, $0) }
        }
        if !headers.contains(where: { $0.0.lowercased() == "accept" }) {
            headers.append(("Accept", .constant("application/graphql-response+json")))
        }
        return RequestTemplate(
            method: "POST", path: .constant(.string(definition.path)), query: [], headers: headers,
            body: .json(.object(ObjectTemplate(call))), timeout: 30)
    }

    static func readRequest(_ reader: MappingReader, key: String = "request", roots: Set<String>, loader: inout ContractLoader) -> RequestTemplate? {
        guard let requestNode = reader[key], let line = requestNode.scalarText else { return nil }
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2, ContractLoader.methods.contains(parts[0].uppercased()), parts[1].hasPrefix("/") else {
            loader.diagnostics.error("'request' must be 'METHOD /path', like 'POST /api/v1/children'", at: requestNode.location)
            return nil
        }
        let pathNode = SourceNode(kind: .scalar(parts[1], plain: false), location: requestNode.contentLocation.advanced(by: parts[0].count + 1))
        guard let path = loader.compileTemplate(pathNode, roots: roots) else { return nil }
        func pairs(_ key: String) -> [(String, ValueTemplate)] {
            loader.diagnosticsEntries(reader, key).compactMap { entry in loader.compileTemplate(entry.value, roots: roots).map { (entry.name, $0) } }
        }
        let bodyKeys = ["json", "text", "form", "multipart"].filter { reader.has($0) }
        if bodyKeys.count > 1 {
            loader.diagnostics.error("a step sends one body: give only one of json, text, form and multipart", at: reader.node.location)
        }
        var body = RequestTemplate.Body.none
        if let node = reader["json"], let template = loader.compileTemplate(node, roots: roots) {
            body = .json(template)
        } else if let node = reader["text"], let template = loader.compileTemplate(node, roots: roots) {
            body = .text(template, contentType: reader["content_type"]?.scalarText ?? "text/plain; charset=utf-8")
        } else if reader.has("form") {
            body = .form(pairs("form"))
        } else if let partsNode = reader["multipart"] {
            var parts: [RequestTemplate.MultipartPart] = []
            for item in partsNode.sequenceItems ?? [] {
                guard let part = MappingReader(item, allowed: Self.partKeys, context: "a multipart part", diagnostics: &loader.diagnostics),
                    let name = part.required("name", diagnostics: &loader.diagnostics)?.scalarText,
                    let contentNode = part.required("content", diagnostics: &loader.diagnostics),
                    let content = loader.compileTemplate(contentNode, roots: roots)
                else { continue }
                parts.append(
                    RequestTemplate.MultipartPart(
                        name: name, filename: part.string("filename", diagnostics: &loader.diagnostics),
                        contentType: part.string("content_type", diagnostics: &loader.diagnostics), content: content))
            }
            if partsNode.sequenceItems == nil { loader.diagnostics.error("'multipart' must be a list of parts", at: partsNode.location) }
            body = .multipart(parts)
        }
        let timeout = readTimeout(reader, loader: &loader)
        return RequestTemplate(
            method: parts[0].uppercased(), path: path, query: pairs("query"), headers: pairs("headers"), body: body, timeout: timeout)
    }
}
