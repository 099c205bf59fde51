import DoppelCore
import Testing

/// The YAML reader on libyaml's events: what it builds, and where it says a document is wrong.
@Suite struct SourceReaderTests {
    func read(_ text: String) -> Result<SourceNode?, ContractError> {
        SourceReader.read(text, file: "doc.yaml")
    }

    func problems(_ text: String) -> [String] {
        guard case .failure(let error) = read(text) else { return [] }
        return error.diagnostics.map(\.description)
    }

    @Test func scalarsKeepTheirStyleAndPlace() throws {
        let root = try #require(try read("a: 1\nb: '1'\nc:\n  - \"x\"\n  - |\n    text\n").get())
        #expect(root.location.line == 1 && root.location.column == 1)
        let pairs = try #require(root.mappingPairs)
        #expect(pairs.map { $0.key.scalarText } == ["a", "b", "c"])
        #expect(pairs[0].value.json == 1)
        #expect(pairs[1].value.json == "1")
        #expect(pairs[1].value.contentOffset == 1)
        let list = try #require(pairs[2].value.sequenceItems)
        #expect(list.map(\.json) == ["x", "text\n"])
        #expect(list[0].location.line == 4 && list[0].location.column == 5)
        #expect(list[1].location.line == 5)
    }

    @Test func aliasesAreCopiesOfTheirAnchors() throws {
        let root = try #require(try read("base: &b { x: 1, y: [2, 3] }\ncopy: *b\nword: &w hello\nagain: *w\n").get())
        #expect(root["copy"]?.json == ["x": 1, "y": [2, 3]])
        #expect(root["again"]?.json == "hello")
    }

    @Test func anEmptyDocumentIsNothing() throws {
        #expect(try read("").get() == nil)
        #expect(try read("# only a comment\n").get() == nil)
    }

    @Test func duplicateKeysAreLocatedAtTheSecond() {
        #expect(problems("a: 1\nb: 2\na: 3\n") == ["doc.yaml:3:1: error: YAML: duplicate key 'a' in a mapping"])
        // A large mapping finds them through its key set.
        let many = (0..<40).map { "k\($0): \($0)" }.joined(separator: "\n") + "\nk7: again\n"
        #expect(problems(many) == ["doc.yaml:41:1: error: YAML: duplicate key 'k7' in a mapping"])
    }

    @Test func nestedContainersKeepTheirOwnMembers() throws {
        // Members of every open container wait on one stack: each container
        // must get exactly its own, however deep and however many.
        let keys = (0..<20).map { "k\($0): [\($0), { inner: \($0) }]" }.joined(separator: "\n")
        let text = "outer:\n  a: { x: 1, y: { z: [1, [2, 3], {}] } }\n  b: []\n  c: [{ a: 1 }, { a: 2 }]\n" + keys + "\nlast: 1\n"
        let root = try #require(try read(text).get())
        #expect(root["outer"]?.json == ["a": ["x": 1, "y": ["z": [1, [2, 3], [:]]]], "b": [], "c": [["a": 1], ["a": 2]]])
        #expect(root.mappingPairs?.count == 22)
        #expect(root["k19"]?.json == [19, ["inner": 19]])
        #expect(root["last"]?.json == 1)
        // The same key in sibling mappings is no repeat; in one mapping it is.
        #expect(problems("a: { k: 1 }\nb: { k: 2 }\nk: 3\n").isEmpty)
        #expect(problems("a: [{ k: 1, j: { k: 2 }, k: 3 }]\n") == ["doc.yaml:1:26: error: YAML: duplicate key 'k' in a mapping"])
    }

    @Test func syntaxErrorsUndefinedAliasesAndSecondDocumentsAreLocated() {
        #expect(problems("a: [1, 2\nb: 3\n").first?.hasPrefix("doc.yaml:2:") == true)
        #expect(problems("a: [1, 2\nb: 3\n").first?.contains("error: YAML syntax:") == true)
        #expect(problems("a: *nowhere\n") == ["doc.yaml:1:4: error: YAML syntax: found undefined alias"])
        #expect(problems("a: 1\n---\nb: 2\n").first?.hasPrefix("doc.yaml:2:1: error: YAML syntax: expected a single document") == true)
        // An indentation slip is said as one, not only in libyaml's words.
        #expect(
            problems("endpoints:\n  a:\n    request: GET /a\n   responses: []\n").first?.hasSuffix(
                "(check the indentation: this line is indented differently from the keys beside it)") == true)
    }
}

@Suite struct StringSearchTests {
    @Test(arguments: [
        ("a {{ b }}", "{{", true), ("{", "{{", false), ("x{{", "{{", true), ("", "{{", false),
        ("abc", "", true), ("ééa=b", "=", true), ("aab", "ab", true), ("abab", "abb", false),
        ("ab", "abc", false), ("a long text ending in the needle}}", "}}", true), ("short ёж", "ёж", true), ("ёж", "жё", false),
    ])
    func findsTextByteForByte(text: String, needle: String, expected: Bool) {
        #expect(text.includes(needle) == expected)
        // A substring is searched within its bounds only.
        let framed = "{{" + text + "{{"
        #expect(framed.dropFirst(2).dropLast(2).includes(needle) == expected)
    }
}
