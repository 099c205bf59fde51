/// `grpc:`: gRPC services the contract answers, their messages described by
/// a `.proto` file beside it, served over HTTP/2 on the server's own port.
///
/// As `mcp:` and `graphql:`, the section is rewritten into endpoints before
/// they are read: one per method, `POST /SERVICE/METHOD`, whose id is
/// `SERVICE/METHOD`. The door decodes a call's message into JSON (the
/// protobuf JSON mapping) as the request's `body` and its metadata as the
/// request's headers, so a method's answers are chosen by the same `when`,
/// `let`, state and effects as an HTTP response's; its calls are journaled,
/// counted by verify and coverage, and kept per `Doppel-Session` (a
/// metadata entry) like any request's.
///
/// A response's gRPC status becomes the answer's `grpc-status` header and
/// the HTTP status it is covered and forced by (`RESOURCE_EXHAUSTED` 429);
/// its `reply` is the body, its `replies` a stream of JSON lines (one
/// message each, `interval` apart), and an error's `message` and `details`
/// a `google.rpc.Status` body the door sends as `grpc-message` and
/// `grpc-status-details-bin`.
extension ContractLoader {
    static let grpcKeys: Set<String> = ["proto", "auth", "services"]
    static let grpcMethodKeys: Set<String> = ["description", "let", "responses", "stream"]
    static let grpcResponseKeys: Set<String> = [
        "name", "when", "let", "effects", "delay", "fault", "description", "status", "message", "details", "reply", "replies", "interval",
        "metadata", "push",
    ]

    /// The endpoints `grpc:` stands for, as (id, node) entries of `endpoints`, and the section itself.
    mutating func grpcEndpoints(_ node: SourceNode?) -> (entries: [(name: String, node: SourceNode)], definition: GRPCDefinition?) {
        guard let node else { return ([], nil) }
        guard let section = MappingReader(node, allowed: Self.grpcKeys, context: "'grpc'", diagnostics: &diagnostics) else { return ([], nil) }
        guard let protoNode = section.required("proto", diagnostics: &diagnostics) else { return ([], nil) }
        guard let proto = protoNode.scalarText, proto.hasSuffix(".proto") else {
            diagnostics.error("'proto' of 'grpc' must name a .proto file beside the contract", at: protoNode.location)
            return ([], nil)
        }
        guard let url = fileInFolder(proto) else {
            diagnostics.error("'\(proto)' resolves outside the contract's folder", at: protoNode.location)
            return ([], nil)
        }
        // Watched by `--watch` as a body file is.
        bodyFiles.withLock { _ = $0.insert(url.path) }
        let make = NodeMaker(at: node)
        var entries: [(name: String, node: SourceNode)] = []
        var methods: [GRPCDefinition.Method] = []
        var streams: [String: SocketDefinition] = [:]
        var named = 0
        for service in section.entries("services", diagnostics: &diagnostics) {
            named += 1
            guard Self.isProtoFullName(service.name) else {
                diagnostics.error(
                    "a service is named by its full name, package and all (like 'tales.v1.Tales'), not '\(service.name)'",
                    at: service.keyNode.location)
                continue
            }
            for method in MappingReader.entries(of: service.value, context: "service '\(service.name)'", diagnostics: &diagnostics) {
                guard Self.isProtoFullName(method.name), !method.name.contains(".") else {
                    diagnostics.error("'\(method.name)' is not a method name of service '\(service.name)'", at: method.keyNode.location)
                    continue
                }
                let path = service.name + "/" + method.name
                guard let (pairs, stream) = grpcMethod(method, path: path, make: make) else { continue }
                streams[path] = stream
                let auth = section["auth"].map { [("auth", $0)] } ?? []
                entries.append((path, make.mapping([("request", make.text("POST /\(path)"))] + auth + pairs)))
                methods.append(.init(service: service.name, name: method.name, location: method.keyNode.location))
            }
        }
        if named == 0, section["services"] != nil {
            diagnostics.error("'services' of 'grpc' names no service to answer", at: section["services"]!.location)
        }
        var definition = GRPCDefinition(proto: proto, protoLocation: protoNode.location, folder: directory.path, methods: methods)
        definition.streams = streams
        return (entries, definition)
    }

    /// A protobuf full name: identifiers joined by dots.
    static func isProtoFullName(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return !parts.isEmpty && parts.allSatisfy { isGraphQLName($0) }
    }

    /// A method: the pairs of its endpoint and its stream's rules, or nil (its problems reported).
    private mutating func grpcMethod(
        _ method: (name: String, keyNode: SourceNode, value: SourceNode), path: String, make: NodeMaker
    ) -> ([(String, SourceNode)], SocketDefinition?)? {
        guard let reader = MappingReader(method.value, allowed: Self.grpcMethodKeys, context: "method '\(path)'", diagnostics: &diagnostics)
        else { return nil }
        // A stream's rules see the method's `let`s, as a socket's see its endpoint's.
        let lets = reader["let"]?.mappingPairs?.compactMap { $0.key.scalarText } ?? []
        let stream = reader["stream"].flatMap { readSocket($0, endpointID: path, endpointLets: lets, grpc: true) }
        if reader.has("stream"), stream == nil { return nil }
        // A method with rules opens its stream with an OK answer unless its responses say otherwise.
        guard
            let list = stream == nil
                ? reader.required("responses", diagnostics: &diagnostics)
                : reader["responses"] ?? NodeMaker(at: method.value).sequence([NodeMaker(at: method.value).mapping([])])
        else { return nil }
        guard let items = list.sequenceItems, !items.isEmpty else {
            diagnostics.error("'responses' of method '\(path)' must be a list of responses", at: list.location)
            return nil
        }
        let answers = items.compactMap { grpcResponse($0, method: path, make: make, opensStream: stream != nil) }
        guard answers.count == items.count else { return nil }
        var pairs: [(String, SourceNode)] = [
            ("summary", make.text(reader.string("description", diagnostics: &diagnostics) ?? "gRPC method \(path)"))
        ]
        if let lets = reader["let"] { pairs.append(("let", lets)) }
        pairs.append(("responses", make.sequence(answers)))
        return (pairs, stream)
    }

    /// One of a method's responses, as an endpoint's: its `when`, `let`,
    /// `effects`, `delay` and `fault` as written; its status, metadata and
    /// messages put where the door reads them.
    private mutating func grpcResponse(_ item: SourceNode, method: String, make: NodeMaker, opensStream: Bool) -> SourceNode? {
        guard let reader = MappingReader(item, allowed: Self.grpcResponseKeys, context: "a response of method '\(method)'", diagnostics: &diagnostics)
        else { return nil }
        if opensStream, let key = ["reply", "replies", "interval"].first(where: { reader.has($0) }) {
            diagnostics.error(
                "method '\(method)' sends its messages by the rules of its 'stream:' (on_connect, on_message, ...); its responses only open or refuse the call, so they have no '\(key)'",
                at: reader[key]!.location)
            return nil
        }
        let at = NodeMaker(at: item)
        var pairs: [(String, SourceNode)] = []
        for key in ["name", "when", "let", "effects", "delay", "fault", "description", "push"] {
            if let value = reader[key] { pairs.append((key, value)) }
        }
        var code = (name: "OK", code: 0, http: 200)
        if let status = reader["status"] {
            let text = status.scalarText ?? ""
            guard let known = GRPCDefinition.codes.first(where: { $0.name == text || String($0.code) == text }) else {
                diagnostics.error(
                    "'status' of a gRPC response must be a status code's name (like RESOURCE_EXHAUSTED) or number, not '\(text)'",
                    at: status.location)
                return nil
            }
            code = known
        }
        pairs.append(("status", at.plain(String(code.http))))
        var headers: [(String, SourceNode)] = [("grpc-status", at.text(String(code.code)))]
        if let metadata = reader["metadata"] {
            guard let entries = grpcMetadata(metadata) else { return nil }
            headers += entries
        }
        pairs.append(("headers", at.mapping(headers)))
        let messages = ["reply", "replies"].filter { reader.has($0) }
        if code.code == 0 {
            for key in ["message", "details"] where reader.has(key) {
                diagnostics.error("'\(key)' belongs to a response whose 'status' is an error, not OK", at: reader[key]!.location)
                return nil
            }
            guard messages.count < 2 else {
                diagnostics.error("a response of method '\(method)' has a 'reply' or 'replies', not both", at: item.location)
                return nil
            }
            if let replies = reader["replies"] {
                // One message per JSON line, `interval` apart: the door sends each as a message of the stream.
                pairs.append(("content_type", at.text("application/jsonl")))
                pairs.append(("items", replies))
                if let interval = reader["interval"] { pairs.append(("interval", interval)) }
            } else {
                if reader.has("interval") {
                    diagnostics.error("'interval' belongs to 'replies', a stream's messages", at: reader["interval"]!.location)
                    return nil
                }
                pairs.append(("body", reader["reply"] ?? at.mapping([])))
            }
        } else {
            if let first = messages.first {
                diagnostics.error(
                    "'\(first)' belongs to an OK response; an error's answer is its 'message' and 'details'", at: reader[first]!.location)
                return nil
            }
            var status: [(String, SourceNode)] = [("code", at.plain(String(code.code)))]
            status.append(("message", reader["message"] ?? at.text("")))
            if let details = reader["details"] {
                guard details.sequenceItems != nil else {
                    diagnostics.error(
                        "'details' of a gRPC response must be a list of messages, each with its '@type'", at: details.location)
                    return nil
                }
                status.append(("details", details))
            }
            pairs.append(("body", at.mapping(status)))
        }
        // At the user's response, where its problems are reported.
        return at.mapping(pairs)
    }

    /// A response's `metadata`: its entries as headers, or nil (its problem reported).
    private mutating func grpcMetadata(_ metadata: SourceNode) -> [(String, SourceNode)]? {
        guard let pairs = metadata.mappingPairs else {
            diagnostics.error("'metadata' of a gRPC response must be a mapping of names to values", at: metadata.location)
            return nil
        }
        var headers: [(String, SourceNode)] = []
        for pair in pairs {
            guard let name = pair.key.scalarText?.lowercased(), HTTPToken.isValid(name), !name.hasPrefix("grpc-"), !name.hasPrefix(":") else {
                diagnostics.error(
                    "a metadata key is a lower-case header name not starting with 'grpc-', not '\(pair.key.scalarText ?? "")'", at: pair.key.location)
                return nil
            }
            headers.append((name, pair.value))
        }
        return headers
    }
}
