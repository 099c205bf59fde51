import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import DoppelProtobuf
import Foundation

struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List what changed between two versions of a contract, each change breaking or compatible for an existing client.",
        discussion: """
            OLD and NEW are Doppel contracts or OpenAPI documents, in any mix. Removed endpoints, statuses and response \
            fields, a request field newly required, a narrowed type, enum or range, a response enum with new values, a \
            changed auth scheme are breaking; additions a client can ignore are compatible. WebSocket rules, close codes, pushes and \
            callbacks are compared too. With --journal, each breaking change says which calls a journal (or a saved \
            event stream) observed it breaks. OLD and NEW may instead be two versions of a gRPC API's .proto file: a removed \
            service, method, message, field or enum value, a renumbered or renamed field, a changed type or streaming is \
            breaking. Exits 1 when any change is breaking. See docs/verify.md.
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, markdown
    }

    @Argument(help: "The version clients were built against.")
    var old: String

    @Argument(help: "The new version.")
    var new: String

    @Option(help: "text (default), json, or markdown (a summary for a pull request comment).")
    var format: Format = .text

    @Option(
        help: ArgumentHelp(
            "A journal of the old version's use (GET /__doppel/journal's answer, or GET /__doppel/events saved): each breaking change says which observed calls, and how many of the sessions, it breaks.",
            valueName: "file"))
    var journal: String?

    func run() throws {
        if old.hasSuffix(".proto") || new.hasSuffix(".proto") { return try runProto() }
        let before: Contract
        let after: Contract
        do {
            before = try ContractDocument.load(file: old, release: .atExit)
            after = try ContractDocument.load(file: new, release: .atExit)
        } catch {
            printDiagnostics(error.diagnostics)
            throw ExitCode(1)
        }
        let changes = ContractDiff.changes(from: before, to: after)
        let breaking = changes.filter(\.breaking).count
        var summary = changes.isEmpty ? "no changes" : "\(breaking) breaking, \(changes.count - breaking) compatible"
        if changes.count >= ContractDiff.maximumChanges { summary += " (the first \(ContractDiff.maximumChanges) changes found; there are more)" }
        var exposures: [ContractDiff.Exposure?] = changes.map { _ in nil }
        var observed: JSON?
        if let journal {
            let found = try Self.observe(journal, changes: changes, from: before, to: after)
            (exposures, observed) = (found.exposures, found.report)
            summary += "\n" + found.line
        }
        switch format {
        case .json: printJSON(changes, exposures: exposures, breaking: breaking, observed: observed)
        case .markdown: printMarkdown(changes, exposures: exposures, summary: summary)
        case .text: printText(changes, exposures: exposures, summary: summary)
        }
        if breaking > 0 { throw ExitCode(1) }
    }

    /// `doppel diff OLD.proto NEW.proto`: the changes of a gRPC API's messages and services, printed as a contract's are.
    func runProto() throws {
        guard old.hasSuffix(".proto"), new.hasSuffix(".proto") else {
            FileHandle.standardError.write(Data("doppel diff: a .proto file is compared with another .proto file\n".utf8))
            throw ExitCode(2)
        }
        guard journal == nil else {
            FileHandle.standardError.write(Data("doppel diff: --journal compares contracts, not .proto files\n".utf8))
            throw ExitCode(2)
        }
        func load(_ path: String) throws -> ProtoSchema {
            // As protoc's default `-I.`: a relative path's imports are found from the current folder, and
            // another file's from its own folder.
            let relative = !path.hasPrefix("/") && !path.split(separator: "/").contains("..")
            let url = URL(fileURLWithPath: path)
            let (schema, diagnostics) =
                relative
                ? ProtoSchema.load(file: path, folder: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
                : ProtoSchema.load(file: url.lastPathComponent, folder: url.deletingLastPathComponent())
            guard let schema else {
                printDiagnostics(diagnostics)
                throw ExitCode(1)
            }
            return schema
        }
        let changes = ProtoDiff.changes(from: try load(old), to: try load(new)).map {
            ContractDiff.Change(kind: $0.kind, breaking: $0.breaking, endpoint: $0.subject, place: $0.place, detail: $0.detail)
        }
        let breaking = changes.filter(\.breaking).count
        let summary = changes.isEmpty ? "no changes" : "\(breaking) breaking, \(changes.count - breaking) compatible"
        let exposures: [ContractDiff.Exposure?] = changes.map { _ in nil }
        switch format {
        case .json: printJSON(changes, exposures: exposures, breaking: breaking, observed: nil)
        case .markdown: printMarkdown(changes, exposures: exposures, summary: summary)
        case .text: printText(changes, exposures: exposures, summary: summary)
        }
        if breaking > 0 { throw ExitCode(1) }
    }

    /// What the journal at `path` shows of the changes: the calls each
    /// breaking change breaks, a summary line, and the report's `journal`.
    static func observe(
        _ path: String, changes: [ContractDiff.Change], from before: Contract, to after: Contract
    ) throws -> (exposures: [ContractDiff.Exposure?], line: String, report: JSON) {
        let calls: [ContractDiff.ObservedCall]
        do {
            calls = try ContractDiff.observedCalls(read(path))
        } catch {
            let reason = (error as? ContractDiff.JournalError)?.message ?? (error as NSError).localizedDescription
            FileHandle.standardError.write(Data("\(path): error: \(reason)\n".utf8))
            throw ExitCode(2)
        }
        let exposures = ContractDiff.exposures(of: changes, from: before, to: after, calls: calls)
        let sessions = Set(calls.map(\.session))
        let broken = Set(exposures.compactMap { $0 }.filter(\.exact).flatMap(\.sessions))
        let maybe = Set(exposures.compactMap { $0 }.filter { !$0.exact }.flatMap(\.sessions)).subtracting(broken)
        var line = "journal: \(calls.count) calls by \(sessions.count) sessions; breaking for \(broken.count) of \(sessions.count)"
        if !broken.isEmpty { line += " (\(broken.sorted().prefix(10).joined(separator: ", "))\(broken.count > 10 ? ", …" : ""))" }
        if !maybe.isEmpty { line += "; \(maybe.count) more call an endpoint whose body or headers changed (the journal keeps neither)" }
        let report: JSON = .object(
            JSONObject([
                ("file", .string(path)), ("calls", .int(calls.count)), ("sessions", .int(sessions.count)),
                ("broken_sessions", .array(broken.sorted().map(JSON.string))),
                ("maybe_broken_sessions", .array(maybe.sorted().map(JSON.string))),
            ]))
        return (exposures, line, report)
    }

    func printJSON(_ changes: [ContractDiff.Change], exposures: [ContractDiff.Exposure?], breaking: Int, observed: JSON?) {
        let listed: [JSON] = zip(changes, exposures).map { change, exposure in
            guard let exposure, case .object(var object) = change.json else { return change.json }
            object["observed"] = exposure.json
            return .object(object)
        }
        var document = JSONObject([
            ("old", .string(old)), ("new", .string(new)), ("breaking", .int(breaking)),
            ("compatible", .int(changes.count - breaking)), ("changes", .array(listed)),
        ])
        if let observed { document["journal"] = observed }
        print(String(decoding: JSONWriter.encode(.object(document)), as: UTF8.self))
    }

    func printMarkdown(_ changes: [ContractDiff.Change], exposures: [ContractDiff.Exposure?], summary: String) {
        let lines = summary.split(separator: "\n")
        print("### Contract changes: \(lines[0])\n")
        print("`\(old)` → `\(new)`\n")
        for line in lines.dropFirst() { print(line + "\n") }
        guard !changes.isEmpty else { return }
        print("| | endpoint | where | change |" + (journal == nil ? "" : " observed |"))
        print("| --- | --- | --- | --- |" + (journal == nil ? "" : " --- |"))
        for (change, exposure) in zip(changes, exposures) {
            let cells =
                ([
                    change.breaking ? "❌ breaking" : "✅ compatible", change.endpoint.isEmpty ? "(all)" : "`\(change.endpoint)`",
                    change.place, change.detail,
                ] + (journal == nil ? [] : [exposure?.text ?? ""])).map { $0.replacingOccurrences(of: "|", with: "\\|") }
            print("| " + cells.joined(separator: " | ") + " |")
        }
    }

    func printText(_ changes: [ContractDiff.Change], exposures: [ContractDiff.Exposure?], summary: String) {
        for (index, change) in changes.enumerated() {
            let endpoint = change.endpoint.isEmpty ? "" : change.endpoint + "  "
            let place = change.place.isEmpty ? "" : change.place + ": "
            print("\(change.breaking ? "BREAKING  " : "compatible") \(endpoint)\(place)\(change.detail)  [\(change.kind)]")
            if let exposure = exposures[index] { print("           observed: \(exposure.text)") }
        }
        print(summary)
    }

    /// A journal file's bytes, refused past `ContractDiff.maximumJournalBytes` before it is read.
    static func read(_ path: String) throws -> [UInt8] {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        if let size = attributes[.size] as? Int, size > ContractDiff.maximumJournalBytes {
            throw ContractDiff.JournalError(message: "the journal is \(size) bytes; at most \(ContractDiff.maximumJournalBytes) are read")
        }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
