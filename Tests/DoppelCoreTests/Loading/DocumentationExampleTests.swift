import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

/// Every YAML example in the docs must lint clean: a whole contract or
/// scenario as it is; top-level sections of a contract, and endpoints, inside
/// a contract made around them; any other fragment must at least be YAML.
@Suite struct DocumentationExampleTests {
    struct Example: CustomTestStringConvertible, Sendable {
        let file: String
        let line: Int
        let text: String
        var testDescription: String { "\(file):\(line)" }
    }

    static let examples: [Example] = {
        let docs = repositoryRoot.appendingPathComponent("docs")
        let files =
            ((try? FileManager.default.contentsOfDirectory(atPath: docs.path)) ?? []).filter { $0.hasSuffix(".md") }.sorted()
            .map { "docs/\($0)" } + ["README.md"]
        var found: [Example] = []
        for file in files {
            guard let text = try? String(contentsOfFile: repositoryRoot.appendingPathComponent(file).path, encoding: .utf8) else { continue }
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)[...]
            var number = 0
            while let line = lines.popFirst() {
                number += 1
                guard line == "```yaml" else { continue }
                let start = number + 1
                var block: [Substring] = []
                while let inner = lines.popFirst() {
                    number += 1
                    if inner == "```" { break }
                    block.append(inner)
                }
                found.append(Example(file: file, line: start, text: block.joined(separator: "\n") + "\n"))
            }
        }
        return found
    }()

    static let topLevelKeys: Set<String> = [
        "doppel", "info", "base_path", "auth", "schemas", "state", "data", "responses", "fallbacks", "rate_limits", "endpoints",
    ]

    @Test func theDocsHaveExamples() {
        #expect(Self.examples.count >= 20)
    }

    @Test(arguments: DocumentationExampleTests.examples)
    func lintsClean(example: Example) throws {
        let place = "\(example.file):\(example.line)"
        guard case .success(let root?) = SourceReader.read(example.text, file: place) else {
            Issue.record("\(place): the example is not YAML")
            return
        }
        let keys = Set(root.mappingPairs?.compactMap(\.key.scalarText) ?? [])
        let problems: [Diagnostic]
        if keys.contains("doppel") {
            problems = ContractError.thrown { () throws(ContractError) in _ = try ContractLoader.load(text: example.text, file: place) }
        } else if keys.contains("contract") {
            // Scenario examples name their contract as a file under scenarios/CONTRACT/ would.
            let file = repositoryRoot.appendingPathComponent("scenarios/tales/docs-example.yaml").path
            problems = ContractError.thrown { () throws(ContractError) in _ = try ScenarioLoader.load(text: example.text, file: file) }
        } else if !keys.isEmpty, keys.isSubset(of: Self.topLevelKeys) {
            let placeholder =
                keys.contains("endpoints")
                ? "" : "endpoints:\n  docs-placeholder: { request: GET /docs-placeholder, responses: [ { status: 200 } ] }\n"
            problems = ContractError.thrown { () throws(ContractError) in
                _ = try ContractLoader.load(text: "doppel: 1\n" + example.text + placeholder, file: place)
            }
        } else if let pairs = root.mappingPairs, !pairs.isEmpty, pairs.allSatisfy({ $0.value["request"] != nil }) {
            let indented = example.text.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(separator: "\n")
            problems = ContractError.thrown { () throws(ContractError) in
                _ = try ContractLoader.load(text: "doppel: 1\nendpoints:\n" + indented, file: place)
            }
        } else {
            problems = []
        }
        #expect(problems.filter { $0.severity == .error }.map(\.description) == [])
    }
}
