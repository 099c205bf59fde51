import DoppelCore
import Foundation

/// A contract's gRPC services as the door serves them: the `.proto` file
/// read (with gRPC's own `google.rpc` messages beside it), each method the
/// contract answers found in it, and the codec that converts their
/// messages between protobuf and the JSON the contract is written in.
package struct GRPCCatalog: Sendable {
    /// A method the door can call: its kind and its messages' types.
    package struct Method: Sendable {
        package let path: String
        package let input: String
        package let output: String
        package let clientStreaming: Bool
        package let serverStreaming: Bool
    }

    package let codec: ProtoCodec
    /// By path, `/SERVICE/METHOD`: every method of every service the file declares, answered or not.
    package let methods: [String: Method]
    /// Every service the files declare, by full name.
    package let services: [String]
    /// The file that declares each symbol (for reflection).
    let symbols: [String: String]

    /// The catalogue of a contract's `grpc:` section, or every problem found
    /// reading its `.proto` file and matching the section's methods to it.
    package static func load(_ definition: GRPCDefinition) -> (catalog: GRPCCatalog?, diagnostics: [Diagnostic]) {
        let folder = URL(fileURLWithPath: definition.folder, isDirectory: true)
        let folderPath = folder.standardizedFileURL.path
        // Reported at the contract's line, with the contract's own name for the file.
        let (schema, found) = ProtoSchema.load(
            file: definition.proto, folder: folder, builtIn: WellKnownTypes.grpcFiles, from: definition.protoLocation)
        var diagnostics = found.map { diagnostic in
            var moved = diagnostic
            if diagnostic.location != definition.protoLocation, !diagnostic.location.file.hasPrefix("/"),
                !diagnostic.location.file.hasPrefix("google/")
            {
                moved.location.file = relative(diagnostic.location.file, folder: folderPath, contract: definition.protoLocation.file)
            }
            return moved
        }
        guard let schema else { return (nil, diagnostics) }
        var methods: [String: Method] = [:]
        for service in schema.services {
            for method in service.methods {
                let path = "/\(service.name)/\(method.name)"
                methods[path] = Method(
                    path: path, input: method.input, output: method.output, clientStreaming: method.clientStreaming,
                    serverStreaming: method.serverStreaming)
            }
        }
        var collector = DiagnosticCollector()
        let services = Set(schema.services.map(\.name))
        for method in definition.methods where methods["/" + method.path] == nil {
            if services.contains(method.service) {
                collector.error("service '\(method.service)' in \(definition.proto) has no method '\(method.name)'", at: method.location)
            } else {
                collector.error("\(definition.proto) declares no service '\(method.service)'", at: method.location)
            }
        }
        diagnostics += collector.diagnostics
        guard !collector.hasErrors else { return (nil, diagnostics) }
        let catalog = GRPCCatalog(
            codec: ProtoCodec(schema: schema), methods: methods, services: services.sorted(), symbols: symbols(of: schema))
        return (catalog, diagnostics)
    }

    /// The problems of a contract's `grpc:` section that only reading its
    /// `.proto` finds (none without one): the file's own, the methods it
    /// does not declare, and answers written without templates that its
    /// messages cannot hold (a field the reply's message lacks, a detail of
    /// an unknown `@type`), which would otherwise end a call `INTERNAL`.
    package static func problems(of contract: Contract) -> [Diagnostic] {
        guard let definition = contract.grpc else { return [] }
        let (catalog, found) = load(definition)
        guard let catalog else { return found }
        var problems = DiagnosticCollector()
        for method in definition.methods {
            guard let endpoint = contract.endpoints.first(where: { $0.id == method.path }),
                let output = catalog.methods["/" + method.path]?.output
            else { continue }
            for response in endpoint.responses {
                // Only answers with nothing to render are known before a call.
                guard case .json(_, let encoded?, _) = response.body, let value = try? JSONReader.parse(encoded) else { continue }
                // An unnamed response is named after its endpoint and place (`SERVICE/METHOD[0]`).
                let named = response.name.hasPrefix(method.path) ? "a response" : "response '\(response.name)'"
                do {
                    if response.status == 200 {
                        _ = try catalog.codec.encode(value, as: output)
                    } else {
                        _ = try catalog.statusDetails(value)
                    }
                } catch {
                    let what = response.status == 200 ? "reply is not a \(output)" : "details are not google.rpc.Status details"
                    problems.error("the \(what) (\(named) of \(method.path)): \(error.message)", at: response.location)
                }
            }
        }
        for method in definition.methods {
            guard let stream = definition.streams[method.path], let kind = catalog.methods["/" + method.path] else { continue }
            catalog.streamProblems(stream, of: kind, at: method, into: &problems)
        }
        return found + problems.diagnostics
    }

    /// A method's `stream:` rules against what the `.proto` says of it: a
    /// unary method has no stream; only a client's stream has messages to
    /// answer and an end to wait for; messages and details written without
    /// templates must fit the method's reply type and `google.rpc.Status`.
    private func streamProblems(
        _ stream: SocketDefinition, of method: Method, at named: GRPCDefinition.Method, into problems: inout DiagnosticCollector
    ) {
        guard method.clientStreaming || method.serverStreaming else {
            problems.error(
                "'stream' belongs to a streaming method; \(named.path) takes one message and answers one (its 'responses' answer it)",
                at: named.location)
            return
        }
        if !method.clientStreaming {
            let taken = [("on_message", stream.onMessage), ("on_end", stream.onEnd), ("on_unmatched", stream.onUnmatched.map { [$0] } ?? [])]
            for (key, rules) in taken where !rules.isEmpty {
                problems.error(
                    "'\(key)' answers a client's stream, and \(named.path)'s client sends one message (its responses see it as 'body')",
                    at: rules[0].definition.location)
            }
        }
        for rule in stream.rules {
            for message in rule.messages {
                guard let value = message.constantValue else { continue }
                do {
                    _ = try codec.encode(value, as: method.output)
                } catch {
                    problems.error(
                        "rule '\(rule.name)' sends a message that is not a \(method.output): \(error.message)", at: rule.definition.location)
                }
            }
            if let end = rule.end, let details = end.details?.constantValue {
                do {
                    _ = try statusDetails(.object(JSONObject([("code", .int(end.code)), ("message", .string("")), ("details", details)])))
                } catch {
                    problems.error(
                        "the details rule '\(rule.name)' ends with are not google.rpc.Status details: \(error.message)",
                        at: rule.definition.location)
                }
            }
        }
    }

    /// A file of the folder named as the contract is (relative when it was).
    private static func relative(_ file: String, folder: String, contract: String) -> String {
        let contractFolder = contract.contains("/") ? String(contract[...contract.lastIndex(of: "/")!]) : ""
        return contractFolder + file
    }

    // MARK: Statuses

    /// `grpc-status-details-bin`'s bytes: the answer's `google.rpc.Status`
    /// (its code, message and details, each an `Any` with its `@type`).
    package func statusDetails(_ status: JSON) throws(ProtoCodec.Failure) -> [UInt8] {
        try codec.encode(status, as: "google.rpc.Status")
    }
}
