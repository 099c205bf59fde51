import DoppelRunner
import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

/// `doppel record`: a recording proxy whose recording becomes a contract and
/// a scenario that lint clean and pass when replayed, with no secret in them.
extension CommandLineTests {
    @Test func aRecordingBecomesAContractAndAScenarioThatReplayWithoutSecrets() async throws {
        let upstream = try await ProxyUpstream.start()
        defer { Task { await upstream.stop() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("record-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }

        let executable = try #require(DoppelCommand.executable)
        let process = try ChildProcess(
            executable.path, ["record", "--target", upstream.url.absoluteString, "-o", folder.path, "--port", "0", "--log-format", "none"],
            errors: .null)
        defer { process.terminate() }
        let out = try #require(process.output)
        let banner = await readBanner(out, until: "stop with Ctrl-C")
        let port = try #require(banner.firstMatch(of: /on http:\/\/127\.0\.0\.1:(\d+);/).flatMap { Int($0.1) }, "\(banner)")
        let client = TestClient(base: URL(string: "http://127.0.0.1:\(port)")!)

        #expect(try await client.send("GET", "/things/7", token: nil).status == 200)
        #expect(try await client.send("GET", "/things/8?verbose=true", token: nil).status == 200)
        let echoed = try await client.send(
            "POST", "/echo", json: ["name": "Mia", "token": "SECRET-FIELD-TOKEN"], token: "SECRET-BEARER-TOKEN",
            headers: ["Cookie": "sid=SECRET-COOKIE-VALUE"])
        #expect(echoed.status == 201)
        #expect(try await client.send("GET", "/missing", token: nil).status == 404)

        process.interrupt()  // SIGINT: write the recording and stop
        #expect(await process.ending(within: 10) == .exit(0))
        let summary = String(decoding: try await offThePool { out.readDataToEndOfFile() }, as: UTF8.self)
        #expect(summary.contains("Recorded 4 exchanges (3 endpoints)"))

        let contractFile = folder.appendingPathComponent("contract.yaml").path
        let scenarioFile = folder.appendingPathComponent("scenario.yaml").path
        for file in [contractFile, scenarioFile] {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            for secret in ["SECRET-BEARER-TOKEN", "SECRET-COOKIE-VALUE", "SECRET-FIELD-TOKEN"] {
                #expect(!text.contains(secret), "\(file) holds \(secret)")
            }
        }
        // Lint clean: ids made parameters, one endpoint per method and path.
        let contract = try ContractLoader.load(file: contractFile)
        #expect(contract.endpoints.map(\.signature) == ["GET /things/{id}", "POST /echo", "GET /missing"])
        let lint = try await DoppelCommand.run(["lint", contractFile, scenarioFile])
        #expect(lint.status == 0, "\(lint.output)\(lint.errors)")

        // Replayed against the recorded contract, every step gets its recorded status.
        let replay = try await DoppelCommand.run(["run", scenarioFile])
        #expect(replay.status == 0, "\(replay.output)")
        #expect(replay.output.hasSuffix("4 passed, 0 failed\n"))
    }

    @Test func recordRefusesToOverwriteARecording() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("record-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "doppel: 1\n".write(to: folder.appendingPathComponent("contract.yaml"), atomically: true, encoding: .utf8)
        let result = try await DoppelCommand.run(["record", "--target", "http://127.0.0.1:9", "-o", folder.path])
        #expect(result.status == 64)
        #expect(result.errors.contains("contract.yaml exists already; choose another --output folder"))
        let bad = try await DoppelCommand.run(["record", "--target", "ftp://x", "-o", folder.path + "/new"])
        #expect(bad.errors.contains("--target must be an http or https URL"))
    }
}
