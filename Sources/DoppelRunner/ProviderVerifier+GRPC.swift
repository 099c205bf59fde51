import DoppelCore
import DoppelProtobuf
import Foundation

/// A contract's gRPC methods verified as a gRPC client calls them: each
/// check's request (`POST /SERVICE/METHOD` with the message as JSON, as the
/// oracle engine takes it) sent to the provider as a call over HTTP/2, its
/// message made from the `.proto` (every field given a value) and encoded
/// by it; the answer read back as the oracle gives it: the HTTP status of
/// its gRPC status (Google's table, as the contract documents it), the
/// reply as JSON (a server stream's as JSON lines), an error's
/// `google.rpc.Status`, the metadata as headers.
extension ProviderVerifier.Run {
    /// The method of a gRPC endpoint, and the catalogue that encodes its messages; nil for any other endpoint.
    func grpcMethod(of endpointID: String) -> (method: GRPCCatalog.Method, catalog: GRPCCatalog)? {
        guard let catalog = grpc, let method = catalog.methods["/" + endpointID] else { return nil }
        return (method, catalog)
    }

    /// A gRPC method's sample message as the request's JSON body: one made from the `.proto` (a client stream's, a list of one).
    func grpcSampleBody(for endpointID: String) -> [UInt8]? {
        grpcSamples[endpointID]
    }

    /// Every method's sample body, by endpoint id.
    static func grpcSamples(_ catalog: GRPCCatalog?) -> [String: [UInt8]] {
        guard let catalog else { return [:] }
        var samples: [String: [UInt8]] = [:]
        for (path, method) in catalog.methods {
            let message = catalog.codec.sample(method.input)
            samples[String(path.dropFirst())] = JSONWriter.encode(method.clientStreaming ? .array([message]) : message)
        }
        return samples
    }

    /// An answer of the oracle as a gRPC client reads it: its messages
    /// written by the `.proto` and read back (so a 64-bit number is the
    /// text protobuf's JSON mapping makes it); an error's status with its
    /// details the same way; and one that carries no `grpc-status`
    /// (Doppel's own problem: a missing token's 401) the status of its HTTP
    /// status, with the problem's `detail` as its message, as the HTTP/2 door sends it.
    /// `opensOnly`: the method's stream is answered by rules, and an `OK` is its opening alone, read as `{}`.
    static func asGRPC(_ response: MockResponse, method: GRPCCatalog.Method, catalog: GRPCCatalog, opensOnly: Bool = false) -> MockResponse {
        var converted = response
        // An opening's answer is the contract's as it is (`{}`): the messages are its rules', after it.
        if opensOnly, response.status == 200 { return converted }
        func canonical(_ json: JSON, as type: String) -> JSON {
            (try? catalog.codec.encode(json, as: type)).flatMap { try? catalog.codec.decode($0, as: type) } ?? json
        }
        let given = response.headers.first { $0.name.lowercased() == "grpc-status" }.flatMap { Int($0.value) }
        let code = given ?? GRPCDefinition.code(forHTTP: response.status)
        if code == 0 {
            if method.serverStreaming {
                let lines = response.body.split(separator: UInt8(ascii: "\n")).compactMap { try? JSONReader.parse(Array($0)) }
                converted.body = lines.flatMap { JSONWriter.encode(canonical($0, as: method.output)) + [UInt8(ascii: "\n")] }
            } else if let reply = try? JSONReader.parse(response.body) {
                converted.body = JSONWriter.encode(canonical(reply, as: method.output))
            }
            return converted
        }
        let body = (try? JSONReader.parse(response.body))?.objectValue
        if given != nil, let body {
            converted.body = JSONWriter.encode(canonical(.object(body), as: "google.rpc.Status"))
            return converted
        }
        let message = body?["detail"]?.stringValue ?? body?["title"]?.stringValue ?? "HTTP status \(response.status)"
        converted.body = JSONWriter.encode(["code": .int(code), "message": .string(message)])
        converted.headers = [("grpc-status", String(code)), ("content-type", "application/json")]
        return converted
    }

    /// The check's request made as a gRPC call to the provider, its answer as the oracle's would be.
    func grpcCall(_ request: RecordedRequest, endpointID: String) async throws -> ScenarioRunner.HTTPAnswer {
        guard let (method, catalog) = grpcMethod(of: endpointID) else {
            throw ScenarioRunner.TargetFailure(description: "the contract's .proto cannot be read, or declares no method \(endpointID)")
        }
        let body = request.body.isEmpty ? JSON.object(JSONObject()) : try JSONReader.parse(request.body)
        // A stream answered by rules is verified by its opening, as a WebSocket by its upgrade: a client stream's by its headers alone.
        let opensOnly = contract.grpc?.streams[endpointID] != nil
        let given = method.clientStreaming ? (opensOnly ? [] : body.arrayValue ?? [body]) : [body]
        let messages = try GRPCClient.encode(given, as: method.input, catalog: catalog)
        let skipped: Set<String> = ["host", "content-type", "content-length", "accept"]
        let metadata = request.headers.filter { !skipped.contains($0.name.lowercased()) }.map { (name: $0.name.lowercased(), value: $0.value) }
        let answer = try await GRPCClient.call(
            verifier.baseURL, path: "/" + endpointID, metadata: metadata, messages: messages, timeout: options.timeout, untilOpened: opensOnly)
        let (code, json, problems) = ScenarioRunner.read(answer, method: method, catalog: catalog)
        if let problem = problems.first { throw ScenarioRunner.TargetFailure(description: problem) }
        var headers = answer.metadata
        let status = GRPCDefinition.codes.first { $0.code == code }?.http ?? 500
        if code == 0, opensOnly {
            headers["content-type"] = "application/json"
            return ScenarioRunner.HTTPAnswer(status: status, headers: headers, body: Data("{}".utf8))
        }
        if code == 0, method.serverStreaming, case .array(let replies) = json {
            headers["content-type"] = "application/jsonl"
            return ScenarioRunner.HTTPAnswer(
                status: status, headers: headers, body: Data(replies.flatMap { JSONWriter.encode($0) + [UInt8(ascii: "\n")] }))
        }
        headers["content-type"] = "application/json"
        return ScenarioRunner.HTTPAnswer(status: status, headers: headers, body: Data(JSONWriter.encode(json)))
    }
}
