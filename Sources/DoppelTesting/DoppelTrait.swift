import DoppelRunner
import Foundation
import Testing

/// A Swift Testing trait that gives each test its own session on a shared
/// server for a contract, as `DoppelSession.current`.
///
/// ```swift
/// @Suite(.doppel("contracts/tales.yaml"))
/// struct LimitTests {
///     @Test func freeStories() async throws {
///         let doppel = try #require(DoppelSession.current)
///         let response = try await doppel.send("GET", "/api/v1/free-stories")
///         #expect(response.status == 200)
///     }
/// }
/// ```
///
/// On a suite it applies to every test in it, each with a session of its
/// own, so the tests may run in parallel. The server is started by the first
/// test that needs it and shared by all that name the same contract.
public struct DoppelTrait: TestTrait, SuiteTrait, TestScoping {
    /// The contract as written; found from `filePath` when relative.
    public let contract: String
    let filePath: String
    /// A scenario file every test's session starts from, if any.
    public let scenario: String?

    /// Applies to every test of a suite that has it.
    public var isRecursive: Bool { true }

    /// A session for each test case; none for a suite as a whole.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> DoppelTrait? {
        testCase == nil ? nil : self
    }

    /// Runs a test case with its own session on the shared server of the contract, as `DoppelSession.current`.
    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let server = try await DoppelTestServer.shared(contract: contract, filePath: filePath)
        let session = server.session()
        if let scenario { try session.start(scenario: scenario, filePath: filePath) }
        try await DoppelSession.$current.withValue(session) {
            try await function()
        }
    }
}

extension Trait where Self == DoppelTrait {
    /// Each test gets its own session on the shared server for `contract`
    /// (a relative path is looked for beside this file and in each folder
    /// above it, so `"contracts/tales.yaml"` finds the package's), started
    /// from `scenario` when given.
    public static func doppel(_ contract: String, scenario: String? = nil, filePath: String = #filePath) -> Self {
        DoppelTrait(contract: contract, filePath: filePath, scenario: scenario)
    }

    /// As `doppel(_:)`, for a contract given as a file URL, such as a bundle
    /// resource: `.doppel(Bundle.module.url(forResource: "tales", withExtension: "yaml")!)`.
    public static func doppel(_ contract: URL, scenario: String? = nil, filePath: String = #filePath) -> Self {
        DoppelTrait(contract: contract.path, filePath: filePath, scenario: scenario)
    }
}
