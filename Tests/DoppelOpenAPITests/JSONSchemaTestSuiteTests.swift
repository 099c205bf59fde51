import DoppelCore
import DoppelOpenAPI
import Foundation
import Testing

/// The official JSON-Schema-Test-Suite (a pinned copy beside this file, see
/// its README) run through Doppel as a user's document goes: each schema a
/// component of an OpenAPI document, read by the importer and the contract
/// loader, each instance checked by the validator of request bodies.
@Suite("JSON-Schema-Test-Suite")
struct JSONSchemaTestSuiteTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("JSON-Schema-Test-Suite")

    /// One case of the suite: `file: group / test`.
    struct Case: Sendable {
        let id: String
        let valid: Bool
        let data: JSON
    }

    /// One schema of the suite with its cases.
    struct Group {
        let file: String
        let description: String
        let schema: Any
        let cases: [Case]
    }

    static func groups(draft: String) throws -> [Group] {
        let folder = root.appendingPathComponent("tests/\(draft)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
        var groups: [Group] = []
        for file in files {
            let data = try Data(contentsOf: folder.appendingPathComponent(file))
            let list = try #require(JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [[String: Any]])
            for group in list {
                let description = group["description"] as? String ?? ""
                let tests = group["tests"] as? [[String: Any]] ?? []
                let cases = try tests.map { test in
                    let instance = try JSONSerialization.data(withJSONObject: ["v": test["data"] ?? NSNull()], options: [.fragmentsAllowed])
                    guard case .object(let wrapper) = try JSONReader.parse([UInt8](instance)), let value = wrapper["v"] else {
                        throw SuiteError.unreadable(file)
                    }
                    return Case(
                        id: "\(file): \(description) / \(test["description"] as? String ?? "")", valid: test["valid"] as? Bool ?? false, data: value)
                }
                groups.append(Group(file: file, description: description, schema: group["schema"] ?? [:], cases: cases))
            }
        }
        return groups
    }

    enum SuiteError: Error { case unreadable(String) }

    /// The ids of the cases Doppel gets wrong: a case's instance is accepted
    /// where the suite says invalid, or refused where it says valid, or the
    /// document holding its schema cannot be served.
    static func failures(draft: String, openapi: String) throws -> (failed: [String: String], total: Int) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-jsts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // The suite's remote documents, at the URL its cases name them by
        // (`http://localhost:1234/…`), where a user saves a copy of a URL.
        try FileManager.default.copyItem(at: root.appendingPathComponent("remotes"), to: folder.appendingPathComponent("localhost:1234"))
        var failed: [String: String] = [:]
        var total = 0
        for (index, group) in try groups(draft: draft).enumerated() {
            total += group.cases.count
            let document: [String: Any] = [
                "openapi": openapi,
                "info": ["title": "suite", "version": "1"],
                "paths": [
                    "/s": [
                        "post": [
                            "requestBody": ["content": ["application/json": ["schema": ["$ref": "#/components/schemas/S"]]]],
                            "responses": ["200": ["description": "ok"]],
                        ]
                    ]
                ],
                "components": ["schemas": ["S": ["$ref": "schema\(index).json"]]],
            ]
            // The schema is a document of its own, as the suite means it (its
            // `#` is its own root), referred to from the OpenAPI document.
            let file = folder.appendingPathComponent("g\(index).json")
            try JSONSerialization.data(withJSONObject: document, options: [.fragmentsAllowed]).write(to: file)
            try JSONSerialization.data(withJSONObject: group.schema, options: [.fragmentsAllowed]).write(
                to: folder.appendingPathComponent("schema\(index).json"))
            let contract: Contract
            do {
                contract = try ContractDocument.load(file: file.path, checkingWithOpenAPIKit: false)
            } catch {
                let first = error.diagnostics.first { $0.severity == .error }?.message ?? "\(error)"
                for test in group.cases { failed[test.id] = "not served: \(first)" }
                continue
            }
            guard let schema = contract.schemas["S"] else {
                for test in group.cases { failed[test.id] = "no schema" }
                continue
            }
            let validator = SchemaValidator(registry: contract.schemas)
            for test in group.cases {
                let issues = validator.validate(test.data, against: schema)
                if issues.isEmpty != test.valid {
                    failed[test.id] = test.valid ? "refused: \(issues.first?.description ?? "")" : "accepted"
                }
            }
        }
        return (failed, total)
    }

    /// The cases that may fail, with their reasons.
    static func known(_ draft: String) throws -> [String: String] {
        let file = root.appendingPathComponent("known-failures-\(draft).json")
        guard FileManager.default.fileExists(atPath: file.path) else { return [:] }
        return try #require(JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: String])
    }

    @Test("draft2020-12 (OpenAPI 3.1): every required case passes but the budgeted known failures", arguments: [("draft2020-12", "3.1.0")])
    func draft202012(draft: String, openapi: String) throws {
        try run(draft: draft, openapi: openapi)
    }

    /// OpenAPI 3.0's Schema Object is draft 4's (with `nullable`, and no `const`):
    /// the suite's draft 4 cases, run through a 3.0 document.
    @Test("draft4 (OpenAPI 3.0): every required case passes but the budgeted known failures", arguments: [("draft4", "3.0.3")])
    func draft4(draft: String, openapi: String) throws {
        try run(draft: draft, openapi: openapi)
    }

    /// The suite's optional format cases: Doppel asserts the formats it
    /// knows (as OpenAPI clients expect), so each must be told apart as
    /// the suite says, but the budgeted known failures.
    @Test("draft2020-12 optional/format: the formats Doppel asserts, but the budgeted known failures")
    func formats() throws {
        try run(draft: "draft2020-12/optional/format", openapi: "3.1.0", list: "format")
    }

    func run(draft: String, openapi: String, list: String? = nil) throws {
        let (failed, total) = try Self.failures(draft: draft, openapi: openapi)
        let draft = list ?? draft
        let known = try Self.known(draft)
        print("JSON-Schema-Test-Suite \(draft): \(total - failed.count) of \(total) pass; \(known.count) known failures")
        if let write = ProcessInfo.processInfo.environment["DOPPEL_SUITE_WRITE"], write == "1" || write == "fresh" {
            let file = Self.root.appendingPathComponent("known-failures-\(draft).json")
            // The reasons written by hand are kept; a new failure is listed with what failed.
            // (`DOPPEL_SUITE_WRITE=fresh`: each with what failed now.)
            let fresh = ProcessInfo.processInfo.environment["DOPPEL_SUITE_WRITE"] == "fresh"
            let listed = Dictionary(uniqueKeysWithValues: failed.map { id, why in (id, fresh ? why : known[id] ?? why) })
            try JSONSerialization.data(withJSONObject: listed, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]).write(to: file)
        }
        for (id, why) in failed.sorted(by: { $0.key < $1.key }) where known[id] == nil {
            Issue.record("fails, and is not a known failure: \(id): \(why)")
        }
        for id in known.keys.sorted() where failed[id] == nil {
            Issue.record("passes now: take it off known-failures-\(draft).json: \(id)")
        }
    }
}
