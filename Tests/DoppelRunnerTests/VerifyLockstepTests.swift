import DoppelCore
import DoppelOpenAPI
import DoppelRunner
import DoppelServer
import DoppelTestSupport
import DoppelTesting
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Testing

/// `doppel verify` in lockstep with the contract: stand-ins of the tales
/// provider (Doppel serving the tales contract with one bug planted) are
/// caught, each naming the endpoint, the sequence and the difference, while
/// Doppel serving the contract itself passes (`VerifyTests`).
// One at a time: each runs a server and a few hundred requests, and the full suite shares two cores.
@Suite("Verify in lockstep with the contract", .serialized)
struct VerifyLockstepTests {
    static let talesFile = repositoryRoot.appendingPathComponent("contracts/tales.yaml").path

    /// One bug planted in the tales contract, and what verify must say about it.
    struct Bug: CustomTestStringConvertible, Sendable {
        let name: String
        let from: String
        let to: String
        /// The failing check's endpoint, a part of its name, and texts its lines hold.
        let endpoint: String
        let check: String
        let says: [String]
        /// The endpoints verified (the run is kept to those the bug is about).
        var endpoints: [String]
        var testDescription: String { name }
    }

    static let bugs: [Bug] = [
        Bug(
            name: "the monthly limit is never reached", from: "        monthly_stories: 5\n", to: "        monthly_stories: 6\n",
            endpoint: "generate-story", check: "sequence: generate-story 402", says: ["step 7 of 7 (generate-story): expected 402", "got 200"],
            endpoints: ["create-child", "generate-story"]),
        Bug(
            name: "the limit's 402 has no limit_info",
            from:
                "          limit_info:\n            current_plan: \"{{ state.plan }}\"\n            monthly_limit: \"{{ limits.monthly_stories }}\"\n            stories_used: \"{{ used }}\"\n            reset_date: \"{{ month_start(clock.now, 1) }}\"\n",
            to: "", endpoint: "generate-story", check: "sequence: generate-story 402", says: ["/limit_info: missing"],
            endpoints: ["create-child", "generate-story"]),
        Bug(
            name: "the story counter never moves", from: "          - state.stories_used = used + 1\n", to: "",
            endpoint: "get-subscription", check: "get-subscription after generate-story",
            says: ["/limits/stories_remaining: expected 4 from the session's state, got 5"],
            endpoints: ["create-child", "generate-story", "get-subscription"]),
        Bug(
            name: "the subscription reports a constant",
            from: "stories_remaining: \"{{ if(limits.monthly_stories == -1, -1, max(limits.monthly_stories - used, 0)) }}\"",
            to: "stories_remaining: 5", endpoint: "get-subscription", check: "get-subscription after generate-story",
            says: ["/limits/stories_remaining: expected 4 from the session's state, got 5"],
            endpoints: ["create-child", "generate-story", "get-subscription"]),
        Bug(
            name: "a wrong type inside a templated list", from: "      title: The Magic Garden\n", to: "      title: 12345\n",
            endpoint: "list-free-stories", check: "valid request", says: ["/1/title: expected string, got integer"], endpoints: ["list-free-stories"]),
        Bug(
            name: "a 500 on a branch the example does not take",
            from: "      - status: 200\n        schema: GenerateStoryResponse\n",
            to:
                "      - when: story_type == 'combined'\n        status: 500\n        body: { detail: boom }\n      - status: 200\n        schema: GenerateStoryResponse\n",
            endpoint: "generate-story", check: "body 'story_type' = \"combined\"", says: ["the target failed (500) where the contract answers 200"],
            endpoints: ["create-child", "generate-story"]),
        Bug(
            name: "a conditional rule not enforced",
            from: "      - when: story_type in ['hero', 'combined'] and body.hero_id == null\n        ref: hero-required\n", to: "",
            endpoint: "generate-story", check: "rule `story_type in ['hero', 'combined'] and body.hero_id == null` met",
            says: ["expected 400 (hero-required), got 200"], endpoints: ["create-child", "generate-story"]),
        Bug(
            name: "an out-of-range query accepted", from: "maximum: 100, default: 50", to: "maximum: 1000, default: 50",
            endpoint: "list-purchases", check: "query parameter 'limit' out of range (101)", says: ["expected 400", "got 200"],
            endpoints: ["list-purchases"]),
        Bug(
            name: "a created child is not kept", from: "          - state.children[child.id] = child\n",
            to: "          - state.usage_month = state.usage_month\n",
            endpoint: "generate-story", check: "sequence: generate-story", says: ["expected 200", "got 404"],
            endpoints: ["create-child", "generate-story"]),
        Bug(
            name: "a purchase does not change the plan", from: "          - state.plan = tier\n", to: "",
            endpoint: "get-subscription", check: "get-subscription after purchase",
            says: ["expected \"basic\" from the session's state, got \"free\""], endpoints: ["purchase", "get-subscription"]),
    ]

    /// A copy of a bundled contract with one text replaced, in a folder of
    /// its own (removed after `body`): a stand-in provider when Doppel serves it.
    static func withPlanted(_ name: String, from: String, to: String, _ body: (_ folder: URL, _ mutated: String) async throws -> Void) async throws {
        let text = try String(contentsOfFile: repositoryRoot.appendingPathComponent("contracts/\(name).yaml").path, encoding: .utf8)
        #expect(text.contains(from), "the planted text is in \(name).yaml")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lockstep-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let mutated = folder.appendingPathComponent("\(name).yaml")
        try text.replacingOccurrences(of: from, with: to).write(to: mutated, atomically: true, encoding: .utf8)
        try await body(folder, mutated.path)
    }

    @Test(arguments: bugs)
    func aPlantedBugIsCaught(_ bug: Bug) async throws {
        let contract = try ContractDocument.load(file: Self.talesFile)
        try await Self.withPlanted("tales", from: bug.from, to: bug.to) { _, mutated in
            try await DoppelTestServer.with(contract: mutated) { server in
                var options = ProviderVerifier.Options.inTheSuite
                options.endpointIDs = bug.endpoints
                let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: options).run()
                let failed = report.checks.filter { $0.outcome == .failed && $0.endpointID == bug.endpoint && $0.name.contains(bug.check) }
                let all = report.checks.filter { $0.outcome == .failed }.flatMap(VerifyReport.lines).joined(separator: "\n")
                #expect(!failed.isEmpty, "\(all)")
                let lines = failed.flatMap(VerifyReport.lines).joined(separator: "\n")
                for said in bug.says { #expect(lines.contains(said), "\(said) in:\n\(lines)") }
            }
        }
    }

    /// A relation the contract states (`converted_amount` is `amount × rate`
    /// for the answer's own `rate`): a provider whose arithmetic is off fails;
    /// one whose rates differ from the contract's data, but whose arithmetic
    /// holds, passes (its data is its own).
    @Test(arguments: [
        (
            from: "converted_amount: \"{{ round(query.amount * rate, 2) }}\"", to: "converted_amount: \"{{ round(query.amount * rate * 1.01, 2) }}\"",
            fails: true
        ),
        (from: "    EUR: 0.92\n", to: "    EUR: 0.95\n", fails: false),
    ])
    func aComputedValueIsHeldToItsRelation(from: String, to: String, fails: Bool) async throws {
        let contract = try ContractDocument.load(file: repositoryRoot.appendingPathComponent("contracts/currency.yaml").path)
        try await Self.withPlanted("currency", from: from, to: to) { _, mutated in
            try await DoppelTestServer.with(contract: mutated) { server in
                var options = ProviderVerifier.Options.inTheSuite
                options.endpointIDs = ["convert"]
                let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: options).run()
                let lines = report.checks.filter { $0.outcome == .failed }.flatMap(VerifyReport.lines).joined(separator: "\n")
                if fails {
                    #expect(lines.contains("FAIL convert: valid request"), "\(lines)")
                    #expect(
                        lines.contains(
                            "/converted_amount: expected 92.0 (round(query.amount * rate, 2), with the answer's own rate 0.92), got 92.92"),
                        "\(lines)")
                } else {
                    #expect(report.failed == 0, "\(lines)")
                    #expect(report.passed > 0)
                }
            }
        }
    }

    /// A provider whose users share one account: every request lands in one
    /// session, whatever `Doppel-Session` says (a forwarder in front of Doppel
    /// drops the header). No sequence starts fresh, so the limits are met early.
    @Test func stateSharedBetweenSessionsIsCaught() async throws {
        try await DoppelTestServer.with(contract: Self.talesFile) { server in
            let router = Router()
            let base = server.baseURL
            router.on("**", method: .get) { request, _ in try await Self.forward(request, to: base) }
            router.on("**", method: .post) { request, _ in try await Self.forward(request, to: base) }
            let (port, task) = try await startLoopbackApp(router)
            defer { task.cancel() }
            let contract = try ContractDocument.load(file: Self.talesFile)
            let report = await ProviderVerifier(contract: contract, target: URL(string: "http://127.0.0.1:\(port)")!, options: .inTheSuite).run()
            let failed = report.checks.filter { $0.outcome == .failed && $0.name.hasPrefix("sequence: ") }
            // Which sequence meets the shared state first depends on what the others left (a purchase lifts the limits),
            // but a limit's sequence cannot start fresh: its statuses differ from the contract's.
            #expect(
                failed.contains {
                    ($0.name.contains("create-child 402") || $0.name.contains("generate-story 402")) && $0.summary.contains("expected ")
                },
                "\(report.checks.filter { $0.outcome == .failed }.flatMap(VerifyReport.lines).joined(separator: "\n"))")
        }
    }

    static func forward(_ request: Request, to base: URL) async throws -> Response {
        let headers = request.headers.filter { $0.name.canonicalName != "doppel-session" && $0.name.canonicalName != "host" }
            .map { (name: $0.name.rawName, value: $0.value) }
        let body = try await request.body.collect(upTo: 1 << 20)
        let upstream = Upstream(base: base, timeout: 60)
        defer { Task { await upstream.shutdown() } }
        let answer = try await upstream.send(
            RecordedRequest(
                method: request.method.rawValue, path: request.uri.path, query: request.uri.query,
                headers: headers, body: Array(buffer: body)))
        var fields = HTTPFields()
        fields[.contentType] = answer.headers.first { $0.name.lowercased() == "content-type" }?.value ?? "application/json"
        return Response(status: .init(code: answer.status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// The shortest failing sequence is printed as a scenario that `doppel
    /// run --target` runs: it fails against the buggy provider and passes
    /// against Doppel serving the contract.
    @Test func theFailingSequenceIsAScenarioThatReproducesIt() async throws {
        let bug = Self.bugs[0]
        let contract = try ContractDocument.load(file: Self.talesFile)
        try await Self.withPlanted("tales", from: bug.from, to: bug.to) { folder, mutated in
            let scenarioFile = folder.appendingPathComponent("found.yaml").path
            try await DoppelTestServer.with(contract: mutated) { server in
                var options = ProviderVerifier.Options.inTheSuite
                options.endpointIDs = ["create-child", "generate-story"]
                let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: options).run()
                let failed = try #require(report.checks.first { $0.outcome == .failed && $0.name.contains("generate-story 402") })
                let start = try #require(failed.details.firstIndex { $0.contains("a scenario that reproduces it") })
                let scenario = failed.details[(start + 1)...].map { String($0.dropFirst(4)) }.joined(separator: "\n")
                #expect(scenario.contains("capture: { children_id_1: body.id }"), "\(scenario)")
                #expect(scenario.contains("\"child_id\":\"{{ children_id_1 }}\""), "\(scenario)")
                try scenario.write(toFile: scenarioFile, atomically: true, encoding: .utf8)
                let loaded = try ScenarioLoader.load(file: scenarioFile)
                #expect(loaded.steps.count == 7)
                let result = await ScenarioRunner(baseURL: server.baseURL, isDoppel: false).run(loaded, session: "reproduce-1")
                #expect(!result.passed)
                #expect(result.steps.last?.outcome == .failed)
            }
            try await DoppelTestServer.with(contract: Self.talesFile) { server in
                let loaded = try ScenarioLoader.load(file: scenarioFile)
                let result = await ScenarioRunner(baseURL: server.baseURL, isDoppel: false).run(loaded, session: "reproduce-2")
                #expect(result.passed, "\(result.steps.map { "\($0)" })")
            }
        }
    }

    /// Planning is bounded: a document of many operations (here 80 writes and
    /// 80 reads, 6,400 pairs to try) stops at 10,000 answers of the engine,
    /// says so, and still sends what it found.
    @Test func planningIsBounded() async throws {
        var text = "doppel: 1\nstate: { counters: { n: 0 } }\nendpoints:\n"
        for index in 0..<80 {
            text +=
                "  put-\(index): { request: PUT /things/\(index), responses: [ { effects: [ state.n += 1 ], body: { n: \"{{ state.n }}\" } } ] }\n"
            text += "  get-\(index): { request: GET /things/\(index), responses: [ { body: { n: \"{{ state.n }}\" } } ] }\n"
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lockstep-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("many.yaml").path
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let contract = try ContractDocument.load(file: file)
        try await DoppelTestServer.with(contract: file) { server in
            var options = ProviderVerifier.Options.inTheSuite
            options.maxRequests = 400
            let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: options).run()
            let stopped = report.checks.first { $0.name == "sequences" }
            #expect(stopped?.outcome == .notReached)
            #expect(
                stopped?.summary.contains("planning stopped after 10000 answers of the contract's engine (160 endpoints)") == true,
                "\(stopped?.summary ?? "none")")
            // What was found is sent: reads after writes among them, every one passing against Doppel.
            #expect(report.checks.contains { $0.name.hasPrefix("sequence: get-") && $0.name.contains(" after put-") && $0.outcome == .passed })
            #expect(report.failed == 0, "\(report.checks.filter { $0.outcome == .failed }.flatMap(VerifyReport.lines))")
        }
    }

    /// `--max-requests` bounds the sequences too; `--token-command` is run
    /// once per sequence, and one that fails is said.
    @Test func sequencesAreBoundedAndStartFresh() async throws {
        let contract = try ContractDocument.load(file: Self.talesFile)
        try await DoppelTestServer.with(contract: Self.talesFile) { server in
            var options = ProviderVerifier.Options.inTheSuite
            options.maxRequests = 40
            let report = await ProviderVerifier(contract: contract, target: server.baseURL, options: options).run()
            #expect(server.engine.journal.entries.count == 40)
            #expect(report.stopped?.contains("--max-requests (40)") == true)
            #expect(report.failed == 0)

            let counter = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: counter) }
            options = ProviderVerifier.Options.inTheSuite
            options.endpointIDs = ["create-child", "get-subscription"]
            options.walks = 1
            // A JWT per sequence (tales takes any), each run counted in a file.
            options.tokenCommand = "echo x >> '\(counter)'; echo eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1c2VyIn0.c2ln"
            let fresh = await ProviderVerifier(contract: contract, target: server.baseURL, options: options).run()
            let sequences = fresh.checks.filter { $0.name.hasPrefix("sequence: ") }
            #expect(!sequences.isEmpty && fresh.failed == 0, "\(fresh.checks.flatMap(VerifyReport.lines))")
            let runs = try String(contentsOfFile: counter, encoding: .utf8).split(separator: "\n").count
            #expect(runs == sequences.count)

            options.tokenCommand = "echo broken >&2; exit 3"
            let broken = await ProviderVerifier(contract: contract, target: server.baseURL, options: options).run()
            let notSent = broken.checks.filter { $0.name.hasPrefix("sequence: ") }
            #expect(
                !notSent.isEmpty && notSent.allSatisfy { $0.outcome == .notReached && $0.summary.contains("exited with 3: broken") },
                "\(notSent.map(\.summary))")
        }
    }

    /// `--setup`: a scenario run against the target before each sequence,
    /// in its session; its captured `token` is the sequence's credential
    /// (one the provider refuses makes every sequence fail), and a step that
    /// fails leaves the sequences not reached, saying which.
    @Test func aSetupScenarioStartsEachSequence() async throws {
        let contract = try ContractDocument.load(file: Self.talesFile)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("setup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func setup(_ token: String, status: Int = 200) throws -> Scenario {
            let file = folder.appendingPathComponent("setup-\(status)-\(token.count).yaml")
            try """
            contract: \(Self.talesFile)
            steps:
              - request: GET /api/v1/subscription/plans
                headers: { Authorization: "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1c2VyIn0.c2ln" }
                expect: { status: \(status) }
                capture: { token: "'\(token)'" }
            """.write(to: file, atomically: true, encoding: .utf8)
            return try ScenarioLoader.load(file: file.path, contract: contract)
        }
        try await DoppelTestServer.with(contract: Self.talesFile) { server in
            var options = ProviderVerifier.Options.inTheSuite
            options.endpointIDs = ["create-child", "get-subscription"]
            options.walks = 1
            options.setup = try setup("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1c2VyIn0.c2ln")
            let fresh = await ProviderVerifier(contract: contract, target: server.baseURL, options: options).run()
            let sequences = fresh.checks.filter { $0.name.hasPrefix("sequence: ") }
            #expect(!sequences.isEmpty && fresh.failed == 0, "\(fresh.checks.flatMap(VerifyReport.lines))")
            // One setup request in each sequence's own session, before its steps, which the token it captured let in.
            let entries = server.engine.journal.entries
            let setups = entries.filter { $0.endpointID == "list-plans" }
            let sessions = Set(setups.map(\.session))
            #expect(
                setups.count == sequences.count && sessions.count == sequences.count && setups.allSatisfy { $0.session.hasPrefix("doppel-verify-") },
                "\(setups.map(\.session))")
            let steps = entries.filter { sessions.contains($0.session) && $0.endpointID != "list-plans" }
            #expect(!steps.isEmpty && steps.allSatisfy { $0.status != 401 }, "\(steps.map(\.status))")

            // A token the provider refuses: every step of every sequence is refused, on the provider
            // and on the contract's engine alike (the setup ran there too), so the sequences agree.
            options.setup = try setup("not-a-jwt")
            let refused = await ProviderVerifier(contract: contract, target: server.baseURL, options: options).run()
            #expect(refused.failed == 0, "\(refused.checks.filter { $0.outcome == .failed }.flatMap(VerifyReport.lines))")
            let later = server.engine.journal.entries
            let newSessions = Set(later.filter { $0.endpointID == "list-plans" }.map(\.session)).subtracting(sessions)
            let refusedSteps = later.filter { newSessions.contains($0.session) && $0.endpointID != "list-plans" }
            #expect(!newSessions.isEmpty && !refusedSteps.isEmpty && refusedSteps.allSatisfy { $0.status == 401 }, "\(refusedSteps.map(\.status))")

            options.setup = try setup("x", status: 418)
            let broken = await ProviderVerifier(contract: contract, target: server.baseURL, options: options).run()
            let notSent = broken.checks.filter { $0.name.hasPrefix("sequence: ") }
            #expect(
                !notSent.isEmpty
                    && notSent.allSatisfy { $0.outcome == .notReached && $0.summary.contains("step 1") && $0.summary.contains("failed") },
                "\(notSent.map(\.summary))")
        }
        // A setup the provider passes but the contract does not (the contract
        // answers its step 503 where the provider answers 200): nothing can be
        // compared, and the report says the setup does not fit the contract.
        let verified = folder.appendingPathComponent("items.yaml")
        let provided = folder.appendingPathComponent("items-ready.yaml")
        let items = """
            doppel: 1
            endpoints:
              items: { request: GET /items, responses: [ { body: { items: [] } } ] }
            """
        try
            (items
            + "\n  ready: { request: GET /ready, responses: [ { when: \"query.force == 'yes'\", body: { ready: true } }, { status: 503, body: { ready: false } } ] }\n")
            .write(to: verified, atomically: true, encoding: .utf8)
        try (items + "\n  ready: { request: GET /ready, responses: [ { body: { ready: true } } ] }\n").write(
            to: provided, atomically: true, encoding: .utf8)
        let readyFile = folder.appendingPathComponent("ready.yaml")
        try """
        contract: \(verified.path)
        steps:
          - request: GET /ready
            expect: { status: 200 }
        """.write(to: readyFile, atomically: true, encoding: .utf8)
        let itemsContract = try ContractDocument.load(file: verified.path)
        try await DoppelTestServer.with(contract: provided.path) { server in
            var options = ProviderVerifier.Options.inTheSuite
            options.walks = 1
            options.setup = try ScenarioLoader.load(file: readyFile.path, contract: itemsContract)
            let report = await ProviderVerifier(contract: itemsContract, target: server.baseURL, options: options).run()
            let sequences = report.checks.filter { $0.name.hasPrefix("sequence: ") }
            #expect(
                !sequences.isEmpty && sequences.allSatisfy { $0.outcome == .notReached && $0.summary.contains("fails against the contract itself") },
                "\(report.checks.flatMap(VerifyReport.lines))")
            // The provider was set up (its journal has the setup's request); the contract's engine refused it.
            #expect(server.engine.journal.entries.contains { $0.endpointID == "ready" && $0.status == 200 })
        }
        // A contract that issues its tokens: the setup signs in on the provider
        // and on the contract's engine alike, so each side holds a token its own server issued.
        let ekFile = repositoryRoot.appendingPathComponent("contracts/eknetwork-demo.yaml").path
        let ek = try ContractDocument.load(file: ekFile)
        let signIn = folder.appendingPathComponent("sign-in.yaml")
        try """
        contract: \(ekFile)
        steps:
          - request: POST /v1/auth/sign-in
            json: { email: user@example.com, password: password }
            expect: { status: 200 }
            capture: { token: body.accessToken }
        """.write(to: signIn, atomically: true, encoding: .utf8)
        try await DoppelTestServer.with(contract: ekFile) { server in
            var options = ProviderVerifier.Options.inTheSuite
            options.setup = try ScenarioLoader.load(file: signIn.path, contract: ek)
            let report = await ProviderVerifier(contract: ek, target: server.baseURL, options: options).run()
            #expect(
                report.failed == 0 && report.checks.contains { $0.name.hasPrefix("sequence: ") && $0.outcome == .passed },
                "\(report.checks.filter { $0.outcome == .failed }.flatMap(VerifyReport.lines))")
        }
    }
}
