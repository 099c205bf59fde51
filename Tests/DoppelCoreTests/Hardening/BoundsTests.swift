import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

/// Each bound of `docs/limits.md` that lives in the core, attacked directly.
@Suite struct BoundsTests {
    // MARK: Schemas

    @Test func combinatorCyclesThatNeverDescendAreLintErrors() {
        let text = """
            doppel: 1
            schemas:
              Pet: { oneOf: [Cat] }
              Cat: { allOf: [Pet, { properties: { meows: { type: boolean } } }] }
              A: { $ref: B }
              B: { anyOf: [{ not: A }] }
            endpoints:
              add: { request: POST /pets, body: { schema: Pet }, responses: [ { status: 200 } ] }
            """
        let found = diagnostics(of: text).map(\.description)
        #expect(found.count == 2, "\(found)")
        #expect(found.contains { $0.hasPrefix("test.yaml:5:6: error: schema 'A' refers back to itself") && $0.contains("A → B → A") })
        #expect(found.contains { $0.hasPrefix("test.yaml:4:8: error: schema 'Cat' refers back to itself") && $0.contains("Cat → Pet → Cat") })
    }

    /// Schemas whose bounds are past the integer range: a body made from
    /// each is a number written as a double, or no sample, never a trap.
    @Test(
        arguments: [
            ("{ type: integer, minimum: 1e300 }", "1e+300"),
            ("{ type: integer, maximum: -1e300 }", "-1e+300"),
            ("{ type: string, minLength: 9223372036854775807 }", nil),
            ("{ type: array, minItems: 9223372036854775807 }", nil),
        ] as [(String, String?)])
    func samplesOfSchemasPastTheIntegerRange(schema: String, body: String?) throws {
        let text = """
            doppel: 1
            endpoints:
              e: { request: GET /e, responses: [ { status: 200, schema: \(schema), body_from_schema: true } ] }
            """
        // No value within the sample's bounds: a located warning and no body, not a trap or a gigabyte string.
        let engine = MockEngine(contract: try loadContract(text))
        let answer = engine.send("GET", "/e")
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self) == body ?? "")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-bounds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("test.yaml").path
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let warnings = ContractLoader.lint(file: file).filter { $0.message.contains("no body can be generated") }
        #expect(warnings.count == (body == nil ? 1 : 0))
        #expect(warnings.allSatisfy { $0.severity == .warning && $0.location.line == 3 })
    }

    @Test func recursiveDataShapesLoadAndValidateDeepBodies() throws {
        let contract = try loadContract(
            """
            doppel: 1
            schemas:
              Node:
                type: object
                properties: { child: Node, tags: { type: array, items: { oneOf: [Node, { type: string }] } } }
            endpoints:
              add: { request: POST /nodes, body: { schema: Node }, responses: [ { status: 200 } ] }
            """)
        let engine = MockEngine(contract: contract)
        // 400 levels through $ref and oneOf: valid, and no false 422.
        var text = "{}"
        for _ in 0..<400 { text = #"{"child": \#(text)}"# }
        #expect(engine.send("POST", "/nodes", body: Array(text.utf8), contentType: "application/json").status == 200)
        var wrong = #"{"child": 5}"#
        for _ in 0..<200 { wrong = #"{"tags": [\#(wrong)]}"# }
        let refused = engine.send("POST", "/nodes", body: Array(wrong.utf8), contentType: "application/json")
        #expect(refused.status == 422)
    }

    @Test func validationListsAtMostAHundredIssues() {
        let validator = SchemaValidator(registry: [:])
        let schema = Schema(types: ["array"], items: Schema(types: ["string"]))
        let issues = validator.validate(.array(Array(repeating: .int(1), count: 500_000)), against: schema)
        #expect(issues.count == SchemaValidator.maximumIssues + 1)
        #expect(issues.last?.message == "and 499900 more issues not listed (at most 100 are)")
    }

    @Test func aLargeEnumIsOneLookupAndItsMessageStaysShort() {
        // 300,000 values compared one by one, and listed in every message,
        // held one 8 KB request for tens of seconds.
        let values: [JSON] = (0..<300_000).map { .string("v\($0)") } + [.int(3), ["a": 1, "b": 2]]
        let schema = Schema(types: ["array"], items: Schema(enumValues: values))
        let validator = SchemaValidator(registry: [:])
        let items: [JSON] = (0..<5_000).map { $0.isMultiple(of: 2) ? .string("v\($0 * 7)") : .string("nope\($0)") }
        let issues = validator.validate(.array(items), against: schema)
        #expect(issues.count == SchemaValidator.maximumIssues + 1)
        #expect(issues.last?.message == "and 2400 more issues not listed (at most 100 are)")
        let first = try? #require(issues.first?.message)
        #expect(first?.hasPrefix("must be one of \"v0\", \"v1\"") == true)
        #expect(first?.hasSuffix("(and 299982 more), got \"nope1\"") == true)
        // Equal as JSON compares: 3.0 is 3, members in any order.
        #expect(validator.validate(.array([.double(3), ["b": 2, "a": 1], "v299999"]), against: schema).isEmpty)
        #expect(validator.validate(.array([.double(3.5)]), against: schema).count == 1)
    }

    @Test func exponentialAnyOfStopsAtTheCheckBudget() async throws {
        // Each level tries two shapes that both recurse: 2^depth checks without a budget.
        // Seconds of checks in a debug build: on a thread of its own (`offThePool`).
        let issues = try await offThePool {
            let node = Schema(anyOf: [Schema(ref: "N"), Schema(ref: "N")])
            let registry = ["N": Schema(types: ["array"], items: node)]
            var value = JSON.int(1)
            for _ in 0..<60 { value = .array([value]) }
            return SchemaValidator(registry: registry).validate(value, against: Schema(ref: "N"))
        }
        #expect(issues.contains { $0.message.contains("validation stopped after") })
    }

    // MARK: Expressions

    @Test(arguments: [
        String(repeating: "(", count: 20_000) + "1" + String(repeating: ")", count: 20_000),
        String(repeating: "not ", count: 100_000) + "true",
        "1" + String(repeating: " + 1", count: 100_000),
        String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000),
        String(repeating: "-", count: 50_000) + "1",
        String(repeating: "len(", count: 5_000) + "'a'" + String(repeating: ")", count: 5_000),
    ])
    func deepExpressionsAreSyntaxErrorsNotCrashes(_ source: String) {
        #expect(throws: ExpressionSyntaxError.self) { try Expression.parse(source) }
    }

    @Test func expressionsUpToTheDepthLimitParse() throws {
        let nested = String(repeating: "(", count: 60) + "1" + String(repeating: ")", count: 60)
        _ = try Expression.parse(nested)
        _ = try Expression.parse("1" + String(repeating: " + 1", count: 60))
    }

    @Test func deepExpressionInAContractIsALocatedLintError() {
        let deep = String(repeating: "(", count: 10_000) + "1" + String(repeating: ")", count: 10_000)
        let found = diagnostics(
            of: """
                doppel: 1
                endpoints:
                  x:
                    request: GET /x
                    responses: [ { when: "\(deep)", status: 200 } ]
                """)
        #expect(found.count == 1)
        #expect(found.first?.description.contains("expression") == true)
    }

    // MARK: YAML

    @Test func billionLaughsIsRefusedWithinTheNodeBudget() {
        var text = "doppel: 1\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        for i in 1...9 { text += "a\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 10).joined(separator: ", ") + "]\n" }
        let found = diagnostics(of: text)
        #expect(found.count == 1)
        #expect(found.first?.message.contains("expands to more than \(SourceReader.maximumNodes) nodes") == true)
    }

    @Test func overDeepYAMLGetsAClearMessage() {
        let deep = "doppel: 1\ndata: " + String(repeating: "[", count: 300) + String(repeating: "]", count: 300) + "\n"
        #expect(diagnostics(of: deep).first?.message == "YAML nests deeper than \(SourceReader.maximumDepth) levels")
        let deeper = "doppel: 1\ndata: " + String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000) + "\n"
        #expect(diagnostics(of: deeper).first?.message.contains("YAML nests deeper than") == true)
    }

    @Test func unreadableFilesSayWhy() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-bounds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let latin1 = folder.appendingPathComponent("latin1.yaml")
        try Data("doppel: 1\ninfo: { title: Caf".utf8 + [0xE9] + Data(" }\n".utf8)).write(to: latin1)
        func message(_ path: String) -> String? { ContractLoader.lint(file: path).first?.description }
        #expect(message(latin1.path) == "\(latin1.path):2:19: error: the contract is not UTF-8 text: byte 0xE9 at byte offset 28")
        #expect(message("/dev/null") == "/dev/null:1:1: error: cannot read contract: not a regular file")
        #expect(message(folder.path) == "\(folder.path):1:1: error: cannot read contract: it is a folder, not a file")
        #expect(message(folder.appendingPathComponent("none.yaml").path)?.hasSuffix("cannot read contract: no such file") == true)
        // Read and parsed without a String of the whole text, the bytes are
        // still reported first: before a syntax error, and in a large file
        // whose sections are read on every core.
        let broken = folder.appendingPathComponent("broken.yaml")
        try Data("doppel: 1\ninfo: [\n".utf8 + Data("x: caf".utf8) + [0xE9] + Data("\n".utf8)).write(to: broken)
        #expect(message(broken.path) == "\(broken.path):3:7: error: the contract is not UTF-8 text: byte 0xE9 at byte offset 24")
        var many = "doppel: 1\nendpoints:\n"
        for index in 0..<3_000 { many += "  e\(index): { request: GET /e\(index), responses: [{ status: 200 }] }\n" }
        let bad = folder.appendingPathComponent("bad.yaml")
        let cut = many.utf8.count / 2
        try Data(Array(many.utf8)[..<cut] + [0xFF] + Array(many.utf8)[cut...]).write(to: bad)
        #expect(many.utf8.count > 128 << 10)
        let line = many.utf8.prefix(cut).filter { $0 == 0x0A }.count + 1
        #expect(message(bad.path)?.hasPrefix("\(bad.path):\(line):") == true)
        #expect(message(bad.path)?.hasSuffix("not UTF-8 text: byte 0xFF at byte offset \(cut)") == true)
        try many.write(to: bad, atomically: true, encoding: .utf8)
        #expect(try ContractLoader.load(file: bad.path).endpoints.count == 3_000)
        // A FIFO is refused before it is opened (opening it would wait for a writer).
        let fifo = folder.appendingPathComponent("fifo.yaml")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        #expect(message(fifo.path) == "\(fifo.path):1:1: error: cannot read contract: not a regular file")
        // One byte over the limit is too large; at the limit, the file is read whole.
        let large = folder.appendingPathComponent("large.yaml")
        let limit = SourceReader.maximumFileSize
        try Data(repeating: UInt8(ascii: "#"), count: limit + 1).write(to: large)
        #expect(
            message(large.path) == "\(large.path):1:1: error: cannot read contract: \(limit + 1) bytes is more than the 16 MiB a contract may have")
        try Data(repeating: UInt8(ascii: "#"), count: limit).write(to: large)
        guard case .success(let bytes) = SourceReader.readBytes(large.path, what: "contract") else {
            Issue.record("a file at the limit was refused")
            return
        }
        #expect(bytes.count == limit && bytes.allSatisfy { $0 == UInt8(ascii: "#") })
    }
}

extension MockEngine {
    /// Sends raw bytes with a content type.
    func send(_ method: String, _ target: String, body: [UInt8], contentType: String) -> MockResponse {
        respond(to: RecordedRequest(method: method, target: target, headers: [(name: "Content-Type", value: contentType)], body: body))
    }
}
