import DoppelTestSupport
import Foundation
import Testing

@testable import DoppelCore

/// The editor schemas (docs/schema) know exactly the keys the loaders
/// accept, mapping by mapping: a key the loader takes that the schema does
/// not know fails here, and so does the reverse. (That every bundled
/// contract, scenario and doc example is valid under them, `.ci/run` checks
/// with the jsonschema package.)
struct JSONSchemaTests {
    static func schema(_ name: String) throws -> JSON {
        let url = repositoryRoot.appendingPathComponent("docs/schema/\(name).schema.json")
        return try JSONReader.parse(Array(try Data(contentsOf: url)))
    }

    /// The property names of a definition (or of the root, for nil).
    static func properties(_ schema: JSON, _ definition: String?) -> Set<String> {
        let node = definition.map { schema["definitions"]?[$0] } ?? schema
        return Set(node?["properties"]?.objectValue?.keys ?? [])
    }

    @Test func theContractSchemaKnowsWhatTheContractLoaderAccepts() throws {
        let schema = try Self.schema("contract")
        let mappings: [(loader: Set<String>, definition: String?)] = [
            (ContractLoader.topLevelKeys, nil),
            (ContractLoader.infoKeys, "info"),
            (ContractLoader.authKeys, "auth"),
            (ContractLoader.authSchemeKeys, "authScheme"),
            (ContractLoader.stateKeys, "state"),
            (ContractLoader.collectionSpecKeys, "collection"),
            (Set(Fallback.allCases.map(\.rawValue)), "fallbacks"),
            (ContractLoader.rateLimitKeys, "rateLimit"),
            (ContractLoader.endpointKeys, "endpoint"),
            (ContractLoader.requestBodyKeys, "requestBody"),
            (ContractLoader.queryStringKeys, "queryString"),
            (ContractLoader.responseKeys, "inlineResponse"),
            (ContractLoader.referenceKeys, "referenceResponse"),
            (ContractLoader.sequenceKeys, "sequence"),
            (ContractLoader.eventKeys, "event"),
            (ContractLoader.delayKeys, "delay"),
            (Schema.keywords, "schemaObject"),
            (ContractLoader.discriminatorKeys, "discriminator"),
            (ContractLoader.socketKeys, "websocket"),
            (ContractLoader.socketRuleKeys, "socketRule"),
            (ContractLoader.pushKeys, "push"),
            (ContractLoader.closeKeys, "close"),
            (ContractLoader.callbackKeys, "callback"),
            (ContractLoader.mcpKeys, "mcp"),
            (ContractLoader.mcpToolKeys, "mcpTool"),
            (ContractLoader.mcpResponseKeys, "mcpResponse"),
            (ContractLoader.mcpServerKeys, "mcpServer"),
            (ContractLoader.mcpErrorKeys, "mcpError"),
            (ContractLoader.graphqlKeys, "graphql"),
            (ContractLoader.graphqlResolverKeys, "graphqlResolver"),
            (ContractLoader.graphqlResponseKeys, "graphqlResponse"),
            (ContractLoader.graphqlErrorKeys, "graphqlError"),
            (ContractLoader.grpcKeys, "grpc"),
            (ContractLoader.grpcMethodKeys, "grpcMethod"),
            (ContractLoader.grpcResponseKeys, "grpcResponse"),
            (ContractLoader.streamKeys, "grpcStream"),
            (ContractLoader.socketRuleKeys.subtracting(["close"]).union(["end"]), "grpcStreamRule"),
            (ContractLoader.endKeys, "grpcEnd"),
        ]
        for (loader, definition) in mappings {
            var known = Self.properties(schema, definition)
            if definition == "delay" {  // a duration, or {min, max}
                known = Set(
                    schema["definitions"]?["delay"]?["anyOf"]?.arrayValue?.compactMap { $0["properties"]?.objectValue?.keys }.flatMap { $0 } ?? [])
            }
            #expect(
                loader.subtracting(known).isEmpty,
                "the loader accepts \(loader.subtracting(known).sorted()) that \(definition ?? "the contract") in docs/schema/contract.schema.json does not know"
            )
            #expect(
                known.subtracting(loader).isEmpty,
                "docs/schema/contract.schema.json's \(definition ?? "contract") knows \(known.subtracting(loader).sorted()) that the loader refuses")
        }
    }

    @Test func theScenarioSchemaKnowsWhatTheScenarioLoaderAccepts() throws {
        let schema = try Self.schema("scenario")
        let mappings: [(loader: Set<String>, definition: String?)] = [
            (ScenarioLoader.topKeys, nil),
            (ScenarioLoader.givenKeys, "given"),
            (ScenarioLoader.overrideKeys, "override"),
            (ScenarioLoader.stepKeys, "step"),
            (ScenarioLoader.partKeys, "part"),
            // One `expect` in the schema, for an HTTP step's and a gRPC step's (`metadata` for `headers`).
            (ScenarioLoader.expectKeys.union(ScenarioLoader.grpcExpectKeys), "expect"),
            (ClockChange.keys, "clock"),
        ]
        #expect(ScenarioLoader.grpcStepKeys.isSubset(of: ScenarioLoader.stepKeys), "the schema's steps hold a gRPC step's keys")
        for (loader, definition) in mappings {
            let known = Self.properties(schema, definition)
            #expect(
                loader == known,
                "\(definition ?? "scenario"): the loader accepts \(loader.sorted()), docs/schema/scenario.schema.json knows \(known.sorted())")
        }
    }

    /// Every mapping the loaders read names its keys in a static set that the
    /// tests above compare; a literal list in a `MappingReader` call would escape them.
    @Test func everyMappingReadsANamedKeySet() throws {
        let folders = ["Sources/DoppelCore/Loading", "Sources/DoppelCore/Scenario"]
        var literal: [String] = []
        var named: Set<String> = []
        for folder in folders {
            let url = repositoryRoot.appendingPathComponent(folder)
            for file in try FileManager.default.contentsOfDirectory(atPath: url.path) where file.hasSuffix(".swift") {
                let text = try String(contentsOf: url.appendingPathComponent(file), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    if line.contains("MappingReader("), line.contains("allowed: [") { literal.append("\(folder)/\(file):\(number + 1)") }
                    if let match = line.firstMatch(of: /static let (\w+Keys): Set<String>/) { named.insert(String(match.1)) }
                }
            }
        }
        #expect(literal.isEmpty, "name these key sets and compare them with docs/schema: \(literal)")
        let compared: Set<String> = [
            "topLevelKeys", "infoKeys", "authKeys", "authSchemeKeys", "stateKeys", "collectionSpecKeys", "rateLimitKeys", "endpointKeys",
            "requestBodyKeys", "queryStringKeys", "responseKeys", "referenceKeys", "sequenceKeys", "eventKeys", "delayKeys", "discriminatorKeys",
            "topKeys", "givenKeys", "overrideKeys", "stepKeys", "partKeys", "expectKeys", "socketKeys", "socketRuleKeys", "pushKeys", "closeKeys",
            "streamKeys", "endKeys",
            "callbackKeys", "mcpKeys", "mcpServerKeys", "mcpToolKeys", "mcpResponseKeys", "mcpErrorKeys", "graphqlKeys", "graphqlResolverKeys",
            "graphqlResponseKeys", "graphqlErrorKeys", "grpcKeys", "grpcMethodKeys", "grpcResponseKeys", "grpcStepKeys", "grpcExpectKeys",
        ]
        #expect(named == compared, "key sets not compared with docs/schema: \(named.subtracting(compared).sorted())")
    }
}
