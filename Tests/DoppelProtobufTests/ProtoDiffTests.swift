import DoppelCore
import Testing

@testable import DoppelProtobuf

@Suite("What changed between two .proto versions")
struct ProtoDiffTests {
    static let old = """
        syntax = "proto3";
        package tales.v1;
        service Tales {
          rpc Generate (GenerateRequest) returns (Story);
          rpc Watch (WatchRequest) returns (stream Story);
          rpc Remove (Story) returns (Story);
        }
        service Old { rpc Ping (Story) returns (Story); }
        message GenerateRequest {
          string child_id = 1;
          string language = 2;
          int32 length = 3;
          repeated string tags = 4;
          oneof style { string mood = 5; string theme = 6; }
          string gone = 7;
        }
        message WatchRequest { string child_id = 1; }
        message Story { string id = 1; Kind kind = 2; }
        message Obsolete {}
        enum Kind { KIND_UNSPECIFIED = 0; SHORT = 1; LONG = 2; }
        """

    static let new = """
        syntax = "proto3";
        package tales.v1;
        service Tales {
          rpc Generate (GenerateRequest) returns (Story);
          rpc Watch (stream WatchRequest) returns (stream Story);
          rpc Read (Story) returns (Story);
        }
        service Fresh { rpc Ping (Story) returns (Story); }
        message GenerateRequest {
          string child_id = 11;
          string locale = 2;
          int64 length = 3;
          string tags = 4;
          string mood = 5;
          oneof style { string theme = 6; }
          string added = 8;
        }
        message WatchRequest { string child_id = 1; }
        message Story { string id = 1; Kind kind = 2; }
        message Brand {}
        enum Kind { KIND_UNSPECIFIED = 0; SHORT = 3; EPIC = 4; }
        """

    @Test("Each change found, breaking or not, breaking ones first")
    func everyKindOfChange() throws {
        let (before, beforeProblems) = ProtoSchema.read(["tales.proto": Self.old])
        let (after, afterProblems) = ProtoSchema.read(["tales.proto": Self.new])
        #expect(beforeProblems.isEmpty && afterProblems.isEmpty)
        let changes = ProtoDiff.changes(from: try #require(before), to: try #require(after))
        let listed = changes.map { "\($0.breaking ? "B" : "c") \($0.kind) \($0.subject) \($0.place): \($0.detail)" }
        #expect(
            listed == [
                "B method-streaming-changed /tales.v1.Tales/Watch : its requests were one message, now a stream",
                "B method-removed /tales.v1.Tales/Remove : method Remove was removed",
                "B service-removed tales.v1.Old : service tales.v1.Old was removed",
                "B field-renumbered tales.v1.GenerateRequest field child_id (1): is now number 11: old clients' bytes mean something else",
                "B field-renamed tales.v1.GenerateRequest field language (2): is now named locale (locale in JSON)",
                "B field-type-changed tales.v1.GenerateRequest field length (3): was int32, now int64",
                "B field-type-changed tales.v1.GenerateRequest field tags (4): was repeated string, now string",
                "B field-oneof-changed tales.v1.GenerateRequest field mood (5): was in oneof style, now in none",
                "B field-removed tales.v1.GenerateRequest field gone (7): was removed",
                "B message-removed tales.v1.Obsolete : message tales.v1.Obsolete was removed",
                "B enum-value-renumbered tales.v1.Kind value SHORT: was 1, now 3",
                "B enum-value-removed tales.v1.Kind value LONG: was removed (2)",
                "c method-added /tales.v1.Tales/Read : method Read was added",
                "c service-added tales.v1.Fresh : service tales.v1.Fresh was added",
                "c field-added tales.v1.GenerateRequest field added (8): was added",
                "c message-added tales.v1.Brand : message tales.v1.Brand was added",
                "c enum-value-added tales.v1.Kind value EPIC: was added (4)",
            ])
        #expect(ProtoDiff.changes(from: try #require(before), to: try #require(before)).isEmpty)
    }
}
