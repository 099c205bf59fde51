import DoppelCore
import DoppelOpenAPI
import Foundation

/// The tools that read documents an agent gives as text (`lint`, `diff`, `import_openapi`):
/// each text is written to a folder of its own, made for the call and
/// removed after it, and read as `doppel lint`, `doppel diff` and `doppel import` read a file.
/// A reference to another file resolves in that folder, where there is
/// none: an agent's text reaches no file of the machine's.
extension DoppelTools {
    /// The longest text a document tool takes: 1 MiB.
    static let maximumDocument = 1 << 20

    /// `text`'s problems as `doppel lint` reports them, each at its line and column.
    func lint(_ input: ToolInput) throws(ToolInput.Refusal) -> ToolResult {
        let name = try Self.fileName(input)
        let text = try Self.document("text", input)
        let diagnostics = try Self.withFiles([(name, text)]) { paths in ContractDocument.lint(file: paths[0]) }
        let errors = diagnostics.filter { $0.severity == .error }.count
        return Self.result(
            .object(
                JSONObject([
                    ("valid", .bool(errors == 0)), ("errors", .int(errors)), ("warnings", .int(diagnostics.count - errors)),
                    ("problems", .array(diagnostics.map { Self.json($0) })),
                ])))
    }

    /// The changes from `old` to `new`, each breaking or compatible for a client of the old, as `doppel diff` lists them.
    func diff(_ input: ToolInput) throws(ToolInput.Refusal) -> ToolResult {
        let name = try Self.fileName(input)
        let old = try Self.document("old", input)
        let new = try Self.document("new", input)
        let outcome: (changes: [ContractDiff.Change], problems: [Diagnostic]) = try Self.withFiles([("old-" + name, old), ("new-" + name, new)]) {
            paths in
            do throws(ContractError) {
                let before = try ContractDocument.load(file: paths[0], checkingWithOpenAPIKit: false)
                let after = try ContractDocument.load(file: paths[1], checkingWithOpenAPIKit: false)
                return (ContractDiff.changes(from: before, to: after), [])
            } catch {
                return ([], error.diagnostics)
            }
        }
        if outcome.problems.isEmpty {
            let changes = outcome.changes
            let breaking = changes.filter(\.breaking).count
            return Self.result(
                .object(
                    JSONObject([
                        ("breaking", .int(breaking)), ("compatible", .int(changes.count - breaking)),
                        ("changes", .array(changes.map { $0.json })),
                    ])))
        }
        let listed = outcome.problems.filter { $0.severity == .error }.map { Self.text($0) }.joined(separator: "\n")
        return Self.failure("diff: a version does not load; fix these first (lint shows every problem):\n" + listed)
    }

    /// `import_openapi`: an OpenAPI document given as text, as the contract `doppel import` writes.
    func importOpenAPI(_ input: ToolInput) throws(ToolInput.Refusal) -> ToolResult {
        let name = try Self.fileName(input, default: "openapi.yaml")
        let text = try Self.document("text", input)
        let outcome: (imported: ContractImport.Imported?, problems: [Diagnostic]) = try Self.withFiles([(name, text)]) { paths in
            do throws(ContractError) {
                return (try ContractImport.contract(fromDocument: paths[0]), [])
            } catch {
                return (nil, error.diagnostics)
            }
        }
        guard let imported = outcome.imported else {
            let listed = outcome.problems.filter { $0.severity == .error }.map { Self.text($0) }.joined(separator: "\n")
            return Self.failure("import_openapi: the document cannot be imported:\n" + listed)
        }
        return Self.result(
            .object(JSONObject([("contract", .string(imported.text)), ("warnings", .array(imported.warnings.map { Self.json($0) }))])))
    }

    /// A problem as JSON: its file (`old-`/`new-` for diff), line, column, severity and message.
    static func json(_ diagnostic: Diagnostic) -> JSON {
        .object(
            JSONObject([
                ("line", .int(diagnostic.location.line)), ("column", .int(diagnostic.location.column)),
                ("severity", .string(diagnostic.severity == .error ? "error" : "warning")), ("message", .string(diagnostic.message)),
                ("text", .string(text(diagnostic))),
            ]))
    }

    /// `name:line:column: severity: message`, named by the file's name alone (not the temporary folder's).
    static func text(_ diagnostic: Diagnostic) -> String {
        let severity = diagnostic.severity == .error ? "error" : "warning"
        let file = URL(fileURLWithPath: diagnostic.location.file).lastPathComponent
        return "\(file):\(diagnostic.location.line):\(diagnostic.location.column): \(severity): \(diagnostic.message)"
    }

    /// The file name a document is read under (`.yaml` or `.json` says how): a plain name, no folder.
    static func fileName(_ input: ToolInput, default fallback: String = "contract.yaml") throws(ToolInput.Refusal) -> String {
        let name = try input.string("file_name") ?? fallback
        guard name.utf8.count <= 100, !name.contains("/"), !name.contains("\\"), !name.hasPrefix("."),
            name.hasSuffix(".yaml") || name.hasSuffix(".yml") || name.hasSuffix(".json")
        else {
            throw ToolInput.Refusal(message: "\(input.tool): `file_name` must be a plain file name ending in .yaml, .yml or .json: openapi.json.")
        }
        return name
    }

    static func document(_ name: String, _ input: ToolInput) throws(ToolInput.Refusal) -> String {
        let text = try input.requiredString(name)
        guard text.utf8.count <= maximumDocument else {
            throw ToolInput.Refusal(
                message: "\(input.tool): `\(name)` is \(text.utf8.count) bytes; the most a document may be is \(maximumDocument).")
        }
        return text
    }

    /// Runs `body` on the texts written as files in a new folder, removed afterwards.
    static func withFiles<T>(_ files: [(name: String, text: String)], _ body: ([String]) -> T) throws(ToolInput.Refusal) -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-mcp-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
            var paths: [String] = []
            for file in files {
                let path = folder.appendingPathComponent(file.name).path
                try file.text.write(toFile: path, atomically: false, encoding: .utf8)
                paths.append(path)
            }
            return body(paths)
        } catch {
            throw ToolInput.Refusal(message: "The document could not be written to a temporary folder: \(error.localizedDescription)")
        }
    }
}
