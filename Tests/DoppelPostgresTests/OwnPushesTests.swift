import DoppelCore
import Testing

@testable import DoppelPostgres

/// A replica's own push batches wait for their notification to come back,
/// so they reach its sockets where PostgreSQL put them among every
/// replica's; those whose notification will not come go at once, after
/// the ones made before them. (Stage tests: no database.)
@Suite("A replica's own pushes")
struct OwnPushesTests {
    /// Collects what is delivered, in order.
    final class Delivered: Sendable {
        let texts = Locked<[String]>([])
        var deliver: @Sendable (ReplicaMessage) -> Void {
            { message in
                guard case .pushes(let pushes, _, _) = message else { return }
                self.texts.withLock { $0 += pushes.map(\.text) }
            }
        }
        var all: [String] { texts.withLock { $0 } }
    }

    static func batch(_ text: String) -> ReplicaMessage {
        .pushes([RenderedPush(socket: nil, text: text, delay: 0, subscription: nil)], session: "s", from: "test")
    }

    @Test("While listening, a batch waits for its notification; one coming back delivers it and every earlier one")
    func waitsForItsNotification() {
        let delivered = Delivered()
        var own = OwnPushes()
        own.listening = true
        let (first, awaited) = own.add(Self.batch("a"), deliver: delivered.deliver)
        let (second, _) = own.add(Self.batch("b"), deliver: delivered.deliver)
        let (third, _) = own.add(Self.batch("c"), deliver: delivered.deliver)
        #expect(awaited && delivered.all.isEmpty)
        own.ready(upTo: first, only: false, deliver: delivered.deliver)
        #expect(delivered.all == ["a"])
        // The third's notification: the second's came before it or never will.
        own.ready(upTo: third, only: false, deliver: delivered.deliver)
        #expect(delivered.all == ["a", "b", "c"])
        // Once: a late notification of one delivered delivers nothing.
        own.ready(upTo: second, only: false, deliver: delivered.deliver)
        #expect(delivered.all == ["a", "b", "c"])
    }

    @Test("A batch that cannot be sent goes at once, but after the earlier ones still awaited")
    func unsentWaitsItsTurn() {
        let delivered = Delivered()
        var own = OwnPushes()
        own.listening = true
        let (first, _) = own.add(Self.batch("a"), deliver: delivered.deliver)
        let (second, _) = own.add(Self.batch("b"), deliver: delivered.deliver)
        own.ready(upTo: second, only: true, deliver: delivered.deliver)
        #expect(delivered.all.isEmpty, "the lost second overtook the first")
        own.ready(upTo: first, only: false, deliver: delivered.deliver)
        #expect(delivered.all == ["a", "b"])
    }

    @Test("Not listening, a batch goes at once and awaits nothing; the listener lost, every awaited batch goes")
    func notListening() {
        let delivered = Delivered()
        var own = OwnPushes()
        let (_, awaited) = own.add(Self.batch("a"), deliver: delivered.deliver)
        #expect(!awaited && delivered.all == ["a"])
        own.listening = true
        _ = own.add(Self.batch("b"), deliver: delivered.deliver)
        _ = own.add(Self.batch("c"), deliver: delivered.deliver)
        #expect(delivered.all == ["a"])
        own.listening = false
        own.ready(upTo: .max, only: false, deliver: delivered.deliver)
        #expect(delivered.all == ["a", "b", "c"])
    }

    @Test("At most 10,000 batches wait: past that the oldest goes without its notification")
    func bounded() {
        let delivered = Delivered()
        var own = OwnPushes()
        own.listening = true
        for index in 0..<(PostgresStateStore.maximumPushesWaiting + 5) { _ = own.add(Self.batch("\(index)"), deliver: delivered.deliver) }
        #expect(delivered.all == (0..<5).map { "\($0)" })
    }
}
