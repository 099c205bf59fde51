import DoppelCore
import DoppelOpenAPI
import DoppelTesting
import Foundation
import Testing

private func corpus(_ name: String) -> String {
    repositoryRoot.appendingPathComponent("Tests/DoppelServerTests/Fixtures/openapi/corpus/\(name)").path
}

/// Someone else's document is served despite its own mistakes, which are
/// warnings; Doppel's own contracts keep them as errors.
@Suite("Vendor documents")
struct VendorDocumentTests {
    @Test func aVendorsMistakesAreWarningsAndItsExamplesAreServedAsWritten() async throws {
        let diagnostics = ContractDocument.lint(file: corpus("vendor-mistakes.yaml"))
        #expect(!diagnostics.isEmpty)
        #expect(diagnostics.allSatisfy { $0.severity == .warning }, "\(diagnostics)")
        // Each with its place, once.
        #expect(diagnostics.contains { $0.description.hasSuffix("vendor-mistakes.yaml:20:17: warning: the body of response listCalls[0] breaks its schema at /status: expected string, got null; it is served as written") },
                "\(diagnostics.map(\.description))")
        #expect(Set(diagnostics.map(\.description)).count == diagnostics.count)

        try await DoppelTestServer.with(contract: corpus("vendor-mistakes.yaml")) { server in
            let client = TestClient(base: server.baseURL)
            let calls = try await client.send("GET", "/Accounts/AC1/Calls.json", token: nil)
            #expect(calls.status == 200)
            #expect(calls.json == ["uri": "/2010-04-01/Accounts/AC1/Calls.json", "status": nil, "start": "2024-01-01T10:00", "calls": []])
            // A body generated from a schema keeps it: the pattern, and the property one allOf branch requires and another defines.
            let made = try await client.send("POST", "/things", json: ["name": "ABC-12"], token: nil)
            #expect(made.status == 201)
            let code = try #require(made.json?["code"]?.stringValue)
            #expect(code.range(of: "^[A-Z]{3}-[0-9]{2}$", options: .regularExpression) != nil, "\(code)")
        }
    }

    @Test func theSameMistakeInADoppelContractIsAnError() {
        let diagnostics = ContractError.diagnostics { () throws(ContractError) in
            _ = try ContractLoader.load(text: """
                doppel: 1
                endpoints:
                  calls:
                    request: GET /calls
                    responses:
                      - schema: { type: object, properties: { status: { type: string, enum: [queued, done] } } }
                        body: { status: null }
                """, file: "contract.yaml")
        }
        #expect(diagnostics.map(\.description) == ["contract.yaml:7:15: error: the body of response calls[0] breaks its schema at /status: expected string, got null"])
    }

    @Test func lintReportsWarningsAndStrictMakesThemErrors() throws {
        let lenient = try CommandLineTests().run(["lint", corpus("vendor-mistakes.yaml")])
        #expect(lenient.status == 0)
        #expect(lenient.output.contains("ok, 2 warnings"))
        #expect(lenient.errors.contains("warning: the body of response listCalls[0] breaks its schema at /uri"))
        let strict = try CommandLineTests().run(["lint", "--strict", corpus("vendor-mistakes.yaml")])
        #expect(strict.status == 1)
        #expect(strict.output.contains("(errors with --strict)"))
    }
}
