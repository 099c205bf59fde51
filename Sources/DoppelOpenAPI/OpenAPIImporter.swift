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

        return (top, Self.concreteFirst(withoutShadowedVariants(readOperations())), schemes)
    }

    /// The document's operations in order, by path and method (OpenAPI
    /// 3.2's `additionalOperations` too), each with its endpoint id; a
    /// path's fragment kept to tell a vendor's variant apart; TRACE left out.
    mutating func readOperations() -> [Operation] {
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
        return operations
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

}
