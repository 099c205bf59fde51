import DoppelCore
import Foundation

/// Converts an OpenAPI 3.0 or 3.1 document into a Doppel contract, as a tree
/// of the contract format whose nodes keep the document's lines and columns.
///
/// The document has been read and validated by OpenAPIKit first
/// (`ContractDocument`); this stage takes what it serves from the document's
/// own nodes, so that every later diagnostic (a bad schema, an example that
/// breaks its schema) points into the document, and JSON Schema reaches
/// Doppel's validator as written rather than through a model that would
/// drop keywords (`prefixItems`, `$ref` siblings) or the order of members.
///
/// How each OpenAPI feature maps is listed in `docs/openapi.md`.
package struct OpenAPIImporter: Sendable {
    let root: SourceNode
    let file: String
    /// 3.0 documents say `nullable` and boolean `exclusiveMinimum`.
    let isVersion30: Bool
    var warnings = DiagnosticCollector()
    var errors = DiagnosticCollector()
    /// Endpoint ids given so far, to keep them unique.
    var ids: Set<String> = []
    /// For each base id, the `-N` suffix to try next (see `uniqueID`).
    var nextSuffix: [String: Int] = [:]
    /// The names under `components.schemas`, found once: every `$ref` to a
    /// schema is checked against them.
    var componentSchemaNames: Set<String> = []
    /// The document's `security` as `auth`, found once.
    var defaultRequirement: SourceNode?

    /// Whether a parsed file is an OpenAPI document (a top-level `openapi` key).
    package static func isOpenAPI(_ root: SourceNode) -> Bool {
        root["openapi"] != nil && root["doppel"] == nil
    }

    /// The contract tree for a document, with warnings for what it cannot
    /// serve faithfully and errors for what it cannot serve at all.
    package static func contract(from root: SourceNode, file: String) -> (contract: SourceNode, diagnostics: [Diagnostic]) {
        var importer = OpenAPIImporter(root: root, file: file, isVersion30: root["openapi"]?.scalarText?.hasPrefix("3.0") ?? false)
        let contract = importer.convert()
        return (contract, importer.errors.diagnostics + importer.warnings.diagnostics)
    }

    /// The contract tree without its endpoints, and the endpoints for the
    /// loader to make and read one at a time (`ContractLoader.load(root:file:warnings:endpoints:)`),
    /// which serves the same contract as `contract(from:file:)` without
    /// building a tree of every endpoint first.
    package static func contractInParts(
        from root: SourceNode, file: String
    ) -> (contract: SourceNode, endpoints: EndpointEntries, diagnostics: [Diagnostic]) {
        var importer = OpenAPIImporter(root: root, file: file, isVersion30: root["openapi"]?.scalarText?.hasPrefix("3.0") ?? false)
        let (top, operations, schemes) = importer.prepare()
        let blank = importer.blank
        let endpoints = EndpointEntries(count: operations.count) { range, read in
            var importer = blank
            for index in range {
                if let (id, node) = importer.endpoint(operations[index], schemes: schemes) { read(id, node) }
            }
            return importer.errors.diagnostics + importer.warnings.diagnostics
        }
        return (ContractNode.map(top, at: root.location), endpoints, importer.errors.diagnostics + importer.warnings.diagnostics)
    }

    // MARK: The contract

    static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace", "query"]

    mutating func convert() -> SourceNode {
        let (prepared, operations, schemes) = prepare()
        var top = prepared
        // Each operation converted on its own, a large document's in slices
        // on every core, their diagnostics gathered in order.
        let blank = self.blank
        let slices = Parallel.mapSlices(operations, minimumPerSlice: 100) { slice in
            var importer = blank
            let endpoints = slice.compactMap { importer.endpoint($0, schemes: schemes) }
            return (endpoints: endpoints, warnings: importer.warnings.diagnostics, errors: importer.errors.diagnostics)
        }
        var endpoints: [(String, SourceNode)] = []
        for slice in slices {
            endpoints += slice.endpoints
            warnings.append(contentsOf: slice.warnings)
            errors.append(contentsOf: slice.errors)
        }
        top.append(("endpoints", ContractNode.map(endpoints, at: root["paths"]?.location ?? root.location)))
        return ContractNode.map(top, at: root.location)
    }

    /// This importer without its diagnostics, to convert operations elsewhere.
    var blank: OpenAPIImporter {
        var copy = self
        copy.warnings = DiagnosticCollector()
        copy.errors = DiagnosticCollector()
        return copy
    }

    /// Everything but the endpoints: the contract's top-level fields, the
    /// operations in order, each with its endpoint id (unique among all),
    /// and the security schemes.
    mutating func prepare() -> (top: [(String, SourceNode)], operations: [Operation], schemes: [Scheme]) {
        var top: [(String, SourceNode)] = [("doppel", ContractNode.plain("1", at: root.location))]
        if let info = root["info"] {
            var fields: [(String, SourceNode)] = []
            for key in ["title", "version", "description"] {
                if let value = info[key], let text = value.scalarText { fields.append((key, ContractNode.string(text, at: value.location))) }
            }
            top.append(("info", ContractNode.map(fields, at: info.location)))
        }
        if let basePath = basePath() { top.append(("base_path", basePath)) }

        let schemes = securitySchemes()
        // The document's own requirement, read once: every operation without
        // one of its own has it (and its problems are reported once).
        defaultRequirement = root["security"].flatMap { requirement($0, known: schemes) }
        if !schemes.isEmpty {
            var auth: [(String, SourceNode)] = []
            if let names = defaultRequirement {
                auth.append(("default", names))
            }
            auth.append(
                (
                    "schemes",
                    ContractNode.map(schemes.map { ($0.name, $0.node) }, at: root["components"]?["securitySchemes"]?.location ?? root.location)
                ))
            top.append(("auth", ContractNode.map(auth, at: root.location)))
        }
        let components = resolved(root["components"]?["schemas"])
        componentSchemaNames = Set(components?.mappingPairs?.compactMap(\.key.scalarText) ?? [])
        if let schemas = components {
            var converted: [(String, SourceNode)] = []
            for (key, value) in schemas.mappingPairs ?? [] {
                if let name = key.scalarText { converted.append((name, schema(value))) }
            }
            if !converted.isEmpty { top.append(("schemas", ContractNode.map(converted, at: schemas.location))) }
        }

        var operations: [Operation] = []
        let paths = root["paths"]
        for (pathKey, rawItem) in paths?.mappingPairs ?? [] {
            guard let written = pathKey.scalarText, let item = resolved(rawItem) else { continue }
            var (path, repeated) = Self.distinctParameterNames(written)
            let fragment = path.firstIndex(of: "#").map { String(path[$0...]) }
            if let fragment {
                // `/files/{id}#get_shared_link`: a vendor's way to document a
                // variant of an operation. No request carries a fragment: it
                // is that path (see `withoutShadowedVariants`).
                path = String(path.dropLast(fragment.count))
            }
            if !repeated.isEmpty {
                warnings.warning(
                    "path parameter\(repeated.count == 1 ? "" : "s") \(repeated.map { "'\($0)'" }.joined(separator: ", ")) appear\(repeated.count == 1 ? "s" : "") twice in '\(written)' (OpenAPI names each once); a repeat is matched as \(repeated.map { "'\($0)_2'" }.joined(separator: ", "))",
                    at: pathKey.location)
            }
            let shared = item["parameters"]?.sequenceItems ?? []
            // OpenAPI 3.2: operations of any other method, by its name.
            var entries = (item.mappingPairs ?? []).filter { $0.key.scalarText.map(Self.methods.contains) ?? false }
            for (methodKey, operation) in item["additionalOperations"]?.mappingPairs ?? [] {
                guard let name = methodKey.scalarText else { continue }
                if Self.methods.contains(name.lowercased()) {
                    warnings.warning(
                        "additionalOperations may not hold \(name), one of the fixed fields' methods; it is left out", at: methodKey.location)
                    continue
                }
                entries.append((key: methodKey, value: operation))
            }
            for (methodKey, operation) in entries {
                guard let method = methodKey.scalarText else { continue }
                if method == "trace" {
                    warnings.warning("TRACE \(path) is not served: Doppel does not answer TRACE", at: methodKey.location)
                    continue
                }
                let id = uniqueID(operation["operationId"]?.scalarText ?? Self.slug(method: method, path: written))
                operations.append(
                    Operation(
                        id: id, method: method, path: path, node: operation, sharedParameters: shared,
                        fragment: fragment.map { (written, $0, methodKey.location) }))
            }
        }
        return (top, Self.concreteFirst(withoutShadowedVariants(operations)), schemes)
    }

    /// The operations without those of a path written with a fragment
    /// (`/files/{id}#get_shared_link`) whose method the same path has
    /// without one, or had in an earlier variant: no request can tell them
    /// apart, so the other answers, and each left out is warned about.
    mutating func withoutShadowedVariants(_ operations: [Operation]) -> [Operation] {
        guard operations.contains(where: { $0.fragment != nil }) else { return operations }
        var kept: [Operation] = []
        for operation in operations.sorted(by: { ($0.fragment == nil ? 0 : 1) < ($1.fragment == nil ? 0 : 1) }) {
            guard let (written, _, location) = operation.fragment else {
                kept.append(operation)
                continue
            }
            if let other = kept.first(where: { $0.method == operation.method && $0.path == operation.path }) {
                warnings.warning(
                    "path '\(written)' has a fragment, which no request carries: \(operation.method.uppercased()) \(operation.path) is '\(other.id)', and '\(operation.id)' is left out",
                    at: location)
            } else {
                warnings.warning("path '\(written)' has a fragment, which no request carries: it is served as '\(operation.path)'", at: location)
                kept.append(operation)
            }
        }
        // Document order, as before.
        let order = Dictionary(uniqueKeysWithValues: operations.enumerated().map { ($1.id, $0) })
        return kept.sorted { order[$0.id, default: 0] < order[$1.id, default: 0] }
    }

    /// A path template with each repeated parameter name made distinct
    /// (`/a/{id}/b/{id}` is `/a/{id}/b/{id_2}`), and the names repeated.
    static func distinctParameterNames(_ path: String) -> (String, [String]) {
        guard path.contains("{") else { return (path, []) }
        var seen: [String: Int] = [:]
        var repeated: [String] = []
        var result = ""
        var rest = Substring(path)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            result += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            let count = seen[name, default: 0] + 1
            seen[name] = count
            if count == 1 {
                result += "{\(name)}"
            } else {
                var fresh = "\(name)_\(count)"
                while seen[fresh] != nil || path.contains("{\(fresh)}") { fresh += "_" }
                if !repeated.contains(name) { repeated.append(name) }
                result += "{\(fresh)}"
            }
            rest = rest[rest.index(after: close)...]
        }
        return (result + rest, repeated)
    }

    /// Operations in document order, except that of two paths with as many
    /// segments, the one with a literal segment where the other has a
    /// template comes first: OpenAPI matches concrete paths (`/pets/mine`)
    /// before templated ones (`/pets/{id}`) whatever their order, while a
    /// contract's endpoints are tried in order. Paths of other lengths
    /// never both match one request, so they keep their places.
    static func concreteFirst(_ operations: [Operation]) -> [Operation] {
        func shape(_ path: String) -> [Bool] { path.split(separator: "/", omittingEmptySubsequences: false).map { $0.contains("{") } }
        var byLength: [Int: [Int]] = [:]
        for (index, operation) in operations.enumerated() { byLength[shape(operation.path).count, default: []].append(index) }
        var ordered = operations
        for positions in byLength.values where positions.count > 1 {
            // A stable sort on the segments' shapes, false (literal) before true (template), left to right.
            let sorted = positions.enumerated().sorted { a, b in
                let left = shape(operations[a.element].path)
                let right = shape(operations[b.element].path)
                if let difference = zip(left, right).first(where: { $0 != $1 }) { return !difference.0 }
                return a.offset < b.offset
            }
            for (slot, source) in zip(positions, sorted) { ordered[slot] = operations[source.element] }
        }
        return ordered
    }

    /// The path of the first server's URL (`https://api.example.com/v1` gives
    /// `/v1`), its variables replaced by their defaults.
    mutating func basePath() -> SourceNode? {
        guard let server = root["servers"]?.sequenceItems?.first, let urlNode = server["url"], var url = urlNode.scalarText else { return nil }
        for (key, variable) in server["variables"]?.mappingPairs ?? [] {
            if let name = key.scalarText, let value = variable["default"]?.scalarText {
                url = url.replacingOccurrences(of: "{\(name)}", with: value)
            }
        }
        if let scheme = url.range(of: "://") {
            let rest = url[scheme.upperBound...]
            url = rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? ""
        }
        if let end = url.firstIndex(where: { $0 == "?" || $0 == "#" }) { url = String(url[..<end]) }
        while url.hasSuffix("/") { url.removeLast() }
        guard !url.isEmpty else { return nil }
        if !url.hasPrefix("/") { url = "/" + url }
        return ContractNode.string(url, at: urlNode.location)
    }

    // MARK: Security

    struct Scheme: Sendable {
        let name: String
        let node: SourceNode
    }

    /// A 401 with its challenge (RFC 9110, 15.5.2), which a document seldom
    /// lists among its headers: the first scheme's (Basic with the API's
    /// title as realm, as Doppel's own 401 says it; Bearer), as the real API
    /// sends it. A 403, an API key, or a challenge already documented: as it is.
    func challenged(_ response: SourceNode, requirement: SourceNode?, schemes: [Scheme]) -> SourceNode {
        guard response["status"]?.scalarText == "401" else { return response }
        let existing = response["headers"]?.mappingPairs ?? []
        guard !existing.contains(where: { $0.key.scalarText?.lowercased() == "www-authenticate" }) else { return response }
        let names = requirement?.sequenceItems?.compactMap(\.scalarText) ?? requirement?.scalarText.map { [$0] } ?? []
        guard let type = names.lazy.compactMap({ name in schemes.first { $0.name == name }?.node["type"]?.scalarText }).first else { return response }
        let challenge: String
        switch type {
        case "basic": challenge = ContractLoader.basicChallenge(realm: root["info"]?["title"]?.scalarText ?? "Untitled API")
        case "bearer": challenge = "Bearer"
        default: return response
        }
        let headers =
            existing.map { ($0.key.scalarText ?? "", $0.value) } + [
                ("WWW-Authenticate", ContractNode.string(Self.escaped(challenge), at: response.location))
            ]
        return ContractNode.setting("headers", ContractNode.map(headers, at: response.location), in: response)
    }

    /// `components.securitySchemes` as auth schemes. OAuth 2 and OpenID
    /// Connect send their tokens as `Bearer`, so they are bearer schemes.
    mutating func securitySchemes() -> [Scheme] {
        guard let schemes = resolved(root["components"]?["securitySchemes"]) else { return [] }
        var result: [Scheme] = []
        for (key, raw) in schemes.mappingPairs ?? [] {
            guard let name = key.scalarText, let spec = resolved(raw) else { continue }
            let at = spec.location
            var fields: [(String, SourceNode)] = []
            switch (spec["type"]?.scalarText, spec["scheme"]?.scalarText?.lowercased()) {
            case ("http", "bearer"?), ("oauth2", _), ("openIdConnect", _):
                fields.append(("type", ContractNode.string("bearer", at: at)))
                // `bearerFormat: JWT` is honoured: a token that is not a JWT is refused, as the contract's `format: jwt` does.
                if let format = spec["bearerFormat"], format.scalarText?.caseInsensitiveEquals("jwt") == true {
                    fields.append(("format", ContractNode.string("jwt", at: format.location)))
                }
            case ("http", "basic"?):
                fields.append(("type", ContractNode.string("basic", at: at)))
            case ("apiKey", _):
                guard let place = spec["in"]?.scalarText, ["header", "query", "cookie"].contains(place), let keyName = spec["name"]?.scalarText else {
                    errors.error("security scheme '\(name)' of type apiKey needs 'in' (header, query or cookie) and 'name'", at: at)
                    continue
                }
                fields.append(("type", ContractNode.string("api_key", at: at)))
                fields.append((place, ContractNode.string(keyName, at: spec["name"]!.location)))
            case (let type, let scheme):
                let what = [type, scheme].compactMap { $0 }.joined(separator: " ")
                warnings.warning(
                    "security scheme '\(name)' (\(what)) is not supported; operations that require only it are served without a credential check",
                    at: at)
                continue
            }
            if let description = spec["description"]?.scalarText { fields.append(("description", ContractNode.string(description, at: at))) }
            result.append(Scheme(name: name, node: ContractNode.map(fields, at: at)))
        }
        return result
    }

    /// A `security` list as `auth`: each requirement is an alternative; an
    /// empty requirement (`{}`) or list makes the operation public. A
    /// requirement of several schemes at once is served as its first.
    mutating func requirement(_ security: SourceNode, known: [Scheme]) -> SourceNode? {
        guard let items = security.sequenceItems else { return nil }
        var names: [SourceNode] = []
        for item in items {
            let pairs = item.mappingPairs ?? []
            if pairs.isEmpty { return ContractNode.string("none", at: item.location) }
            if pairs.count > 1 {
                warnings.warning("a security requirement of several schemes at once is served as its first scheme alone", at: item.location)
            }
            guard let name = pairs[0].key.scalarText else { continue }
            if known.contains(where: { $0.name == name }) {
                if !names.contains(where: { $0.scalarText == name }) { names.append(ContractNode.string(name, at: pairs[0].key.location)) }
            } else if resolved(root["components"]?["securitySchemes"])?[name] == nil {
                // A vendor's mistake: warned about, and the requirement left out (it cannot be checked).
                warnings.warning(
                    "security requirement names '\(name)', which components.securitySchemes does not declare; Doppel cannot check it and leaves it out",
                    at: pairs[0].key.location)
            }
        }
        if names.isEmpty { return items.isEmpty ? ContractNode.string("none", at: security.location) : nil }
        return ContractNode.list(names, at: security.location)
    }

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

    // MARK: Callbacks

    /// An operation's `callbacks`: each documented request as a contract
    /// callback, the runtime expressions of its URL as templates, its body
    /// generated from its schema when the contract loads. A URL that needs
    /// what Doppel does not have when it answers (`$response…`,
    /// `$statusCode`, `$url`) is left out with a warning.
    mutating func callbacks(_ raw: SourceNode?, of operation: String) -> SourceNode? {
        guard let raw, let named = resolved(raw)?.mappingPairs else { return nil }
        var items: [SourceNode] = []
        for (nameKey, value) in named {
            guard let name = nameKey.scalarText, let callback = resolved(value) else { continue }
            for (urlKey, pathItemRaw) in callback.mappingPairs ?? [] {
                guard let expression = urlKey.scalarText, let pathItem = resolved(pathItemRaw) else { continue }
                guard let url = Self.template(fromRuntimeExpression: expression) else {
                    warnings.warning(
                        "callback '\(name)' of \(operation) is not made: its URL '\(expression)' needs what only the response or the server's own URL has; Doppel fills $request.body, .query, .header, .path and $method",
                        at: urlKey.location)
                    continue
                }
                let methods = ["get", "put", "post", "delete", "options", "head", "patch"].filter { pathItem[$0] != nil }
                for method in methods {
                    guard let documented = resolved(pathItem[method]) else { continue }
                    let at = documented.location
                    var fields: [(String, SourceNode)] = [
                        ("name", ContractNode.string(methods.count > 1 ? "\(name).\(method)" : name, at: nameKey.location)),
                        ("url", ContractNode.string(url, at: urlKey.location)), ("method", ContractNode.string(method.uppercased(), at: at)),
                    ]
                    if let body = resolved(documented["requestBody"]), let content = mediaTypes(body["content"]), !content.isEmpty {
                        let chosen = content.first { $0.key.scalarText.map(Self.isJSON) ?? false } ?? content[0]
                        if let type = chosen.key.scalarText, !type.caseInsensitiveEquals("application/json"), type != "*/*" {
                            fields.append(("content_type", ContractNode.string(type, at: chosen.key.location)))
                        }
                        if let schemaNode = chosen.value["schema"] {
                            if let example = examples(of: chosen.value).first, Self.isJSON(chosen.key.scalarText ?? "") {
                                fields.append(("body", Self.escapedTemplates(example.value)))
                            } else {
                                fields.append(("schema", schema(schemaNode)))
                            }
                        }
                    }
                    items.append(ContractNode.map(fields, at: at))
                }
            }
        }
        return items.isEmpty ? nil : ContractNode.list(items, at: raw.location)
    }

    /// A callback URL with OpenAPI runtime expressions (`{$request.body#/callbackUrl}`,
    /// `https://hooks/{$request.query.id}`) as a contract template; nil when
    /// an expression asks for what a request does not have.
    package static func template(fromRuntimeExpression text: String) -> String? {
        var result = ""
        var rest = Substring(text)
        while let open = rest.range(of: "{$") {
            result += escaped(String(rest[..<open.lowerBound]))
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else { return nil }
            guard let expression = templateExpression("$" + rest[open.upperBound..<close]) else { return nil }
            result += "{{ \(expression) }}"
            rest = rest[rest.index(after: close)...]
        }
        return result + escaped(String(rest))
    }

    /// One runtime expression as an expression of the contract's.
    static func templateExpression(_ expression: Substring) -> String? {
        func member(_ base: String, _ name: String) -> String {
            let plain = name.first.map { $0.isLetter || $0 == "_" } == true && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
            return plain
                ? "\(base).\(name)" : "\(base)['\(name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'"))']"
        }
        if expression == "$method" { return "request.method" }
        if expression.hasPrefix("$request.body") {
            var result = "body"
            let pointer = expression.dropFirst("$request.body".count)
            guard pointer.isEmpty || pointer.hasPrefix("#") else { return nil }
            for token in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: true) {
                let key = unescape(String(token))
                result = Int(key).map { "\(result)[\($0)]" } ?? member(result, key)
            }
            return result
        }
        for (prefix, root, lowercase) in [
            ("$request.query.", "query", false), ("$request.header.", "headers", true), ("$request.path.", "path", false),
        ]
        where expression.hasPrefix(prefix) {
            let name = String(expression.dropFirst(prefix.count))
            guard !name.isEmpty else { return nil }
            return member(root, lowercase ? name.lowercased() : name)
        }
        return nil
    }

    /// JSON as the engine reads it, or any type (`*/*`), whose examples are JSON values.
    static func isJSON(_ type: String) -> Bool {
        MediaTypes.isJSON(type) || type.drop(while: { $0 == " " || $0 == "\t" }).hasPrefix("*/*")
    }

    // MARK: Responses

    /// A documented response as one contract response per example (the
    /// first named after nothing, the rest by their example names), or one
    /// whose body is generated from the schema when it has no example.
    mutating func responses(_ response: SourceNode, status: Int, at: SourceLocation) -> [SourceNode] {
        var base: [(String, SourceNode)] = []
        if status != 0 { base.append(("status", ContractNode.plain(String(status), at: at))) }
        if let description = response["description"]?.scalarText {
            base.append(("description", ContractNode.string(description, at: response.location)))
        }
        var headers: [(String, SourceNode)] = []
        for (key, raw) in response["headers"]?.mappingPairs ?? [] {
            guard let name = key.scalarText, name.lowercased() != "content-type", let header = resolved(raw) else { continue }
            let value =
                header["example"] ?? header["examples"]?.mappingPairs?.first.flatMap { resolved($0.value)?["value"] }
                ?? header["schema"].flatMap { resolved($0) }.flatMap { $0["example"] ?? $0["default"] ?? $0["enum"]?.sequenceItems?.first }
            guard let value, let text = value.scalarText else { continue }
            headers.append((name, ContractNode.string(Self.escaped(text), at: value.location)))
        }
        if !headers.isEmpty { base.append(("headers", ContractNode.map(headers, at: response.location))) }

        // The media type answered first: a JSON one with something to send
        // (an example or a schema), else any with something, else as listed
        // (a Swagger 2.0 response `produces` JSON and XML, with an XML example only).
        func isJSON(_ entry: (key: SourceNode, value: SourceNode)) -> Bool { entry.key.scalarText.map(Self.isJSON) ?? false }
        func hasContent(_ entry: (key: SourceNode, value: SourceNode)) -> Bool {
            entry.value["example"] != nil || entry.value["examples"] != nil || entry.value["schema"] != nil || entry.value["itemSchema"] != nil
        }
        guard let content = mediaTypes(response["content"]),
            let (typeKey, media) = content.first(where: { isJSON($0) && hasContent($0) }) ?? content.first(where: hasContent) ?? content.first(
                where: isJSON) ?? content.first,
            let type = typeKey.scalarText
        else {
            return [ContractNode.map(base, at: response.location)]
        }
        // The response in each other media type the document gives, for `Accept` to choose (documented, after the first).
        let alternatives = content.filter { $0.key.scalarText != type }.compactMap { other -> SourceNode? in
            guard let otherType = other.key.scalarText, otherType != "*/*" else { return nil }
            return alternative(other.value, type: otherType, typeKey: other.key, base: base, at: response.location)
        }
        if media["itemSchema"] != nil, media["schema"] == nil {
            return itemResponses(media, type: type, typeKey: typeKey, base: base, at: response.location) + alternatives
        }
        let json = Self.isJSON(type)
        if !type.caseInsensitiveEquals("application/json") && type != "*/*" {
            base.append(("content_type", ContractNode.string(type, at: typeKey.location)))
        }
        var schemaField: [(String, SourceNode)] = []
        if json, let schemaNode = media["schema"] { schemaField.append(("schema", schema(schemaNode))) }
        let examples = self.examples(of: media)
        guard !examples.isEmpty else {
            // No example: a value generated from the schema, the same every
            // time; text for a text media type (its schema then only makes it).
            if json, !schemaField.isEmpty {
                return [
                    ContractNode.map(
                        base + schemaField + [("body_from_schema", ContractNode.plain("true", at: typeKey.location))], at: response.location)
                ]
                    + alternatives
            }
            if !json, MediaTypes.isText(type), let schemaNode = media["schema"] {
                return [
                    ContractNode.map(
                        base + [("schema", schema(schemaNode)), ("body_from_schema", ContractNode.plain("true", at: typeKey.location))],
                        at: response.location)
                ] + alternatives
            }
            // A binary type: a small file of it (`SampleFiles`), or no bytes, with its type either way.
            if !json, type != "*/*" {
                return [
                    ContractNode.map(
                        base + [("base64", ContractNode.string(SampleFiles.base64(for: MediaTypes.essence(type)) ?? "", at: typeKey.location))],
                        at: response.location)
                ] + alternatives
            }
            return [ContractNode.map(base, at: response.location)] + alternatives
        }
        return examples.map { example in
            var fields = base
            if let name = example.name { fields.insert(("name", ContractNode.string(name, at: example.value.location)), at: 0) }
            if json {
                fields.append(("body", Self.escapedTemplates(example.value)))
            } else if let text = example.value.scalarText {
                fields.append(("text", ContractNode.string(Self.escaped(text), at: example.value.location)))
            } else if Self.isXML(type) {
                fields.append(
                    (
                        "text",
                        ContractNode.string(Self.escaped(XMLExample.text(example.value.json, root: xmlRoot(of: media))), at: example.value.location)
                    ))
            }
            return ContractNode.map(fields + schemaField, at: response.location)
        } + alternatives
    }

    /// Whether a media type is XML: `application/xml`, `text/xml`, `…+xml`.
    static func isXML(_ type: String) -> Bool {
        let essence = MediaTypes.essence(type)
        return essence == "application/xml" || essence == "text/xml" || essence.hasSuffix("+xml")
    }

    /// The root element of an XML example: the schema's `xml.name`, else
    /// the name of the component it refers to, else `root`.
    mutating func xmlRoot(of media: SourceNode) -> String {
        guard let schemaNode = media["schema"] else { return "root" }
        if let name = schemaNode["xml"]?["name"]?.scalarText { return name }
        // Looked up without a word: a reference that leads nowhere is reported where the schema is read.
        guard let ref = schemaNode["$ref"]?.scalarText, let last = ref.split(separator: "/").last else { return "root" }
        let component = Self.unescape(String(last))
        return root["components"]?["schemas"]?[component]?["xml"]?["name"]?.scalarText ?? component
    }

    /// A response in another of its media types: its first example (JSON as
    /// a body, else as text), or a body generated from its schema.
    mutating func alternative(
        _ media: SourceNode, type: String, typeKey: SourceNode, base: [(String, SourceNode)], at location: SourceLocation
    ) -> SourceNode? {
        if media["itemSchema"] != nil, media["schema"] == nil {
            return itemResponses(media, type: type, typeKey: typeKey, base: base, at: location).first
        }
        var fields = base + [("content_type", ContractNode.string(type, at: typeKey.location))]
        let json = Self.isJSON(type)
        if let example = examples(of: media).first {
            if json {
                fields.append(("body", Self.escapedTemplates(example.value)))
            } else if let text = example.value.scalarText {
                fields.append(("text", ContractNode.string(Self.escaped(text), at: example.value.location)))
            } else if Self.isXML(type) {
                fields.append(
                    (
                        "text",
                        ContractNode.string(Self.escaped(XMLExample.text(example.value.json, root: xmlRoot(of: media))), at: example.value.location)
                    ))
            } else {
                return nil
            }
        } else if let schemaNode = media["schema"], json || MediaTypes.isText(type) {
            fields += [("schema", schema(schemaNode)), ("body_from_schema", ContractNode.plain("true", at: typeKey.location))]
        } else if !json {
            fields.append(("base64", ContractNode.string(SampleFiles.base64(for: MediaTypes.essence(type)) ?? "", at: typeKey.location)))
        } else {
            return nil
        }
        return ContractNode.map(fields, at: location)
    }

    /// A `content` map's media types. A key that lists several
    /// (`text/csv, text/comma-separated-values`: a mistake seen in real
    /// documents, where a key is one media type or range) is read as one
    /// entry for each, with a warning; a type already given is not repeated.
    mutating func mediaTypes(_ content: SourceNode?) -> [(key: SourceNode, value: SourceNode)]? {
        guard let pairs = content?.mappingPairs else { return nil }
        guard pairs.contains(where: { $0.key.scalarText?.contains(",") == true }) else { return pairs }
        var entries: [(key: SourceNode, value: SourceNode)] = []
        for pair in pairs {
            guard let text = pair.key.scalarText, text.contains(",") else {
                entries.append(pair)
                continue
            }
            let types = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            warnings.warning("'\(text)' names \(types.count) media types in one key; each is read as a media type of its own", at: pair.key.location)
            for type in types where !entries.contains(where: { $0.key.scalarText == type }) {
                entries.append((key: ContractNode.string(type, at: pair.key.location), value: pair.value))
            }
        }
        return entries
    }

    /// How many items a stream described only by its `itemSchema` sends.
    static let generatedItems = 3

    /// A response of a sequential media type described item by item
    /// (OpenAPI 3.2's `itemSchema`: `text/event-stream`, `application/jsonl`,
    /// `application/json-seq`, `multipart/mixed`): one contract response per
    /// example, its items sent one by one, else `generatedItems` items
    /// generated from the item schema. An example is the list of items
    /// (`dataValue`, `value`) or the stream as sent (`serializedValue`).
    mutating func itemResponses(
        _ media: SourceNode, type: String, typeKey: SourceNode, base: [(String, SourceNode)], at location: SourceLocation
    ) -> [SourceNode] {
        let item = media["itemSchema"]!
        guard let framing = SequentialMedia(type) else {
            warnings.warning(
                "'\(type)' is described item by item (itemSchema), but Doppel writes items only as text/event-stream, application/jsonl (or x-ndjson), application/json-seq or multipart/mixed; the response is sent without a body",
                at: item.location)
            return [ContractNode.map(base + [("content_type", ContractNode.string(type, at: typeKey.location))], at: location)]
        }
        let fields = base + [("content_type", ContractNode.string(type, at: typeKey.location)), ("item_schema", schema(item))]
        var examples: [(name: String?, items: [SourceNode], at: SourceLocation)] = []
        var candidates: [(name: String?, node: SourceNode)] = media["example"].map { [(nil, $0)] } ?? []
        if candidates.isEmpty {
            for (key, raw) in media["examples"]?.mappingPairs ?? [] {
                guard let example = resolved(raw) else { continue }
                if let value = example["dataValue"] ?? example["value"] ?? example["serializedValue"] { candidates.append((key.scalarText, value)) }
            }
        }
        for (name, node) in candidates {
            if let list = node.sequenceItems, !list.isEmpty {
                examples.append((name, list, node.location))
            } else if let text = node.scalarText, let read = try? framing.read(Array(text.utf8)), !read.isEmpty {
                examples.append((name, read.map { ContractNode.value($0, at: node.location) }, node.location))
            } else {
                warnings.warning(
                    "example\(name.map { " '\($0)'" } ?? "") of '\(type)' is neither a list of items nor the stream as sent; it is left out",
                    at: node.location)
            }
        }
        guard !examples.isEmpty else {
            return [
                ContractNode.map(fields + [("items_from_schema", ContractNode.plain(String(Self.generatedItems), at: item.location))], at: location)
            ]
        }
        return examples.map { example in
            var own = fields
            if let name = example.name { own.insert(("name", ContractNode.string(name, at: example.at)), at: 0) }
            own.append(("items", ContractNode.list(example.items.map(Self.escapedTemplates), at: example.at)))
            return ContractNode.map(own, at: location)
        }
    }

    /// A media type's examples in order: `example`, else each of `examples`
    /// (by name), else the schema's own `example` or first of `examples`.
    mutating func examples(of media: SourceNode) -> [(name: String?, value: SourceNode)] {
        if let example = media["example"] { return [(nil, example)] }
        if let named = media["examples"]?.mappingPairs, !named.isEmpty {
            var list: [(name: String?, value: SourceNode)] = []
            for (key, raw) in named {
                guard let name = key.scalarText, let example = resolved(raw) else { continue }
                // OpenAPI 3.2's `dataValue` is the value as data, as `value` is.
                if let value = example["value"] ?? example["dataValue"] {
                    list.append((name, value))
                } else if example["externalValue"] != nil {
                    warnings.warning("example '\(name)' is an externalValue, which Doppel does not fetch; it is left out", at: example.location)
                }
            }
            return list
        }
        return []
    }

    // MARK: Schemas

    /// Keywords that only annotate, dropped without a word.
    static let annotations: Set<String> = [
        "xml", "externalDocs", "contentMediaType", "contentEncoding", "contentSchema", "$schema", "$id", "$anchor", "$defs",
        "definitions", "$dynamicAnchor", "$vocabulary",
    ]
    /// Keywords Doppel's validator does not check yet, dropped with a warning.
    static let unchecked: Set<String> = ["$dynamicRef"]

    /// A schema as the contract format writes it: `$ref`s to component
    /// schemas by name, 3.0's boolean `exclusiveMinimum` as 3.1's number,
    /// annotation keywords and formats Doppel does not check left out.
    mutating func schema(_ node: SourceNode) -> SourceNode {
        guard var pairs = node.mappingPairs else { return node }
        // OpenAPI 3.0 (as draft 4): a `$ref`'s siblings are ignored. `nullable`
        // beside one is kept, as the documents that write it mean it.
        if isVersion30, node["$ref"] != nil {
            let ignored = pairs.filter { pair in
                guard let key = pair.key.scalarText else { return false }
                return key != "$ref" && key != "nullable" && !key.hasPrefix("x-") && !Self.annotations.contains(key)
                    && !["description", "title", "example", "deprecated", "readOnly", "writeOnly", "externalDocs"].contains(key)
            }
            if let first = ignored.first {
                warnings.warning(
                    "\(ignored.compactMap(\.key.scalarText).map { "'\($0)'" }.joined(separator: ", ")) beside $ref \(ignored.count == 1 ? "is" : "are") ignored, as OpenAPI 3.0 says (3.1 checks both: wrap them in allOf to keep them in 3.0)",
                    at: first.key.location)
                pairs = pairs.filter { pair in !ignored.contains { $0.key === pair.key } }
            }
        }
        var fields: [(String, SourceNode)] = []
        for (key, value) in pairs {
            guard let name = key.scalarText else { continue }
            // The keywords Doppel reads first; the sets of the others are
            // looked up only for what is left.
            switch name {
            case "$ref":
                if let target = schemaReference(value) { fields.append((name, target)) }
            case "properties":
                fields.append(
                    (
                        name,
                        ContractNode.map(
                            (value.mappingPairs ?? []).compactMap { pair in pair.key.scalarText.map { ($0, schema(pair.value)) } }, at: value.location
                        )
                    ))
            case "patternProperties", "dependentSchemas":
                fields.append(
                    (
                        name,
                        ContractNode.map(
                            (value.mappingPairs ?? []).compactMap { pair in pair.key.scalarText.map { ($0, schema(pair.value)) } }, at: value.location
                        )
                    ))
            case "dependencies":
                // Draft 4's (OpenAPI 3.0's) one keyword for both: a list of names or a schema.
                var names: [(String, SourceNode)] = []
                var schemas: [(String, SourceNode)] = []
                for (member, dependent) in value.mappingPairs ?? [] {
                    guard let text = member.scalarText else { continue }
                    if dependent.sequenceItems != nil { names.append((text, dependent)) } else { schemas.append((text, schema(dependent))) }
                }
                if !names.isEmpty { fields.append(("dependentRequired", ContractNode.map(names, at: value.location))) }
                if !schemas.isEmpty { fields.append(("dependentSchemas", ContractNode.map(schemas, at: value.location))) }
            case "propertyNames", "if", "then", "else", "contains", "unevaluatedProperties", "unevaluatedItems":
                fields.append((name, schema(value)))
            case "items" where value.sequenceItems != nil:
                // Draft 4's (OpenAPI 3.0's) tuple: a list of `items` is 2020-12's
                // `prefixItems`, and `additionalItems` its `items`.
                fields.append(("prefixItems", ContractNode.list(value.sequenceItems!.map { schema($0) }, at: value.location)))
                if let additional = node["additionalItems"] { fields.append(("items", schema(additional))) }
            case "additionalItems":
                continue
            case "items", "additionalProperties", "not":
                fields.append((name, schema(value)))
            case "allOf", "anyOf", "oneOf", "prefixItems":
                fields.append((name, ContractNode.list((value.sequenceItems ?? []).map { schema($0) }, at: value.location)))
            case "format":
                if let format = value.scalarText, Schema.formats.contains(format) { fields.append((name, value)) }
            case "exclusiveMinimum", "exclusiveMaximum":
                // 3.0: a flag on minimum/maximum; 3.1: the bound itself.
                if value.json == .bool(true), let bound = node[name == "exclusiveMinimum" ? "minimum" : "maximum"] {
                    fields.append((name, bound))
                } else if case .bool = value.json {
                    continue
                } else {
                    fields.append((name, value))
                }
            case "minimum", "maximum":
                let flag = name == "minimum" ? "exclusiveMinimum" : "exclusiveMaximum"
                if node[flag]?.json == .bool(true) { continue }
                fields.append((name, value))
            case "discriminator":
                fields.append((name, discriminator(value)))
            case "x-doppel-dynamic-ref":
                // `$dynamicRef`, as `DocumentBundler` resolved it: `{ref: Name, anchor: A}`.
                if let refNode = value["ref"], let target = schemaReference(refNode), let anchor = value["anchor"] {
                    fields.append(("$dynamicRef", ContractNode.map([("ref", target), ("anchor", anchor)], at: value.location)))
                }
            case "x-doppel-dynamic-scope":
                // The `$dynamicAnchor`s of a schema resource: `{A: Name, ...}`.
                let scope = (value.mappingPairs ?? []).compactMap { pair -> (String, SourceNode)? in
                    guard let anchor = pair.key.scalarText, let target = schemaReference(pair.value) else { return nil }
                    return (anchor, target)
                }
                if !scope.isEmpty { fields.append(("$dynamicScope", ContractNode.map(scope, at: value.location))) }
            default:
                if name.hasPrefix("x-") || Self.annotations.contains(name) { continue }
                if Self.unchecked.contains(name) {
                    warnings.warning("schema keyword '\(name)' is not checked by Doppel yet; it is left out", at: key.location)
                    continue
                }
                // JSON Schema ignores keywords it does not know; so does Doppel, saying so.
                if !Schema.keywords.contains(name) {
                    warnings.warning(
                        "'\(name)' is no JSON Schema keyword Doppel knows; it is ignored\(Suggestion.hint(for: name, in: Schema.keywords))",
                        at: key.location)
                    continue
                }
                fields.append((name, value))
            }
        }
        return ContractNode.map(fields, at: node.location)
    }

    /// `#/components/schemas/Pet` as `Pet`; any other `$ref` is an error.
    mutating func schemaReference(_ node: SourceNode) -> SourceNode? {
        guard let text = node.scalarText else { return nil }
        let prefix = "#/components/schemas/"
        // On the bytes: a Substring's contains("/") is Foundation's string
        // search, and dropFirst(n) walks characters; a document of 1,000
        // operations has thousands of these references.
        let bytes = text.utf8
        guard bytes.starts(with: prefix.utf8), !bytes.dropFirst(prefix.utf8.count).contains(UInt8(ascii: "/")) else {
            errors.error(
                "$ref '\(text)' is not a schema of components.schemas; Doppel follows schema references to '\(prefix)NAME' only", at: node.location)
            return nil
        }
        let name = Self.unescape(String(text[bytes.index(bytes.startIndex, offsetBy: prefix.utf8.count)...]))
        guard componentSchemaNames.contains(name) else {
            // The document's own mistake: served with a schema that accepts anything there.
            errors.warning("unresolved $ref '\(text)': components.schemas has no '\(name)'; any value is accepted there", at: node.location)
            return nil
        }
        return ContractNode.string(name, at: node.location)
    }

    mutating func discriminator(_ node: SourceNode) -> SourceNode {
        var fields: [(String, SourceNode)] = []
        if let property = node["propertyName"] { fields.append(("propertyName", property)) }
        if let mapping = node["mapping"]?.mappingPairs {
            var entries: [(String, SourceNode)] = []
            for (key, value) in mapping {
                guard let name = key.scalarText, let target = value.scalarText else { continue }
                entries.append((name, target.hasPrefix("#") ? (schemaReference(value) ?? value) : value))
            }
            fields.append(("mapping", ContractNode.map(entries, at: node.location)))
        }
        return ContractNode.map(fields, at: node.location)
    }

    // MARK: References

    /// The node, or the node a `$ref` at it points to within the document
    /// (followed through chains, at most 32 hops); nil, with an error, when
    /// it points nowhere or outside the document.
    mutating func resolved(_ node: SourceNode?) -> SourceNode? {
        guard var current = node else { return nil }
        for _ in 0..<32 {
            guard let refNode = current["$ref"], let ref = refNode.scalarText else { return current }
            guard ref.hasPrefix("#/") || ref == "#" else {
                errors.error("$ref '\(ref)' points outside the document; Doppel reads one file", at: refNode.location)
                return nil
            }
            var target: SourceNode? = root
            for token in ref.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
                let key = Self.unescape(String(token))
                if let index = Int(key), let items = target?.sequenceItems {
                    target = items.indices.contains(index) ? items[index] : nil
                } else {
                    target = target?[key]
                }
            }
            guard let target else {
                errors.error("unresolved $ref '\(ref)': the document has nothing there", at: refNode.location)
                return nil
            }
            current = target
        }
        errors.error("$ref chain longer than 32 hops (a cycle?)", at: current.location)
        return nil
    }

    /// A JSON pointer token: `~1` is `/`, `~0` is `~`, and percent-escapes decoded.
    static func unescape(_ token: String) -> String {
        // Most tokens are plain names; Foundation's rewrites bridge to NSString.
        guard token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "%") }) else { return token }
        let decoded = token.removingPercentEncoding ?? token
        return decoded.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
    }

    // MARK: Literal values

    /// Example values are sent as they are: any `{{` in their strings is
    /// written as a placeholder that produces `{{`, so no template runs.
    static func escapedTemplates(_ node: SourceNode) -> SourceNode {
        guard hasTemplate(node) else { return node }
        switch node.kind {
        case .scalar(let text, let plain):
            guard text.includes("{{") else { return node }
            return SourceNode(kind: .scalar(escaped(text), plain: plain), location: node.location, contentOffset: node.contentOffset)
        case .sequence(let items):
            return SourceNode(kind: .sequence(items.map(escapedTemplates)), location: node.location)
        case .mapping(let pairs):
            return SourceNode(kind: .mapping(pairs.map { ($0.key, escapedTemplates($0.value)) }), location: node.location)
        }
    }

    /// Whether any string in a value has `{{` in it, so that most examples
    /// are kept as they are rather than copied.
    static func hasTemplate(_ node: SourceNode) -> Bool {
        switch node.kind {
        case .scalar(let text, _): text.includes("{{")
        case .sequence(let items): items.contains(where: hasTemplate)
        case .mapping(let pairs): pairs.contains { hasTemplate($0.value) }
        }
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "{{", with: "{{ '{{' }}")
    }
}

/// Building contract nodes located in the document.
package enum ContractNode {
    /// A mapping whose keys are placed where their values are.
    static func map(_ pairs: [(String, SourceNode)], at location: SourceLocation) -> SourceNode {
        SourceNode(
            kind: .mapping(pairs.map { (key: SourceNode(kind: .scalar($0.0, plain: false), placedAs: $0.1), value: $0.1) }), location: location)
    }

    static func list(_ items: [SourceNode], at location: SourceLocation) -> SourceNode {
        SourceNode(kind: .sequence(items), location: location)
    }

    /// A JSON value as a node: strings as strings, other scalars plain.
    static func value(_ value: JSON, at location: SourceLocation) -> SourceNode {
        switch value {
        case .string(let text): string(text, at: location)
        case .array(let items): list(items.map { self.value($0, at: location) }, at: location)
        case .object(let members): map(members.pairs.map { ($0.key, self.value($0.value, at: location)) }, at: location)
        default: plain(value.interpolationText, at: location)
        }
    }

    /// A string, whatever it looks like.
    package static func string(_ text: String, at location: SourceLocation) -> SourceNode {
        SourceNode(kind: .scalar(text, plain: false), location: location)
    }

    /// A plain scalar, typed as YAML types it (numbers, booleans).
    static func plain(_ text: String, at location: SourceLocation) -> SourceNode {
        SourceNode(kind: .scalar(text, plain: true), location: location)
    }

    /// A mapping with one key set (replaced or added).
    /// A mapping with a key added after another (at the start when that one is absent).
    package static func inserting(_ key: String, _ value: SourceNode, after earlier: String, in node: SourceNode) -> SourceNode {
        var pairs = node.mappingPairs ?? []
        let at = pairs.firstIndex(where: { $0.key.scalarText == earlier }).map { $0 + 1 } ?? 0
        pairs.insert((key: SourceNode(kind: .scalar(key, plain: false), placedAs: value), value: value), at: at)
        return SourceNode(kind: .mapping(pairs), location: node.location)
    }

    static func setting(_ key: String, _ value: SourceNode, in node: SourceNode) -> SourceNode {
        var pairs = node.mappingPairs ?? []
        if let index = pairs.firstIndex(where: { $0.key.scalarText == key }) {
            pairs[index].value = value
        } else {
            pairs.insert((key: SourceNode(kind: .scalar(key, plain: false), placedAs: value), value: value), at: 0)
        }
        return SourceNode(kind: .mapping(pairs), location: node.location)
    }
}
