import DoppelRunner
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

/// Runs the built `doppel` executable, as a user would.
@Suite("doppel command line")
struct CommandLineTests {
    /// `oas32-query.yaml`: lint and import refused an OpenAPI version Doppel cannot serve, yet `serve`
    /// printed the same refusal and then listened. Every command refuses it alike and exits non-zero.
    @Test(arguments: [["lint"], ["routes"], ["import"], ["export"], ["serve", "--port", "0"]])
    func aDocumentDoppelCannotServeIsRefusedByEveryCommand(_ command: [String]) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-refused-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("api.yaml")
        try "openapi: 4.0.0\ninfo: {title: future, version: '1'}\npaths: {}\n".write(to: file, atomically: true, encoding: .utf8)
        let result = try await DoppelCommand.run([command[0], file.path] + command.dropFirst())
        #expect(result.status != 0)
        #expect(result.errors.contains("api.yaml:1:10: error: OpenAPI 4.0.0 is not supported"), "\(result.errors)")
        #expect(!result.output.contains("Listening"))
    }

    /// `serve --stdio`: standard output is the protocol's alone (the
    /// banner and log go to standard error), the server stops when standard
    /// input ends, and a contract without an MCP server is refused.
    @Test func serveOverStdioKeepsStandardOutputForTheProtocol() async throws {
        let served = try await DoppelCommand.run(["serve", "contracts/mcp-todo.yaml", "--port", "0", "--stdio"])
        #expect(served.status == 0, "\(served.errors)")
        #expect(served.output.isEmpty, "\(served.output)")
        #expect(served.errors.contains("Listening on http://127.0.0.1:"), "\(served.errors)")
        let refused = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--port", "0", "--stdio"])
        #expect(refused.status == 1)
        #expect(refused.errors.contains("--stdio answers a contract's MCP server, and contracts/tales.yaml has no mcp: section"), "\(refused.errors)")
    }

    @Test func lintReportsEveryPlantedMistakeAndExitsOne() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("planted-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: file) }
        try """
        doppel: 1
        state:
          counters: { used: 0 }
        endpoints:
          count:
            request: GET /count
            respones:
              - status: 200
          other:
            request: GET /other
            responses:
              - when: state.usd > 3
                status: 402
              - ref: missing
        """.write(to: file, atomically: true, encoding: .utf8)
        let result = try await DoppelCommand.run(["lint", file.path])
        #expect(result.status == 1)
        let lines = result.errors.split(separator: "\n").map(String.init)
        #expect(
            lines == [
                "\(file.path):6:5: error: endpoint 'count' needs 'responses'",
                "\(file.path):7:5: error: unknown key 'respones' in endpoint 'count' (did you mean 'responses'?)",
                "\(file.path):12:21: error: state has no 'usd' (did you mean 'used'?)",
                "\(file.path):14:14: error: undefined response 'missing'",
            ])
        #expect(result.output.contains("4 errors"))
    }

    @Test func lintPassesTheBundledContracts() async throws {
        let contracts = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("contracts").path)
            .filter { $0.hasSuffix(".yaml") }.map { "contracts/\($0)" }
        let result = try await DoppelCommand.run(["lint"] + contracts)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors.isEmpty)
    }

    @Test func lintChecksScenariosAgainstTheirContracts() async throws {
        let clean = try await DoppelCommand.run(["lint", "scenarios/tales/monthly-limit.yaml", "contracts/tales.yaml"])
        #expect(clean.status == 0)
        #expect(clean.output == "scenarios/tales/monthly-limit.yaml: ok\ncontracts/tales.yaml: ok\n")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: file) }
        try """
        contract: \(repositoryRoot.appendingPathComponent("contracts/tales.yaml").path)
        overrides: [ { endpoint: generate-stroy, status: 500 } ]
        """.write(to: file, atomically: true, encoding: .utf8)
        let broken = try await DoppelCommand.run(["lint", file.path])
        #expect(broken.status == 1)
        #expect(broken.errors == "\(file.path):2:26: error: the contract has no endpoint 'generate-stroy' (did you mean 'generate-story'?)\n")
    }

    @Test func lintOfAFolderChecksEveryContractAndScenarioBelowIt() async throws {
        let all = try await DoppelCommand.run(["lint", "contracts", "scenarios"])
        #expect(all.status == 0, "\(all.errors)")
        let lines = all.output.split(separator: "\n")
        #expect(lines.contains("contracts/tales.yaml: ok"))
        #expect(lines.contains("scenarios/tales/monthly-limit.yaml: ok"))
        #expect(
            lines.count
                == (try FileManager.default.subpathsOfDirectory(atPath: repositoryRoot.appendingPathComponent("contracts").path)
                + FileManager.default.subpathsOfDirectory(atPath: repositoryRoot.appendingPathComponent("scenarios").path)).filter {
                    $0.hasSuffix(".yaml")
                }.count)
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("empty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        let none = try await DoppelCommand.run(["lint", empty.path])
        #expect(none.status == 1)
        #expect(none.errors == "no YAML files found in \(empty.path)\n")

        // A project folder: build products, hidden folders and other tools' files are not Doppel's.
        let project = FileManager.default.temporaryDirectory.appendingPathComponent("project-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: project) }
        for folder in [".build/checkouts/x", ".github/workflows", "node_modules/y", "api"] {
            try FileManager.default.createDirectory(at: project.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        let broken = "doppel: 1\nendpoints: { x: { request: NOPE } }\n"
        for file in [".build/checkouts/x/c.yaml", "node_modules/y/c.yaml", ".hidden.yaml"] {
            try broken.write(to: project.appendingPathComponent(file), atomically: true, encoding: .utf8)
        }
        try "on: push\njobs: {}\n".write(to: project.appendingPathComponent(".github/workflows/ci.yml"), atomically: true, encoding: .utf8)
        try "generate: [types]\n".write(to: project.appendingPathComponent("api/openapi-generator-config.yaml"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(
            at: repositoryRoot.appendingPathComponent("contracts/currency.yaml"), to: project.appendingPathComponent("api/currency.yaml"))
        let projectLint = try await DoppelCommand.run(["lint", project.path])
        #expect(projectLint.status == 0, "\(projectLint.output)\(projectLint.errors)")
        #expect(
            projectLint.output.components(separatedBy: "\n").filter { !$0.isEmpty }.sorted() == [
                "\(project.path)/api/currency.yaml: ok",
                "\(project.path)/api/openapi-generator-config.yaml: skipped (not a contract, scenario or OpenAPI document)",
            ])
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func shellCompletionScriptsAreWrittenAsTheREADMESays(shell: String) async throws {
        let script = try await DoppelCommand.run(["--generate-completion-script", shell])
        #expect(script.status == 0)
        #expect(script.output.contains("doppel"))
        #expect(script.output.contains("serve") && script.output.contains("lint") && script.output.contains("record"))
    }

    @Test func aContractGivenToRunAndAScenarioGivenToServeAreNamedForWhatTheyAre() async throws {
        let contract = try await DoppelCommand.run(["run", "contracts/tales.yaml"])
        #expect(contract.status == 1)
        #expect(
            contract.errors.contains(
                "contracts/tales.yaml:1:1: error: contracts/tales.yaml is a contract, not a scenario: serve it with `doppel serve contracts/tales.yaml`"
            ), "\(contract.errors)")
        let scenario = try await DoppelCommand.run(["serve", "scenarios/tales/monthly-limit.yaml", "--port", "0"])
        #expect(scenario.status == 1)
        #expect(
            scenario.errors.contains(
                "scenarios/tales/monthly-limit.yaml is a scenario, not a contract: run it with `doppel run scenarios/tales/monthly-limit.yaml`"),
            "\(scenario.errors)")
    }

    @Test func badOptionsExitWithUsageErrors() async throws {
        let result = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--port", "70000"])
        #expect(result.status == 64)
        #expect(result.errors.contains("--port must be from 0 to 65535"))
        let delay = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--delay", "soon"])
        #expect(delay.status == 64)
        // Text that is no value of the option's type: ArgumentParser names it, with the option's help and its example.
        #expect(delay.errors.contains("The value 'soon' is invalid for '--delay <delay>'") && delay.errors.contains("a range like 100ms-300ms"))
        let huge = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--max-body-size", "1e19b"])
        #expect(huge.status == 64)
        #expect(huge.errors.contains("The value '1e19b' is invalid for '--max-body-size <max-body-size>'"))
        let empty = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--max-body-size", "0"])
        #expect(empty.status == 64)
        #expect(empty.errors.contains("--max-body-size must be a size like 1MiB"))
        let idle = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--session-idle", "soon"])
        #expect(idle.status == 64)
        #expect(
            idle.errors.contains("The value 'soon' is invalid for '--session-idle <session-idle>'") && idle.errors.contains("like 1h; 0 keeps them"))
        // A value of the type that the option does not allow: the command says what it takes.
        let hang = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--hang-limit", "0"])
        #expect(hang.status == 64)
        #expect(hang.errors.contains("--hang-limit must be a duration like 30s"))
        let format = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--log-format", "xml"])
        #expect(format.status == 64)
        #expect(format.errors.contains("Please provide one of 'text', 'json' or 'none'"))
        let proxy = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--proxy", "ftp://example.com"])
        #expect(proxy.status == 64)
        #expect(proxy.errors.contains("--proxy must be an http or https URL like http://127.0.0.1:9000"))
        let proxyTimeout = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--proxy", "http://127.0.0.1:9", "--proxy-timeout", "0"])
        #expect(proxyTimeout.status == 64)
        #expect(proxyTimeout.errors.contains("--proxy-timeout must be a duration like 30s"))
        // An address of the documentation range is on no interface here: the bind fails, after the warning.
        let exposed = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--host", "192.0.2.1", "--port", "0"])
        #expect(exposed.status == 1)
        #expect(exposed.errors.contains("doppel: warning: serving on 192.0.2.1 without --admin-token"))
        let guarded = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--host", "192.0.2.1", "--port", "0", "--admin-token", "t"])
        #expect(!guarded.errors.contains("warning"))
        let missing = try await DoppelCommand.run(["serve", "contracts/nope.yaml", "--port", "0"])
        #expect(missing.status == 1)
        #expect(missing.errors.contains("contracts/nope.yaml:1:1: error: cannot read contract"))
    }

    @Test func serveListsRoutesAnswersAndStopsOnSIGTERM() async throws {
        let served = try await DoppelCommand.serve(["contracts/tales.yaml", "--log-format", "json"])
        let (process, out, port, banner) = (served.process, served.output, served.port, served.banner)
        defer { if process.isRunning { process.terminate() } }
        #expect(banner.contains("POST  /api/v1/stories/generate"))

        let client = TestClient(base: URL(string: "http://127.0.0.1:\(port)")!)
        #expect(try await client.send("GET", "/api/v1/free-stories", token: nil).status == 200)
        let second = try await DoppelCommand.run(["serve", "contracts/tales.yaml", "--port", String(port)])
        #expect(second.status == 1)
        #expect(second.errors.contains("doppel: cannot serve on 127.0.0.1:\(port): the address is already in use"))
        let logLine = String(decoding: try await offThePool { readSome(out, within: 10) } ?? Data(), as: UTF8.self)
        #expect(logLine.contains(#""method":"GET","path":"/api/v1/free-stories","status":200,"endpoint":"list-free-stories""#))

        process.terminate()  // SIGTERM
        #expect(await process.ending(within: 10) == .exit(0))
    }
}

extension CommandLineTests {
    @Test func runPassesTheTaleScenariosAndFailsAWrongExpectation() async throws {
        let result = try await DoppelCommand.run(["run", "scenarios/tales"])
        #expect(result.status == 0, "\(result.output)")
        let last = result.output.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.range(of: #"^\d+ passed, 0 failed$"#, options: .regularExpression) != nil, "\(last)")

        let wrong = FileManager.default.temporaryDirectory.appendingPathComponent("wrong-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: wrong) }
        try """
        contract: \(repositoryRoot.appendingPathComponent("contracts/tales.yaml").path)
        steps:
          - request: GET /api/v1/free-stories
            query: { limit: 1 }
            expect: { status: 200, body: [ { title: The Magic Garden } ] }
        """.write(to: wrong, atomically: true, encoding: .utf8)
        let failing = try await DoppelCommand.run(["run", wrong.path, "--junit", wrong.path + ".xml"])
        defer { try? FileManager.default.removeItem(atPath: wrong.path + ".xml") }
        #expect(failing.status == 1)
        #expect(failing.output.contains(#"body[0].title: expected "The Magic Garden", got "Приключения в волшебном лесу""#))
        #expect(failing.output.hasSuffix("0 passed, 1 failed\n"))
        let junit = try String(contentsOfFile: wrong.path + ".xml", encoding: .utf8)
        #expect(junit.contains(#"<testsuites name="doppel run" tests="1" failures="1" skipped="0">"#))
    }

    @Test func runAgainstASeparatelyStartedServe() async throws {
        let served = try await DoppelCommand.serve(["contracts/tales.yaml", "--log-format", "none"])
        defer { served.process.terminate() }
        let port = served.port
        let result = try await DoppelCommand.run([
            "run", "scenarios/tales/monthly-limit.yaml", "scenarios/tales/hero-required.yaml", "--target", "http://127.0.0.1:\(port)",
        ])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("Running 2 scenarios against http://127.0.0.1:\(port)"))
        #expect(result.output.hasSuffix("12 passed, 0 failed\n"))
    }

    /// Four CI jobs running the same scenarios against one server at once:
    /// each run has sessions of its own, so all pass.
    @Test func parallelRunsAgainstOneServerKeepToTheirOwnSessions() async throws {
        let served = try await DoppelCommand.serve(["contracts/tales.yaml", "--log-format", "none"])
        defer { served.process.terminate() }
        let target = "http://127.0.0.1:\(served.port)"
        let scenarios = ["scenarios/tales/monthly-limit.yaml", "scenarios/tales/hero-required.yaml"]
        let runs = try await withThrowingTaskGroup(of: DoppelCommand.Run.self) { group in
            for job in 0..<4 {
                let prefix = job == 0 ? ["--session-prefix", "job-a."] : []
                group.addTask { try await DoppelCommand.run(["run"] + scenarios + ["--target", target] + prefix) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for result in runs {
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.hasSuffix("12 passed, 0 failed\n"), "\(result.output)")
        }
        let sessions = try await TestClient(base: URL(string: target)!).send("GET", "/__doppel/sessions", token: nil).json
        let ids = (sessions?["sessions"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
        #expect(ids.contains("job-a.1") && ids.contains("job-a.2"), "\(ids)")
        #expect(Set(ids.filter { $0.hasPrefix("doppel-run-") }).count == 6, "\(ids)")
        #expect(
            try await DoppelCommand.run(["run", "scenarios/tales/hero-required.yaml", "--session-prefix", "no spaces"]).errors.contains(
                "--session-prefix must be"))
    }
}

extension CommandLineTests {
    @Test("doppel diff of two .proto files: the changes, breaking first, and exit 1")
    func diffOfProtoFiles() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("proto-diff-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let old = folder.appendingPathComponent("old.proto")
        let new = folder.appendingPathComponent("new.proto")
        try #"syntax = "proto3"; package t; service S { rpc A (M) returns (M); } message M { string id = 1; }"#
            .write(to: old, atomically: true, encoding: .utf8)
        try #"syntax = "proto3"; package t; service S { rpc A (M) returns (stream M); rpc B (M) returns (M); } message M { string id = 2; }"#
            .write(to: new, atomically: true, encoding: .utf8)
        let result = try await DoppelCommand.run(["diff", old.path, new.path])
        #expect(result.status == 1)
        #expect(
            result.output.split(separator: "\n") == [
                "BREAKING   /t.S/A  its responses were one message, now a stream  [method-streaming-changed]",
                "BREAKING   t.M  field id (1): is now number 2: old clients' bytes mean something else  [field-renumbered]",
                "compatible /t.S/B  method B was added  [method-added]",
                "2 breaking, 1 compatible",
            ])
        let same = try await DoppelCommand.run(["diff", old.path, old.path])
        #expect(same.status == 0 && same.output == "no changes\n")
        let broken = folder.appendingPathComponent("broken.proto")
        try "message M { int32 a = 0; }".write(to: broken, atomically: true, encoding: .utf8)
        let refused = try await DoppelCommand.run(["diff", old.path, broken.path])
        #expect(refused.status == 1)
        #expect(refused.errors.contains("\(broken.lastPathComponent):1:23: error: field number 0 is outside 1 to 536870911"))
        let mixed = try await DoppelCommand.run(["diff", old.path, "contracts/tales.yaml"])
        #expect(mixed.status == 2 && mixed.errors.contains("a .proto file is compared with another .proto file"))
    }
}
