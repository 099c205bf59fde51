import DoppelTestSupport
import Foundation
import Testing

@testable import DoppelCore

/// A session stored as bytes between requests (the shared store's way)
/// answers exactly as one held in memory, and reads back as it was written.
@Suite("Session coding for shared stores")
struct SessionCodingTests {
    static let contracts = ["tales.yaml", "cleveroo.yaml", "currency.yaml", "eknetwork-demo.yaml", "imagen.yaml"]

    /// Every endpoint's sample request, three rounds, against one engine in
    /// memory and one that decodes the session before each request and
    /// encodes it after: the same statuses and responses, the same state
    /// size, and bytes that read back to themselves.
    @Test("In memory and through bytes, every bundled contract answers alike", arguments: contracts)
    func storedSessionsAnswerAsHeldOnes(contract name: String) throws {
        let contract = try ContractLoader.load(file: contractPath(name))
        let clock: @Sendable () -> Double = { 1_767_225_600 }
        let inMemory = MockEngine(contract: contract, clock: clock)
        let throughBytes = MockEngine(contract: contract, clock: clock)
        var stored = SessionData(state: contract.state.initial).encoded()
        for round in 0..<3 {
            for endpoint in contract.endpoints {
                let request = inMemory.sampleRequest(for: endpoint, session: "coded")
                let held = inMemory.respond(to: request)
                let session = Session(id: "coded", data: try SessionData(decoding: stored) { _, _ in nil })
                let decided = throughBytes.decide(request, in: session)
                stored = session.current.encoded()
                #expect(decided.response?.status == held.status, "\(name) \(endpoint.id), round \(round)")
                #expect(decided.response?.responseName == held.responseName, "\(name) \(endpoint.id), round \(round)")
            }
        }
        let memory = try #require(inMemory.sessions.existing("coded")).current
        let bytes = try SessionData(decoding: stored) { _, _ in nil }
        #expect(bytes.stateSize == memory.stateSize)
        #expect(bytes.sequencePositions.count == memory.sequencePositions.count)
        #expect(bytes.rateWindows.count == memory.rateWindows.count)
        #expect(bytes.endpointCalls == memory.endpointCalls)
        #expect(bytes.encoded() == stored, "decoding and encoding again changes nothing")
    }

    @Test("Clock, sequences in write order, rate windows, calls and an inline scenario read back as written")
    func everyPartReadsBack() throws {
        let items: JSON = ["b": ["id": "b"], "a": ["id": "a"]]
        var data = SessionData(state: JSONObject([("count", .int(3)), ("plan", .string("free")), ("items", items)]))
        data.clock.offset = 86_400.5
        data.clock.frozenAt = 1_700_000_000.25
        for key in ["z", "a", "m"] { _ = data.advanceSequence(key) }
        data.setRateWindow(RateWindow(start: 10, count: 2, hits: [10.5, 11.25]), for: "limit|token")
        _ = data.countCall(to: "get-thing")
        data.scenario = ActiveScenario(name: "inline", overrides: [], inline: #"{"name": "inline"}"#)
        let bytes = data.encoded()
        var resolved: (String, String?)?
        let read = try SessionData(decoding: bytes) { name, inline in
            resolved = (name, inline)
            return ActiveScenario(name: name, overrides: [], inline: inline)
        }
        #expect(JSONWriter.encode(.object(read.state)) == JSONWriter.encode(.object(data.state)), "key order kept")
        #expect(read.clock == data.clock)
        #expect(read.sequencePositions.inWriteOrder.map { $0.key } == ["z", "a", "m"])
        #expect(read.rateWindows["limit|token"]?.hits == [10.5, 11.25])
        #expect(read.endpointCalls == ["get-thing": 1])
        #expect(resolved?.0 == "inline" && resolved?.1 == #"{"name": "inline"}"#)
        #expect(read.encoded() == bytes)
    }

    @Test("Bytes that are not a session of this version are refused, not guessed at")
    func otherBytesAreRefused() {
        for bytes in [Array("[]".utf8), Array("{\"v\": 2}".utf8), Array("not json".utf8)] {
            #expect(throws: SessionData.DecodingError.self) { try SessionData(decoding: bytes) { _, _ in nil } }
        }
    }

    @Test("Which endpoints read their session: only those with no state, clock, limit, sequence, token check or override are sessionless")
    func sessionUseIsFoundFromTheContract() throws {
        let tales = try ContractLoader.load(file: contractPath("tales.yaml"))
        let use = SessionUse(contract: tales, overridden: [])
        #expect(use.sessionless.contains("list-free-stories"))
        #expect(!use.sessionless.contains("generate-story"))
        #expect(!use.sessionless.contains("create-child"))
        #expect(!SessionUse(contract: tales, overridden: ["list-free-stories"]).sessionless.contains("list-free-stories"))
        let cleveroo = try ContractLoader.load(file: contractPath("cleveroo.yaml"))
        #expect(!SessionUse(contract: cleveroo, overridden: []).sessionless.contains("generate-game"), "its rate limit counts in the session")
    }
}

extension SessionCodingTests {
    /// A request body may nest as deep as the reader allows; a session
    /// keeping it (a record in a collection) nests a few levels deeper, and
    /// must still read back, or its shared row could never be used again.
    @Test("A session holding a value nested as deep as a request body allows reads back as it was written")
    func deepStateReadsBack() throws {
        var deep = JSON.int(1)
        for _ in 0..<(JSONReader.maximumDepth - 1) { deep = .array([deep]) }
        #expect((try? JSONReader.parse(JSONWriter.encode(deep))) != nil, "a body this deep is accepted")
        let data = SessionData(state: JSONObject([("records", .object(JSONObject([("r1", .object(JSONObject([("body", deep)])))])))]))
        let read = try SessionData(decoding: data.encoded()) { _, _ in nil }
        #expect(read.encoded() == data.encoded())
    }
}
