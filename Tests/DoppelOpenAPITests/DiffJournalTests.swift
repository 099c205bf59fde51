import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

@testable import DoppelOpenAPI

/// `doppel diff --journal`: each breaking change against the calls a
/// journal observed, without sockets (the journal is written here as the
/// admin API and the event stream write it).
@Suite("Diff against a journal")
struct DiffJournalTests {
    static let old: String = {
        (try? String(contentsOfFile: contractPath("tales.yaml"), encoding: .utf8)) ?? ""
    }()

    /// hero_id newly required, free stories' `limit` at most 100, the 404 of a purchase's plan gone, GET /subscription/plans gone.
    static let new: String =
        old
        .replacingOccurrences(of: "    required: [language, child_id]\n", with: "    required: [language, child_id, hero_id]\n")
        .replacingOccurrences(of: "limit: { type: integer, minimum: 1, maximum: 1000 }", with: "limit: { type: integer, minimum: 1, maximum: 100 }")
        .replacingOccurrences(of: "    request: GET /subscription/plans\n", with: "    request: GET /subscription/tiers\n")

    static func entry(
        _ session: String, _ method: String, _ path: String, _ query: String?, _ status: Int, _ endpoint: String?, request: JSON? = nil
    ) -> JSON {
        var object = JSONObject([
            ("sequence", 1), ("session", .string(session)), ("method", .string(method)), ("path", .string(path)),
            ("query", query.map(JSON.string) ?? .null), ("status", .int(status)), ("endpoint", endpoint.map(JSON.string) ?? .null),
        ])
        if let request { object["request"] = request }
        return .object(object)
    }

    static let generate = "/api/v1/stories/generate"
    static let withoutHero = #"{"language":"en","child_id":"123e4567-e89b-12d3-a456-426614174000"}"#
    static let withHero = #"{"language":"en","child_id":"123e4567-e89b-12d3-a456-426614174000","hero_id":"987fcdeb-51a2-43f7-b123-9876543210ab"}"#

    static func request(_ body: String) -> JSON {
        .object(
            JSONObject([
                ("headers", .array([.array(["Content-Type", "application/json"]), .array(["Authorization", "Bearer t"])])),
                ("body", .string(body)), ("body_bytes", .int(body.utf8.count)), ("truncated", false),
            ]))
    }

    static var entries: [JSON] {
        [
            entry("alice", "GET", "/api/v1/free-stories", "limit=500", 200, "list-free-stories"),
            entry("bob", "GET", "/api/v1/free-stories", "limit=10", 200, "list-free-stories"),
            entry("carol", "GET", "/api/v1/free-stories", nil, 200, "list-free-stories"),
            entry("bob", "POST", generate, nil, 200, "generate-story", request: request(withoutHero)),
            entry("carol", "POST", generate, nil, 200, "generate-story", request: request(withHero)),
            entry("dave", "GET", "/api/v1/subscription/plans", nil, 200, "list-plans"),
            // Not taken by the contract's id (another version's journal): matched by method and path.
            entry("erin", "GET", "/api/v1/subscription/plans", nil, 200, nil),
        ]
    }

    static func exposures(_ bytes: [UInt8]) throws -> [(ContractDiff.Change, ContractDiff.Exposure)] {
        let old = try ContractLoader.load(text: Self.old, file: "tales.yaml")
        let new = try ContractLoader.load(text: Self.new, file: "tales.yaml")
        let changes = ContractDiff.changes(from: old, to: new)
        let calls = try ContractDiff.observedCalls(bytes)
        return zip(changes, ContractDiff.exposures(of: changes, from: old, to: new, calls: calls)).compactMap { change, exposure in
            exposure.map { (change, $0) }
        }
    }

    /// The admin API's journal: statuses, queries and paths are told call
    /// by call; a body's change only as the calls that reach the endpoint.
    @Test func theJournalTellsQueriesAndEndpointsExactlyAndBodiesAsReach() throws {
        let journal = JSON.object(
            JSONObject([
                ("total", 7), ("capacity", 10_000),
                (
                    "entries",
                    .array(
                        Self.entries.map { entry in
                            // The journal keeps no requests.
                            guard case .object(var object) = entry else { return entry }
                            object["request"] = nil
                            return .object(object)
                        })
                ),
            ]))
        let found = try Self.exposures(JSONWriter.encode(journal))
        let byKind = Dictionary(found.map { ($0.0.kind, $0.1) }, uniquingKeysWith: { first, _ in first })
        let limit = try #require(byKind["request-range-narrowed"])
        #expect(limit.exact && limit.calls == 1 && limit.sessions == ["alice"] && limit.totalSessions == 5, "\(limit)")
        let hero = try #require(byKind["request-field-now-required"])
        #expect(!hero.exact && hero.calls == 2 && hero.sessions == ["bob", "carol"], "\(hero)")
        #expect(hero.text.contains("the journal keeps no bodies"))
        let removed = try #require(byKind["endpoint-removed"])
        #expect(removed.exact && removed.sessions == ["dave", "erin"], "\(removed)")
        #expect(found.allSatisfy { $0.0.breaking })
    }

    /// The event stream's `request` events keep each request: a body's
    /// change is told call by call (bob sent no `hero_id`, carol did).
    @Test func theEventStreamTellsBodiesCallByCall() throws {
        var stream = "event: ready\ndata: {\"session\":null,\"readers\":1}\n\n"
        for entry in Self.entries {
            stream += "event: request\ndata: " + String(decoding: JSONWriter.encode(entry), as: UTF8.self) + "\n\n"
        }
        stream += "event: journal\ndata: {\"cleared\":true}\n\n"
        let found = try Self.exposures(Array(stream.utf8))
        let hero = try #require(found.first { $0.0.kind == "request-field-now-required" }?.1)
        #expect(hero.exact && hero.calls == 1 && hero.sessions == ["bob"], "\(hero)")
        #expect(hero.text == "1 call by 1 of 5 sessions (bob)")
        let limit = try #require(found.first { $0.0.kind == "request-range-narrowed" }?.1)
        #expect(limit.sessions == ["alice"])
    }

    /// Each call's request is validated once by each version, however many
    /// of the endpoint's changes ask about it: a diff's work grows with the
    /// journal, not with the journal times the changes.
    @Test func eachCallIsValidatedOncePerVersion() throws {
        let old = try ContractLoader.load(text: Self.old, file: "tales.yaml")
        // Two body changes to one endpoint: hero_id newly required, and story_length's range narrowed.
        let new = try ContractLoader.load(
            text: Self.new.replacingOccurrences(
                of: "story_length: { type: integer, minimum: 1, maximum: 30,",
                with: "story_length: { type: integer, minimum: 1, maximum: 20,"), file: "tales.yaml")
        let changes = ContractDiff.changes(from: old, to: new).filter { $0.breaking && $0.place.hasPrefix("request body") }
        #expect(Set(changes.map(\.endpoint)).count == 1 && changes.count >= 2, "\(changes.map { "\($0.kind) \($0.place)" })")
        var stream = ""
        for index in 0..<40 {
            let body = index.isMultiple(of: 2) ? Self.withoutHero : Self.withHero
            let entry = Self.entry("s\(index % 4)", "POST", Self.generate, nil, 200, "generate-story", request: Self.request(body))
            stream += "event: request\ndata: " + String(decoding: JSONWriter.encode(entry), as: UTF8.self) + "\n\n"
        }
        let matcher = ContractDiff.CallMatcher(old: old, new: new, calls: try ContractDiff.observedCalls(Array(stream.utf8)))
        let exposures = changes.map(matcher.exposure(of:))
        #expect(exposures.allSatisfy { $0.exact })
        #expect(exposures.contains { $0.calls > 0 })
        #expect(matcher.outcomes.old.count == 40 && matcher.outcomes.new.count == 40, "\(matcher.outcomes.old.count) \(matcher.outcomes.new.count)")
    }

    /// A status's change is told for the calls that got that status.
    @Test func aRemovedStatusIsToldForTheCallsThatGotIt() throws {
        let old = try ContractLoader.load(text: Self.old, file: "tales.yaml")
        let without = Self.old.replacingOccurrences(of: "status: 402", with: "status: 403")
        #expect(without != Self.old)
        let new = try ContractLoader.load(text: without, file: "tales.yaml")
        let changes = ContractDiff.changes(from: old, to: new)
        let calls = [
            ContractDiff.ObservedCall(session: "a", method: "POST", path: Self.generate, query: nil, status: 402, endpoint: "generate-story"),
            ContractDiff.ObservedCall(session: "b", method: "POST", path: Self.generate, query: nil, status: 200, endpoint: "generate-story"),
            ContractDiff.ObservedCall(session: "c", method: "POST", path: Self.generate, query: nil, status: 402, endpoint: "generate-story"),
        ]
        let exposures = ContractDiff.exposures(of: changes, from: old, to: new, calls: calls)
        let removed = try #require(zip(changes, exposures).first { $0.0.kind == "status-removed" && $0.0.endpoint == "POST /stories/generate" }?.1)
        #expect(removed.calls == 2 && removed.sessions == ["a", "c"] && removed.exact, "\(removed)")
        #expect(zip(changes, exposures).allSatisfy { $0.0.breaking == ($0.1 != nil) })
    }

    /// What is not a journal is refused with where and why.
    @Test(arguments: [
        ("{\"total\": 1}", "not a journal"),
        ("{\"entries\": [{\"method\": \"GET\"}]}", "entry 1: a journal entry has `method`, `path` and `status`"),
        ("{\"method\":\"GET\",\"path\":\"/a\",\"status\":200}\n{oops\n", "line 2: not JSON"),
    ])
    func whatIsNotAJournalIsRefused(_ text: String, _ says: String) {
        #expect {
            _ = try ContractDiff.observedCalls(Array(text.utf8))
        } throws: { error in
            "\(error)".contains(says)
        }
    }

    @Test func aJournalPastTheLimitIsRefusedUnread() {
        #expect(throws: ContractDiff.JournalError.self) {
            _ = try ContractDiff.observedCalls([UInt8](repeating: UInt8(ascii: " "), count: ContractDiff.maximumJournalBytes + 1))
        }
    }
}
