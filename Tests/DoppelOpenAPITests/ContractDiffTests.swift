import DoppelCore
import DoppelOpenAPI
import DoppelTestSupport
import Foundation
import Testing

/// `doppel diff`: each kind of change told breaking or compatible, one
/// change of a small contract at a time.
@Suite("Contract diff")
struct ContractDiffTests {
    static let shop = """
        doppel: 1
        info: { title: Shop, version: "1" }
        auth: { default: bearer, schemes: { bearer: { type: bearer }, key: { type: api_key, header: X-Key } } }
        schemas:
          Item:
            type: object
            required: [id, name, status]
            properties:
              id: { type: integer }
              name: { type: string }
              status: { type: string, enum: [draft, live] }
              note: { type: string }
              shape: { anyOf: [ { type: string }, { type: integer } ] }
          NewItem:
            type: object
            required: [name]
            properties:
              name: { type: string, maxLength: 40 }
              price: { type: number, minimum: 0 }
              pay: { oneOf: [ { type: object, required: [card], properties: { card: { type: string } } }, { type: object, required: [iban], properties: { iban: { type: string } } } ] }
              kind: { type: string, enum: [a, b] }
        endpoints:
          list-items:
            request: GET /items
            query: { properties: { limit: { type: integer, maximum: 100 } } }
            responses:
              - schema: { type: array, items: Item }
                body: []
          create-item:
            request: POST /items
            body: { schema: NewItem }
            documented:
              - { name: slow-down, status: 429, headers: { Retry-After: "1" }, body: { error: slow_down } }
            responses:
              - status: 201
                schema: Item
                body: { id: 1, name: "{{ body.name }}", status: draft }
          get-item:
            request: GET /items/{id}
            documented:
              - { name: missing, status: 404, body: { error: not_found } }
            responses:
              - schema: Item
                body: { id: 1, name: Lamp, status: live }
        """

    /// One edit of the shop and the change `diff` must report.
    struct Case: CustomTestStringConvertible, Sendable {
        let kind: String
        let breaking: Bool
        let from: String
        let to: String
        /// Other kinds the edit also makes (a moved endpoint is removed and added).
        var also: Set<String> = []
        var testDescription: String { kind }
    }

    static let cases: [Case] = [
        Case(kind: "endpoint-removed", breaking: true, from: "request: GET /items/{id}", to: "request: DELETE /items/{id}", also: ["endpoint-added"]),
        Case(
            kind: "endpoint-added", breaking: false, from: "endpoints:\n",
            to: "endpoints:\n  ping: { request: GET /ping, responses: [ { status: 204 } ] }\n"),
        Case(
            kind: "base-path-changed", breaking: true, from: "info: { title: Shop, version: \"1\" }\n",
            to: "info: { title: Shop, version: \"1\" }\nbase_path: /v2\n"),
        Case(
            kind: "status-removed", breaking: true, from: "      - { name: missing, status: 404, body: { error: not_found } }\n",
            to: "      - { name: missing, status: 410, body: { error: not_found } }\n", also: ["status-added"]),
        Case(
            kind: "status-added", breaking: false, from: "      - { name: missing, status: 404, body: { error: not_found } }\n",
            to: "      - { name: missing, status: 404, body: { error: not_found } }\n      - { name: broken, status: 500, body: { error: broken } }\n"
        ),
        Case(kind: "response-field-removed", breaking: true, from: "      note: { type: string }\n", to: ""),
        Case(
            kind: "response-field-added", breaking: false, from: "      note: { type: string }\n",
            to: "      note: { type: string }\n      tag: { type: string }\n"),
        Case(kind: "response-field-now-optional", breaking: true, from: "required: [id, name, status]", to: "required: [id, name]"),
        Case(kind: "response-type-changed", breaking: true, from: "      note: { type: string }", to: "      note: { type: integer }"),
        Case(kind: "response-enum-widened", breaking: true, from: "enum: [draft, live]", to: "enum: [draft, live, archived]"),
        Case(kind: "response-field-nullable", breaking: true, from: "      name: { type: string }", to: "      name: { type: [string, \"null\"] }"),
        Case(
            kind: "response-media-type-changed", breaking: true, from: "        body: { id: 1, name: Lamp, status: live }", to: "        text: Lamp"),
        Case(kind: "response-header-removed", breaking: true, from: "headers: { Retry-After: \"1\" }, ", to: ""),
        Case(kind: "request-field-now-required", breaking: true, from: "    required: [name]\n", to: "    required: [name, price]\n"),
        Case(
            kind: "request-field-added-required", breaking: true, from: "    required: [name]\n    properties:\n",
            to: "    required: [name, sku]\n    properties:\n      sku: { type: string }\n"),
        Case(
            kind: "request-field-added", breaking: false, from: "      kind: { type: string, enum: [a, b] }\n",
            to: "      kind: { type: string, enum: [a, b] }\n      color: { type: string }\n"),
        Case(kind: "request-type-narrowed", breaking: true, from: "price: { type: number, minimum: 0 }", to: "price: { type: integer, minimum: 0 }"),
        Case(kind: "request-enum-narrowed", breaking: true, from: "enum: [a, b]", to: "enum: [a]"),
        Case(kind: "request-enum-widened", breaking: false, from: "enum: [a, b]", to: "enum: [a, b, c]"),
        Case(kind: "request-range-narrowed", breaking: true, from: "maxLength: 40", to: "maxLength: 20"),
        Case(kind: "request-range-widened", breaking: false, from: "maxLength: 40", to: "maxLength: 80"),
        Case(kind: "parameter-now-required", breaking: true, from: "query: { properties:", to: "query: { required: [limit], properties:"),
        Case(
            kind: "parameter-added-required", breaking: true, from: "query: { properties: { limit: { type: integer, maximum: 100 } } }",
            to: "query: { required: [q], properties: { limit: { type: integer, maximum: 100 }, q: { type: string } } }"),
        Case(
            kind: "parameter-added", breaking: false, from: "limit: { type: integer, maximum: 100 } }",
            to: "limit: { type: integer, maximum: 100 }, sort: { type: string } }"),
        Case(kind: "auth-scheme-changed", breaking: true, from: "auth: { default: bearer,", to: "auth: { default: key,"),
        Case(kind: "auth-removed", breaking: false, from: "    request: GET /items/{id}\n", to: "    request: GET /items/{id}\n    auth: none\n"),
        Case(
            kind: "request-media-type-removed", breaking: true, from: "body: { schema: NewItem }",
            to: "body: { schema: NewItem, content_type: application/x-www-form-urlencoded }"),
        Case(
            kind: "request-variant-removed", breaking: true, from: ", { type: object, required: [iban], properties: { iban: { type: string } } } ] }",
            to: " ] }"),
        Case(
            kind: "request-variant-added", breaking: false, from: "{ iban: { type: string } } } ] }",
            to: "{ iban: { type: string } } }, { type: string } ] }"),
        Case(
            kind: "request-field-added-required", breaking: true, from: "required: [card], properties: { card: { type: string } }",
            to: "required: [card, cvc], properties: { card: { type: string }, cvc: { type: string } }"),
        Case(
            kind: "response-variant-added", breaking: true, from: "anyOf: [ { type: string }, { type: integer } ]",
            to: "anyOf: [ { type: string }, { type: integer }, { type: boolean } ]"),
        Case(
            kind: "response-variants-changed", breaking: true, from: "shape: { anyOf: [ { type: string }, { type: integer } ] }",
            to: "shape: { type: string }"),
    ]

    /// A change twelve `allOf`s down is found (it was not below eight).
    @Test func changesBelowDeepAllOfsAreFound() throws {
        func shop(_ leaf: String) -> String {
            var schemas = "  L12: { type: object, properties: { v: \(leaf) } }\n"
            for level in (0..<12).reversed() { schemas += "  L\(level): { allOf: [ { $ref: '#/components/schemas/L\(level + 1)' } ] }\n" }
            return """
                doppel: 1
                info: { title: Deep, version: "1" }
                schemas:
                \(schemas)endpoints:
                  put-deep:
                    request: PUT /deep
                    body: { schema: L0 }
                    responses: [ { status: 204 } ]
                """
        }
        let changes = ContractDiff.changes(from: try Self.contract(shop("{ type: number }")), to: try Self.contract(shop("{ type: integer }")))
        #expect(changes.map(\.kind) == ["request-type-narrowed"], "\(changes.map { "\($0.kind) \($0.place): \($0.detail)" })")
    }

    /// Enums of 60,000 values compare by sets (they took 81 s compared value by value).
    @Test func largeEnumsCompare() throws {
        func shop(_ values: Range<Int>) -> String {
            """
            doppel: 1
            info: { title: Codes, version: "1" }
            endpoints:
              put-code:
                request: PUT /code
                body: { schema: { type: object, properties: { code: { type: string, enum: [\(values.map { "c\($0)" }.joined(separator: ", "))] } } } }
                responses: [ { status: 204 } ]
            """
        }
        let changes = ContractDiff.changes(from: try Self.contract(shop(0..<60_000)), to: try Self.contract(shop(1..<60_001)))
        #expect(changes.map(\.kind).sorted() == ["request-enum-narrowed", "request-enum-widened"])
        #expect(changes.first { $0.kind == "request-enum-narrowed" }?.detail.contains("c0") == true)
    }

    /// A change to a shared schema is told at every endpoint that uses it
    /// (it was told only at the first), and a member's name is escaped in
    /// the JSON pointer (`a/b` as `a~1b`).
    @Test func aSharedSchemasChangeIsToldAtEveryEndpoint() throws {
        let new = Self.shop.replacingOccurrences(of: "note: { type: string }", with: "note: { type: integer }")
        let changes = ContractDiff.changes(from: try Self.contract(Self.shop), to: try Self.contract(new))
        let renamed = changes.filter { $0.kind == "response-type-changed" && $0.place.hasSuffix("/note") }
        #expect(
            Set(renamed.map(\.endpoint)) == ["GET /items", "POST /items", "GET /items/{}"],
            "\(changes.map { "\($0.kind) \($0.endpoint) \($0.place)" })")
        let escaped = Self.shop.replacingOccurrences(of: "note: { type: string }", with: "note: { type: string }\n      a/b~c: { type: integer }")
        let added = ContractDiff.changes(
            from: try Self.contract(escaped),
            to: try Self.contract(escaped.replacingOccurrences(of: "a/b~c: { type: integer }", with: "a/b~c: { type: string }")))
        #expect(added.contains { $0.place.hasSuffix("/a~1b~0c") }, "\(added.map { "\($0.kind) \($0.endpoint) \($0.place)" })")
    }

    static func contract(_ text: String) throws -> Contract {
        try ContractLoader.load(text: text, file: "shop.yaml")
    }

    @Test func aContractAgainstItselfHasNoChanges() throws {
        #expect(ContractDiff.changes(from: try Self.contract(Self.shop), to: try Self.contract(Self.shop)).isEmpty)
    }

    @Test(arguments: cases)
    func eachKindOfChangeIsToldBreakingOrCompatible(_ change: Case) throws {
        try Self.check(change, editing: Self.shop, file: "shop.yaml")
    }

    /// `change`'s edit of `base` is told as its kind, breaking or not, with
    /// no other kind than those it names; the new version against itself is nothing.
    static func check(_ change: Case, editing base: String, file: String) throws {
        #expect(base.contains(change.from))
        let old = try ContractLoader.load(text: base, file: file)
        let new = try ContractLoader.load(text: base.replacingOccurrences(of: change.from, with: change.to), file: file)
        let changes = ContractDiff.changes(from: old, to: new)
        let found = changes.filter { $0.kind == change.kind }
        #expect(!found.isEmpty, "\(changes.map { "\($0.kind) \($0.endpoint) \($0.place): \($0.detail)" })")
        #expect(found.allSatisfy { $0.breaking == change.breaking })
        #expect(
            Set(changes.map(\.kind)).subtracting([change.kind]).subtracting(change.also).isEmpty,
            "\(changes.map { "\($0.kind) \($0.endpoint) \($0.place): \($0.detail)" })")
        #expect(ContractDiff.changes(from: new, to: new).isEmpty)
    }

    /// The realtime demo: a WebSocket's rules, close codes and pushes, and a response's callback.
    static let realtime: String = {
        (try? String(contentsOfFile: contractPath("realtime-demo.yaml"), encoding: .utf8)) ?? ""
    }()

    static let realtimeCases: [Case] = [
        Case(
            kind: "socket-rule-removed", breaking: true,
            from: "        - name: ping\n          when: message.type == 'ping'\n          send: { type: pong }\n", to: ""),
        Case(
            kind: "socket-rule-added", breaking: false, from: "        - name: ping\n",
            to: "        - name: echo\n          when: message.type == 'echo'\n          send: { type: echo }\n        - name: ping\n"),
        Case(
            kind: "response-field-removed", breaking: true,
            from: "send: { type: welcome, stories_used: \"{{ state.stories_used }}\", monthly_limit: \"{{ data.monthly_limit }}\" }",
            to: "send: { type: welcome, monthly_limit: \"{{ data.monthly_limit }}\" }"),
        Case(
            kind: "response-type-changed", breaking: true,
            from: "send: { type: subscribed, topic: \"{{ message.topic }}\", topics: \"{{ len(state.topics) }}\" }",
            to: "send: { type: 1, topic: \"{{ message.topic }}\", topics: \"{{ len(state.topics) }}\" }"),
        Case(kind: "request-range-narrowed", breaking: true, from: "maxLength: 64 }", to: "maxLength: 32 }"),
        Case(
            kind: "close-code-changed", breaking: true, from: "close: { code: 4000, reason: client said bye }",
            to: "close: { code: 4001, reason: client said bye }",
            also: ["close-code-removed", "close-code-added"]),
        Case(
            kind: "socket-close-removed", breaking: true, from: "          close: { code: 4000, reason: client said bye }\n", to: "",
            also: ["close-code-removed"]),
        Case(kind: "socket-interval-changed", breaking: false, from: "interval: 15s", to: "interval: 30s"),
        Case(
            kind: "socket-protocol-added", breaking: false, from: "    websocket:\n      on_connect:",
            to: "    websocket:\n      protocols: [live.v2]\n      on_connect:"),
        Case(
            kind: "socket-push-removed", breaking: true,
            from:
                "        push:\n          - socket: live\n            send: { type: purchase_completed, id: \"{{ body.id }}\", plan: \"{{ body.plan }}\" }\n",
            to: ""),
        Case(
            kind: "response-field-removed", breaking: true, from: "send: { type: story_ready, id: \"{{ story.id }}\", title: \"{{ story.title }}\" }",
            to: "send: { type: story_ready, id: \"{{ story.id }}\" }"),
        Case(
            kind: "callback-removed", breaking: true, from: "          - name: purchase-completed\n", to: "          - name: purchase-done\n",
            also: ["callback-added"]),
        Case(
            kind: "callback-method-changed", breaking: true, from: "            retries: 2\n", to: "            retries: 2\n            method: PUT\n"
        ),
        Case(kind: "callback-header-removed", breaking: true, from: ", Authorization: Bearer store-webhook }", to: " }"),
        Case(
            kind: "response-field-removed", breaking: true,
            from: "body: { event: purchase.completed, id: \"{{ purchase.id }}\", plan: \"{{ purchase.plan }}\" }",
            to: "body: { event: purchase.completed, id: \"{{ purchase.id }}\" }"),
        Case(
            kind: "callback-added", breaking: false, from: "            retries: 2\n",
            to:
                "            retries: 2\n          - name: receipt\n            url: \"http://127.0.0.1:{{ request.port }}/v1/hooks/purchases\"\n            body: { event: receipt }\n"
        ),
    ]

    /// WebSocket rules, close codes, pushes and callbacks: each change told,
    /// at its rule or callback, breaking or compatible.
    @Test(arguments: realtimeCases)
    func eachRealtimeChangeIsToldBreakingOrCompatible(_ change: Case) throws {
        try Self.check(change, editing: Self.realtime, file: "realtime-demo.yaml")
    }

    /// A change inside a socket rule's message is placed at the rule; a
    /// subprotocol no longer spoken is breaking.
    @Test func aSocketMessagesChangeNamesItsRule() throws {
        let spoken = Self.realtime.replacingOccurrences(
            of: "    websocket:\n      on_connect:", with: "    websocket:\n      protocols: [live.v1, live.v2]\n      on_connect:")
        let fewer = ContractDiff.changes(
            from: try ContractLoader.load(text: spoken, file: "realtime-demo.yaml"),
            to: try ContractLoader.load(text: spoken.replacingOccurrences(of: "live.v1, ", with: ""), file: "realtime-demo.yaml"))
        #expect(fewer.map(\.kind) == ["socket-protocol-removed"] && fewer.allSatisfy(\.breaking), "\(fewer)")
        let socket =
            "doppel: 1\ninfo: { title: Live, version: \"1\" }\nendpoints:\n  live: { request: GET /live, websocket: { on_connect: [ { send: { hi: 1 } } ] } }\n"
        let plain = socket.replacingOccurrences(of: "websocket: { on_connect: [ { send: { hi: 1 } } ] }", with: "responses: [ { status: 204 } ]")
        let removed = ContractDiff.changes(
            from: try ContractLoader.load(text: socket, file: "live.yaml"), to: try ContractLoader.load(text: plain, file: "live.yaml"))
        #expect(removed.contains { $0.kind == "socket-removed" && $0.breaking }, "\(removed)")
        let added = ContractDiff.changes(
            from: try ContractLoader.load(text: plain, file: "live.yaml"), to: try ContractLoader.load(text: socket, file: "live.yaml"))
        #expect(added.contains { $0.kind == "socket-added" && !$0.breaking }, "\(added)")
        let old = try ContractLoader.load(text: Self.realtime, file: "realtime-demo.yaml")
        let new = try ContractLoader.load(
            text: Self.realtime.replacingOccurrences(of: "send: { type: pong }", with: "send: { kind: pong }"), file: "realtime-demo.yaml")
        let changes = ContractDiff.changes(from: old, to: new)
        #expect(
            changes.contains {
                $0.endpoint == "GET /live" && $0.place == "websocket on_message ping message 1 /type" && $0.kind == "response-field-removed"
            },
            "\(changes.map { "\($0.kind) \($0.endpoint) \($0.place): \($0.detail)" })")
    }

    @Test func theTableCoversAtLeastFifteenKinds() {
        #expect(Set(Self.cases.map(\.kind)).count >= 15)
        #expect(Self.cases.contains { $0.breaking } && Self.cases.contains { !$0.breaking })
    }

    /// A contract and an OpenAPI document of the same API compare as the same.
    /// The realtime demo's socket rules, pushes and a callback whose URL
    /// OpenAPI cannot say are not told as removed by its export.
    @Test(arguments: ["shop", "realtime"])
    func aContractAndItsExportDifferOnlyInWhatTheExportAdds(_ name: String) throws {
        let contract = try name == "shop" ? Self.contract(Self.shop) : ContractLoader.load(text: Self.realtime, file: "realtime-demo.yaml")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("diff-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let exported = folder.appendingPathComponent("shop.json")
        try OpenAPIDocumentWriter.write(OpenAPIExporter.document(for: contract), as: .json).write(to: exported, atomically: true, encoding: .utf8)
        let changes = ContractDiff.changes(from: contract, to: try ContractDocument.load(file: exported.path))
        #expect(changes.allSatisfy { !$0.breaking }, "\(changes.map { "\($0.kind) \($0.endpoint) \($0.place): \($0.detail)" })")
    }
}
