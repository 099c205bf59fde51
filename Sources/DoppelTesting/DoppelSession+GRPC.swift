import DoppelCore
import DoppelProtobuf
import DoppelRunner
import Foundation

extension DoppelSession {
    /// The answer to a gRPC call (`call`): its status, metadata and messages as JSON.
    public struct GRPCResponse: Sendable {
        /// The gRPC status: 0 (`OK`) to 16 (`UNAUTHENTICATED`).
        public let status: Int
        /// The status by name (`RESOURCE_EXHAUSTED`).
        public let statusName: String
        /// The status message (`grpc-message`); empty for `OK`.
        public let message: String
        /// The answer's metadata, headers and trailers alike, by lowercased name.
        public let metadata: [String: String]
        /// In protobuf's JSON mapping: the reply (a server stream's list of
        /// replies); for an error, its `google.rpc.Status` (`code`,
        /// `message`, and `details`, each decoded by its `@type`).
        public let body: JSON
    }

    /// Calls a method of the contract's `grpc:` section in this session, as
    /// a gRPC client does (over HTTP/2, on a connection of its own): its
    /// message (or a client stream's `messages`) written in protobuf's JSON
    /// mapping and encoded by the contract's `.proto`, the answer decoded by
    /// it. `call("tales.v1.Tales/GenerateStory", message: ["childName": "Mia"], metadata: ["authorization": "Bearer t"])`.
    /// An app's own generated client can call `baseURL` (h2c) the same way,
    /// with the `doppel-session` metadata entry this session's `headers` name.
    public func call(
        _ method: String, message: JSON = .object(JSONObject()), messages: [JSON]? = nil, metadata: [String: String] = [:],
        timeout: Double = 10
    ) async throws -> GRPCResponse {
        precondition(server.isListening, "a gRPC call needs a listening server (DoppelTestServer.start), not an in-process one")
        guard let definition = server.engine.contract.grpc else {
            throw TestServerError(message: "the contract has no grpc: section, so no method \(method)")
        }
        let (loaded, diagnostics) = GRPCCatalog.load(definition)
        guard let catalog = loaded else {
            throw TestServerError(message: "the contract's .proto cannot be read: \(diagnostics.first.map(\.description) ?? "")")
        }
        guard let found = catalog.methods["/" + method] else { throw TestServerError(message: "\(definition.proto) declares no method \(method)") }
        let encoded: [[UInt8]]
        do throws(GRPCClient.Failure) {
            encoded = try GRPCClient.encode(messages ?? [message], as: found.input, catalog: catalog)
        } catch {
            throw TestServerError(message: error.description)
        }
        let sent =
            [(name: MockEngine.sessionHeader, value: id)] + metadata.sorted { $0.key < $1.key }.map { (name: $0.key.lowercased(), value: $0.value) }
        let answer = try await GRPCClient.call(server.baseURL, path: "/" + method, metadata: sent, messages: encoded, timeout: timeout)
        let (status, body, problems) = ScenarioRunner.read(answer, method: found, catalog: catalog)
        if let problem = problems.first { throw TestServerError(message: "\(method): \(problem)") }
        return GRPCResponse(
            status: status, statusName: GRPCDefinition.codes.first { $0.code == status }?.name ?? "\(status)",
            message: answer.field("grpc-message").map { $0.removingPercentEncoding ?? $0 } ?? "", metadata: answer.metadata, body: body)
    }
}
