import DoppelCore
import DoppelOpenAPI
import DoppelRunner
import DoppelTestSupport
import Foundation
import Testing

/// `doppel verify` of a gRPC provider: each method called over HTTP/2 with
/// a message made from the `.proto`, its answer held to the contract's in
/// lockstep. The provider here is Doppel serving the demo (every check
/// passes) or a copy with one bug planted (the check it breaks fails).
/// (Against a grpcio server nobody here wrote: .ci/grpc-clients.py.)
@Suite("Verifying a gRPC provider")
struct GRPCVerifyTests {
    static let contract = repositoryRoot.appendingPathComponent("contracts/tales-grpc.yaml").path

    /// The demo's contract with one text replaced, beside its `.proto`, served for `body`.
    static func servingPlanted(from: String, to: String, _ body: (DoppelTestServer) async throws -> Void) async throws {
        let text = try String(contentsOfFile: contract, encoding: .utf8)
        #expect(text.contains(from), "the planted text is in tales-grpc.yaml")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("grpc-verify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(
            at: repositoryRoot.appendingPathComponent("contracts/tales.proto"), to: folder.appendingPathComponent("tales.proto"))
        let mutated = folder.appendingPathComponent("tales-grpc.yaml")
        try text.replacingOccurrences(of: from, with: to).write(to: mutated, atomically: true, encoding: .utf8)
        try await DoppelTestServer.with(contract: mutated.path) { server in try await body(server) }
    }

    static func options(_ endpoints: [String] = []) -> ProviderVerifier.Options {
        var options = ProviderVerifier.Options.inTheSuite
        options.token = "t"
        options.endpointIDs = endpoints
        return options
    }

    @Test func theDemoServedByDoppelPassesEveryCheckOverGRPC() async throws {
        let contract = try ContractDocument.load(file: Self.contract)
        try await DoppelTestServer.with(contract: Self.contract) { server in
            let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: Self.options()).run()
            let failed = report.checks.filter { $0.outcome == .failed }.flatMap(VerifyReport.lines).joined(separator: "\n")
            #expect(report.failed == 0, "\(failed)")
            // The quota reached in lockstep: five stories, then RESOURCE_EXHAUSTED (429) with its QuotaFailure's shape.
            #expect(report.checks.contains { $0.outcome == .passed && $0.name.contains("tales.v1.Tales/GenerateStory 429 (6 steps)") })
            #expect(report.checks.filter { $0.name == "no credentials" }.count == 6)
            // Each call went over HTTP/2 as gRPC: the server journaled them under their methods, not as HTTP/1 JSON.
            #expect(server.engine.journal.entries.contains { $0.endpointID == "tales.v1.Tales/ListStories" && $0.status == 200 })
        }
    }

    struct Bug: Sendable, CustomTestStringConvertible {
        let name: String
        let from: String
        let to: String
        let check: String
        let says: String
        var endpoint = "tales.v1.Tales/GenerateStory"
        var testDescription: String { name }
    }

    static let bugs: [Bug] = [
        Bug(
            name: "a sixth story allowed", from: "when: limit != -1 and used >= limit", to: "when: limit != -1 and used > limit",
            check: "sequence: tales.v1.Tales/GenerateStory 429", says: "expected 429 (monthly-limit), got 200"),
        Bug(
            name: "a story without its creation time", from: "                createdAt: \"{{ now() }}\"\n", to: "",
            check: "valid request", says: "/createdAt: missing"),
        Bug(
            name: "calls taken without a token", from: "grpc:\n  proto: tales.proto\n", to: "grpc:\n  proto: tales.proto\n  auth: none\n",
            check: "no credentials", says: "expected 401"),
        // A stream answered by rules is checked by its opening, as a WebSocket by its upgrade.
        Bug(
            name: "a watch refused", from: "      WatchStories:\n        stream:",
            to: "      WatchStories:\n        responses: [{ status: UNAVAILABLE }]\n        stream:", check: "valid request",
            says: "the target failed (503) where the contract answers 200", endpoint: "tales.v1.Tales/WatchStories"),
    ]

    @Test(arguments: bugs)
    func aPlantedBugIsCaught(_ bug: Bug) async throws {
        let contract = try ContractDocument.load(file: Self.contract)
        try await Self.servingPlanted(from: bug.from, to: bug.to) { server in
            let report = await ProviderVerifier(
                contract: contract, target: server.baseURL, options: Self.options([bug.endpoint])
            ).run()
            let lines = report.checks.filter { $0.outcome == .failed && $0.name.contains(bug.check) }.flatMap(VerifyReport.lines)
                .joined(separator: "\n")
            let all = report.checks.flatMap(VerifyReport.lines).joined(separator: "\n")
            #expect(lines.contains(bug.says), "\(bug.says) in:\n\(all)")
        }
    }
}
