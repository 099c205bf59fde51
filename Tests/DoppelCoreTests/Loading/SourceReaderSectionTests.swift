import DoppelTestSupport
import Testing

@testable import DoppelCore

/// A large YAML file read in sections on every core: it builds exactly the
/// tree one pass builds, or it is not taken and one pass reads the file.
@Suite struct SourceReaderSectionTests {
    /// Cut finely whatever the size, so that small texts exercise the cuts.
    static let fine = SourceReader.SectionSplit(minimumSectionSize: 0, pieces: 64)

    func onePass(_ text: String) -> SourceNode? {
        var text = text
        return text.withUTF8 { bytes in
            var builder = SourceReader.TreeBuilder(file: "doc.yaml")
            let root = builder.read(bytes)
            return builder.problem == nil ? root : nil
        }
    }

    func inSections(_ text: String, split: SourceReader.SectionSplit = fine) -> SourceNode? {
        var text = text
        return text.withUTF8 { SourceReader.readInSections($0, file: "doc.yaml", split: split) }
    }

    /// The same tree: kinds, scalars, styles, places, order.
    func same(_ a: SourceNode?, _ b: SourceNode?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        guard a.location == b.location, a.contentOffset == b.contentOffset else { return false }
        switch (a.kind, b.kind) {
        case let (.scalar(x, plain: p), .scalar(y, plain: q)): return x == y && p == q
        case let (.sequence(x), .sequence(y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case let (.mapping(x), .mapping(y)):
            return x.count == y.count && zip(x, y).allSatisfy { same($0.key, $1.key) && same($0.value, $1.value) }
        default: return false
        }
    }

    /// A document shaped like a real OpenAPI one: a large `paths` section
    /// with comments, block scalars, flow collections over several lines,
    /// quoted keys and anchors inside entries, between small sections.
    static func document(entries: Int) -> String {
        var text = "# generated\nopenapi: 3.1.0\ninfo: { title: T,\n  version: \"1\" }\npaths:   # the operations\n"
        for index in 0..<entries {
            text += """
                  /things\(index)/{id}:
                    get:
                      operationId: get\(index)
                      description: |
                        Line one of \(index).

                        Line three: with a colon.
                      parameters: [{ name: id, in: path,
                          required: true }]
                      responses:
                        "200": &ok\(index)
                          description: 'quoted
                            over two lines'
                        "201": *ok\(index)
                # a comment at the top level, between entries
                  "/quoted\(index)": { get: { responses: {} } }

                """
        }
        text += "components:\n  schemas:\n    Thing: { type: object }\ntags:\n- name: a\n"
        return text
    }

    @Test func aLargeSectionReadInPiecesIsTheTreeOfOnePass() throws {
        let text = Self.document(entries: 60)
        let pieces = try #require(inSections(text))
        #expect(same(pieces, onePass(text)))
        let paths = try #require(pieces["paths"]?.mappingPairs)
        #expect(paths.count == 120)
        #expect(paths.last?.key.location == SourceLocation(file: "doc.yaml", line: 5 + 60 * 16, column: 3))
        // Every piece count and size gives the same tree.
        for count in [2, 3, 7, 200] {
            #expect(same(inSections(text, split: .init(minimumSectionSize: 0, pieces: count)), pieces))
        }
    }

    @Test func theReaderCutsFilesLargeEnough() throws {
        // Above the size, SourceReader.read takes the cut; the tree is the same.
        let text = Self.document(entries: 400)
        #expect(text.utf8.count > SourceReader.SectionSplit.minimumFileSize)
        #expect(inSections(text, split: .init()) != nil)
        let read = try #require(try SourceReader.read(text, file: "doc.yaml").get())
        #expect(same(read, onePass(text)))
    }

    @Test(arguments: [
        // An anchor defined outside the section and used in it.
        "base: &b { x: 1 }\npaths:\n  a: *b\n  b: 2\n",
        // An anchor defined in one piece and used in another.
        "paths:\n  a: &x 1\n  b: *x\n",
        // A flow collection and a quoted scalar over a cut.
        "paths:\n  a: { x: 1,\n  y: 2 }\n  b: 1\n",
        "paths:\n  a: \"one\n  two\"\n  b: 1\n",
        // A plain scalar continued at the entries' indentation.
        "paths:\n  a: one\n  two: 2\n",
        // A key repeated between pieces, and within one.
        "paths:\n  a: 1\n  b: 2\n  a: 3\n",
        // A section at the end, empty lines and comments only after it.
        "paths:\n  a: 1\n\n  # c\n  b: [1,\n    2]\n\n",
        // Entries that are not all at one indentation.
        "paths:\n    a: 1\n  b: 2\n",
        "paths:\n  a:\n    x: 1\n   y: 2\n  b: 3\n",
        // A complex key and a tab.
        "paths:\n  ? a\n  : 1\n  b: 2\n",
        "paths:\n  a: 1\n  \tb: 2\n",
        // Line breaks libyaml counts and the cut does not.
        "paths:\r\n  a: 1\r\n  b: 2\r\n",
        "paths:\n  a: x\u{2028}y\n  b: 2\n",
        "paths:\n  a: x\u{85}y\n  b: 2\n",
        // A second document, directives, a flow mapping at the top.
        "paths:\n  a: 1\n  b: 2\n---\nc: 1\n",
        "%YAML 1.1\n---\npaths:\n  a: 1\n  b: 2\n",
        "{\npaths:\n  a: 1,\n  b: 2\n}\n",
        "paths: # note\n  a: 1\n  b: 2\nrest: [1,\n2]\n",
        "paths: &p\n  a: 1\n  b: 2\ncopy: *p\n",
        // An anchor defined again: an alias names the latest definition before it.
        "info: { title: &a outer }\npaths:\n  x: &a inner\n  y: 2\ndata: { v: *a }\n",
        "paths:\n  x: &a one\n  y: &a two\nafter: *a\n",
        "base: &a 1\npaths:\n  x: &a 2\n  y: *a\n",
        "paths:\n- a\n- b\n",
        "paths:\n  - a\n  - b\n",
    ])
    func aCutNeverReadsOtherwiseThanOnePass(text: String) {
        // Either the cut is not taken, or it gives one pass's tree.
        let pieces = inSections(text)
        if let pieces {
            #expect(same(pieces, onePass(text)), "\(text)")
        }
    }

    /// Seeded random documents of the constructs that could read otherwise
    /// in pieces: anchors defined again, aliases across sections and pieces,
    /// merge keys, block scalars, flow collections and quoted scalars over
    /// lines, comments, document markers. Either the cut is not taken, or it
    /// builds one pass's tree.
    @Test(arguments: 0..<200)
    func randomDocumentsReadInPiecesAsInOnePass(seed: UInt64) {
        var random = SeededGenerator(seed: seed &+ 1)
        func pick<T>(_ items: [T]) -> T { items.randomElement(using: &random)! }
        let anchors = ["a", "b", "c"]
        func value(_ depth: Int) -> String {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: return "&\(pick(anchors)) v\(Int.random(in: 0..<9, using: &random))"
            case 1: return "*\(pick(anchors))"
            case 2: return "{ x: 1,\n    y: \(pick(["2", "*a", "&b 3"])) }"
            case 3: return "\"quoted\n    over lines\""
            case 4: return "|\n      block \(depth)\n      text: with colon"
            case 5: return "[1,\n    2]"
            case 6: return depth > 1 ? "plain" : "\n    <<: *\(pick(anchors))\n    k: v"
            case 7: return "&\(pick(anchors)) { m: 1 }"
            case 8: return "plain # a comment"
            default: return "'single'"
            }
        }
        var text = pick(["", "# top\n", "%YAML 1.1\n---\n", "---\n"])
        // Every anchor defined first here, so one pass reads every alias.
        text += "info: { title: &a outer, x: &b 1, y: &c { m: 1 } }\n"
        for section in ["paths", "endpoints"] {
            text += "\(section):\n"
            for entry in 0..<Int.random(in: 1..<12, using: &random) {
                text += "  e\(entry): \(value(0))\n"
                if Int.random(in: 0..<5, using: &random) == 0 { text += "# between\n" }
            }
            text += "mid\(section): \(value(1))\n"
        }
        text += pick(["data: { v: *a }\n", "tail: *b\n", "tail: 1\n", "...\n", "tail: *c\n"])
        guard let expected = onePass(text) else {
            Issue.record("one pass refuses the generated document:\n\(text)")
            return
        }
        if let pieces = inSections(text) {
            #expect(same(pieces, expected), "\(text)")
        }
    }

    /// The issue's contract: an anchor defined in `info` and again in an
    /// endpoint, and an alias at the end, serves the later definition at
    /// any size (at 270 KB it was read in pieces and served the first).
    @Test(arguments: [0, 1_500])
    func aRedefinedAnchorServesItsLatestDefinitionAtAnySize(padding: Int) throws {
        var text = "doppel: 1\ninfo: { title: &a outer, version: \"1\" }\nendpoints:\n"
        text += "  v: { request: GET /v, description: &a inner, responses: [ { body: { v: \"{{ data.v }}\" } } ] }\n"
        for index in 0..<padding {
            text += "  e\(index): { request: GET /e\(index), description: padding to read this file in pieces, responses: [ { status: 204 } ] }\n"
        }
        text += "data: { v: *a }\n"
        if padding > 0 { #expect(text.utf8.count > SourceReader.SectionSplit.minimumFileSize) }
        let engine = MockEngine(contract: try loadContract(text))
        #expect(engine.send("GET", "/v").json == ["v": "inner"])
    }

    @Test func otherTextIsCutAsAnyOther() throws {
        // Non-ASCII text, E2 and C2 bytes that are not line breaks, and
        // comments after a section's key do not stop the cut.
        for text in [
            "paths:\n  a: café — “quoted” ±\n  b: ©\n",
            "paths: # the operations\n  a: 1\n  b: 2\n",
            "paths:\t\n  a: 1\n  b: 2\nnext: 1\n",
        ] {
            let pieces = try #require(inSections(text), "\(text)")
            #expect(same(pieces, onePass(text)), "\(text)")
        }
        // A key with text after its colon is not a section.
        #expect(inSections("paths: {}\n  a: 1\n") == nil)
        #expect(inSections("paths:#x\n  a: 1\n  b: 2\n") == nil)
    }

    @Test func whatOnePassRefusesTheCutDoesNotRead() {
        for text in [
            "base: &b { x: 1 }\npaths:\n  a: *b\n  b: 2\n".replacingOccurrences(of: "&b", with: "&c"),
            "paths:\n  a: { x: 1,\n  b: 1\n",
            "paths:\n  a: 1\n  b: 2\n  a: 3\n",
            "paths:\n    a: 1\n  b: 2\n",
            "paths:\n  a: 1\n  b: 2\npaths:\n  c: 1\n",
        ] {
            #expect(onePass(text) == nil, "\(text)")
            #expect(inSections(text) == nil, "\(text)")
        }
    }

    @Test func aRepeatedKeyInALargeFileIsReportedWhereOnePassFindsIt() throws {
        var text = Self.document(entries: 400)
        text += "paths2:\n" + (0..<5000).map { "  k\($0): \($0)" }.joined(separator: "\n") + "\n  k3: again\n"
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - 1
        guard case .failure(let error) = SourceReader.read(text, file: "doc.yaml") else {
            Issue.record("the repeated key was not found")
            return
        }
        #expect(error.diagnostics.map(\.description) == ["doc.yaml:\(lines):3: error: YAML: duplicate key 'k3' in a mapping"])
    }

    @Test func theNodeBudgetCountsEveryPiece() async throws {
        // Each piece is within the budget; all of them together are not.
        let perEntry = 1 + 2 * 50
        let entries = SourceReader.maximumNodes / perEntry + 10
        var text = "paths:\n"
        let items = (0..<50).map { "k\($0): 1" }.joined(separator: ", ")
        for index in 0..<entries { text += "  e\(index): { \(items) }\n" }
        // A million nodes read twice: on a thread of its own (`offThePool`).
        let (sections, whole) = try await offThePool { [text] in
            (inSections(text, split: .init(minimumSectionSize: 0, pieces: 64)), SourceReader.read(text, file: "doc.yaml"))
        }
        #expect(sections == nil)
        guard case .failure(let error) = whole else {
            Issue.record("the budget was not enforced")
            return
        }
        #expect(error.diagnostics.first?.message.contains("more than \(SourceReader.maximumNodes) nodes") == true)
    }
}
