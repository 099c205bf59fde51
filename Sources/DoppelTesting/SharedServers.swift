import DoppelOpenAPI
import DoppelRunner
import Foundation

extension DoppelTestServer {
    /// The test process's server for a contract: started on first use, then
    /// shared by every test that asks for the same file (each in its own
    /// session), and stopped when the process ends. A relative `contract` is
    /// found from `filePath` as `TestFiles.resolve` says.
    public static func shared(contract: String, filePath: String = #filePath) async throws -> DoppelTestServer {
        try await SharedServers.registry.server(for: TestFiles.resolve(contract, relativeTo: filePath))
    }

    /// A new session on this server with an id of its own (`test-` and a
    /// UUID, unless you name one), from the contract's initial state.
    public func session(_ id: String? = nil) -> DoppelSession {
        DoppelSession(server: self, id: id ?? "test-" + UUID().uuidString.lowercased())
    }
}

/// One server per contract file for the whole process. Concurrent first
/// requests for the same file share one start.
actor SharedServers {
    static let registry = SharedServers()
    private var starting: [String: Task<DoppelTestServer, any Error>] = [:]

    func server(for file: String) async throws -> DoppelTestServer {
        if let task = starting[file] { return try await task.value }
        let task = Task { try await DoppelTestServer.start(contract: file) }
        starting[file] = task
        do {
            return try await task.value
        } catch {
            // A contract that failed to load is tried again by the next test, which reports it too.
            starting[file] = nil
            throw error
        }
    }
}
