import DoppelCore

/// Work a test holds until it says: `wait()` returns once `open()` was
/// called, and ignores cancellation, as a call that does not end when
/// cancelled would (a database call seen across a restart did).
package final class Gate: Sendable {
    private let state = Locked((opened: false, waiting: [CheckedContinuation<Void, Never>]()))

    package init() {}

    package func wait() async {
        await withCheckedContinuation { continuation in
            let opened = state.withLock { state in
                if !state.opened { state.waiting.append(continuation) }
                return state.opened
            }
            if opened { continuation.resume() }
        }
    }

    package func open() {
        let waiting = state.withLock { state in
            state.opened = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
