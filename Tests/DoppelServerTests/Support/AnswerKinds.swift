import DoppelCore

/// One endpoint for every kind of answer the engine decides (whole,
/// delayed, streamed, each fault, forwarded), shared by the tests that
/// deliver each kind: through a recording door without a socket
/// (`AnswerDoorTests`) and over loopback (`PipelineTests`).
enum AnswerKinds {
    static let contract = """
        doppel: 1
        info: { title: Kinds, version: "1" }
        endpoints:
          plain: { request: GET /plain, responses: [ { body: { kind: plain } } ] }
          delayed: { request: GET /delayed, responses: [ { delay: 300ms, body: { kind: delayed } } ] }
          streamed:
            request: GET /streamed
            responses: [ { chunks: ["first,", "second,", "third"], interval: 50ms } ]
          reset: { request: GET /reset, responses: [ { fault: connection_reset, body: { never: sent } } ] }
          empty: { request: GET /empty, responses: [ { fault: empty_reply, body: { never: sent } } ] }
          truncated: { request: GET /truncated, responses: [ { status: 201, fault: truncated_body, body: { message: "long enough to be cut in half" } } ] }
          broken: { request: GET /broken, responses: [ { fault: malformed_json, body: { message: "whole" } } ] }
          hang: { request: GET /hang, responses: [ { status: 202, fault: no_answer, body: { never: sent } } ] }
          proxied: { request: GET /proxied, proxy: true }
          upload: { request: POST /upload, responses: [ { status: 204 } ] }
        """

    /// An engine serving `contract`.
    static func engine() throws -> MockEngine {
        MockEngine(contract: try ContractLoader.load(text: contract, file: "kinds.yaml"))
    }

    /// What `broken` sends: the first half of its JSON body, which never parses.
    static let brokenBody = String(#"{"message":"whole"}"#.prefix(19 / 2))
}
