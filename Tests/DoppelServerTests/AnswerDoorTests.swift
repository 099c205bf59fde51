import DoppelCore
import Foundation
import NIOCore
import Testing

@testable import DoppelServer

/// The delivery of a decision is written once (`AnswerDoor`'s extension)
/// against a door's primitives, so a door for another transport gets it
/// whole. Here a door that only records what it is asked to write delivers
/// every kind of answer, without a socket: the calls in order, the waits
/// each kind makes, and the journal entry completed before the last bytes.
@Suite("Delivery against a door's primitives")
struct AnswerDoorTests {
    /// A door that writes nothing: it records each primitive called, with
    /// the journal's size at that moment, and runs waits at once.
    final class RecordingDoor: AnswerDoor {
        let answerer: Answerer
        let journal: Journal
        var calls: [String] = []
        /// The journal's entries when the answer's last bytes were asked for.
        var journaledBeforeLastBytes: Int?
        var pending: (() async -> Void)?
        var loop: (any EventLoop)? { nil }

        init(answerer: Answerer, journal: Journal) {
            self.answerer = answerer
            self.journal = journal
        }

        private func last(_ call: String) {
            journaledBeforeLastBytes = journal.count
            calls.append(call)
        }

        func wait(_ seconds: Double, then: @escaping () -> Void) {
            calls.append("wait \(Int((seconds * 1000).rounded()))ms")
            then()
        }

        func whenDone<Result: Sendable>(_ operation: @escaping @Sendable () async -> Result, then: @escaping (Result) -> Void) {
            calls.append("away")
            pending = { then(await operation()) }
        }

        func beginAnswering() { calls.append("begin") }
        func writeWhole(_ response: MockResponse, omitBody: Bool) {
            last("whole \(response.status)\(omitBody ? " head only" : "")")
        }
        func writeHead(ofStream response: MockResponse, bodyFollows: Bool) {
            if bodyFollows { calls.append("head \(response.status)") } else { last("head \(response.status) alone") }
        }
        func writePart(_ bytes: [UInt8]) { calls.append("part \(String(decoding: bytes, as: UTF8.self))") }
        func writeEnd() { last("end") }
        func breakOff(_ fault: Fault, of response: MockResponse, omitBody: Bool) { last("break \(fault.rawValue) \(response.status)") }
        func upgrade(_ exchange: DoorExchange, answered response: MockResponse, opening: SocketOpening) { last("upgrade") }
    }

    struct Kind: CustomTestStringConvertible, Sendable {
        let method: String
        let path: String
        let calls: [String]
        /// The status the journal entry records.
        var status = 200
        var testDescription: String { "\(method) \(path)" }
    }

    static let kinds: [Kind] = [
        Kind(method: "GET", path: "/plain", calls: ["whole 200"]),
        Kind(method: "HEAD", path: "/plain", calls: ["whole 200 head only"]),
        Kind(method: "GET", path: "/delayed", calls: ["wait 300ms", "whole 200"]),
        Kind(
            method: "GET", path: "/streamed",
            calls: ["begin", "head 200", "wait 0ms", "part first,", "wait 50ms", "part second,", "wait 50ms", "part third", "end"]),
        Kind(method: "HEAD", path: "/streamed", calls: ["head 200 alone"]),
        Kind(method: "GET", path: "/reset", calls: ["begin", "break connection_reset 200"]),
        Kind(method: "GET", path: "/empty", calls: ["begin", "break empty_reply 200"]),
        Kind(method: "GET", path: "/truncated", calls: ["begin", "break truncated_body 201"], status: 201),
        Kind(method: "GET", path: "/hang", calls: ["begin", "wait 5000ms", "break no_answer 202"], status: 202),
        // The upstream is away from the door; with none configured, its answer is the 502 made in one place.
        Kind(method: "GET", path: "/proxied", calls: ["begin", "away", "whole 502"], status: 502),
    ]

    @Test(arguments: kinds)
    func eachKindIsDeliveredThroughThePrimitives(_ kind: Kind) async throws {
        let engine = try AnswerKinds.engine()
        let answerer = Answerer(slot: EngineSlot(engine), log: RequestLog(format: .none), maxBodySize: 1 << 20, hangLimit: 5)
        let door = RecordingDoor(answerer: answerer, journal: engine.journal)
        let request = RecordedRequest(method: kind.method, target: kind.path)
        let decision = try answerer.decidedNow(request, engine: engine)
        door.proceed(DoorExchange(request: request, decision: decision, engine: engine, started: .now, isHead: kind.method == "HEAD"))
        if let pending = door.pending { await pending() }
        #expect(door.calls == kind.calls)
        // One entry, completed before the last bytes were asked for, with the status sent.
        #expect(door.journaledBeforeLastBytes == 1)
        let entry = try #require(engine.journal.entries.first)
        #expect(entry.status == kind.status)
    }

    @Test func aMalformedJSONFaultIsAWholeAnswerWithABrokenBody() async throws {
        let engine = try AnswerKinds.engine()
        let answerer = Answerer(slot: EngineSlot(engine), log: RequestLog(format: .none), maxBodySize: 1 << 20)
        let door = RecordingDoor(answerer: answerer, journal: engine.journal)
        let request = RecordedRequest(method: "GET", target: "/broken")
        let decision = try answerer.decidedNow(request, engine: engine)
        // The renderer breaks the body; nothing is left for the door to break.
        guard case .whole(let response) = decision.delivery else {
            Issue.record("expected a whole answer, got \(decision.delivery)")
            return
        }
        #expect(String(decoding: response.body, as: UTF8.self) == AnswerKinds.brokenBody)
        #expect((try? JSONSerialization.jsonObject(with: Data(response.body))) == nil)
        door.proceed(DoorExchange(request: request, decision: decision, engine: engine, started: .now, isHead: false))
        #expect(door.calls == ["whole 200"])
        #expect(door.journaledBeforeLastBytes == 1)
    }
}

extension Answerer {
    /// The decision for `request`, which memory gives at once.
    func decidedNow(_ request: RecordedRequest, engine: MockEngine) throws -> Decision {
        guard case .now(let decision) = decision(for: request, refusal: nil, engine: engine) else {
            throw DecidedLater()
        }
        return decision
    }

    struct DecidedLater: Error {}
}
