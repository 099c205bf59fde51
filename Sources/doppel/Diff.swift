import ArgumentParser
import DoppelCore
import DoppelOpenAPI
import Foundation

struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List what changed between two versions of a contract, each change breaking or compatible for an existing client.",
        discussion: """
            OLD and NEW are Doppel contracts or OpenAPI documents, in any mix. Removed endpoints, statuses and response \
            fields, a request field newly required, a narrowed type, enum or range, a response enum with new values, a \
            changed auth scheme are breaking; additions a client can ignore are compatible. Exits 1 when any change is \
            breaking. See docs/verify.md.
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

    func run() throws {
        let before: Contract, after: Contract
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
        switch format {
        case .json:
            let document: JSON = .object(JSONObject([("old", .string(old)), ("new", .string(new)), ("breaking", .int(breaking)),
                                                     ("compatible", .int(changes.count - breaking)), ("changes", .array(changes.map(\.json)))]))
            print(String(decoding: JSONWriter.encode(document), as: UTF8.self))
        case .markdown:
            print("### Contract changes: \(summary)\n")
            print("`\(old)` → `\(new)`\n")
            if !changes.isEmpty {
                print("| | endpoint | where | change |")
                print("| --- | --- | --- | --- |")
                for change in changes {
                    let cells = [change.breaking ? "❌ breaking" : "✅ compatible", change.endpoint.isEmpty ? "(all)" : "`\(change.endpoint)`",
                                 change.place, change.detail].map { $0.replacingOccurrences(of: "|", with: "\\|") }
                    print("| " + cells.joined(separator: " | ") + " |")
                }
            }
        case .text:
            for change in changes {
                let endpoint = change.endpoint.isEmpty ? "" : change.endpoint + "  "
                let place = change.place.isEmpty ? "" : change.place + ": "
                print("\(change.breaking ? "BREAKING  " : "compatible") \(endpoint)\(place)\(change.detail)  [\(change.kind)]")
            }
            print(summary)
        }
        if breaking > 0 { throw ExitCode(1) }
    }
}
