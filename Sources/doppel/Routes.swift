import ArgumentParser
import DoppelCore
import Foundation

struct Routes: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List a contract's endpoints without serving it.")

    @Argument(help: "The contract file (YAML).")
    var contract: String

    func run() throws {
        let contract = try loadContractOrExit(self.contract, checkingWithOpenAPIKit: false)
        for line in RouteTable.lines(for: contract) { print(line) }
    }
}

/// The route listing printed by `serve` and `routes`.
enum RouteTable {
    static func lines(for contract: Contract) -> [String] {
        let methodWidth = contract.endpoints.map(\.method.count).max() ?? 0
        let pathWidth = contract.endpoints.map(\.path.template.count).max() ?? 0
        let idWidth = contract.endpoints.map(\.id.count).max() ?? 0
        return contract.endpoints.map { endpoint in
            let method = endpoint.method.padding(toLength: methodWidth, withPad: " ", startingAt: 0)
            let path = endpoint.path.template.padding(toLength: pathWidth, withPad: " ", startingAt: 0)
            let id = endpoint.id.padding(toLength: idWidth, withPad: " ", startingAt: 0)
            return "\(method)  \(path)  \(id)  \(endpoint.auth.isEmpty ? "public" : "auth: " + endpoint.auth.joined(separator: " or "))"
        }
    }
}
