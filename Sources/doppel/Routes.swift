import ArgumentParser
import DoppelCore
import Foundation

struct Routes: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List a contract's endpoints without serving it.")

    @Argument(help: "The contract file (YAML).")
    var contract: String

    func run() throws {
        prepareHeapForOneShotCommand()
        let contract = try loadContractOrExit(self.contract, checkingWithOpenAPIKit: false, release: .atExit)
        // One string, appended to in place (`joined` is a generic call
        // that took a millisecond for 1,000 endpoints).
        let lines = RouteTable.lines(for: contract.endpoints[...])
        var output = ""
        output.reserveCapacity(lines.reduce(0) { $0 + $1.utf8.count + 1 })
        for line in lines {
            output += line
            output += "\n"
        }
        print(output, terminator: "")
    }
}

/// The route listing printed by `serve` and `routes`.
enum RouteTable {
    /// The most routes `serve` prints when it starts or reloads; `doppel
    /// routes` lists them all. A 16,000-operation document printed in full
    /// overran the log's buffer, and the line naming the address was dropped.
    static let shownWhenServing = 200

    /// The route lines `serve` prints: the first `shownWhenServing`, and a line counting the rest.
    /// Only the lines shown are formatted, and aligned among themselves.
    static func servingLines(for contract: Contract, file: String) -> [String] {
        let shown = lines(for: contract.endpoints.prefix(shownWhenServing))
        let rest = contract.endpoints.count - shown.count
        return rest > 0 ? shown + ["… and \(rest) more endpoints (doppel routes \(file) lists them all)"] : shown
    }

    static func lines(for endpoints: ArraySlice<Endpoint>) -> [String] {
        // Built by appending to one string a line, with closures rather
        // than key paths and without `joined`: those are generic calls,
        // and for 1,000 endpoints they took longer than the load's last steps.
        let methodWidth = endpoints.map { $0.method.count }.max() ?? 0
        let pathWidth = endpoints.map { $0.path.template.count }.max() ?? 0
        let idWidth = endpoints.map { $0.id.count }.max() ?? 0
        // Padded by hand: Foundation's `padding(toLength:)` bridges to NSString.
        func append(_ text: String, paddedTo width: Int, to line: inout String) {
            line += text
            for _ in text.count..<max(width, text.count) { line += " " }
        }
        return endpoints.map { endpoint in
            var line = ""
            line.reserveCapacity(methodWidth + pathWidth + idWidth + 32)
            append(endpoint.method, paddedTo: methodWidth, to: &line)
            line += "  "
            append(endpoint.path.template, paddedTo: pathWidth, to: &line)
            line += "  "
            append(endpoint.id, paddedTo: idWidth, to: &line)
            line += "  "
            if endpoint.auth.isEmpty {
                line += "public"
            } else {
                line += "auth: "
                for (index, scheme) in endpoint.auth.enumerated() {
                    if index > 0 { line += " or " }
                    line += scheme
                }
            }
            return line
        }
    }
}
