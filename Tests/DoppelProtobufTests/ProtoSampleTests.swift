import DoppelCore
import Foundation
import Testing

@testable import DoppelProtobuf

/// The sample messages `doppel verify` sends: one for every message type
/// of the codec's test schema (every scalar, enum, map, oneof, nesting and
/// well-known type) and of the demo's `.proto`, each accepted by the codec
/// and read back the same.
@Suite("Sample messages from a .proto")
struct ProtoSampleTests {
    static let codec = ProtoCodecTests.codec

    @Test(arguments: codec.schema.messages.keys.sorted().filter { !$0.hasPrefix("google.protobuf.") })
    func everyMessageTypeHasASampleTheCodecWritesAndReadsBack(_ type: String) throws {
        let sample = Self.codec.sample(type)
        let bytes = try Self.codec.encode(sample, as: type)
        let again = try Self.codec.decode(bytes, as: type)
        #expect(ProtoCodecTests.same(again, sample), "\(JSONWriter.encodeString(sample)) came back as \(JSONWriter.encodeString(again))")
    }

    @Test func aSampleGivesEveryFieldAValueAndOneMemberOfEachOneof() throws {
        let types = Self.codec.schema.messages.values.filter { !$0.isMapEntry && !$0.name.hasPrefix("google.") }
        let rich = try #require(types.max { $0.fields.count < $1.fields.count })
        let sample = try #require(Self.codec.sample(rich.name).objectValue)
        let oneofMembers = rich.fields.filter { $0.oneof != nil }
        let expected =
            rich.fields.count - oneofMembers.count + Set(oneofMembers.compactMap(\.oneof)).count
            - rich.fields.filter { $0.kind == .message("google.protobuf.Any") }.count
        #expect(sample.count == expected, "\(rich.name): \(sample.keys)")
    }

    @Test func aRecursiveTypeStopsAtTheDepthBound() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-sample-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "syntax = \"proto3\"; message R { R child = 1; string name = 2; }".write(
            to: folder.appendingPathComponent("r.proto"), atomically: true, encoding: .utf8)
        let codec = ProtoCodec(schema: try #require(ProtoSchema.load(file: "r.proto", folder: folder).schema))
        var depth = 0
        var node = codec.sample("R")
        while let child = node["child"] {
            depth += 1
            node = child
        }
        #expect(depth == ProtoCodec.sampleDepth)
        #expect(node == ["name": "example"] || node == [:])
    }
}
