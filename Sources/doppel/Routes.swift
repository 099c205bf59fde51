import ArgumentParser
import DoppelCore
import Foundation

struct Routes: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List a contract's endpoints without serving it.")

    @Argument(help: "The contract file (YAML).")
    var contract: String

    func run() throws {
        let contract = try loadContractOrExit(self.contract, checkingWithOpenAPIKit: false, release: .atExit)
        // One string, appended to in place (`joined` is a generic call
        // that took a millisecond for 1,000 endpoints).
        let lines = RouteTable.lines(for: contract)
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
    static func lines(for contract: Contract) -> [String] {
        // Closures, not key paths: applying a key path is a generic call,
        // and for 1,000 endpoints it took longer than the rest of the listing.
        let methodWidth = contract.endpoints.map { $0.method.count }.max() ?? 0
        let pathWidth = contract.endpoints.map { $0.path.template.count }.max() ?? 0
        let idWidth = contract.endpoints.map { $0.id.count }.max() ?? 0
        // Padded by hand: Foundation's `padding(toLength:)` bridges to NSString.
        func padded(_ text: String, to width: Int) -> String {
            let count = text.count
            return count >= width ? text : text + String(repeating: " ", count: width - count)
        }
        return contract.endpoints.map { endpoint in
            let auth = endpoint.auth.isEmpty ? "public" : "auth: " + endpoint.auth.joined(separator: " or ")
            return padded(endpoint.method, to: methodWidth) + "  " + padded(endpoint.path.template, to: pathWidth) + "  "
                + padded(endpoint.id, to: idWidth) + "  " + auth
        }
    }
}
