import DoppelCore
import Foundation

/// The importer's operations: their requests, parameters and bodies.
extension OpenAPIImporter {
    // MARK: Operations

    /// A path of `paths` as a request sends it: characters a URL path cannot
    /// hold as they are (a space, `"`, `<`, non-ASCII letters) percent-encoded
    /// with uppercase hex, as clients send them; escapes already there,
    /// template braces and what RFC 3986 allows in a path are kept.
    /// A `%` is an escape only before two hexadecimal digits; any other
    /// (`unsafe % characters`) is a literal percent sign, sent as `%25`.
    static func encodedPath(_ path: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/{}".utf8)
        let source = Array(path.utf8)
        func isHex(_ byte: UInt8) -> Bool { (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte) }
        func isEscape(_ index: Int) -> Bool { index + 2 < source.count && isHex(source[index + 1]) && isHex(source[index + 2]) }
        guard !source.indices.allSatisfy({ allowed.contains(source[$0]) || (source[$0] == UInt8(ascii: "%") && isEscape($0)) }) else { return path }
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for (index, byte) in source.enumerated() {
            if allowed.contains(byte) || (byte == UInt8(ascii: "%") && isEscape(index)) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An operation of `paths`, with the endpoint id it is given.
    struct Operation: Sendable {
        let id: String
        let method: String
        let path: String
        let node: SourceNode
        let sharedParameters: [SourceNode]
        /// For a path written with a fragment: the path as written, the fragment, and where the method is.
        var fragment: (written: String, fragment: String, location: SourceLocation)? = nil
    }

    mutating func endpoint(_ operation: Operation, schemes: [Scheme]) -> (String, SourceNode)? {
        let (id, method, path, sharedParameters) = (operation.id, operation.method, operation.path, operation.sharedParameters)
        let operation = operation.node
        let at = operation.location
        var fields: [(String, SourceNode)] = [("request", ContractNode.string("\(method.uppercased()) \(Self.encodedPath(path))", at: at))]
        for key in ["summary", "description"] {
            if let value = operation[key], let text = value.scalarText { fields.append((key, ContractNode.string(text, at: value.location))) }
        }
        var secured = defaultRequirement
        if let own = operation["security"] {
            secured = requirement(own, known: schemes) ?? ContractNode.string("none", at: own.location)
            fields.append(("auth", secured!))
        }
        let isPublic = secured == nil || secured?.scalarText == "none"

        for (key, schema) in parameters(operation["parameters"]?.sequenceItems ?? [], shared: sharedParameters, at: at) {
            fields.append((key, schema))
        }
        if let body = requestBody(operation["requestBody"]) { fields.append(("body", body)) }

        // Responses: the first 2xx is served; every other status and example is documented.
        var served: [SourceNode] = []
        var documented: [SourceNode] = []
        var onInvalid: SourceNode?
        var onUnauthorized: SourceNode?
        let responsesNode = operation["responses"]
        let read = readStatuses(responsesNode)
        var statuses = read.statuses
        let defaultAsInvalid = read.defaultAsInvalid
        // A GET that documents 101 Switching Protocols is a WebSocket upgrade: served as one (a socket without rules).
        let isSocket = method.lowercased() == "get" && statuses.contains { $0.status == 101 }
        if !isSocket, let upgrade = statuses.first(where: { $0.status == 101 }) {
            warnings.warning(
                "\(method.uppercased()) \(path) documents 101 Switching Protocols, which only a GET (a WebSocket upgrade) can answer; it is left out",
                at: upgrade.responses.first?.location ?? at)
            statuses.removeAll { $0.status == 101 }
        }
        let servedStatus = isSocket ? 101 : statuses.first { (200...299).contains($0.status) }?.status ?? statuses.first?.status
        for (status, responses) in statuses {
            for response in responses {
                if status == servedStatus, served.isEmpty {
                    served.append(response)
                } else if status == 400 || status == 422, onInvalid == nil, !(statuses.contains { $0.status == 400 } && status == 422) {
                    onInvalid = response
                } else if !isPublic, status == 401 || (status == 403 && !statuses.contains { $0.status == 401 }), onUnauthorized == nil {
                    onUnauthorized = response
                } else {
                    documented.append(response)
                }
            }
        }
        if onInvalid == nil {
            // An invalid request gets what the operation documents for it: the
            // 400 it serves when it documents nothing else, else its `default`.
            if let servedStatus, servedStatus == 400 || servedStatus == 422 {
                onInvalid = served.first
            } else if !statuses.contains(where: { $0.status == 400 || $0.status == 422 }) {
                onInvalid = defaultAsInvalid
            }
        }
        if served.isEmpty {
            warnings.warning("\(method.uppercased()) \(path) documents no response; it is served as an empty 200", at: responsesNode?.location ?? at)
            served.append(ContractNode.map([("status", ContractNode.plain("200", at: at))], at: at))
        }
        // The operation's callbacks are made when its served response is chosen.
        if let callbacks = callbacks(operation["callbacks"], of: "\(method.uppercased()) \(path)"), !served.isEmpty {
            served[0] = ContractNode.setting("callbacks", callbacks, in: served[0])
        }
        if let onInvalid { fields.append(("on_invalid", onInvalid)) }
        if let onUnauthorized { fields.append(("on_unauthorized", challenged(onUnauthorized, requirement: secured, schemes: schemes))) }
        fields.append(("responses", ContractNode.list(served, at: responsesNode?.location ?? at)))
        if isSocket { fields.append(("websocket", ContractNode.map([], at: at))) }
        if !documented.isEmpty { fields.append(("documented", ContractNode.list(documented, at: responsesNode?.location ?? at))) }
        return (id, ContractNode.map(fields, at: at))
    }

    /// The operation's responses by status: `default` stands for any
    /// status the others do not name (200 when no 2xx is documented, else
    /// 500), and, as a 400, for a request that fails validation where no
    /// 400 or 422 is documented; a range (4XX) for its first status.
    mutating func readStatuses(_ responsesNode: SourceNode?) -> (statuses: [(status: Int, responses: [SourceNode])], defaultAsInvalid: SourceNode?) {
        var statuses: [(status: Int, responses: [SourceNode])] = []
        for (key, raw) in responsesNode?.mappingPairs ?? [] {
            guard let code = key.scalarText, let response = resolved(raw) else { continue }
            let status: Int
            if code == "default" {
                status = 0
            } else if let number = Int(code), (100...599).contains(number) {
                status = number
            } else if code.count == 3, code.hasSuffix("XX"), let first = Int(code.prefix(1)), (1...5).contains(first) {
                status = first * 100
            } else {
                errors.error("response status '\(code)' is not an HTTP status, a range like 4XX, or default", at: key.location)
                continue
            }
            statuses.append((status, self.responses(response, status: status, at: key.location)))
        }
        // `default` stands for any status the others do not name: 200 when no 2xx is documented, else it is documented as 500.
        let hasSuccess = statuses.contains { (200...299).contains($0.status) }
        // `default` also stands for the 400 of a request that fails validation, when no 400 or 422 is documented.
        let defaultAsInvalid = statuses.first { $0.status == 0 }?.responses.first.map {
            ContractNode.setting("status", ContractNode.plain("400", at: $0.location), in: $0)
        }
        for index in statuses.indices where statuses[index].status == 0 {
            let status = hasSuccess ? 500 : 200
            statuses[index].responses = statuses[index].responses.map {
                ContractNode.setting("status", ContractNode.plain(String(status), at: $0.location), in: $0)
            }
            statuses[index].status = status
        }
        return (statuses, defaultAsInvalid)
    }

    /// The base, or the base with the first free `-N`: the count goes on from
    /// where the last id of that base left it, so 20,000 operations that
    /// share one `operationId` are numbered in linear time, not quadratic.
    mutating func uniqueID(_ base: String) -> String {
        var id = base
        var counter = nextSuffix[base] ?? 2
        defer { nextSuffix[base] = counter }
        while ids.contains(id) {
            id = "\(base)-\(counter)"
            counter += 1
        }
        ids.insert(id)
        return id
    }

    /// `get-pets-petId` for `GET /pets/{petId}`.
    static func slug(method: String, path: String) -> String {
        let words = path.split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "_" }).map(String.init)
        return ([method] + words).joined(separator: "-")
    }

    /// Parameters as the endpoint's `path`, `query`, `headers` and `cookies`
    /// object schemas; the operation's own override the path item's by name and place.
    mutating func parameters(_ own: [SourceNode], shared: [SourceNode], at: SourceLocation) -> [(String, SourceNode)] {
        // The four places in their order, each with its parameters; a few
        // parameters an operation, so searched rather than hashed.
        let places = [("path", "path"), ("query", "query"), ("header", "headers"), ("cookie", "cookies")]
        // A fifth list for places OpenAPI does not have: their schemas are
        // still checked, and they are left out.
        var byPlace: [[(name: String, required: Bool, schema: SourceNode, at: SourceLocation)]] = [[], [], [], [], []]
        var otherPlaces: [String] = []
        // OpenAPI 3.2's `in: querystring`: the whole query string as one value, the operation's own first.
        var queryString: (name: String, node: SourceNode)?
        for raw in own + shared {
            guard let parameter = resolved(raw), let name = parameter["name"]?.scalarText, let place = parameter["in"]?.scalarText else { continue }
            if place == "querystring" {
                if queryString == nil { queryString = (name, self.queryString(parameter)) }
                continue
            }
            let slot = places.firstIndex(where: { $0.0 == place }) ?? 4
            // The operation's own come first and win over the path item's.
            if slot == 4 {
                guard !otherPlaces.contains(place + " " + name) else { continue }
                otherPlaces.append(place + " " + name)
            } else {
                guard !byPlace[slot].contains(where: { $0.name == name }) else { continue }
            }
            // OpenAPI says these headers are described elsewhere and ignored as parameters.
            if place == "header", ["accept", "content-type", "authorization"].contains(where: { name.caseInsensitiveEquals($0) }) { continue }
            let style = parameter["style"]?.scalarText
            let readsStyle = place == "query" || place == "cookie"
            if let style, style != "simple", style != "form", !(readsStyle && Schema.styles.contains(style)) {
                warnings.warning(
                    "parameter '\(name)' has style \(style); Doppel reads it as a \(readsStyle ? "form" : "simple") value",
                    at: parameter["style"]!.location)
            }
            var schemaNode = parameter["schema"]
            if schemaNode == nil, let content = parameter["content"]?.mappingPairs?.first?.value { schemaNode = content["schema"] }
            var schema = schemaNode.map { self.schema($0) } ?? ContractNode.map([], at: parameter.location)
            // How the value is written, for query and cookie parameters that are not plain form ones.
            if readsStyle, let style, Schema.styles.contains(style), style != "form" {
                schema = ContractNode.setting("style", ContractNode.string(style, at: parameter["style"]!.location), in: schema)
            }
            if readsStyle, let explode = parameter["explode"], case .bool(let flag) = explode.json {
                schema = ContractNode.setting("explode", ContractNode.plain(flag ? "true" : "false", at: explode.location), in: schema)
            }
            let required = place == "path" || parameter["required"]?.json == .bool(true)
            byPlace[slot].append((name, required, schema, parameter.location))
        }
        var result: [(String, SourceNode)] = []
        if let queryString {
            // OpenAPI: a querystring parameter is the only description of the query.
            if let first = byPlace[1].first {
                warnings.warning(
                    "parameter '\(first.name)' is in: query beside '\(queryString.name)' in: querystring, which describes the whole query; the query parameters are left out",
                    at: first.at)
                byPlace[1] = []
            }
            result.append(("querystring", queryString.node))
        }
        for (slot, (_, key)) in places.enumerated() {
            let list = byPlace[slot]
            guard let first = list.first else { continue }
            var object: [(String, SourceNode)] = [("type", ContractNode.string("object", at: first.at))]
            var required: [SourceNode] = []
            for parameter in list where parameter.required { required.append(ContractNode.string(parameter.name, at: parameter.at)) }
            if !required.isEmpty { object.append(("required", ContractNode.list(required, at: first.at))) }
            object.append(("properties", ContractNode.map(list.map { ($0.name, $0.schema) }, at: first.at)))
            result.append((key, ContractNode.map(object, at: first.at)))
        }
        return result
    }

    /// An `in: querystring` parameter as the endpoint's `querystring`: its
    /// one media type (form fields unless it says otherwise), schema and example.
    mutating func queryString(_ parameter: SourceNode) -> SourceNode {
        let at = parameter.location
        var fields: [(String, SourceNode)] = []
        let media = parameter["content"]?.mappingPairs?.first
        if let type = media?.key.scalarText, MediaTypes.essence(type) != "application/x-www-form-urlencoded" {
            fields.append(("content_type", ContractNode.string(type, at: media!.key.location)))
        }
        if let schemaNode = media?.value["schema"] ?? parameter["schema"] { fields.append(("schema", schema(schemaNode))) }
        if parameter["required"]?.json == .bool(true) { fields.append(("required", ContractNode.plain("true", at: parameter["required"]!.location))) }
        if let description = parameter["description"]?.scalarText { fields.append(("description", ContractNode.string(description, at: at))) }
        return ContractNode.map(fields, at: at)
    }

    /// `requestBody` as the endpoint's `body`: every media type accepted,
    /// checked by the schema of the first JSON one (else the first).
    mutating func requestBody(_ raw: SourceNode?) -> SourceNode? {
        guard let raw, let body = resolved(raw), let content = mediaTypes(body["content"]), !content.isEmpty else { return nil }
        let at = body.location
        let chosen = content.first { $0.key.scalarText.map(Self.isJSON) ?? false } ?? content[0]
        var fields: [(String, SourceNode)] = [
            ("content_type", ContractNode.list(content.map { ContractNode.string($0.key.scalarText ?? "", at: $0.key.location) }, at: at))
        ]
        if let schemaNode = chosen.value["schema"] { fields.append(("schema", schema(schemaNode))) }
        // A body sent item by item (OpenAPI 3.2's itemSchema): each item checked on its own.
        if let (key, media) = content.first(where: { $0.value["itemSchema"] != nil && $0.value["schema"] == nil }), let item = media["itemSchema"] {
            if SequentialMedia(key.scalarText ?? "") != nil {
                fields.append(("item_schema", schema(item)))
            } else {
                warnings.warning(
                    "'\(key.scalarText ?? "")' is described item by item (itemSchema), but Doppel reads items only as application/jsonl (or x-ndjson), application/json-seq, text/event-stream or multipart/mixed; its items are not checked",
                    at: item.location)
            }
        }
        fields.append(
            ("required", ContractNode.plain(body["required"]?.json == .bool(true) ? "true" : "false", at: body["required"]?.location ?? at)))
        if let example = examples(of: chosen.value).first, Self.isJSON(chosen.key.scalarText ?? "") {
            fields.append(("example", example.value))
        }
        if let description = body["description"]?.scalarText { fields.append(("description", ContractNode.string(description, at: at))) }
        return ContractNode.map(fields, at: at)
    }
}
