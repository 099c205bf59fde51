import NIOCore

/// The door's phase: where the connection is, one phase at a time, and
/// the moves between phases that more than one part of the door makes.
extension HTTPDoor {
    /// Where the connection is: one phase at a time. (What may end it,
    /// `quiescing`, `closeAfterAnswer` and `inputClosed`, can hold in any
    /// phase, and `closing` reads them.)
    enum Phase {
        /// Between requests: the next part read starts one.
        case idle
        /// A request's head read, its body being collected.
        case reading(Incoming)
        /// The rest of a body already answered (413) is read and dropped.
        case discarding
        /// An answer on its way over time (a delay, a stream, a hang, the
        /// upstream, the shared store); parts that arrive meanwhile are
        /// held. After it, the rest of a body answered before it was read
        /// is dropped (`thenDiscarding`), or the next request read.
        case answering(thenDiscarding: Bool)
        /// `GET /__doppel/events`: the connection's last answer, open until either side ends it.
        case streamingEvents(EventStream)
        /// Handed over to a WebSocket's handlers.
        case upgraded
        /// Gone, or its last bytes on their way: waits end, nothing more is read or written.
        case closed
    }

    /// Nothing read, answered or held.
    var isIdle: Bool {
        if case .idle = phase, held.isEmpty { return true }
        return false
    }

    /// Parts that arrive now wait: an answer is on its way, or an event stream open.
    var holdsParts: Bool {
        switch phase {
        case .answering, .streamingEvents: true
        case .idle, .reading, .discarding, .upgraded, .closed: false
        }
    }

    /// Nothing more is read or written here: the connection is closed, or a WebSocket's.
    var isOver: Bool {
        switch phase {
        case .upgraded, .closed: true
        case .idle, .reading, .discarding, .answering, .streamingEvents: false
        }
    }

    /// An answer starts to take time; later parts are held until `endAnswering()`.
    func beginAnswering() {
        switch phase {
        case .idle, .reading: phase = .answering(thenDiscarding: false)
        case .discarding: phase = .answering(thenDiscarding: true)
        case .answering, .streamingEvents, .upgraded, .closed: break
        }
    }

    /// The answer's last bytes are written: the connection reads again.
    func endAnswering() {
        if case .answering(let discarding) = phase { phase = discarding ? .discarding : .idle }
    }
}
