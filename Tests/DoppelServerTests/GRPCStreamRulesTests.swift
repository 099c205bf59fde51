import DoppelCore
import DoppelProtobuf
import DoppelTestSupport
import Foundation
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import DoppelServer

/// gRPC methods with `stream:` rules, through one HTTP/2 stream's door
/// without a socket: each message answered as it arrives (both halves open
/// at once), scheduled rules on the stream's clock, pushes from anywhere in
/// the session, a rule's `end`, and the bounds of an open stream.
@Suite("gRPC streams answered by rules")
struct GRPCStreamRulesTests {
    typealias Server = GRPCStreamDoorTests.Server
    typealias Stream = GRPCStreamDoorTests.Stream

    /// A call's headers written, its client's half left open.
    static func open(_ server: Server, _ path: String, session: String = "door", metadata: [(String, String)] = []) throws -> Stream {
        let stream = try Stream(answerer: server.answerer)
        var headers: HPACKHeaders = [
            ":method": "POST", ":path": path, ":scheme": "http", ":authority": "127.0.0.1", "content-type": "application/grpc",
            "authorization": "Bearer t", "doppel-session": session,
        ]
        headers.add(contentsOf: metadata)
        try stream.channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: headers)))
        return stream
    }

    /// Messages of the client's stream, and (`end`) the end of its half.
    static func send(_ messages: [JSON], type: String, on stream: Stream, _ server: Server, end: Bool = false) throws {
        var bytes: [UInt8] = []
        for message in messages { bytes += Server.framed(try server.catalog.codec.encode(message, as: type)) }
        let buffer = stream.channel.allocator.buffer(bytes: bytes)
        try stream.channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer), endStream: end)))
    }

    static func texts(_ messages: [[UInt8]], _ server: Server, type: String = "tales.v1.StoryLine", field: String = "text") throws -> [String] {
        try messages.map { try server.catalog.codec.decode($0, as: type)[field]?.stringValue ?? "" }
    }

    static let tell = "/tales.v1.Tales/TellTogether"

    @Test func eachLineIsAnsweredBeforeTheClientSendsTheNext() throws {
        let server = try Server()
        let stream = try Self.open(server, Self.tell)
        // Open: the answer's headers and the `on_connect` rule's message, with no message of the client's yet.
        var written = try stream.written()
        #expect(written.headers.first?.first(name: ":status") == "200")
        #expect(try Self.texts(written.messages, server) == ["Once upon a time..."])
        try Self.send([["speaker": "kid", "text": "a dragon"]], type: "tales.v1.StoryLine", on: stream, server)
        written = try stream.written()
        #expect(try Self.texts(written.messages, server) == ["And then a dragon..."])
        #expect(written.headers.isEmpty)
        try Self.send([["text": "The End"]], type: "tales.v1.StoryLine", on: stream, server)
        written = try stream.written()
        #expect(try Self.texts(written.messages, server) == ["And they lived happily ever after."])
        // The rule's `end: OK`: trailers, though the client's half is still open.
        #expect(written.headers.last?.first(name: "grpc-status") == "0")
        // What comes after the end is not answered.
        try Self.send([["text": "more"]], type: "tales.v1.StoryLine", on: stream, server)
        #expect(try stream.written().messages.isEmpty)
        // Journaled as a WebSocket's messages (each under the rule that took or sent it), then the call with the status it ended with.
        let entries = server.engine.journal.entries
        #expect(entries.map(\.method) == ["SEND", "RECEIVE", "RECEIVE", "POST"])
        #expect(entries.map(\.endpointID).dropLast().map { $0?.split(separator: ".").last } == ["opening", "told-back", "the-end"])
        #expect(entries[1].message == #"{"speaker":"kid","text":"a dragon"}"#)
        #expect(entries[1].sent == [#"{"speaker":"Doppel","text":"And then a dragon..."}"#])
        #expect(entries[2].reason?.contains("`when: lower(message.text ?? '') == 'the end'` held") == true)
        #expect(entries.last?.endpointID == "tales.v1.Tales/TellTogether")
        #expect(entries.last?.status == 200)
        #expect(server.answerer.sockets.count == 0)
    }

    @Test func theClientsEndRunsOnEndAndTheCallEndsOK() throws {
        let server = try Server()
        let stream = try Self.open(server, Self.tell)
        try Self.send([["text": "a"], ["text": "b"]], type: "tales.v1.StoryLine", on: stream, server, end: true)
        let written = try stream.written()
        #expect(
            try Self.texts(written.messages, server) == [
                "Once upon a time...", "And then a...", "And then b...", "To be continued (2 lines told so far).",
            ])
        #expect(written.headers.last?.first(name: "grpc-status") == "0")
        // The rules' effects are the session's: the next call sees them.
        let next = try Self.open(server, Self.tell)
        try Self.send([], type: "tales.v1.StoryLine", on: next, server, end: true)
        #expect(try Self.texts(next.written().messages, server).last == "To be continued (2 lines told so far).")
    }

    @Test func aWatchTakesTheStoriesGeneratedInItsSessionAndNoOther() throws {
        let server = try Server()
        let watch = try server.call("/tales.v1.Tales/WatchStories", [[:]], type: "tales.v1.WatchStoriesRequest")
        let elsewhere = try server.call(
            "/tales.v1.Tales/WatchStories", [[:]], type: "tales.v1.WatchStoriesRequest", metadata: [("doppel-session", "other")])
        #expect(server.answerer.sockets.count == 2)
        for name in ["Ann", "Bob"] {
            _ = try server.call(GRPCStreamDoorTests.generate, [["childName": .string(name)]], type: "tales.v1.GenerateStoryRequest").written()
        }
        // Pushes reach a stream on its event loop.
        watch.loop.run()
        elsewhere.loop.run()
        let written = try watch.written()
        #expect(written.headers.count == 1)
        #expect(
            try Self.texts(written.messages, server, type: "tales.v1.Story", field: "title") == [
                "Ann and the Magic Garden", "Bob and the Magic Garden",
            ])
        #expect(try elsewhere.written().messages.isEmpty)
        // Held open after its client's one message, until the client cancels it.
        try watch.channel.writeInbound(HTTP2Frame.FramePayload.rstStream(.cancel))
        #expect(server.answerer.sockets.count == 1)
        let watched = server.engine.journal.entries.filter { $0.endpointID?.hasPrefix("tales.v1.Tales/WatchStories") == true && $0.session == "door" }
        #expect(watched.map(\.method) == ["SEND", "SEND", "CLOSE", "POST"])
        #expect(watched.first?.reason == "pushed by generated")
        #expect(watched.last?.status == 499)
    }

    static let rules = """
        doppel: 1
        state:
          counters: { asked: 0 }
        grpc:
          proto: chat.proto
          services:
            chat.Chat:
              Talk:
                responses:
                  - name: closed
                    when: headers['x-closed'] == 'yes'
                    status: UNAVAILABLE
                    message: closed today
                  - name: open
                    metadata: { x-room: blue }
                stream:
                  every:
                    - name: tick
                      interval: 1s
                      send: { text: "tick {{ state.asked }}" }
                  on_message:
                    - name: over
                      when: state.asked >= 2
                      end:
                        status: RESOURCE_EXHAUSTED
                        message: "{{ state.asked }} questions is all"
                        details:
                          - "@type": type.googleapis.com/google.rpc.QuotaFailure
                            violations: [{ subject: "session", description: "2 questions" }]
                    - name: answer
                      effects: [ state.asked = state.asked + 1 ]
                      delay: 500ms
                      send: { text: "you said {{ message.text }}" }
        """
    static let proto = """
        syntax = "proto3";
        package chat;
        service Chat { rpc Talk(stream Line) returns (stream Line); }
        message Line { string text = 1; }
        """

    @Test func rulesRunOnTheStreamsClockAndARuleEndsItWithAStatusAndDetails() throws {
        try withTemporaryContract(Self.rules, files: ["chat.proto": Self.proto]) { file in
            let server = try Server(contract: file)
            let stream = try Self.open(server, "/chat.Chat/Talk")
            #expect(try stream.written().headers.first?.first(name: "x-room") == "blue")
            try Self.send([["text": "hi"]], type: "chat.Line", on: stream, server)
            // The answer waits for its delay; the `every` rule for its interval.
            #expect(try stream.written().messages.isEmpty)
            stream.loop.advanceTime(by: .milliseconds(500))
            #expect(try Self.texts(stream.written().messages, server, type: "chat.Line") == ["you said hi"])
            stream.loop.advanceTime(by: .milliseconds(500))
            #expect(try Self.texts(stream.written().messages, server, type: "chat.Line") == ["tick 1"])
            try Self.send([["text": "and?"], ["text": "third"]], type: "chat.Line", on: stream, server)
            let written = try stream.written()
            let trailers = try #require(written.headers.last)
            #expect(trailers.first(name: "grpc-status") == "8")
            #expect(trailers.first(name: "grpc-message") == "2 questions is all")
            let encoded = try #require(trailers.first(name: "grpc-status-details-bin"))
            let details = try #require(Data(base64Encoded: encoded))
            let status = try server.catalog.codec.decode(Array(details), as: "google.rpc.Status")
            #expect(status["details"]?.arrayValue?.first?["@type"] == "type.googleapis.com/google.rpc.QuotaFailure")
            // The delayed answer to "and?" and the timer went with the stream.
            stream.loop.advanceTime(by: .seconds(5))
            #expect(try stream.written().messages.isEmpty)
            #expect(server.engine.journal.entries.last?.status == 429)
            #expect(server.engine.journal.entries.last?.endpointID == "chat.Chat/Talk")

            // A response other than OK refuses the call before any rule runs.
            let refused = try Self.open(server, "/chat.Chat/Talk", metadata: [("x-closed", "yes")])
            #expect(try refused.written().headers.last?.first(name: "grpc-status") == "14")
            refused.loop.advanceTime(by: .seconds(2))
            #expect(try refused.written().messages.isEmpty)
        }
    }

    @Test func aGracefulShutdownEndsAnOpenStreamUnavailable() throws {
        let server = try Server()
        let watch = try server.call("/tales.v1.Tales/WatchStories", [[:]], type: "tales.v1.WatchStoriesRequest")
        #expect(try watch.written().headers.count == 1)
        watch.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        let trailers = try #require(try watch.written().headers.last)
        #expect(trailers.first(name: "grpc-status") == "14")
        #expect(server.engine.journal.entries.last?.status == 503)
        #expect(server.answerer.sockets.count == 0)
    }

    @Test func aDeadlineEndsAnOpenStream() throws {
        try withTemporaryContract(Self.rules, files: ["chat.proto": Self.proto]) { file in
            let server = try Server(contract: file)
            let stream = try Self.open(server, "/chat.Chat/Talk", metadata: [("grpc-timeout", "2500m")])
            stream.loop.advanceTime(by: .seconds(3))
            let written = try stream.written()
            #expect(try Self.texts(written.messages, server, type: "chat.Line") == ["tick 0", "tick 0"])
            #expect(written.headers.last?.first(name: "grpc-status") == "4")
            #expect(server.engine.journal.entries.last?.status == 504)
            #expect(server.answerer.sockets.count == 0)
        }
    }

    /// An open stream's bounds, each ending it with its status.
    struct Bound: Sendable, CustomTestStringConvertible {
        let label: String
        let messages: Int
        let raw: [UInt8]?
        let status: String
        let message: String
        var testDescription: String { label }
    }

    static let bounds: [Bound] = [
        .init(label: "a burst past the message rate", messages: 300, raw: nil, status: "8", message: "messages a second"),
        .init(label: "bytes that are no message", messages: 0, raw: [0, 0, 0, 0, 2, 0xFF, 0xFF], status: "3", message: "not a valid"),
        .init(label: "a message past the body limit", messages: 0, raw: [0, 0, 0x20, 0, 0], status: "8", message: "larger than max"),
        .init(label: "a compressed message", messages: 0, raw: [1, 0, 0, 0, 0], status: "3", message: "compressed"),
    ]

    @Test(arguments: bounds)
    func anOpenStreamIsBounded(_ bound: Bound) throws {
        let server = try Server()
        let stream = try Self.open(server, Self.tell)
        var bytes = bound.raw ?? []
        for index in 0..<bound.messages {
            bytes += Server.framed(try server.catalog.codec.encode(["text": .string("line \(index)")], as: "tales.v1.StoryLine"))
        }
        try stream.channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(bytes: bytes)))))
        let written = try stream.written()
        let trailers = try #require(written.headers.last)
        #expect(trailers.first(name: "grpc-status") == bound.status)
        #expect(trailers.first(name: "grpc-message")?.removingPercentEncoding?.contains(bound.message) == true, "\(trailers)")
        #expect(server.answerer.sockets.count == 0)
        #expect(server.engine.journal.entries.last?.endpointID == "tales.v1.Tales/TellTogether")
    }

    @Test func aSessionHoldsAsManyStreamsAsItMaySocketsAndNoMore() throws {
        let server = try Server()
        let limit = server.answerer.sockets.limits.perSession
        var open: [Stream] = []
        for _ in 0..<limit { open.append(try Self.open(server, Self.tell)) }
        #expect(server.answerer.sockets.count == limit)
        let refused = try Self.open(server, Self.tell)
        let trailers = try #require(try refused.written().headers.last)
        #expect(trailers.first(name: "grpc-status") == "8")
        #expect(trailers.first(name: "grpc-message")?.removingPercentEncoding?.contains("--max-sockets-per-session") == true)
        // Another session has its own places.
        _ = try Self.open(server, Self.tell, session: "elsewhere")
        #expect(server.answerer.sockets.count == limit + 1)
        #expect(open.count == limit)
    }
}
