import DoppelCore
import DoppelRunner
import DoppelTestSupport
import Foundation
import Testing

/// Scenario steps that call a gRPC method over HTTP/2 (`grpc:`): what lint
/// refuses, and what a step reports when the answer is not the one expected.
/// (The bundled scenarios under scenarios/tales-grpc pass in `ScenarioTests`;
/// against a provider nobody here wrote, in .ci/grpc-clients.py.)
@Suite("gRPC scenario steps")
struct GRPCStepTests {
    static let contract = contractPath("tales-grpc.yaml")

    static func load(_ steps: String, contract: String = contract) throws(ContractError) -> Scenario {
        let folder = URL(fileURLWithPath: contract).deletingLastPathComponent()
        return try ScenarioLoader.load(
            text: "contract: \(URL(fileURLWithPath: contract).lastPathComponent)\nheaders: { Authorization: Bearer t }\nsteps:\n" + steps,
            file: folder.appendingPathComponent("grpc-steps.yaml").path)
    }

    /// A step lint refuses, and the error it gets.
    struct Refused: Sendable, CustomTestStringConvertible {
        let label: String
        let steps: String
        let error: String
        var testDescription: String { label }
    }

    static let refused: [Refused] = [
        .init(
            label: "a method the section does not answer", steps: "  - { grpc: tales.v1.Tales/GenerateStori }",
            error:
                "4:13: error: the contract's grpc: section answers no method tales.v1.Tales/GenerateStori (did you mean 'tales.v1.Tales/GenerateStory'?)"
        ),
        .init(
            label: "a method that is not SERVICE/METHOD", steps: "  - { grpc: GenerateStory }",
            error: "4:13: error: 'grpc' must be a method as SERVICE/METHOD, like tales.v1.Tales/GenerateStory"),
        .init(
            label: "a status that is none of gRPC's", steps: "  - { grpc: tales.v1.Tales/GetUsage, expect: { status: EXHAUSTED } }",
            error: "4:56: error: 'status' must be a gRPC status, by name or number (0 to 16)"),
        .init(
            label: "a status past 16", steps: "  - { grpc: tales.v1.Tales/GetUsage, expect: { status: 429 } }",
            error: "4:56: error: 'status' must be a gRPC status, by name or number (0 to 16)"),
        .init(
            label: "one message and a list", steps: "  - { grpc: tales.v1.Tales/GetUsage, message: {}, messages: [] }",
            error: "4:61: error: a gRPC step sends one 'message' or a list of 'messages', not both"),
        .init(
            label: "a key of an HTTP step", steps: "  - { grpc: tales.v1.Tales/GetUsage, json: {} }",
            error: "4:44: error: 'json' does not go with 'grpc' in step 1"),
        .init(
            label: "metadata on an HTTP step", steps: "  - { request: POST /tales.v1.Tales/GetUsage, metadata: { a: b } }",
            error: "4:57: error: 'metadata' belongs to a gRPC step ('grpc: SERVICE/METHOD')"),
    ]

    @Test(arguments: refused)
    func lintRefusesAMistakenStepAtItsPlace(_ case: Refused) throws {
        let error = try #require(throws: ContractError.self) { _ = try Self.load(`case`.steps) }
        let found = error.diagnostics.map(\.description)
        #expect(found.contains { $0.hasSuffix(`case`.error) || $0.contains(`case`.error) }, "\(found)")
    }

    @Test func aMethodTheContractLacksMayBeExpectedUnimplemented() throws {
        let scenario = try Self.load("  - { grpc: tales.v1.Tales/Nope, expect: { status: UNIMPLEMENTED } }")
        #expect(scenario.steps.count == 1)
        #expect(scenario.steps.first?.expectation.status == 12)
    }

    @Test func aStepThatExpectsOtherwiseFailsSayingWhat() async throws {
        let scenario = try Self.load(
            """
              - name: wrong status
                grpc: tales.v1.Tales/GenerateStory
                message: { childName: Mia }
                expect: { status: RESOURCE_EXHAUSTED }
              - name: wrong metadata and body
                grpc: tales.v1.Tales/GenerateStory
                message: { childName: Mia }
                expect: { metadata: { x-stories-left: "9" }, body: { title: Nope } }
              - name: a field the message lacks
                grpc: tales.v1.Tales/GenerateStory
                message: { childNom: Mia }
              - name: no token
                grpc: tales.v1.Tales/GetUsage
                metadata: { authorization: "" }
                expect: { status: OK }
              - name: expected to fail in transport
                grpc: tales.v1.Tales/GetUsage
                expect: { error: true }
              - name: a method Doppel does not answer
                grpc: tales.v1.Tales/Nope
                expect: { status: UNIMPLEMENTED }
            """)
        try await DoppelTestServer.with(contract: Self.contract) { server in
            await untilAnswering(server.baseURL)
            var runner = ScenarioRunner(baseURL: server.baseURL, isDoppel: true)
            // The suite's load can hold an in-process server's admin answer for more than the usual 10 s.
            runner.adminTimeout = 60
            let result = await runner.run(scenario, session: "grpc-steps")
            #expect(result.steps.map(\.outcome) == [.failed, .failed, .failed, .failed, .failed, .passed], "\(result.steps.map(\.details))")
            try #require(result.steps.count == 6)
            let details = result.steps.map { $0.details.joined(separator: "\n") }
            #expect(details[0].hasPrefix("status: expected RESOURCE_EXHAUSTED (8), got OK (0) ({\"id\":\"story_1\""), "\(details[0])")
            #expect(details[1].contains(#"headers.x-stories-left: expected "9", got "3""#), "\(details[1])")
            #expect(details[1].contains(#"body.title: expected "Nope", got "Mia and the Magic Garden""#), "\(details[1])")
            #expect(details[2].hasPrefix("message 1 is not a tales.v1.GenerateStoryRequest: "), "\(details[2])")
            #expect(details[2].contains("childNom"), "\(details[2])")
            #expect(details[3].hasPrefix("status: expected OK (0), got UNAUTHENTICATED (16)"), "\(details[3])")
            #expect(result.steps[4].summary == "gRPC tales.v1.Tales/GetUsage → OK (0)")
            #expect(result.steps[5].summary == "gRPC tales.v1.Tales/Nope → UNIMPLEMENTED (12)")
        }
    }

    @Test func aServerThatIsNotThereFailsTheStepAndOneExpectingThatPasses() async throws {
        let scenario = try Self.load(
            """
              - { grpc: tales.v1.Tales/GetUsage }
              - { grpc: tales.v1.Tales/GetUsage, expect: { error: true } }
            """)
        let port = try await DoppelTestServer.with(contract: Self.contract) { server in server.port }
        let result = await ScenarioRunner(baseURL: URL(string: "http://127.0.0.1:\(port)")!, isDoppel: false).run(scenario, session: "gone")
        #expect(result.steps.map(\.outcome) == [.failed, .passed])
        #expect(result.steps[0].details.first?.hasPrefix("expected an answer, the call failed: could not connect to 127.0.0.1:\(port)") == true)
    }
}
