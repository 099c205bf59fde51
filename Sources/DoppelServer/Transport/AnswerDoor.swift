import DoppelCore
import NIOCore

/// One request and its decision, on their way out of a door.
struct DoorExchange {
    let request: RecordedRequest
    var decision: Decision
    /// The engine that decided, which completes the journal entry.
    let engine: MockEngine
    let started: ContinuousClock.Instant
    /// A HEAD: the GET's answer with its body left out (RFC 9110 section 9.3.2).
    let isHead: Bool
}

/// What a door delivers answers with, whatever carries them.
///
/// The delivery of a decision (its delay, a stream's parts each after its
/// pause, a fault, the upstream's answer, the journal entry completed just
/// before an answer's last bytes) is written once, in the extension below,
/// against these primitives. `HTTPDoor` implements them for HTTP/1 with
/// bytes at the raw end of its connection (`ConnectionGuard.State`); a door
/// for another transport (HTTP/2's streams) implements them with its own
/// frames and gets the same delivery.
///
/// Every primitive runs on the door's own executor (a connection's event
/// loop), as the extension calls them.
protocol AnswerDoor: AnyObject {
    var answerer: Answerer { get }
    /// Runs `then` after `seconds`, or at once when there is no wait or the
    /// connection is ending; a graceful shutdown or the client leaving ends
    /// the wait early.
    func wait(_ seconds: Double, then: @escaping () -> Void)
    /// Runs `operation` away from the door, then `then` with its result back on it
    /// (by default on `loop`, the door's event loop, kept while the door lives).
    func whenDone<Result: Sendable>(_ operation: @escaping @Sendable () async -> Result, then: @escaping (Result) -> Void)
    var loop: (any EventLoop)? { get }
    /// An answer starts to take time: requests that arrive meanwhile wait for it.
    func beginAnswering()
    /// The whole answer, its body left out when `omitBody`: the answer's last bytes.
    func writeWhole(_ response: MockResponse, omitBody: Bool)
    /// The head of an answer whose body follows in parts, or (not
    /// `bodyFollows`, a HEAD's) alone as the answer's last bytes.
    func writeHead(ofStream response: MockResponse, bodyFollows: Bool)
    /// One part of a streamed body.
    func writePart(_ bytes: [UInt8])
    /// A streamed body's end: the answer's last bytes.
    func writeEnd()
    /// The connection broken on purpose: `.connectionReset` resets it,
    /// `.truncatedBody` sends the head and half the body first, and any
    /// other fault closes it with nothing (more) sent.
    func breakOff(_ fault: Fault, of response: MockResponse, omitBody: Bool)
    /// A `101` that opens a WebSocket (`SocketOpening`): the door hands the
    /// connection to the socket, or answers why it cannot.
    func upgrade(_ exchange: DoorExchange, answered response: MockResponse, opening: SocketOpening)
    /// The status an answer decided as `decided` is journaled with: the
    /// door's own when it ended the exchange itself (a gRPC call's deadline).
    func statusSent(_ decided: Int) -> Int
}

extension AnswerDoor {
    func statusSent(_ decided: Int) -> Int { decided }

    func whenDone<Result: Sendable>(_ operation: @escaping @Sendable () async -> Result, then: @escaping (Result) -> Void) {
        guard let loop else { return }
        loop.makeFutureWithTask(operation).assumeIsolated().whenSuccess(then)
    }

    /// A decided answer: delivered after its delay, or now.
    func proceed(_ exchange: DoorExchange) {
        let delay = exchange.decision.delay
        if delay > 0 {
            wait(delay) { [self] in deliver(exchange) }
        } else {
            // Most answers: no closure to allocate.
            deliver(exchange)
        }
    }

    /// The decision delivered by its kind; each kind's journal entry is
    /// completed (`finish`) just before its last bytes, so a client that
    /// has its answer finds it in the journal.
    func deliver(_ exchange: DoorExchange) {
        switch exchange.decision.delivery {
        case .whole(let response):
            if let opening = exchange.decision.effects?.socket {
                upgrade(exchange, answered: response, opening: opening)
                return
            }
            finish(exchange, status: response.status)
            writeWhole(response, omitBody: exchange.isHead)
        case .stream(let response, let parts):
            guard !exchange.isHead else {
                // The GET's head, and no body: nothing to wait for.
                finish(exchange, status: response.status)
                writeHead(ofStream: response, bodyFollows: false)
                return
            }
            beginAnswering()
            writeHead(ofStream: response, bodyFollows: true)
            stream(parts[...], status: response.status, exchange)
        case .fault(let response, let fault):
            beginAnswering()
            switch fault {
            case .noAnswer:
                // Held open, silent, until the hang limit, a graceful shutdown, or the client leaves.
                wait(answerer.hangLimit) { [self] in
                    finish(exchange, status: response.status)
                    breakOff(.noAnswer, of: response, omitBody: exchange.isHead)
                }
            case .malformedJSON:
                // The renderer breaks the body and decides a whole answer;
                // a fault of this kind, if decided, is one too.
                finish(exchange, status: response.status)
                writeWhole(response, omitBody: exchange.isHead)
            case .connectionReset, .emptyReply, .truncatedBody:
                finish(exchange, status: response.status)
                breakOff(fault, of: response, omitBody: exchange.isHead)
            }
        case .forward:
            beginAnswering()
            let answerer = self.answerer
            let request = exchange.request
            whenDone(
                { await answerer.forward(request) },
                then: { [self] upstream in
                    var answer = upstream
                    answer.endpointID = exchange.decision.entry?.endpointID
                    finish(exchange, status: answer.status)
                    writeWhole(answer, omitBody: exchange.isHead)
                })
        }
    }

    /// A stream's parts, each after its pause; the answer is finished before its end.
    func stream(_ parts: ArraySlice<StreamPart>, status: Int, _ exchange: DoorExchange) {
        guard let part = parts.first else {
            finish(exchange, status: status)
            writeEnd()
            return
        }
        wait(part.delay) { [self] in
            if !part.bytes.isEmpty { writePart(part.bytes) }
            stream(parts.dropFirst(), status: status, exchange)
        }
    }

    /// Completes the exchange's journal entry and log line with the status sent.
    func finish(_ exchange: DoorExchange, status: Int) {
        answerer.finish(exchange.decision, of: exchange.request, sent: statusSent(status), engine: exchange.engine, started: exchange.started)
    }
}
