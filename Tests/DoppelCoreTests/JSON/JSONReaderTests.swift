import DoppelCore
import Testing

@Suite struct JSONReaderTests {
    @Test func keepsKeyOrderAndNumberKinds() throws {
        let value = try JSONReader.parse(#"{"b": 1, "a": 0.0, "c": [true, null, "x\n\u00e9"], "d": -2.5e3}"#)
        #expect(value.objectValue?.keys == ["b", "a", "c", "d"])
        #expect(value["b"] == .int(1))
        #expect(value["a"] == .double(0.0))
        #expect(value["c"] == [true, nil, "x\né"])
        #expect(value["d"] == .double(-2500))
        #expect(JSONWriter.encodeString(value) == #"{"b":1,"a":0.0,"c":[true,null,"x\né"],"d":-2500.0}"#)
    }

    @Test func decodesSurrogatePairs() throws {
        #expect(try JSONReader.parse(#""\ud83d\ude00""#) == .string("😀"))
    }

    @Test(arguments: [
        ("{bad", "expected a string key", 1),
        (#"{"a": 1,}"#, "expected a string key", 8),
        ("[1 2]", "expected ',' or ']' in array", 3),
        (#""open"#, "unterminated string", 5),
        ("01", "unexpected content after the JSON value", 1),
        ("", "unexpected end of input", 0),
        ("nul", "unexpected end of input", 0),
        ("{} {}", "unexpected content after the JSON value", 3),
    ])
    func reportsWhereTextStopsBeingJSON(text: String, message: String, offset: Int) {
        #expect(throws: JSONReader.SyntaxError(message: message, offset: offset)) { try JSONReader.parse(text) }
    }

    @Test func refusesNestingBeyondTheLimit() {
        let deep = String(repeating: "[", count: JSONReader.maximumDepth + 1) + String(repeating: "]", count: JSONReader.maximumDepth + 1)
        #expect(throws: JSONReader.SyntaxError.self) { try JSONReader.parse(deep) }
    }

    @Test func writerEscapesControlCharacters() {
        #expect(JSONWriter.encodeString(.string("a\"b\\c\u{01}")) == #""a\"b\\c\u0001""#)
    }

    @Test(arguments: [
        "", "x", "\"", "\\\\", "\n\r\t\u{0}\u{1F}", "short ёж", "end\"", "\"start",
        String(repeating: "long text with \"quotes\" and\nlines, ёж 😀 ", count: 40),
    ])
    func writerRoundTripsStringsAsKeysAndValues(text: String) throws {
        let value: JSON = .object(JSONObject([(text, .string(text)), ("list", .array([.string(text), .int(1), .null]))]))
        let written = JSONWriter.encode(value)
        #expect(try JSONReader.parse(written) == value)
        #expect(!written.contains(where: { $0 < 0x20 }), "control characters are escaped")
    }

    @Test func writerStopsPastItsLimit() {
        let value: JSON = .array(Array(repeating: .string(String(repeating: "x", count: 100)), count: 1_000))
        #expect(JSONWriter.encode(value, limit: 1_000) == nil)
        #expect(JSONWriter.encode(value, limit: 200_000) == JSONWriter.encode(value))
    }
}
