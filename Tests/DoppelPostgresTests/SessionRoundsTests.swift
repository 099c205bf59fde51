import DoppelCore
import DoppelTestSupport
import Foundation
import Testing

@testable import DoppelPostgres

/// Reads and writes of many sessions go to the database in rounds: while a
/// round is on its way, the items asked for wait and go together in the
/// next. (Stage tests: no database; a round is a closure that records it.)
@Suite("Rounds of sessions' statements")
struct SessionRoundsTests {
    /// The rounds sent, in order; the first waits at `gate` (when given) until it opens.
    final class Sent: Sendable {
        let rounds = Locked<[[Int]]>([])
        var all: [[Int]] { rounds.withLock { $0 } }
        func record(_ items: [Int]) -> Int {
            rounds.withLock {
                $0.append(items)
                return $0.count
            }
        }
    }

    struct Refused: Error, Equatable {}
    struct Failed: Error {}

    static func rounds(
        maximum: Int = 64, maximumWeight: Int = .max, timeout: Double = 30, sent: Sent, gate: Gate? = nil,
        admit: @escaping @Sendable (ContinuousClock.Instant) throws -> Void = { _ in },
        answer: @escaping @Sendable ([Int]) throws -> [Int] = { $0.map { $0 * 10 } }
    ) -> SessionRounds<Int, Int> {
        SessionRounds(
            lanes: 1, maximum: maximum, maximumWeight: maximumWeight, weight: { $0 % 100 }, timeout: timeout, admit: admit,
            send: { items in
                if sent.record(items) == 1, let gate { await gate.wait() }
                return try answer(items)
            })
    }

    /// Starts item 0 (key `key`), and returns once its round is on its way.
    static func lead(_ rounds: SessionRounds<Int, Int>, sent: Sent, key: String = "first") async -> Task<Int, any Error> {
        let first = Task { try await rounds.run(0, key: key, started: .now) }
        await eventually(within: 30) { sent.all.count == 1 }
        return first
    }

    /// Starts `items` (key and item) one after another, each once the one before waits; their outcomes by item.
    static func queue(
        _ items: [(key: String, item: Int)], on rounds: SessionRounds<Int, Int>, started: ContinuousClock.Instant = .now
    ) async -> [Task<Int, any Error>] {
        var tasks: [Task<Int, any Error>] = []
        let already = rounds.counts.waiting
        for (index, (key, item)) in items.enumerated() {
            tasks.append(Task { try await rounds.run(item, key: key, started: started) })
            await eventually(within: 30, every: .milliseconds(1)) { rounds.counts.waiting == already + index + 1 }
        }
        return tasks
    }

    @Test("Items asked for while a round is on its way wait, and go together in the next, in order, each with its own outcome")
    func waitingItemsGoTogether() async throws {
        let (sent, gate) = (Sent(), Gate())
        let rounds = Self.rounds(sent: sent, gate: gate)
        let first = await Self.lead(rounds, sent: sent, key: "s0")
        let waiting = await Self.queue((1...10).map { ("s\($0)", $0) }, on: rounds)
        #expect(rounds.counts.waiting == 10)
        gate.open()
        #expect(try await first.value == 0)
        for (index, task) in waiting.enumerated() { #expect(try await task.value == (index + 1) * 10) }
        #expect(sent.all == [[0], Array(1...10)])
        #expect(rounds.counts == (0, 1, 10))
    }

    @Test("Items of one key never share a round: each later one waits for the next")
    func oneItemOfAKeyARound() async throws {
        let (sent, gate) = (Sent(), Gate())
        let rounds = Self.rounds(sent: sent, gate: gate)
        let first = await Self.lead(rounds, sent: sent, key: "a")
        let waiting = await Self.queue([("a", 1), ("b", 2), ("a", 3), ("b", 4), ("a", 5)], on: rounds)
        gate.open()
        _ = try await first.value
        for task in waiting { _ = try await task.value }
        #expect(sent.all == [[0], [1, 2], [3, 4], [5]])
    }

    @Test("A round carries at most 64 items and at most its weight; an item heavier than that goes alone")
    func roundsAreBounded() async throws {
        let (sent, gate) = (Sent(), Gate())
        let rounds = Self.rounds(maximum: 64, sent: sent, gate: gate)
        let first = await Self.lead(rounds, sent: sent)
        let waiting = await Self.queue((1...70).map { ("s\($0)", $0) }, on: rounds)
        gate.open()
        _ = try await first.value
        for task in waiting { _ = try await task.value }
        #expect(sent.all.map(\.count) == [1, 64, 6])

        // Weights are the item modulo 100: 40 + 40 fit in 90, a third 40 does not, 10 more does (the 40 left goes first
        // in the next round, so nothing is passed over for good); 95 fits only alone.
        let (weighed, heavyGate) = (Sent(), Gate())
        let heavy = Self.rounds(maximumWeight: 90, sent: weighed, gate: heavyGate)
        let lead = await Self.lead(heavy, sent: weighed)
        let queued = await Self.queue([("a", 40), ("b", 140), ("c", 240), ("d", 95), ("e", 10)], on: heavy)
        heavyGate.open()
        _ = try await lead.value
        for task in queued { _ = try await task.value }
        #expect(weighed.all == [[0], [40, 140, 10], [240], [95]])
    }

    @Test("A round that fails fails each of its items, and the lane goes on to the next round")
    func aFailedRoundFailsItsItemsOnly() async throws {
        let (sent, gate) = (Sent(), Gate())
        let rounds = Self.rounds(
            sent: sent, gate: gate,
            answer: { items in
                if items.contains(99) { throw Failed() }
                return items.map { $0 * 10 }
            })
        let first = await Self.lead(rounds, sent: sent, key: "s")
        // Two of key "s": the second waits for the round after the failing one.
        let waiting = await Self.queue([("s", 99), ("t", 1), ("s", 2)], on: rounds)
        gate.open()
        #expect(try await first.value == 0)
        await #expect(throws: Failed.self) { try await waiting[0].value }
        await #expect(throws: Failed.self) { try await waiting[1].value }
        #expect(try await waiting[2].value == 20)
        #expect(sent.all == [[0], [99, 1], [2]])
    }

    @Test("An item that waited past its time is refused as its round is sent, and not sent")
    func aLateItemIsRefused() async throws {
        let (sent, gate) = (Sent(), Gate())
        let rounds = Self.rounds(
            sent: sent, gate: gate,
            admit: { started in
                if ContinuousClock.now - started > .seconds(50) { throw Refused() }
            })
        let first = await Self.lead(rounds, sent: sent)
        let late = Task { try await rounds.run(1, key: "late", started: .now - .seconds(100)) }
        #expect(await eventually(within: 30) { rounds.counts.waiting == 1 })
        let waiting = await Self.queue([("s", 2)], on: rounds)
        #expect(rounds.counts.waiting == 2)
        gate.open()
        _ = try await first.value
        await #expect(throws: Refused.self) { try await late.value }
        #expect(try await waiting[0].value == 20)
        #expect(sent.all == [[0], [2]])
    }

    @Test("A caller cancelled while its own round never ends hands its lane on: the items waiting and those after are sent")
    func aStuckRoundHoldsNoLane() async throws {
        let (sent, gate) = (Sent(), Gate())
        let rounds = Self.rounds(sent: sent, gate: gate)
        let stuck = await Self.lead(rounds, sent: sent, key: "stuck")
        let waiting = await Self.queue([("a", 1), ("b", 2)], on: rounds)
        stuck.cancel()
        for (index, task) in waiting.enumerated() { #expect(try await task.value == (index + 1) * 10) }
        #expect(try await rounds.run(3, key: "c", started: .now) == 30)
        #expect(sent.all == [[0], [1, 2], [3]])
        gate.open()
        #expect(try await stuck.value == 0)
    }

    @Test("A waiting round that never ends fails at the timeout, and the lane goes on")
    func aWaitingRoundIsBoundedInTime() async throws {
        let (sent, gate, stuckRound) = (Sent(), Gate(), Gate())
        let rounds = SessionRounds<Int, Int>(
            lanes: 1, maximum: 64, timeout: 0.2, admit: { _ in },
            send: { items in
                let count = sent.record(items)
                if count == 1 { await gate.wait() }
                if count == 2 { await stuckRound.wait() }
                return items.map { $0 * 10 }
            })
        let first = await Self.lead(rounds, sent: sent)
        let waiting = await Self.queue([("a", 1), ("b", 2)], on: rounds)
        gate.open()
        _ = try await first.value
        await #expect(throws: Deadline.Exceeded.self) { try await waiting[0].value }
        await #expect(throws: Deadline.Exceeded.self) { try await waiting[1].value }
        #expect(try await rounds.run(3, key: "c", started: .now) == 30)
        stuckRound.open()
    }

    @Test("A round answered for the wrong number of items fails each of them rather than leaving one waiting")
    func aMismatchedAnswerFails() async throws {
        let (sent, gate) = (Sent(), Gate())
        let rounds = Self.rounds(sent: sent, gate: gate, answer: { items in Array(items.map { $0 * 10 }.dropLast()) })
        let first = await Self.lead(rounds, sent: sent)
        let waiting = await Self.queue([("a", 1), ("b", 2)], on: rounds)
        gate.open()
        await #expect(throws: MismatchedRound.self) { try await first.value }
        for task in waiting { await #expect(throws: MismatchedRound.self) { try await task.value } }
    }

    @Test("1,000 items asked for at once from many tasks: each gets its own outcome once, none is lost")
    func manyAtOnce() async throws {
        let sent = Sent()
        let rounds = Self.rounds(sent: sent)
        let outcomes = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for item in 0..<1_000 { group.addTask { (item, try await rounds.run(item, key: "s\(item % 50)", started: .now)) } }
            var all: [Int: Int] = [:]
            for try await (item, outcome) in group { all[item] = outcome }
            return all
        }
        #expect(outcomes.count == 1_000)
        #expect(outcomes.allSatisfy { $0.value == $0.key * 10 })
        #expect(sent.all.flatMap { $0 }.sorted() == Array(0..<1_000))
        #expect(sent.all.allSatisfy { round in Set(round.map { $0 % 50 }).count == round.count }, "one item of a key a round")
        #expect(rounds.counts.waiting == 0)
    }
}
