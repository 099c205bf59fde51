import DoppelCore
import DoppelTestSupport
import Foundation

/// Loads contract text, failing the test with every diagnostic when it does not load.
func loadContract(_ text: String, file: String = "test.yaml") throws -> Contract {
    try ContractLoader.load(text: text, file: file)
}

/// Diagnostics of contract text; empty when it loads.
func diagnostics(of text: String, file: String = "test.yaml") -> [Diagnostic] {
    do {
        _ = try ContractLoader.load(text: text, file: file)
        return []
    } catch {
        return error.diagnostics
    }
}

extension MockEngine {
    /// The engine's decision for a request (its delay and delivery beside the response), journaled at once.
    func decision(_ method: String, _ target: String, session: String? = nil) -> Decision {
        var headers = [(name: "Authorization", value: "Bearer \(sampleJWT)")]
        if let session { headers.append((name: "Doppel-Session", value: session)) }
        let decision = decide(RecordedRequest(method: method, target: target, headers: headers))
        complete(decision, durationMicros: 0)
        return decision
    }

    /// The decision for `request`, journaled at once: its effects beside its response.
    func decided(_ request: RecordedRequest) -> Decision {
        let decision = decide(request)
        complete(decision, durationMicros: 0)
        return decision
    }

    /// Sends a JSON request through the whole pipeline.
    func send(
        _ method: String, _ target: String, json: JSON? = nil, token: String? = sampleJWT, session: String? = nil,
        headers: [(name: String, value: String)] = [], body raw: [UInt8]? = nil
    ) -> MockResponse {
        var all = headers
        if let token { all.append((name: "Authorization", value: "Bearer \(token)")) }
        if let session { all.append((name: "Doppel-Session", value: session)) }
        var body: [UInt8] = raw ?? []
        if let json {
            all.append((name: "Content-Type", value: "application/json"))
            body = JSONWriter.encode(json)
        }
        return respond(to: RecordedRequest(method: method, target: target, headers: all, body: body))
    }
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let value: Locked<Double>
    init(_ iso: String) { value = Locked(UTCCalendar.parse(iso)!) }
    var now: Double { value.withLock { $0 } }
    func advance(seconds: Double) { value.withLock { $0 += seconds } }
}

extension Decision.Delivery {
    /// A delivery's kind without what it sends, to compare in tests.
    enum Kind: Equatable {
        case whole, stream, forward
        case fault(Fault)
    }

    var kind: Kind {
        switch self {
        case .whole: .whole
        case .stream: .stream
        case .fault(_, let fault): .fault(fault)
        case .forward: .forward
        }
    }

    /// A stream's parts; nil for any other delivery.
    var parts: [StreamPart]? {
        if case .stream(_, let parts) = self { return parts }
        return nil
    }
}
