import DoppelCore
import DoppelProtobuf
import DoppelRunner
import DoppelTestSupport
import Foundation
import Testing

/// What the engine journals beside the answers (a stream's messages, a
/// callback's attempts) is in the shared journal: read through any replica,
/// with its message. (In `SharedStateTests`, whose tests run one at a time.)
extension SharedStateTests {
    @Test("A client stream's messages sent to one replica are in the journal read through the other, each with its message")
    func streamMessagesAreShared() async throws {
        let replicas = try await SharedReplicas.start(2, contract: contractPath("tales-grpc.yaml"), timeout: 30)
        let clients = replicas.clients()
        let contract = try ContractLoader.load(file: contractPath("tales-grpc.yaml"))
        let definition = try #require(contract.grpc)
        let catalog = try #require(GRPCCatalog.load(definition).catalog)
        let drafts: [JSON] = [["title": "a", "text": "xyz"], ["title": "b", "text": "hello"]]
        let answer = try await GRPCClient.call(
            replicas.replicas[0].base, path: "/tales.v1.Tales/UploadDrafts",
            metadata: [(name: "authorization", value: "Bearer t"), (name: "doppel-session", value: "drafts")],
            messages: try GRPCClient.encode(drafts, as: "tales.v1.Draft", catalog: catalog), timeout: 20)
        #expect(answer.field("grpc-status") == "0")
        let journal = try await clients[1].send("GET", "/__doppel/journal?session=drafts&endpoint=tales.v1.Tales/UploadDrafts.received")
        let entries = journal.json?["entries"]?.arrayValue ?? []
        #expect(entries.compactMap { $0["message"]?.stringValue } == [#"{"title":"a","text":"xyz"}"#, #"{"title":"b","text":"hello"}"#])
        #expect(entries.map { $0["method"] } == ["RECEIVE", "RECEIVE"])
        #expect(entries.last?["reason"] == "message 2 of the client's stream")
        await replicas.stop()
    }

    @Test("A callback's attempts made by the replica that answered are in the journal read through the other")
    func callbackAttemptsAreShared() async throws {
        let contract = """
            doppel: 1
            state:
              counters: { pings: 0 }
            endpoints:
              ping:
                request: POST /ping
                auth: none
                responses:
                  - status: 202
                    effects: [ state.pings = state.pings + 1 ]
                    callbacks:
                      - name: notify
                        url: http://127.0.0.1:9/hook
                        body: { pings: "{{ state.pings }}" }
                        retries: 1
                        retry_delay: 10ms
                        timeout: 1s
            """
        try await withTemporaryContract(contract) { file in
            let replicas = try await SharedReplicas.start(2, contract: file, timeout: 30)
            let clients = replicas.clients()
            #expect(try await clients[0].send("POST", "/ping", token: nil, session: "hooks").status == 202)
            // Each attempt fails (nothing listens on port 9) and is journaled with status 0; read through the other replica.
            var attempts: [JSON] = []
            _ = try await eventually(within: 30) {
                let journal = try await clients[1].send("GET", "/__doppel/journal?session=hooks&endpoint=ping.notify", token: nil)
                attempts = journal.json?["entries"]?.arrayValue ?? []
                return attempts.count >= 2
            }
            #expect(attempts.map { $0["method"] } == ["CALLBACK", "CALLBACK"])
            #expect(attempts.map { $0["status"] } == [0, 0])
            #expect(attempts.first?["message"] == #"{"pings":1}"#)
            await replicas.stop()
        }
    }

    @Test("A callback fires once, from the replica that answered: 20 requests over two replicas make 20 calls to the receiver, each journaled")
    func callbacksFireOnce() async throws {
        let receiver = """
            doppel: 1
            state:
              counters: { hits: 0 }
            endpoints:
              hook:
                request: POST /hook
                auth: none
                responses: [ { status: 204, effects: [ state.hits += 1 ] } ]
              hits:
                request: GET /hits
                auth: none
                responses: [ { body: { hits: "{{ state.hits }}" } } ]
            """
        try await withTemporaryContract(receiver) { receiverFile in
            try await DoppelTestServer.with(contract: receiverFile) { hooks in
                let contract = """
                    doppel: 1
                    endpoints:
                      ping:
                        request: POST /ping
                        auth: none
                        responses:
                          - status: 202
                            callbacks:
                              - name: notify
                                url: http://127.0.0.1:\(hooks.port)/hook
                                headers: { Doppel-Session: counted }
                                body: { ping: true }
                    """
                try await withTemporaryContract(contract) { file in
                    let replicas = try await SharedReplicas.start(2, contract: file, timeout: 30)
                    let clients = replicas.clients()
                    for index in 0..<20 {
                        #expect(try await clients[index % 2].send("POST", "/ping", token: nil, session: "once").status == 202)
                    }
                    let counter = TestClient(base: hooks.baseURL)
                    func hits() async throws -> Int? {
                        try await counter.send("GET", "/hits", token: nil, session: "counted").json?["hits"]?.intValue
                    }
                    #expect(try await eventually(within: 30) { try await hits() == 20 })
                    try await Task.sleep(for: .milliseconds(500))
                    #expect(try await hits() == 20, "no callback is sent twice")
                    let journal = try await clients[1].send("GET", "/__doppel/journal?session=once&endpoint=ping.notify&limit=100")
                    let attempts = journal.json?["entries"]?.arrayValue ?? []
                    #expect(attempts.count == 20 && attempts.allSatisfy { $0["status"] == 204 }, "\(attempts.map { $0["status"] ?? .null })")
                    await replicas.stop()
                }
            }
        }
    }
}
