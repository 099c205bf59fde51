import DoppelCore
import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// The door's `GET /__doppel/events` stream: the hub's events queued,
/// flushed as the client takes them, and a heartbeat.
extension HTTPDoor {
    // MARK: The event stream

    /// An open `GET /__doppel/events` stream: the reader the hub hands
    /// events to, and the events waiting while the client does not take
    /// them. A reference, held by the door's phase and changed in place
    /// (on the connection's event loop only).
    final class EventStream {
        let reader: EventReader
        let chunked: Bool
        var queue = CircularBuffer<ByteBuffer>()
        var queuedBytes = 0
        var heartbeat: RepeatedTask?

        init(reader: EventReader, chunked: Bool) {
            self.reader = reader
            self.chunked = chunked
        }
    }

    /// Subscribes this connection to the hub and sends the stream's head
    /// and a `ready` event; the stream is the connection's last answer. A
    /// full hub is answered 503.
    func openEvents(session: String?, context: ChannelHandlerContext) {
        guard !isOver else { return }
        closeAfterAnswer = true
        let hub = answerer.events
        let reader = EventReader(door: NIOLoopBound(self, eventLoop: context.eventLoop), context: context)
        guard hub.subscribe(reader, session: session) else {
            writeLast(
                ResponseBytes.encode(
                    Problem.tooManyEventStreams(limit: hub.maximumReaders).response(), date: currentDate(), close: true,
                    allocator: context.channel.allocator))
            return
        }
        let chunked = answersChunked
        let stream = EventStream(reader: reader, chunked: chunked)
        phase = .streamingEvents(stream)
        let response = MockResponse(
            status: 200,
            headers: [
                (name: "Content-Type", value: "text/event-stream; charset=utf-8"), (name: "Cache-Control", value: "no-store"),
                (name: "X-Accel-Buffering", value: "no"),
            ])
        connection.write(
            ResponseBytes.encode(
                response, date: currentDate(), close: true, framing: chunked ? .chunked : .untilClose,
                allocator: context.channel.allocator))
        push(
            [
                EventHub.frame(
                    "ready", data: .object(JSONObject([("session", session.map(JSON.string) ?? .null), ("readers", .int(hub.readerCount))])))
            ],
            context: context)
        // A comment now and then keeps a quiet stream open through proxies, and finds a client that left.
        let ping = EventHub.comment("ping")
        stream.heartbeat = context.eventLoop.scheduleRepeatedTask(
            initialDelay: .seconds(Int64(EventHub.heartbeat)),
            delay: .seconds(Int64(EventHub.heartbeat))
        ) { _ in reader.take([ping]) }
    }

    /// Events for the client, written now (one flush for the batch), or
    /// queued while it does not take what was written; a client too far
    /// behind is dropped with a note.
    func push(_ frames: [ByteBuffer], context: ChannelHandlerContext) {
        guard case .streamingEvents(let stream) = phase, connection.canWrite else { return }
        var wrote = false
        for frame in frames {
            // The hub's buffer as it is: shared by every reader, never copied for one.
            let chunk = stream.chunked ? frame : EventHub.unchunked(frame)
            if stream.queue.isEmpty, context.channel.isWritable {
                connection.write(chunk, flush: false)
                wrote = true
                continue
            }
            let size = chunk.readableBytes
            guard stream.queuedBytes + size <= EventHub.readerQueueLimit, answerer.events.account(size) else {
                if wrote { connection.flush() }
                dropEvents(context: context)
                return
            }
            stream.queue.append(chunk)
            stream.queuedBytes += size
        }
        if wrote { connection.flush() }
        if !stream.queue.isEmpty { watchStall(context: context) }
    }

    /// Writes queued events while the client takes them.
    func flushEvents(context: ChannelHandlerContext) {
        guard case .streamingEvents(let stream) = phase else { return }
        while context.channel.isWritable, let chunk = stream.queue.popFirst() {
            stream.queuedBytes -= chunk.readableBytes
            _ = answerer.events.account(-chunk.readableBytes)
            connection.write(chunk)
        }
    }

    /// A reader that fell behind: a last `dropped` event says why, and the connection closes.
    func dropEvents(context: ChannelHandlerContext) {
        guard case .streamingEvents(let stream) = phase else { return }
        answerer.events.noteDropped()
        endEvents()
        let note = EventHub.frame(
            "dropped",
            data: .object(
                JSONObject([
                    (
                        "reason",
                        .string(
                            "this reader fell more than \(EventHub.readerQueueLimit >> 20) MiB of events behind (or all readers together more than \(EventHub.totalQueueLimit >> 20) MiB); reconnect, and read the journal for what was missed"
                        )
                    )
                ])))
        var chunk = stream.chunked ? note : EventHub.unchunked(note)
        if stream.chunked { chunk.writeStaticString("0\r\n\r\n") }
        guard context.channel.isWritable else {
            // A client that reads nothing would never take the note: closed now, its buffers freed.
            connection.write(chunk)
            phase = .closed
            context.close(promise: nil)
            return
        }
        writeLast(chunk)
    }

    /// Leaves the hub and lets go of the queue (the stream ended or the
    /// client left); the stream's last bytes, if any, are the answer's.
    func endEvents() {
        guard case .streamingEvents(let stream) = phase else { return }
        phase = .answering(thenDiscarding: false)
        stream.heartbeat?.cancel()
        answerer.events.unsubscribe(stream.reader)
        if stream.queuedBytes > 0 { _ = answerer.events.account(-stream.queuedBytes) }
    }
}

/// A connection's place in the event hub: the hub hands it events on the
/// connection's event loop.
final class EventReader: EventHub.Reader {
    private let door: NIOLoopBound<HTTPDoor>
    private let context: NIOLoopBound<ChannelHandlerContext>

    init(door: NIOLoopBound<HTTPDoor>, context: ChannelHandlerContext) {
        self.door = door
        self.context = NIOLoopBound(context, eventLoop: context.eventLoop)
    }

    var eventLoop: any EventLoop { context.eventLoop }

    func take(_ frames: [ByteBuffer]) {
        door.value.push(frames, context: context.value)
    }
}
