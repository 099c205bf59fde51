import DoppelTestSupport
import DoppelTesting
import Foundation
import Testing

/// `doppel serve --watch`: edits picked up without a restart, sessions kept,
/// a broken edit reported while the last good contract serves on.
extension CommandLineTests {
    static func watchedContract(version: String, method: String = "POST", extraState: String = "") -> String {
        """
        doppel: 1
        info: { title: Watched, version: "1" }
        state:
          counters: { hits: 0\(extraState) }
          variables: { plan: free }
        endpoints:
          hit:
            request: \(method) /hit
            responses:
              - effects: ["state.hits += 1"]
                body: { hits: "{{ state.hits }}", plan: "{{ state.plan }}", version: \(version) }
          note:
            request: GET /note
            responses:
              - content_type: text/plain
                file: note.txt
        """
    }

    @Test func watchReloadsEditsKeepsSessionsAndKeepsServingThroughABrokenEdit() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let contract = folder.appendingPathComponent("watched.yaml")
        try Self.watchedContract(version: "one").write(to: contract, atomically: true, encoding: .utf8)
        try "first note".write(to: folder.appendingPathComponent("note.txt"), atomically: true, encoding: .utf8)

        let served = try await DoppelCommand.serve([contract.path, "--watch", "--log-format", "none"])
        defer { served.process.terminate() }
        #expect(served.banner.contains("Watching \(contract.path) and its body files for changes"))
        let client = TestClient(base: URL(string: "http://127.0.0.1:\(served.port)")!)
        func hit() async throws -> JSON? { try await client.send("POST", "/hit", token: nil, session: "s1").json }
        /// How long `check` took to hold (the shared `eventually`), or nil when it did not within `seconds`.
        func eventually(within seconds: Double, _ check: () async throws -> Bool) async throws -> Double? {
            let start = Date()
            return try await DoppelTestSupport.eventually(within: seconds, check) ? Date().timeIntervalSince(start) : nil
        }

        #expect(try await hit()?["hits"] == 1)
        #expect(try await hit()?["hits"] == 2)

        // An edit: the new answer served (the watcher polls every 250 ms; 30 s only catches a watcher that never reloads, on a machine busy with the rest of the suite), the session's counter intact.
        // A new counter is added; the variable and the old counter keep their values.
        try Self.watchedContract(version: "two", extraState: ", misses: 0").write(to: contract, atomically: true, encoding: .utf8)
        let reloaded = try await eventually(within: 30) {
            try await client.send("GET", "/__doppel/state?session=s1", token: nil).json?["state"]?["misses"] != nil
        }
        #expect(reloaded != nil, "the edit was not served within 30 s")
        let after = try await hit()
        #expect(after?["version"] == "two")
        #expect(after?["hits"] == 3)
        let state = try await client.send("GET", "/__doppel/state?session=s1", token: nil).json?["state"]
        #expect(state?["hits"] == 3)
        #expect(state?["misses"] == 0)
        #expect(state?["plan"] == "free")
        #expect(state?.objectValue?.count == 3)

        // A body file the contract reads is watched too.
        try "second note".write(to: folder.appendingPathComponent("note.txt"), atomically: true, encoding: .utf8)
        let noted = try await eventually(within: 30) {
            String(decoding: try await client.send("GET", "/note", token: nil).body, as: UTF8.self) == "second note"
        }
        #expect(noted != nil, "the body file's edit was not served within 30 s")

        // A broken edit: reported as path:line:column, and the last good contract serves on.
        try Self.watchedContract(version: "three", method: "FETCH").write(to: contract, atomically: true, encoding: .utf8)
        var reported = ""
        // (Generous deadlines from here on: what they wait for is not a timing promise.)
        _ = try await eventually(within: 30) {
            let output = served.output
            reported += String(decoding: try await offThePool { readSome(output, within: 1) } ?? Data(), as: UTF8.self)
            return reported.contains("has errors (above); still serving the last good contract")
        }
        #expect(reported.contains("doppel: \(contract.path) has errors (above); still serving the last good contract"))
        let errorsHandle = served.errors
        let errors = String(decoding: try await offThePool { readSome(errorsHandle, within: 30) } ?? Data(), as: UTF8.self)
        #expect(errors.contains("\(contract.path):8:14: error: unknown method 'FETCH' (did you mean 'PATCH'?)"))
        let still = try await hit()
        #expect(still?["version"] == "two")
        #expect(still?["hits"] == 4)

        // Fixed again: served, the count carried on.
        try Self.watchedContract(version: "four").write(to: contract, atomically: true, encoding: .utf8)
        let fixed = try await eventually(within: 30) {
            let probe = try await client.send("POST", "/hit", token: nil, session: "probe").json
            return probe?["version"] == "four"
        }
        #expect(fixed != nil)
        #expect(try await hit()?["hits"] == 5)
    }

    @Test func watchFollowsASymbolicLinkToItsFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("watch-link-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let real = folder.appendingPathComponent("real.yaml")
        let link = folder.appendingPathComponent("link.yaml")
        try Self.watchedContract(version: "one").write(to: real, atomically: true, encoding: .utf8)
        try "note".write(to: folder.appendingPathComponent("note.txt"), atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)

        let served = try await DoppelCommand.serve([link.path, "--watch", "--log-format", "none"])
        defer { served.process.terminate() }
        let client = TestClient(base: URL(string: "http://127.0.0.1:\(served.port)")!)
        #expect(try await client.send("POST", "/hit", token: nil).json?["version"] == "one")
        // The file the link points to is edited; the link itself is not touched.
        try Self.watchedContract(version: "two").write(to: real, atomically: true, encoding: .utf8)
        var version: JSON?
        try await eventually(within: 60, every: .milliseconds(50)) {
            version = try await client.send("POST", "/hit", token: nil).json?["version"]
            return version == "two"
        }
        #expect(version == "two")
    }
}
