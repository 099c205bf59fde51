import DoppelCore
import Testing

@testable import DoppelServer

/// How a recording is written: generalised paths, statuses, redaction, template safety.
struct RecordingWriterTests {
    @Test func idsUUIDsAndNumbersBecomeParameters() {
        #expect(RecordingWriter.template(of: "/users/42/orders/9f8c1c2e-5b1a-4c3e-9d2f-0a1b2c3d4e5f") == "/users/{id}/orders/{id2}")
        #expect(RecordingWriter.template(of: "/files/ab12cd34ef56gh78") == "/files/{id}")
        #expect(RecordingWriter.template(of: "/api/v1/free-stories") == "/api/v1/free-stories")
        #expect(RecordingWriter.identifier(method: "GET", template: "/users/{id}/orders") == "get-users-by-id-orders")
    }

    @Test func secretsAreRedactedAtAnyDepthAndPlaceholdersKeptLiteral() {
        let body: JSON = [
            "user": ["name": "Mia", "accessToken": "abc", "Password": "p"], "items": [["api_key": "k", "note": "{{ not a template }}"]],
        ]
        var redaction = Redaction()
        let redacted = RecordingWriter.Text(striker: redaction.striker()).clean(redaction.redact(body))
        #expect(redacted["user"]?["accessToken"] == "[redacted]")
        #expect(redacted["user"]?["Password"] == "[redacted]")
        #expect(redacted["user"]?["name"] == "Mia")
        #expect(redacted["items"]?.arrayValue?.first?["api_key"] == "[redacted]")
        #expect(redacted["items"]?.arrayValue?.first?["note"] == "{{ '{{' }} not a template }}")
    }

    @Test func eachStatusIsAResponseAndCallsThatDifferAreForced() throws {
        func exchange(_ path: String, _ status: Int) -> Recorder.Exchange {
            Recorder.Exchange(
                request: RecordedRequest(method: "GET", target: path),
                response: MockResponse(
                    status: status, headers: [(name: "Content-Type", value: "application/json"), (name: "Set-Cookie", value: "sid=x")],
                    body: Array(#"{"ok":true}"#.utf8)))
        }
        let output = RecordingWriter.write(
            [exchange("/a/1", 200), exchange("/a/2", 404), exchange("/a/3", 200)], target: "http://x", contractFile: "contract.yaml")
        #expect(output.endpoints == 1)
        #expect(!output.contract.contains("sid=x"))
        let contract = try ContractLoader.load(text: output.contract, file: "contract.yaml")
        #expect(contract.endpoints.first?.documented.map(\.status) == [404])
        // The second call is forced to the 404 it got; the steps expect what the target gave.
        let scenario = try ScenarioLoader.load(text: output.scenario, file: "scenario.yaml", contract: contract)
        #expect(scenario.overrides.map { "\($0.endpointID) \($0.call ?? 0) \($0.response?.status ?? 0)" } == ["get-a-by-id 2 404"])
        #expect(scenario.steps.map { $0.expectation.status } == [200, 404, 200])
    }
}
