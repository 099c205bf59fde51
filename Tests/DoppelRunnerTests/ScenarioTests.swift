import DoppelCore
import DoppelServer
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

/// Every scenario file under `scenarios/`, relative to the repository.
let allScenarioFiles: [String] = ScenarioCatalog.yamlFiles(under: repositoryRoot.appendingPathComponent("scenarios"))
    .map { String($0.path.dropFirst(repositoryRoot.standardizedFileURL.path.count + 1)) }

@Suite("Scenarios")
struct ScenarioTests {
    /// Acceptance cases are data: each scenario in `scenarios/` runs here,
    /// one after another: 43 servers loading their contracts at once would
    /// hold the suite's few task threads for longer than a step's time limit.
    @Test(.serialized, arguments: allScenarioFiles)
    func scenarioPasses(file: String) async throws {
        let scenario = try ScenarioLoader.load(file: repositoryRoot.appendingPathComponent(file).path)
        #expect(!scenario.steps.isEmpty)
        try await DoppelTestServer.with(contract: scenario.contractFile) { server in
            await untilAnswering(server.baseURL)
            var runner = ScenarioRunner(baseURL: server.baseURL, isDoppel: true)
            // The suite's load can hold an in-process server's admin answer for more than the usual 10 s.
            runner.adminTimeout = 60
            let result = await runner.run(scenario, session: "scenario")
            for step in result.steps where step.outcome != .passed {
                Issue.record("\(file) › \(step.name): \(step.summary)\n\(step.details.joined(separator: "\n"))")
            }
            #expect(result.steps.allSatisfy { $0.outcome == .passed })
        }
    }

    @Test func thereAreScenariosForEveryBundledContract() throws {
        let contracts = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("contracts").path)
            .filter { $0.hasSuffix(".yaml") }
        for contract in contracts {
            let name = String(contract.dropLast(5))
            #expect(allScenarioFiles.contains { $0.hasPrefix("scenarios/\(name)/") }, "no scenarios for \(contract)")
        }
    }

    @Test func theRunnerSeesRedirectsAsAnsweredAndNamesTransportFailures() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-redirects-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let contractFile = folder.appendingPathComponent("redirects.yaml").path
        try """
        doppel: 1
        endpoints:
          old: { request: GET /old, responses: [ { status: 302, headers: { Location: /new } } ] }
          new: { request: GET /new, responses: [ { status: 200, body: { where: new } } ] }
        """.write(toFile: contractFile, atomically: true, encoding: .utf8)
        let contract = try ContractLoader.load(file: contractFile)
        let scenario = try ScenarioLoader.load(
            text: """
                contract: redirects.yaml
                steps:
                  - { request: GET /old, expect: { status: 302, headers: { Location: /new } } }
                  - { request: GET /new, expect: { status: 200, body: { where: new } } }
                """, file: folder.appendingPathComponent("follow.yaml").path, contract: contract)
        let server = try await DoppelTestServer.start(engine: MockEngine(contract: contract))
        await untilAnswering(server.baseURL)
        var runner = ScenarioRunner(baseURL: server.baseURL, isDoppel: true)
        runner.adminTimeout = 60
        let answered = await runner.run(scenario, session: "redirects")
        let closedPort = server.port
        await server.stop()
        #expect(answered.steps.map(\.outcome) == [.passed, .passed], "\(answered.steps.map(\.details))")

        // The same steps against a port nothing listens on any more.
        let refused = await ScenarioRunner(baseURL: URL(string: "http://127.0.0.1:\(closedPort)")!, isDoppel: false).run(
            scenario, session: "redirects")
        #expect(refused.steps.map(\.outcome) == [.failed, .failed])
        #expect(
            refused.steps.allSatisfy { $0.details.first?.contains("could not connect to 127.0.0.1:\(closedPort)") == true },
            "\(refused.steps.map(\.details))")
        let expectingFailure = try ScenarioLoader.load(
            text: "contract: redirects.yaml\nsteps:\n  - { request: GET /old, expect: { error: true } }\n",
            file: folder.appendingPathComponent("refused.yaml").path, contract: contract)
        let expected = await ScenarioRunner(baseURL: URL(string: "http://127.0.0.1:\(closedPort)")!, isDoppel: false).run(
            expectingFailure, session: "x")
        #expect(expected.steps.map(\.outcome) == [.passed])
    }

    @Test func verificationAndCoverageAfterTheMonthlyLimitPath() async throws {
        try await DoppelTestServer.with(contract: contractPath("tales.yaml")) { server in
            let client = TestClient(base: server.baseURL)
            let child = try await client.send(
                "POST", "/api/v1/children", json: ["name": "A", "age_category": "5-7", "gender": "male", "interests": ["x"]], session: "s1")
            let id = try #require(child.json?["id"]?.stringValue)
            for _ in 1...6 {
                _ = try await client.send("POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(id)], session: "s1")
            }
            // Another session's 402 must not count for s1. Its clock is set and
            // frozen, so the month given is the month it reads (the wall clock
            // could turn the month between this line and the server's).
            let month = UTCCalendar.format(epoch: UTCCalendar.monthStart(epoch: 1_778_414_400, addingMonths: 0))  // 2026-05-10T12:00:00Z
            let given: JSON = ["state": ["stories_used": 5, "usage_month": .string(month), "children": [["id": .string(id), "name": "A"]]]]
            #expect(try await client.send("PUT", "/__doppel/scenario?session=s2", json: ["given": given]).status == 200)
            #expect(try await client.send("POST", "/__doppel/clock?session=s2", json: ["set": "2026-05-10T12:00:00Z"]).status == 200)
            #expect(try await client.send("POST", "/__doppel/clock?session=s2", json: ["freeze": true]).status == 200)
            #expect(
                try await client.send("POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": .string(id)], session: "s2").status
                    == 402)

            let verified = try await client.send(
                "POST", "/__doppel/verify", json: ["endpoint": "generate-story", "status": 402, "session": "s1", "count": 1])
            #expect(verified.json?["pass"] == true)
            #expect(verified.json?["actual"] == 1)
            let twice = try await client.send(
                "POST", "/__doppel/verify", json: ["endpoint": "generate-story", "status": 402, "session": "s1", "count": 2])
            #expect(twice.json?["pass"] == false)
            #expect(twice.json?["actual"] == 1)
            #expect(
                twice.json?["near_matches"] == [
                    ["endpoint": "generate-story", "status": 200, "session": "s1", "count": 5],
                    ["endpoint": "generate-story", "status": 402, "session": "s2", "count": 1],
                ])
            let everywhere = try await client.send(
                "POST", "/__doppel/verify", json: ["endpoint": "generate-story", "status": 402, "min": 2, "max": 2])
            #expect(everywhere.json?["pass"] == true)
            #expect(try await client.send("POST", "/__doppel/verify", json: ["endpoint": "generate-stroy"]).status == 400)

            let coverage = try #require(try await client.send("GET", "/__doppel/coverage?session=s1").json)
            let unreached = coverage["unreached"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(unreached.contains("generate-story 400"))
            #expect(unreached.contains("generate-story 404"))
            #expect(unreached.contains("generate-story 500"))
            #expect(unreached.contains("generate-story 401"))
            #expect(unreached.contains("purchase 402"))
            #expect(!unreached.contains("generate-story 402"))
            #expect(!unreached.contains("generate-story 200"))
            #expect(!unreached.contains("create-child 200"))
            #expect(coverage["reached"] == 3)
            let overall = try #require(try await client.send("GET", "/__doppel/coverage").json)
            #expect(overall["reached"] == 3)

            let journal = try await client.send("GET", "/__doppel/journal?endpoint=generate-story&status=402&session=s1")
            #expect(journal.json?["total"] == 1)
            #expect(journal.json?["entries"]?.arrayValue?.first?["response"] == "generate-story[3]")
            #expect(try await client.send("DELETE", "/__doppel/journal").status == 200)
            #expect(try await client.send("GET", "/__doppel/journal").json?["total"] == 0)
            #expect(try await client.send("GET", "/__doppel/coverage").json?["reached"] == 0)
        }
    }

    @Test func twoSessionsSwitchToDifferentScenarios() async throws {
        let contract = try ContractLoader.load(file: contractPath("tales.yaml"))
        let catalog = try ScenarioCatalog.load(directory: repositoryRoot.appendingPathComponent("scenarios").path, contract: contract)
        #expect(catalog.names.contains("tales/monthly-limit"))
        let server = try await DoppelTestServer.start(engine: MockEngine(contract: contract), scenarios: catalog)
        let client = TestClient(base: server.baseURL)
        // The scenario keeps the name it was asked by, as the catalogue lists it.
        #expect(
            try await client.send("PUT", "/__doppel/scenario?session=a", json: ["name": "tales/monthly-limit"]).json == [
                "session": "a", "scenario": "tales/monthly-limit",
            ])
        #expect(try await client.send("GET", "/__doppel/scenario?session=a").json == ["session": "a", "scenario": "tales/monthly-limit"])
        #expect(try await client.send("PUT", "/__doppel/scenario?session=b", json: ["name": "tales/upgrade-lifts-limit"]).status == 200)
        let a = try #require(try await client.send("GET", "/__doppel/state?session=a").json)
        let b = try #require(try await client.send("GET", "/__doppel/state?session=b").json)
        #expect(a["state"]?["stories_used"] == 4)
        #expect(a["state"]?["children"] == [:])
        #expect(b["state"]?["stories_used"] == 5)
        #expect(b["state"]?["children"]?.objectValue?.count == 1)
        #expect(try await client.send("GET", "/__doppel/clock?session=a").json?["now"] == "2025-01-15T10:00:00Z")
        #expect(try await client.send("GET", "/__doppel/clock?session=b").json?["now"] == "2025-03-10T08:00:00Z")
        // b's child is invisible to a.
        let fromA = try await client.send(
            "POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": "11111111-1111-4111-8111-111111111111"], session: "a")
        #expect(fromA.status == 404)
        let fromB = try await client.send(
            "POST", "/api/v1/stories/generate", json: ["language": "en", "child_id": "11111111-1111-4111-8111-111111111111"], session: "b")
        #expect(fromB.status == 402)
        // An inline scenario, and back to the plain contract.
        let inline = try await client.send(
            "PUT", "/__doppel/scenario?session=c", json: ["overrides": [["endpoint": "list-free-stories", "status": 200, "fault": "malformed_json"]]])
        #expect(inline.status == 200)
        #expect(try await client.send("GET", "/api/v1/free-stories", token: nil, session: "c").json == nil)
        #expect(try await client.send("DELETE", "/__doppel/scenario?session=c").status == 200)
        #expect(try await client.send("GET", "/api/v1/free-stories", token: nil, session: "c").json?.arrayValue?.count == 6)
        let unknown = try await client.send("PUT", "/__doppel/scenario?session=d", json: ["name": "tales/monthly-limits"])
        #expect(unknown.status == 404)
        #expect(unknown.json?["detail"]?.stringValue?.contains("did you mean 'tales/monthly-limit'?") == true)
        let broken = try await client.send("PUT", "/__doppel/scenario?session=d", json: ["overrides": [["endpoint": "nope", "status": 500]]])
        #expect(broken.status == 400)
        await server.stop()
    }

    @Test func adminCallsNeedTheTokenWhenOneIsSet() async throws {
        var configuration = ServerConfiguration.testing
        configuration.adminToken = "s3cret"
        try await DoppelTestServer.with(contract: contractPath("tales.yaml"), configuration: configuration) { server in
            let client = TestClient(base: server.baseURL)
            for (method, path) in [
                ("GET", "/__doppel/health"), ("GET", "/__doppel/state"), ("POST", "/__doppel/reset"), ("GET", "/__doppel/journal"),
                ("PUT", "/__doppel/scenario"),
            ] {
                let refused = try await client.send(method, path, token: nil)
                #expect(refused.status == 401, "\(method) \(path)")
                #expect(refused.json?["type"] == "urn:doppel:problem:admin-unauthorized")
            }
            #expect(try await client.send("GET", "/__doppel/health", token: "wrong").status == 401)
            #expect(try await client.send("GET", "/__doppel/health", token: "s3cret").status == 200)
            #expect(try await client.send("GET", "/__doppel/health", token: nil, headers: ["Doppel-Admin-Token": "s3cret"]).status == 200)
            // The API itself is not guarded by the admin token.
            #expect(try await client.send("GET", "/api/v1/free-stories", token: nil).status == 200)
        }
    }

    @Test func stateCanBeReplacedOnlyWithTheDeclaredShape() async throws {
        try await DoppelTestServer.with(contract: contractPath("tales.yaml")) { server in
            let client = TestClient(base: server.baseURL)
            var state = try #require(try await client.send("GET", "/__doppel/state?session=r").json?["state"]?.objectValue)
            state["stories_used"] = 3
            state["plan"] = "basic"
            let replaced = try await client.send("PUT", "/__doppel/state?session=r", json: ["state": .object(state)])
            #expect(replaced.json?["state"]?["stories_used"] == 3)
            #expect(try await client.send("GET", "/api/v1/subscription/plans", session: "r").json?["current_plan"] == "basic")
            let bad = try await client.send("PUT", "/__doppel/state?session=r", json: ["state": ["stories_used": "three", "plann": "x"]])
            #expect(bad.status == 400)
            #expect(bad.json?["problems"]?.arrayValue?.contains("the contract's state has no 'plann' (did you mean 'plan'?)") == true)
            #expect(bad.json?["problems"]?.arrayValue?.contains("counter 'stories_used' must be an integer") == true)
            let clock = try await client.send("POST", "/__doppel/clock?session=r", json: ["advance": "soon"])
            #expect(clock.status == 400)
            #expect(clock.json?["type"] == "urn:doppel:problem:invalid-clock-change")
        }
    }

    @Test func theAdminOpenAPIDocumentDescribesEveryCall() throws {
        let text = try String(contentsOfFile: repositoryRoot.appendingPathComponent("docs/admin-openapi.yaml").path, encoding: .utf8)
        guard case .success(let root?) = SourceReader.read(text, file: "admin-openapi.yaml") else {
            Issue.record("the OpenAPI document does not parse")
            return
        }
        #expect(root["openapi"]?.scalarText?.hasPrefix("3.") == true)
        var documented: Set<String> = []
        for pair in root["paths"]?.mappingPairs ?? [] {
            for operation in pair.value.mappingPairs ?? [] {
                documented.insert("\(operation.key.scalarText!.uppercased()) \(pair.key.scalarText!)")
            }
        }
        let implemented = Set(AdminAPI.calls.map { $0.replacingOccurrences(of: " /", with: " /__doppel/") })
        #expect(documented == implemented)
        // No description cut in two: an unquoted comma in a flow mapping
        // starts a new key, which then reads as a sentence.
        func keys(_ node: SourceNode, at path: String) -> [String] {
            if let pairs = node.mappingPairs {
                return pairs.flatMap { pair -> [String] in
                    let key = pair.key.scalarText ?? ""
                    let inside = keys(pair.value, at: key)
                    return (key.contains(" ") && path != "paths" ? ["\(path): '\(key)'"] : []) + inside
                }
            }
            return (node.sequenceItems ?? []).flatMap { keys($0, at: path) }
        }
        #expect(keys(root, at: "").isEmpty)
    }
}
