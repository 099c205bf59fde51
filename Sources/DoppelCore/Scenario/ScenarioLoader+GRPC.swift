/// gRPC steps: `grpc: SERVICE/METHOD`, a call over HTTP/2 to the contract's `grpc:` services.
extension ScenarioLoader {
    /// The keys a gRPC step may have.
    static let grpcStepKeys: Set<String> = ["name", "grpc", "message", "messages", "metadata", "timeout", "expect", "capture"]
    /// The keys of a gRPC step's `expect`.
    static let grpcExpectKeys: Set<String> = ["status", "metadata", "body", "error"]

    /// A gRPC step: its method (one the section answers, unless the step
    /// expects `UNIMPLEMENTED`), its message or messages, metadata and
    /// timeout; `expect` with a gRPC status by name or number, metadata
    /// (the answer's headers and trailers) and a body (the reply, a server
    /// stream's list of replies, or an error's `google.rpc.Status`).
    static func readGRPCStep(
        _ reader: MappingReader, index: Int, contract: Contract, captured: inout Set<String>, loader: inout ContractLoader
    )
        -> Step?
    {
        let node = reader["grpc"]!
        for key in reader.keys where !grpcStepKeys.contains(key) {
            loader.diagnostics.error(
                "'\(key)' does not go with 'grpc' in step \(index + 1); a gRPC step takes \(grpcStepKeys.subtracting(["grpc"]).sorted().joined(separator: ", "))",
                at: reader[key]?.location ?? node.location)
        }
        guard let definition = contract.grpc else {
            loader.diagnostics.error("a gRPC step calls the contract's gRPC services, and the contract has no 'grpc:' section", at: node.location)
            return nil
        }
        guard let method = node.scalarText, method.split(separator: "/").count == 2, !method.hasPrefix("/") else {
            loader.diagnostics.error("'grpc' must be a method as SERVICE/METHOD, like tales.v1.Tales/GenerateStory", at: node.location)
            return nil
        }
        let expectation = readGRPCExpectation(reader["expect"], roots: captured, loader: &loader)
        if !definition.methods.contains(where: { $0.path == method }), expectation.status != 12 {
            let known = definition.methods.map(\.path)
            loader.diagnostics.error(
                "the contract's grpc: section answers no method \(method)\(Suggestion.hint(for: method, in: known))", at: node.location)
        }
        if reader.has("message"), reader.has("messages") {
            loader.diagnostics.error("a gRPC step sends one 'message' or a list of 'messages', not both", at: reader["messages"]!.location)
        }
        let message = reader["message"].flatMap { loader.compileTemplate($0, roots: captured) }
        let messages = reader["messages"].flatMap { loader.compileTemplate($0, roots: captured) }
        if let list = reader["messages"], list.sequenceItems == nil, list.scalarText == nil {
            loader.diagnostics.error("'messages' must be a list of messages (or one placeholder whose value is the list)", at: list.location)
        }
        let metadata = loader.diagnosticsEntries(reader, "metadata").compactMap { entry in
            loader.compileTemplate(entry.value, roots: captured).map { (entry.name.lowercased(), $0) }
        }
        let timeout = readTimeout(reader, loader: &loader)
        let captures = readCaptures(reader, captured: &captured, loader: &loader)
        let call = GRPCCallTemplate(
            method: method, definition: definition, message: message, messages: messages, metadata: metadata, timeout: timeout)
        return Step(
            name: reader.string("name", diagnostics: &loader.diagnostics) ?? "gRPC \(method)", action: .grpc(call),
            expectation: expectation, captures: captures, location: reader.node.location)
    }

    /// A gRPC step's `expect`: `status` a gRPC status (`RESOURCE_EXHAUSTED` or 8), `metadata` expected values, `body` matched as any body.
    static func readGRPCExpectation(_ node: SourceNode?, roots: Set<String>, loader: inout ContractLoader) -> Expectation {
        var expectation = Expectation()
        guard let node, let reader = MappingReader(node, allowed: grpcExpectKeys, context: "expect", diagnostics: &loader.diagnostics) else {
            return expectation
        }
        if let status = reader["status"] {
            if case .int(let code) = status.json, (0...16).contains(code) {
                expectation.status = code
            } else if let name = status.scalarText, let known = GRPCDefinition.codes.first(where: { $0.name == name.uppercased() }) {
                expectation.status = known.code
            } else {
                let names = GRPCDefinition.codes.map(\.name)
                loader.diagnostics.error(
                    "'status' must be a gRPC status, by name or number (0 to 16)\(Suggestion.hint(for: status.scalarText ?? "", in: names))",
                    at: status.location)
            }
        }
        readExpected(reader, headers: "metadata", into: &expectation, roots: roots, loader: &loader)
        // Metadata names are lower-case on the wire.
        expectation.headers = expectation.headers.map { ($0.0.lowercased(), $0.1) }
        return expectation
    }
}
