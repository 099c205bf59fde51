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

/// One HTTP/2 stream's door without a socket: frames written into an
/// embedded channel as NIO's multiplexer hands them to a stream, the
/// frames it answers read back and decoded by the demo's `.proto`
/// (contracts/tales.proto, served by contracts/tales-grpc.yaml).
@Suite("gRPC calls through one HTTP/2 stream's door")
struct GRPCStreamDoorTests {
    /// A server's worth of state for the demo contract, and a stream to call it through.
    struct Server {
        let engine: MockEngine
        let answerer: Answerer
        let catalog: GRPCCatalog

        init(contract: String = contractPath("tales-grpc.yaml"), maxBodySize: Int = 1 << 20) throws {
            engine = MockEngine(contract: try ContractLoader.load(file: contract))
            answerer = Answerer(slot: EngineSlot(engine), log: RequestLog(format: .none), maxBodySize: maxBodySize, hangLimit: 5)
            let definition = try #require(engine.contract.grpc)
            catalog = try #require(GRPCCatalog.load(definition).catalog)
        }

        /// A stream with a call sent on it: its headers, its messages, and the client's end.
        func call(
            _ path: String, _ messages: [JSON] = [], type: String? = nil, token: Bool = true, metadata: [(String, String)] = [],
            raw: [UInt8]? = nil
        ) throws -> Stream {
            let stream = try Stream(answerer: answerer)
            var headers: HPACKHeaders = [
                ":method": "POST", ":path": path, ":scheme": "http", ":authority": "127.0.0.1", "content-type": "application/grpc",
                "te": "trailers", "doppel-session": "door",
            ]
            if token { headers.add(name: "authorization", value: "Bearer t") }
            headers.add(contentsOf: metadata)
            try stream.channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: headers)))
            var bytes = raw ?? []
            if raw == nil, let type {
                for message in messages { bytes += Self.framed(try catalog.codec.encode(message, as: type)) }
            }
            let body = stream.channel.allocator.buffer(bytes: bytes)
            try stream.channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(body), endStream: true)))
            return stream
        }

        static func framed(_ message: [UInt8]) -> [UInt8] {
            [0] + withUnsafeBytes(of: UInt32(message.count).bigEndian, Array.init) + message
        }
    }

    /// What the door wrote on a stream.
    struct Stream {
        let loop = EmbeddedEventLoop()
        let channel: EmbeddedChannel

        init(answerer: Answerer) throws {
            channel = EmbeddedChannel(loop: loop)
            try channel.pipeline.syncOperations.addHandler(HTTP2StreamDoor(answerer: answerer))
        }

        /// Every frame written so far: headers, each message's bytes, trailers.
        func written() throws -> (headers: [HPACKHeaders], messages: [[UInt8]], reset: HTTP2ErrorCode?) {
            var headers: [HPACKHeaders] = []
            var data = ByteBuffer()
            var reset: HTTP2ErrorCode?
            while let frame = try channel.readOutbound(as: HTTP2Frame.FramePayload.self) {
                switch frame {
                case .headers(let block): headers.append(block.headers)
                case .data(let payload):
                    if case .byteBuffer(var bytes) = payload.data { data.writeBuffer(&bytes) }
                case .rstStream(let code): reset = code
                default: break
                }
            }
            var messages: [[UInt8]] = []
            while data.readableBytes >= 5 {
                data.moveReaderIndex(forwardBy: 1)
                let length = Int(data.readInteger(as: UInt32.self)!)
                messages.append(data.readBytes(length: length)!)
            }
            return (headers, messages, reset)
        }
    }

    static let generate = "/tales.v1.Tales/GenerateStory"
    static let request: JSON = ["childName": "Mia", "language": "EN"]

    @Test func aUnaryCallIsAnsweredWithItsMessageMetadataAndTrailers() throws {
        let server = try Server()
        let written = try server.call(Self.generate, [Self.request], type: "tales.v1.GenerateStoryRequest").written()
        #expect(written.headers.count == 2)
        #expect(written.headers.first?.first(name: ":status") == "200")
        #expect(written.headers.first?.first(name: "content-type") == "application/grpc")
        #expect(written.headers.first?.first(name: "x-stories-left") == "4")
        #expect(written.headers.last?.first(name: "grpc-status") == "0")
        let story = try server.catalog.codec.decode(try #require(written.messages.first), as: "tales.v1.Story")
        #expect(story["id"] == "story_1")
        #expect(story["title"] == "Mia and the Magic Garden")
        // Journaled as the method's endpoint, with the HTTP status it is covered by.
        let entry = try #require(server.engine.journal.entries.last)
        #expect(entry.endpointID == "tales.v1.Tales/GenerateStory")
        #expect(entry.status == 200)
    }

    @Test func theSixthStoryIsResourceExhaustedWithAQuotaFailureInTheStatusDetails() throws {
        let server = try Server()
        for _ in 0..<5 { _ = try server.call(Self.generate, [Self.request], type: "tales.v1.GenerateStoryRequest").written() }
        let written = try server.call(Self.generate, [Self.request], type: "tales.v1.GenerateStoryRequest").written()
        // Trailers only: one headers frame, no message.
        #expect(written.headers.count == 1)
        #expect(written.messages.isEmpty)
        let trailers = try #require(written.headers.first)
        #expect(trailers.first(name: "grpc-status") == "8")
        #expect(trailers.first(name: "grpc-message") == "Monthly story limit exceeded. You have used 5/5 stories this month.")
        let encoded = try #require(trailers.first(name: "grpc-status-details-bin"))
        let details = try #require(Data(base64Encoded: encoded))
        let status = try server.catalog.codec.decode(Array(details), as: "google.rpc.Status")
        #expect(status["code"] == 8)
        let types = status["details"]?.arrayValue?.compactMap { $0["@type"]?.stringValue }
        #expect(types == ["type.googleapis.com/google.rpc.QuotaFailure", "type.googleapis.com/google.rpc.ErrorInfo"])
        let quota = status["details"]?.arrayValue?.first?["violations"]?.arrayValue?.first
        #expect(quota?["subject"] == "plan:free")
        #expect(server.engine.journal.entries.last?.status == 429)
    }

    /// Doppel's own answers, and the contract's, each with the status a gRPC client reads.
    struct Refusal: Sendable, CustomTestStringConvertible {
        let label: String
        let path: String
        let token: Bool
        let raw: [UInt8]?
        let status: String
        let message: String
        var testDescription: String { label }
    }

    static let refusals: [Refusal] = [
        .init(label: "no token", path: generate, token: false, raw: nil, status: "16", message: "credentials"),
        .init(label: "a method the .proto lacks", path: "/tales.v1.Tales/Nope", token: true, raw: [], status: "12", message: "No endpoint"),
        .init(
            label: "bytes that are no message", path: generate, token: true, raw: [0, 0, 0, 0, 2, 0xFF, 0xFF], status: "3", message: "not a valid"),
        .init(label: "a message cut short", path: generate, token: true, raw: [0, 0, 0, 0, 9, 0x0A], status: "3", message: "ended inside"),
        .init(label: "no message at all", path: generate, token: true, raw: [], status: "3", message: "takes one message"),
        .init(
            label: "two messages to a unary method", path: generate, token: true, raw: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0], status: "3",
            message: "sent more"),
        .init(label: "a compressed message", path: generate, token: true, raw: [1, 0, 0, 0, 0], status: "3", message: "compressed"),
        .init(label: "a message past the body limit", path: generate, token: true, raw: [0, 0, 0x20, 0, 0], status: "8", message: "larger than max"),
        .init(
            label: "an empty name, refused by the contract", path: generate, token: true, raw: [0, 0, 0, 0, 0], status: "3",
            message: "child_name is required"),
    ]

    @Test(arguments: refusals)
    func eachRefusalEndsTheCallWithItsStatus(_ refusal: Refusal) throws {
        let server = try Server()
        let valid = Server.framed(try server.catalog.codec.encode(Self.request, as: "tales.v1.GenerateStoryRequest"))
        let raw = refusal.raw ?? valid
        let written = try server.call(refusal.path, token: refusal.token, raw: raw).written()
        let trailers = try #require(written.headers.last)
        #expect(trailers.first(name: "grpc-status") == refusal.status)
        #expect(trailers.first(name: "grpc-message")?.removingPercentEncoding?.contains(refusal.message) == true, "\(trailers)")
        #expect(written.messages.isEmpty)
    }

    @Test func aServerStreamSendsEachStoryThenItsTrailers() throws {
        let server = try Server()
        for _ in 0..<3 { _ = try server.call(Self.generate, [Self.request], type: "tales.v1.GenerateStoryRequest").written() }
        let stream = try server.call("/tales.v1.Tales/ListStories", [[:]], type: "tales.v1.ListStoriesRequest")
        // 10 ms between messages, on the stream's own clock.
        stream.loop.advanceTime(by: .milliseconds(100))
        let written = try stream.written()
        let ids = try written.messages.map { try server.catalog.codec.decode($0, as: "tales.v1.Story")["id"] }
        #expect(ids == ["story_1", "story_2", "story_3"])
        #expect(written.headers.last?.first(name: "grpc-status") == "0")
        // Each message sent is journaled under the response that sent it, before the call's own entry.
        let entries = server.engine.journal.entries.suffix(4)
        #expect(entries.map(\.method) == ["SEND", "SEND", "SEND", "POST"])
        #expect(entries.prefix(3).map(\.endpointID) == Array(repeating: "tales.v1.Tales/ListStories.stories", count: 3))
        #expect(entries.prefix(3).compactMap { $0.sent.first.flatMap { try? JSONReader.parse(Array($0.utf8))["id"] } } == ids)
        #expect(entries.first?.reason == "message 1 of response 'stories'")
        #expect(entries.last?.endpointID == "tales.v1.Tales/ListStories")
        // Counted apart from the calls: verify and coverage see one call.
        #expect(server.engine.journal.tally.count { $0.endpointID == "tales.v1.Tales/ListStories" } == 1)
    }

    @Test func aClientStreamIsOneList() throws {
        let server = try Server()
        let drafts: [JSON] = [["title": "a", "text": "xyz"], ["title": "b", "text": "hello"]]
        let upload = try server.call("/tales.v1.Tales/UploadDrafts", drafts, type: "tales.v1.Draft").written()
        let summary = try server.catalog.codec.decode(try #require(upload.messages.first), as: "tales.v1.UploadSummary")
        #expect(summary == ["drafts": 2, "characters": "8", "titles": ["a", "b"]])
        // Each message taken is journaled as it arrives, then the call (a unary answer: no SEND).
        let received = server.engine.journal.entries.suffix(3)
        #expect(received.map(\.method) == ["RECEIVE", "RECEIVE", "POST"])
        #expect(received.first?.endpointID == "tales.v1.Tales/UploadDrafts.received")
        #expect(received.first?.message == #"{"title":"a","text":"xyz"}"#)
        #expect(received.dropFirst().first?.reason == "message 2 of the client's stream")
    }

    @Test func aBidirectionalStreamWithoutRulesIsAnsweredAfterTheClientsLastMessage() throws {
        let contract = """
            doppel: 1
            grpc:
              proto: chat.proto
              services:
                chat.Chat:
                  Talk:
                    responses:
                      - name: told-back
                        replies: "{{ map(body, line => {text: 'And then ' + line.text + '...'}) }}"
                        interval: 5ms
            """
        try withTemporaryContract(contract, files: ["chat.proto": GRPCStreamRulesTests.proto]) { file in
            let server = try Server(contract: file)
            let lines: [JSON] = [["text": "a dragon"], ["text": "came"]]
            let stream = try server.call("/chat.Chat/Talk", lines, type: "chat.Line")
            stream.loop.advanceTime(by: .milliseconds(50))
            let told = try stream.written().messages.map { try server.catalog.codec.decode($0, as: "chat.Line")["text"] }
            #expect(told == ["And then a dragon...", "And then came..."])
            // Both ways journaled, every message with its reason: two taken, two sent, then the call.
            let journaled = server.engine.journal.entries.suffix(5)
            #expect(journaled.map(\.method) == ["RECEIVE", "RECEIVE", "SEND", "SEND", "POST"])
            #expect(
                journaled.map(\.endpointID).dropLast().map { $0?.split(separator: ".").last } == ["received", "received", "told-back", "told-back"])
            #expect(journaled.last?.responseName == "told-back")
        }
    }

    @Test func theCatalogueIsReadWithEachEngineTheSlotIsGiven() throws {
        let server = try Server()
        #expect(server.answerer.slot.servesGRPC)
        // A reload to a contract without gRPC: calls are UNIMPLEMENTED, and new connections are HTTP/1's.
        server.answerer.slot.replace(with: MockEngine(contract: try ContractLoader.load(file: contractPath("tales.yaml"))))
        #expect(!server.answerer.slot.servesGRPC)
        let valid = Server.framed(try server.catalog.codec.encode(Self.request, as: "tales.v1.GenerateStoryRequest"))
        let refused = try server.call(Self.generate, raw: valid).written()
        #expect(refused.headers.last?.first(name: "grpc-status") == "12")
        // And back: the `.proto` read again, off the call's path.
        server.answerer.slot.replace(with: server.engine)
        #expect(server.answerer.slot.servesGRPC)
        #expect(server.answerer.slot.versioned.grpc?.methods[Self.generate] != nil)
        let answered = try server.call(Self.generate, raw: valid).written()
        #expect(answered.headers.last?.first(name: "grpc-status") == "0")
    }

    @Test func aDeadlineEndsADelayedAnswerAndItIsStillJournaled() throws {
        let contract = """
            doppel: 1
            grpc:
              proto: slow.proto
              services:
                slow.Slow:
                  Wait:
                    responses:
                      - delay: 2s
                        reply: { text: late }
            """
        let proto = "syntax = \"proto3\"; package slow; service Slow { rpc Wait(Ask) returns (Ask); } message Ask { string text = 1; }"
        // The .proto is read when the first call comes: the folder is kept until the test's end.
        try withTemporaryContract(contract, files: ["slow.proto": proto]) { file in
            let server = try Server(contract: file)
            let stream = try server.call("/slow.Slow/Wait", [["text": "hi"]], type: "slow.Ask", metadata: [("grpc-timeout", "100m")])
            stream.loop.advanceTime(by: .milliseconds(99))
            #expect(try stream.written().headers.isEmpty)
            stream.loop.advanceTime(by: .milliseconds(1))
            let written = try stream.written()
            #expect(written.headers.last?.first(name: "grpc-status") == "4")
            #expect(written.messages.isEmpty)
            // The answer in progress ended with it: journaled as what the client saw, and nothing sent after the deadline.
            #expect(server.engine.journal.entries.count == 1)
            #expect(server.engine.journal.entries.first?.status == 504)
            stream.loop.advanceTime(by: .seconds(3))
            #expect(try stream.written().headers.isEmpty)
        }
    }

    @Test func aPlainHTTPRequestOverHTTP2IsAnsweredAsHTTP() throws {
        let server = try Server()
        let stream = try Stream(answerer: server.answerer)
        let headers: HPACKHeaders = [":method": "GET", ":path": "/__doppel/health?x=1", ":scheme": "https", ":authority": "127.0.0.1"]
        try stream.channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: headers, endStream: true)))
        var status: String?
        var body = ByteBuffer()
        var ended = false
        while let frame = try stream.channel.readOutbound(as: HTTP2Frame.FramePayload.self) {
            switch frame {
            case .headers(let block): status = block.headers.first(name: ":status")
            case .data(let data):
                if case .byteBuffer(var bytes) = data.data { body.writeBuffer(&bytes) }
                ended = data.endStream
            default: break
            }
        }
        #expect(status == "200")
        #expect(ended)
        #expect(try JSONReader.parse(Array(body.readableBytesView))["status"] == "ok")
    }

    @Test func reflectionAnswersEachRequestAsItComesAndHealthIsServing() throws {
        let server = try Server()
        let reflection = try Stream(answerer: server.answerer)
        let headers: HPACKHeaders = [
            ":method": "POST", ":path": "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", ":scheme": "http",
            ":authority": "127.0.0.1", "content-type": "application/grpc",
        ]
        try reflection.channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: headers)))
        func ask(_ request: JSON) throws -> JSON {
            let bytes = Server.framed(try server.catalog.codec.encode(request, as: "grpc.reflection.v1.ServerReflectionRequest"))
            let buffer = reflection.channel.allocator.buffer(bytes: bytes)
            try reflection.channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer))))
            let answer = try #require(try reflection.written().messages.last)
            return try server.catalog.codec.decode(answer, as: "grpc.reflection.v1.ServerReflectionResponse")
        }
        // The stream stays open: each answer comes before the client's next request.
        let listed = try ask(["listServices": ""])["listServicesResponse"]?["service"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        #expect(
            listed == ["grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection", "tales.v1.Tales"])
        let files = try ask(["fileContainingSymbol": "tales.v1.Tales.GenerateStory"])["fileDescriptorResponse"]?["fileDescriptorProto"]?.arrayValue
        // The demo's file, and the timestamp's it imports.
        #expect(files?.count == 2)
        #expect(try ask(["fileContainingSymbol": "tales.v1.Nope"])["errorResponse"]?["errorCode"] == 5)
        try reflection.channel.writeInbound(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true)))
        #expect(try reflection.written().headers.last?.first(name: "grpc-status") == "0")

        let known = try server.call("/grpc.health.v1.Health/Check", [["service": "tales.v1.Tales"]], type: "grpc.health.v1.HealthCheckRequest")
        let status = try server.catalog.codec.decode(try #require(try known.written().messages.first), as: "grpc.health.v1.HealthCheckResponse")
        #expect(status == ["status": "SERVING"])
        let unknown = try server.call("/grpc.health.v1.Health/Check", [["service": "nope"]], type: "grpc.health.v1.HealthCheckRequest")
        #expect(try unknown.written().headers.last?.first(name: "grpc-status") == "5")
        // Doppel's own services are not the contract's: nothing is journaled.
        #expect(server.engine.journal.entries.isEmpty)
    }

    @Test(arguments: [("100m", 0.1), ("2S", 2.0), ("1M", 60.0), ("1H", 3600.0), ("5u", 5e-6), ("7n", 7e-9)])
    func timeoutsAreReadInEveryUnit(_ text: String, _ seconds: Double) {
        #expect(HTTP2StreamDoor.seconds(ofTimeout: text) == seconds)
    }

    @Test(arguments: ["", "S", "123456789S", "10x", "-1S", "1.5S"])
    func malformedTimeoutsAreIgnored(_ text: String) {
        #expect(HTTP2StreamDoor.seconds(ofTimeout: text) == nil)
    }

    @Test func grpcMessagesArePercentEncodedAsTheProtocolSays() {
        #expect(HTTP2StreamDoor.percentEncoded("50% done: ünïcode\n") == "50%25 done: %C3%BCn%C3%AFcode%0A")
    }
}
