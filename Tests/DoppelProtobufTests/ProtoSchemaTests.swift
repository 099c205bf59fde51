import DoppelCore
import Foundation
import Testing

@testable import DoppelProtobuf

@Suite("Reading .proto files")
struct ProtoSchemaTests {
    static func schema(_ texts: [String: String]) -> (ProtoSchema?, [String]) {
        let (schema, diagnostics) = ProtoSchema.read(texts)
        return (schema, diagnostics.map(\.description))
    }

    @Test func theCasesFileReadsWhole() throws {
        let (schema, problems) = ProtoSchema.load(file: "codec.proto", folder: ProtoCodecTests.folder)
        #expect(problems.isEmpty)
        let read = try #require(schema)
        let service = try #require(read.services.first)
        #expect(service.name == "doppel.codec.Codec")
        #expect(service.methods.map(\.name) == ["Echo", "Watch", "Gather", "Chat"])
        #expect(service.methods.map(\.clientStreaming) == [false, false, true, true])
        #expect(service.methods.map(\.serverStreaming) == [false, true, false, true])
        #expect(service.methods[2].input == "doppel.codec.Scalars" && service.methods[2].output == "shared.v1.Label")
        let everything = try #require(read.message("doppel.codec.Everything"))
        #expect(everything.oneofs == ["choice"])
        #expect(everything.field(number: 16)?.jsonName == "otherName")
        #expect(everything.field(json: "by_id")?.number == 9 && everything.field(json: "byId")?.number == 9)
        #expect(everything.field(number: 9)?.isMap(in: read) == true)
        #expect(read.message("doppel.codec.Everything.ByIdEntry")?.isMapEntry == true)
        #expect(everything.field(number: 2)?.kind == .enumeration("doppel.codec.Everything.Mood"))
        #expect(everything.field(number: 2)?.cardinality == .implicit)
        #expect(everything.field(number: 7)?.cardinality == .explicit)
        #expect(everything.field(number: 14)?.cardinality == .explicit)
        #expect(everything.field(number: 4)?.packed == true)
        #expect(read.message("doppel.codec.Everything.Child")?.field(number: 2)?.packed == false)
        #expect(everything.field(number: 15)?.kind == .message("shared.v1.Label"))
    }

    @Test("Every problem at its line and column")
    func problemsAreReportedWhereTheyAre() {
        let (schema, problems) = Self.schema([
            "a.proto": """
            syntax = "proto3";
            package a;
            message M {
              Missing thing = 1;
              int32 twice = 2;
              string again = 2;
            }
            enum E {
              ONE = 1;
            }
            service S {
              rpc Call (Nowhere) returns (M);
            }
            """
        ])
        #expect(schema == nil)
        #expect(
            problems.sorted()
                == [
                    "a.proto:12:7: error: 'Nowhere' names no message here (a method takes and returns messages)",
                    "a.proto:4:11: error: 'Missing' names no message or enum here",
                    "a.proto:6:10: error: field number 2 is used twice in message M",
                    "a.proto:8:6: error: the first value of a proto3 enum is 0 (E.ONE is 1)",
                ].sorted())
    }

    @Test(
        "Syntax that is not read is refused, saying what",
        arguments: [
            ("syntax = \"proto3\";\nmessage M { required int32 a = 1; }", "a.proto:2:13: error: proto3 has no 'required' fields"),
            ("message M { int32 a = 1;", "a.proto:1:25: error: message M is not closed with '}'"),
            ("message M { int32 a = 0; }", "a.proto:1:23: error: field number 0 is outside 1 to 536870911 (19000 to 19999 are reserved)"),
            ("message M { map<float, int32> a = 1; }", "a.proto:1:17: error: a map's key is an integer, bool or string type, not 'float'"),
            ("edition = \"2023\";", "a.proto:1:1: error: protobuf editions are not read here; use syntax = \"proto3\""),
            ("message M { optional group G = 1 {} }", "a.proto:1:22: error: groups are not read here"),
            ("message M { string s = 1 [default = \"x", "a.proto:1:37: error: a string is not closed on its line"),
            ("import \"b.proto\";", "a.proto:1:8: error: 'b.proto' is not among the files read"),
        ])
    func refusals(_ text: String, _ expected: String) {
        let (schema, problems) = Self.schema(["a.proto": text])
        #expect(schema == nil)
        #expect(problems.contains(expected), "\(problems)")
    }

    @Test func nestingIsBounded() {
        let depth = ProtoParser.maximumNesting + 1
        let text = (0..<depth).map { "message M\($0) {" }.joined(separator: " ") + String(repeating: " }", count: depth)
        let (schema, problems) = Self.schema(["deep.proto": text])
        #expect(schema == nil)
        #expect(problems.contains { $0.contains("nested more than \(ProtoParser.maximumNesting) deep") })
    }

    @Test("Imports stay inside the folder, and are bounded in number and size")
    func importsAreBounded() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("proto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("sub"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(_ name: String, _ text: String) throws {
            try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        try write("outside.proto", "import \"../secret.proto\";\nimport \"/etc/passwd\";\nimport \"sub/../../x.proto\";")
        let outside = ProtoSchema.load(file: "outside.proto", folder: folder)
        #expect(outside.schema == nil)
        #expect(outside.diagnostics.filter { $0.message.contains("outside the contract's folder") }.count == 3)

        // A chain of imports longer than the bound.
        for index in 0...ProtoSchema.maximumFiles { try write("c\(index).proto", "import \"c\(index + 1).proto\";") }
        let chain = ProtoSchema.load(file: "c0.proto", folder: folder)
        #expect(chain.schema == nil)
        #expect(chain.diagnostics.contains { $0.message == "more than \(ProtoSchema.maximumFiles) .proto files are imported" })

        try write("big.proto", "// " + String(repeating: "x", count: ProtoSchema.maximumFileSize))
        try write(
            "imports-big.proto",
            "import \"big.proto\";\nimport \"google/protobuf/nope.proto\";\nimport \"sub/none.proto\";\nimport \"grpc/mine/own.proto\";")
        let big = ProtoSchema.load(file: "imports-big.proto", folder: folder)
        #expect(big.schema == nil)
        #expect(
            big.diagnostics.map(\.description).sorted() == [
                "imports-big.proto:1:8: error: 'big.proto' is over \(ProtoSchema.maximumFileSize) bytes",
                "imports-big.proto:2:8: error: there is no 'google/protobuf/nope.proto' in the contract's folder, nor is it a well-known type's file",
                "imports-big.proto:3:8: error: there is no 'sub/none.proto' in the contract's folder",
                "imports-big.proto:4:8: error: there is no 'grpc/mine/own.proto' in the contract's folder, nor is it a well-known type's file",
            ])
    }
}

@Suite("The protobuf codec's refusals")
struct ProtoCodecRefusalTests {
    static let codec = ProtoCodecTests.codec

    @Test(
        "JSON that is not the message is refused, saying where",
        arguments: [
            (#"{"nope": 1}"#, "/nope: doppel.codec.Everything has no field nope (it has "),
            (#"{"mood": "SAD"}"#, "/mood: SAD is not a value of doppel.codec.Everything.Mood (MOOD_UNSPECIFIED, HAPPY, SLEEPY, GRUMPY)"),
            (#"{"word": "a", "number": 1}"#, "/number: word and number are of one oneof (choice); give one of them"),
            (#"{"scalars": {"anInt32": 2147483648}}"#, "/scalars/anInt32: 2147483648 is not a whole number from -2147483648 to 2147483647"),
            (#"{"scalars": {"aUint64": -1}}"#, "/scalars/aUint64: -1 is not a whole number from 0 to 18446744073709551615"),
            (#"{"scalars": {"aBool": "yes"}}"#, "/scalars/aBool: a bool is true or false"),
            (#"{"scalars": {"someBytes": "not base64!"}}"#, "/scalars/someBytes: a bytes field takes base64 text"),
            (#"{"tags": "a"}"#, "/tags: tags is repeated: a JSON array"),
            (#"{"byId": {"x": {}}}"#, "/byId/x: \"x\" is not a whole number"),
            (#"{"scalars": 5}"#, "/scalars: doppel.codec.Scalars is written as a JSON object"),
            (#"{"scalars": {"aFloat": 1e39}}"#, "/scalars/aFloat: 1e+39 is out of a float's range"),
        ])
    func refusesJSON(_ text: String, _ expected: String) throws {
        let json = try JSONReader.parse(Array(text.utf8))
        #expect {
            try Self.codec.encode(json, as: "doppel.codec.Everything")
        } throws: { error in
            "\(error)".hasPrefix(expected) || "\(error)".contains(expected)
        }
    }

    @Test(
        "Well-known types' JSON that is not theirs is refused",
        arguments: [
            (#"{"at": "1972-01-01 10:00:20Z"}"#, "/at: a Timestamp is RFC 3339 text from 0001 to 9999"),
            (#"{"at": "10000-01-01T00:00:00Z"}"#, "/at: a Timestamp is RFC 3339 text"),
            (#"{"at": "2024-02-30T00:00:00Z"}"#, "/at: a Timestamp is RFC 3339 text"),
            (#"{"at": "2024-01-01T00:00:00.1234567891Z"}"#, "/at: a Timestamp is RFC 3339 text"),
            (#"{"took": "5"}"#, "/took: a Duration is seconds with an s"),
            (#"{"took": "315576000001s"}"#, "/took: a Duration is seconds with an s"),
            (#"{"extra": {"@type": "type.googleapis.com/nope.Nothing"}}"#, "/extra/@type: an Any names its type"),
            (#"{"mask": ["a"]}"#, "/mask: a FieldMask is one string of paths"),
            (#"{"meta": [1]}"#, "/meta: a Struct is a JSON object"),
            (#"{"count": "x"}"#, "/count/value: \"x\" is not a whole number"),
        ])
    func refusesWellKnownJSON(_ text: String, _ expected: String) throws {
        let json = try JSONReader.parse(Array(text.utf8))
        #expect {
            try Self.codec.encode(json, as: "doppel.codec.Known")
        } throws: { error in
            "\(error)".hasPrefix(expected)
        }
    }

    @Test func timestampsWithOffsetsAndDurationsRoundTrip() throws {
        let json = try JSONReader.parse(Array(#"{"at": "1972-01-01T11:30:20.5+01:30", "took": "-0.000001s", "anything": [1, {"a": null}]}"#.utf8))
        let back = try Self.codec.decode(try Self.codec.encode(json, as: "doppel.codec.Known"), as: "doppel.codec.Known")
        #expect(back["at"] == "1972-01-01T10:00:20.500Z" && back["took"] == "-0.000001s")
        #expect(ProtoCodecTests.same(back["anything"]!, [1, ["a": nil]]))
    }

    @Test func acceptedForms() throws {
        // Field names as declared, 64-bit integers as numbers, numbers as strings, enums by number, URL-safe base64 without padding.
        let json = try JSONReader.parse(
            Array(#"{"scalars": {"an_int64": 5, "anInt32": "7", "aDouble": "NaN", "someBytes": "-_8"}, "mood": 2, "maybe": null}"#.utf8))
        let bytes = try Self.codec.encode(json, as: "doppel.codec.Everything")
        let back = try Self.codec.decode(bytes, as: "doppel.codec.Everything")
        #expect(back["scalars"]?["anInt64"] == "5" && back["scalars"]?["anInt32"] == 7 && back["scalars"]?["aDouble"] == "NaN")
        #expect(back["scalars"]?["someBytes"] == "+/8=" && back["mood"] == "SLEEPY" && back["maybe"] == nil)
    }

    @Test func nestingIsBoundedBothWays() throws {
        // Child.friend inside Child.friend, deeper than the bound.
        var bytes: [UInt8] = []
        for _ in 0..<(ProtoCodec.maximumDepth + 5) {
            var outer: [UInt8] = [0x1A]
            ProtoCodec.varint(UInt64(bytes.count), into: &outer)
            bytes = outer + bytes
        }
        #expect(throws: ProtoCodec.Failure.self) { try Self.codec.decode(bytes, as: "doppel.codec.Everything.Child") }
        var json = JSON.object(JSONObject())
        for _ in 0..<(ProtoCodec.maximumDepth + 5) { json = .object(JSONObject([("friend", json)])) }
        #expect(throws: ProtoCodec.Failure.self) { try Self.codec.encode(json, as: "doppel.codec.Everything.Child") }
    }
}

@Suite("The .proto reader against protoc")
struct ProtoSchemaAgainstProtocTests {
    /// Every message of the cases' files as read here is as protoc compiled it (`Cases/schema.json`):
    /// each field's name, number, JSON name, type, repetition, presence and oneof.
    @Test func everyMessageIsAsProtocReadsIt() throws {
        let text = try String(contentsOf: ProtoCodecTests.folder.appendingPathComponent("schema.json"), encoding: .utf8)
        guard case .object(let expected) = try JSONReader.parse(Array(text.utf8)) else { throw Mismatch() }
        let schema = ProtoCodecTests.codec.schema
        let ours = schema.messages.filter { !$0.key.hasPrefix("google.protobuf.") }
        #expect(Set(ours.keys) == Set(expected.pairs.map(\.key)))
        for (name, description) in expected.pairs {
            let message = try #require(schema.messages[name], "\(name)")
            #expect(message.isMapEntry == (description["map_entry"] == true), "\(name)")
            guard case .array(let fields)? = description["fields"] else { throw Mismatch() }
            #expect(message.fields.count == fields.count, "\(name)")
            for field in fields {
                guard case .int(let number)? = field["number"], let read = message.field(number: number) else {
                    Issue.record("\(name): no field \(field["name"] ?? .null)")
                    continue
                }
                let type: String
                switch read.kind {
                case .scalar(let scalar): type = scalar.rawValue
                case .message(let full), .enumeration(let full): type = full
                }
                let oneof = read.oneof.map { JSON.string(message.oneofs[$0]) } ?? .null
                #expect(
                    [.string(read.name), .string(read.jsonName), .string(type), .bool(read.cardinality == .repeated)]
                        == [field["name"], field["json"], field["type"], field["repeated"]], "\(name).\(read.name)")
                // Presence, as protoc has it: a repeated field has none.
                #expect((read.cardinality == .explicit) == (field["presence"] == true), "\(name).\(read.name)")
                #expect(oneof == field["oneof"], "\(name).\(read.name)")
            }
        }
    }

    struct Mismatch: Error {}
}
