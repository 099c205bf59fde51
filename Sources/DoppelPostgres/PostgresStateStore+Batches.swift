import DoppelCore

/// A session's transactions on one replica, one batch at a time: while a
/// session's row is being read and written for one request, the requests
/// of that session arriving on this replica wait, and are then decided
/// together, one after another on one copy of the row, which is written
/// once (`PostgresStateStore+Optimistic.swift`: two round trips, or the
/// row's lock when another replica wrote between). A hot session so costs
/// two round trips a batch rather than a request, and its requests on one
/// replica never lose writes to each other. The outcomes are those of the
/// requests decided one at a time in the batch's order, as any order of
/// them was before; each request's answer comes once its batch is written.
///
/// (Written here rather than taken from a library: the batch is the
/// store's transaction, and no mirrored package groups async callers by
/// key with a leader that runs for them.)
extension PostgresStateStore {
    /// The most transactions decided in one batch.
    static let maximumBatch = 64

    /// One transaction waiting in its session's queue, its result's type erased.
    struct Job: Sendable {
        let started: ContinuousClock.Instant
        /// Runs the transaction's body on `data`: the data to write after it, or nil when the body threw (it changed nothing).
        let run: @Sendable (SessionData?) -> SessionData??
        /// Hands the caller its result (nil: its body's last run's) or the batch's error; called once.
        let finish: @Sendable ((any Error)?) -> Void
    }

    /// A batch whose every body threw: nothing is written.
    private struct NothingWritten: Error {}

    /// Runs `body` in the next batch of session `id`: at once, by this
    /// caller, when none is running; else once the running batch is written.
    func batched<T: Sendable>(session id: String, _ body: @escaping @Sendable (SessionData?) throws -> (T, SessionData?)) async throws -> T {
        let result = Locked<Result<T, any Error>?>(nil)
        let run: @Sendable (SessionData?) -> SessionData?? = { data in
            do {
                let (value, written) = try body(data)
                result.withLock { $0 = .success(value) }
                return .some(written)
            } catch {
                result.withLock { $0 = .failure(error) }
                return nil
            }
        }
        let started = ContinuousClock.now
        // No batch running: this caller runs its own, without a task or a continuation.
        let idle = queues.withLock { queues in
            guard queues[id] == nil else { return false }
            queues[id] = []
            return true
        }
        if idle {
            let failure = Locked<(any Error)?>(nil)
            // Its caller bounds it in time, as it did before batches: at its deadline the caller is cancelled and stops
            // waiting for it. The waiting requests are then handed on at once, not after this batch: a database call
            // that does not end when cancelled (one seen across a database restart) would otherwise hold the session's
            // queue for good. Two batches of a session may then run at once; their writes are still each kept only over
            // the version they were decided on.
            let handed = Locked(false)
            let handOverOnce: @Sendable () -> Void = { if handed.setFirst() { self.handOver(id) } }
            await withTaskCancellationHandler {
                await runBatch([Job(started: started, run: run) { error in failure.withLock { $0 = error } }], of: id, waited: false)
            } onCancel: {
                handOverOnce()
            }
            handOverOnce()
            if let error = failure.withLock({ $0 }) { throw error }
            return try result.withLock { $0! }.get()
        }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let job = Job(started: started, run: run) { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(with: result.withLock { $0! }) }
            }
            let lead = queues.withLock { queues in
                guard queues[id] != nil else {
                    queues[id] = []
                    return true
                }
                queues[id]!.append(job)
                return false
            }
            // The batch ended between the two looks: this job's is the next.
            if lead { Task { await self.drain(id, [job]) } }
        }
    }

    /// After a batch: the session's waiting transactions, taken as the next batch; none, and the session is idle.
    private func next(_ id: String) -> [Job] {
        queues.withLock { queues in
            let waiting = queues[id] ?? []
            queues[id] = waiting.isEmpty ? nil : []
            return waiting
        }
    }

    /// The caller that ran its own batch hands the waiting ones to a task of their own.
    private func handOver(_ id: String) {
        let waiting = next(id)
        if !waiting.isEmpty { Task { await self.drain(id, waiting) } }
    }

    /// Runs batches of session `id` until none waits.
    private func drain(_ id: String, _ first: [Job]) async {
        var jobs = first
        while !jobs.isEmpty {
            for start in stride(from: 0, to: jobs.count, by: Self.maximumBatch) {
                await runBatch(Array(jobs[start..<min(jobs.count, start + Self.maximumBatch)]), of: id, waited: true)
            }
            jobs = next(id)
        }
    }

    /// One batch's transaction, finishing each job once: its jobs decided
    /// in order on one copy of the row, written once. Jobs that `waited`
    /// for an earlier batch are each refused first when too little of
    /// their time is left (`TooLate`, nothing of them kept), and the batch
    /// is bounded by the store's timeout (no caller's deadline bounds it);
    /// the write is sent only while the oldest left has time enough.
    private func runBatch(_ jobs: [Job], of id: String, waited: Bool) async {
        var ready: [Job] = []
        for job in jobs {
            do {
                if waited { try checkTimeLeft(since: job.started) }
                ready.append(job)
            } catch {
                job.finish(error)
            }
        }
        guard let oldest = ready.first else { return }
        let batch = ready
        if batch.count > 1 { status.withLock { $0.batchedTransactions += batch.count } }
        do {
            let transaction: @Sendable () async throws -> Void = {
                try await self.transactOnce(session: id, started: oldest.started) { stored in
                    var data = stored
                    var changed = false
                    for job in batch {
                        guard let written = job.run(data) else { continue }
                        data = written
                        changed = true
                    }
                    guard changed else { throw NothingWritten() }
                    return ((), data)
                }
            }
            if waited { try await Deadline.run(options.timeout, transaction) } else { try await transaction() }
            for job in batch { job.finish(nil) }
        } catch is NothingWritten {
            for job in batch { job.finish(nil) }
        } catch {
            for job in batch { job.finish(error) }
        }
    }
}
