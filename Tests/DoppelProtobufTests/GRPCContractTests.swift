import DoppelCore
import Foundation
import Testing

@testable import DoppelProtobuf

/// A contract's `grpc:` section: rewritten into one endpoint per method,
/// every problem at its line and column (the section's own, and what only
/// reading its `.proto` finds).
@Suite("The grpc: section of a contract")
struct GRPCContractTests {
    static let proto = """
        syntax = "proto3";
        package demo.v1;
        service Demo {
          rpc Get(Ask) returns (Answer);
          rpc Watch(Ask) returns (stream Answer);
          rpc Talk(stream Ask) returns (stream Answer);
        }
        message Ask { string text = 1; }
        message Answer { string text = 1; int32 count = 2; }
        """

    /// The problems of `section` under `grpc:`, as `file:line:column: error: message`, with `demo.proto` beside it.
    static func problems(_ section: String, proto: String = proto) -> [String] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("grpc-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try? proto.write(to: folder.appendingPathComponent("demo.proto"), atomically: true, encoding: .utf8)
        let file = folder.appendingPathComponent("contract.yaml").path
        let text = "doppel: 1\ngrpc:\n" + section.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(separator: "\n")
        do {
            let contract = try ContractLoader.load(text: text, file: file)
            return GRPCCatalog.problems(of: contract).map { $0.description.replacingOccurrences(of: folder.path + "/", with: "") }
        } catch {
            return error.diagnostics.map { $0.description.replacingOccurrences(of: folder.path + "/", with: "") }
        }
    }

    /// The bundled demo, contracts/tales-grpc.yaml.
    static let demo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("contracts/tales-grpc.yaml").path

    @Test func theDemoIsOneEndpointPerMethodWithItsStatusAsHTTPAndGRPC() throws {
        let contract = try ContractLoader.load(file: Self.demo)
        #expect(
            contract.endpoints.map(\.id) == [
                "tales.v1.Tales/GenerateStory", "tales.v1.Tales/GetUsage", "tales.v1.Tales/ListStories", "tales.v1.Tales/UploadDrafts",
                "tales.v1.Tales/TellTogether", "tales.v1.Tales/WatchStories",
            ])
        let generate = try #require(contract.endpoints.first)
        #expect(generate.method == "POST")
        #expect(generate.path.template == "/tales.v1.Tales/GenerateStory")
        #expect(generate.responses.map(\.status) == [400, 429, 200])
        #expect(contract.grpc?.methods.map(\.path).first == "tales.v1.Tales/GenerateStory")
        #expect(GRPCCatalog.problems(of: contract).isEmpty)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        let section: String
        let problem: String
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        .init(
            label: "an unknown status", section: "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      responses:\n        - status: NOPE",
            problem:
                "contract.yaml:8:21: error: 'status' of a gRPC response must be a status code's name (like RESOURCE_EXHAUSTED) or number, not 'NOPE'"
        ),
        .init(
            label: "a reply with an error status",
            section: "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      responses:\n        - status: NOT_FOUND\n          reply: {}",
            problem: "contract.yaml:9:20: error: 'reply' belongs to an OK response; an error's answer is its 'message' and 'details'"),
        .init(
            label: "a message on an OK answer",
            section: "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      responses:\n        - message: hi",
            problem: "contract.yaml:8:22: error: 'message' belongs to a response whose 'status' is an error, not OK"),
        .init(
            label: "gRPC's own metadata",
            section: "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      responses:\n        - metadata: { grpc-status: '1' }",
            problem: "contract.yaml:8:25: error: a metadata key is a lower-case header name not starting with 'grpc-', not 'grpc-status'"),
        .init(
            label: "details that are no list",
            section:
                "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      responses:\n        - status: INTERNAL\n          details: {}",
            problem: "contract.yaml:9:22: error: 'details' of a gRPC response must be a list of messages, each with its '@type'"),
        .init(
            label: "a .proto outside the folder", section: "proto: ../demo.proto\nservices: {}",
            problem: "contract.yaml:3:10: error: '../demo.proto' resolves outside the contract's folder"),
        .init(
            label: "a file that is no .proto", section: "proto: demo.txt\nservices: {}",
            problem: "contract.yaml:3:10: error: 'proto' of 'grpc' must name a .proto file beside the contract"),
        .init(
            label: "a service without its package", section: "proto: demo.proto\nservices:\n  demo/Demo:\n    Get:\n      responses: [{}]",
            problem: "contract.yaml:5:5: error: a service is named by its full name, package and all (like 'tales.v1.Tales'), not 'demo/Demo'"),
        .init(
            label: "a method the .proto lacks", section: "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Put:\n      responses: [{}]",
            problem: "contract.yaml:6:7: error: service 'demo.v1.Demo' in demo.proto has no method 'Put'"),
        .init(
            label: "a service the .proto lacks", section: "proto: demo.proto\nservices:\n  demo.v1.Other:\n    Get:\n      responses: [{}]",
            problem: "contract.yaml:6:7: error: demo.proto declares no service 'demo.v1.Other'"),
        .init(
            label: "a missing .proto", section: "proto: gone.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      responses: [{}]",
            problem: "contract.yaml:3:10: error: there is no 'gone.proto' in the contract's folder"),
        .init(
            label: "a reply with a field its message lacks",
            section:
                "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      responses:\n        - name: wrong\n          reply: { txet: hi }",
            problem:
                "contract.yaml:8:13: error: the reply is not a demo.v1.Answer (response 'wrong' of demo.v1.Demo/Get): /txet: demo.v1.Answer has no field txet (it has text, count)"
        ),
        .init(
            label: "a detail of an unknown type",
            section:
                "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      responses:\n        - status: INTERNAL\n          details: [{ '@type': type.googleapis.com/nope.Nope }]",
            problem:
                "contract.yaml:8:13: error: the details are not google.rpc.Status details (a response of demo.v1.Demo/Get): /details/0/@type: an Any names its type (type.googleapis.com/NAME) of a message the schema has"
        ),
        .init(
            label: "a reply from a method with rules",
            section: "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Talk:\n      stream: {}\n      responses:\n        - reply: {}",
            problem:
                "contract.yaml:9:20: error: method 'demo.v1.Demo/Talk' sends its messages by the rules of its 'stream:' (on_connect, on_message, ...); its responses only open or refuse the call, so they have no 'reply'"
        ),
        .init(
            label: "a socket's close in a stream's rule",
            section:
                "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Talk:\n      stream:\n        on_message:\n          - close: { code: 1000 }",
            problem: "contract.yaml:9:15: error: unknown key 'close' in rule on_message[0] of stream of method 'demo.v1.Demo/Talk'"),
        .init(
            label: "an end with an unknown status",
            section: "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Talk:\n      stream:\n        on_message:\n          - end: NOPE",
            problem: "contract.yaml:9:20: error: 'status' of an end must be a gRPC status's name (like RESOURCE_EXHAUSTED) or number, not 'NOPE'"),
        .init(
            label: "an OK end with a message",
            section:
                "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Talk:\n      stream:\n        on_message:\n          - end: { message: bye }",
            problem: "contract.yaml:9:31: error: 'message' belongs to an end whose 'status' is an error, not OK"),
        .init(
            label: "a stream on a unary method",
            section: "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      stream: {}",
            problem:
                "contract.yaml:6:7: error: 'stream' belongs to a streaming method; demo.v1.Demo/Get takes one message and answers one (its 'responses' answer it)"
        ),
        .init(
            label: "on_message for a client of one message",
            section: "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Watch:\n      stream:\n        on_message:\n          - send: { text: hi }",
            problem:
                "contract.yaml:9:15: error: 'on_message' answers a client's stream, and demo.v1.Demo/Watch's client sends one message (its responses see it as 'body')"
        ),
        .init(
            label: "a rule's message that is not the reply",
            section:
                "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Talk:\n      stream:\n        on_connect:\n          - name: hello\n            send: { txet: hi }",
            problem:
                "contract.yaml:9:15: error: rule 'hello' sends a message that is not a demo.v1.Answer: /txet: demo.v1.Answer has no field txet (it has text, count)"
        ),
        .init(
            label: "a push to a stream no method has",
            section:
                "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      responses:\n        - push: { stream: demo.v1.Demo/Tlak, send: {} }\n    Talk:\n      stream: {}",
            problem:
                "contract.yaml:8:19: error: push names 'demo.v1.Demo/Tlak', which is neither a WebSocket endpoint nor a gRPC method with 'stream:' rules (did you mean 'demo.v1.Demo/Talk'?)"
        ),
        .init(
            label: "no responses", section: "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get: {}",
            problem: "contract.yaml:6:12: error: method 'demo.v1.Demo/Get' needs 'responses'"),
    ]

    @Test(arguments: cases)
    func eachProblemIsReportedWhereItIs(_ item: Case) {
        let problems = Self.problems(item.section)
        // That one, alone: nothing else is blamed for it.
        #expect(problems == [item.problem])
    }

    @Test func aProtoFilesOwnMistakeIsReportedInTheProtoFile() {
        let problems = Self.problems(
            "proto: demo.proto\nservices:\n  demo.v1.Demo:\n    Get:\n      responses: [{}]",
            proto: "syntax = \"proto3\";\npackage demo.v1;\nmessage Ask { strin text = 1; }\n")
        #expect(problems.contains { $0.hasPrefix("demo.proto:3:") && $0.contains("error:") }, "\(problems)")
    }

    @Test func theStatusDetailsOfAnAnswerEncodeAsGoogleRPCStatus() throws {
        let definition = try #require(
            try ContractLoader.load(file: Self.demo).grpc)
        let catalog = try #require(GRPCCatalog.load(definition).catalog)
        let status: JSON = [
            "code": 8, "message": "quota",
            "details": [
                [
                    "@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s",
                ]
            ],
        ]
        let bytes = try catalog.statusDetails(status)
        #expect(try catalog.codec.decode(bytes, as: "google.rpc.Status") == status)
    }
}
