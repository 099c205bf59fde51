import DoppelCore

/// A Swagger 2.0 document as the OpenAPI 3.0 document that says the same,
/// for the importer to read: every node keeps the line and column it had,
/// so every diagnostic still points into the document as written.
///
/// What moves, as the OpenAPI 3.0 specification's own migration describes it:
/// - `host`, `basePath` and `schemes` become `servers`;
/// - `definitions`, `parameters`, `responses` and `securityDefinitions`
///   become `components` (`schemas`, `parameters`, `responses`,
///   `securitySchemes`), and every `$ref` to them follows;
/// - a `body` parameter becomes the `requestBody`, in each media type
///   `consumes` names (the operation's, else the document's, else JSON);
///   `formData` parameters become one form body (`multipart/form-data` when
///   a parameter is a `file` or `consumes` says so, else urlencoded);
/// - other parameters keep their place, their `type`, `format`, `items` and
///   bounds moving into a `schema`, `collectionFormat` into `style`/`explode`;
/// - a response's `schema`, `examples` and `headers` become its `content` in
///   each media type `produces` names, and header schemas;
/// - `type: file` is `type: string, format: binary`; `x-nullable` is
///   `nullable`; a `discriminator` names its property.
///
/// Written here: no mirrored package converts Swagger 2.0, and the mapping
/// must keep Doppel's source locations, which a converter of decoded models
/// would lose.
struct Swagger2Converter {
    let root: SourceNode
    var warnings = DiagnosticCollector()
    /// Whether `#/definitions/…` and the like move to `components`: in the
    /// document itself; not in another file, where they mean that file's
    /// places (which `DocumentBundler` reads by pointer).
    var movesReferences = true

    /// Whether a parsed file is a Swagger 2.0 document.
    static func isSwagger2(_ root: SourceNode) -> Bool {
        root["swagger"] != nil && root["doppel"] == nil && root["openapi"] == nil
    }

    /// The document as OpenAPI 3.0.3, and what could not be carried over.
    static func convert(_ root: SourceNode) -> (SourceNode, [Diagnostic]) {
        var converter = Swagger2Converter(root: root)
        let converted = converter.document()
        return (converted, converter.warnings.diagnostics)
    }

    var globalConsumes: [String] { Self.strings(root["consumes"]) ?? ["application/json"] }
    var globalProduces: [String] { Self.strings(root["produces"]) ?? ["application/json"] }

    static func strings(_ node: SourceNode?) -> [String]? {
        guard let items = node?.sequenceItems?.compactMap(\.scalarText), !items.isEmpty else { return nil }
        return items
    }

    mutating func document() -> SourceNode {
        let at = root.location
        var fields: [(String, SourceNode)] = []
        let version = root["swagger"]!
        if version.scalarText != "2.0" {
            warnings.warning("swagger '\(version.scalarText ?? "")' is read as Swagger 2.0", at: version.location)
        }
        fields.append(("openapi", ContractNode.string("3.0.3", at: version.location)))
        for (key, value) in root.mappingPairs ?? [] {
            guard let name = key.scalarText else { continue }
            switch name {
            case "info", "tags", "externalDocs", "security":
                fields.append((name, value))
            case "paths":
                fields.append((name, paths(value)))
            default:
                if name.hasPrefix("x-") { fields.append((name, value)) }
            }
        }
        if let servers = servers() { fields.insert(("servers", servers), at: min(2, fields.count)) }
        var components: [(String, SourceNode)] = []
        if let definitions = root["definitions"]?.mappingPairs {
            components.append(
                (
                    "schemas",
                    ContractNode.map(
                        definitions.compactMap { pair in pair.key.scalarText.map { ($0, schema(pair.value)) } }, at: root["definitions"]!.location)
                ))
        }
        if let shared = root["parameters"]?.mappingPairs {
            // Body and form parameters have no place among 3.0's; they are put in each operation that refers to them.
            let kept = shared.compactMap { pair -> (String, SourceNode)? in
                guard let name = pair.key.scalarText, !["body", "formData"].contains(pair.value["in"]?.scalarText ?? "") else { return nil }
                return (name, parameter(pair.value))
            }
            if !kept.isEmpty { components.append(("parameters", ContractNode.map(kept, at: root["parameters"]!.location))) }
        }
        if let shared = root["responses"]?.mappingPairs {
            components.append(
                (
                    "responses",
                    ContractNode.map(
                        shared.compactMap { pair in pair.key.scalarText.map { ($0, response(pair.value, produces: globalProduces)) } },
                        at: root["responses"]!.location)
                ))
        }
        if let schemes = root["securityDefinitions"]?.mappingPairs {
            components.append(
                (
                    "securitySchemes",
                    ContractNode.map(
                        schemes.compactMap { pair in pair.key.scalarText.map { ($0, securityScheme(pair.value)) } },
                        at: root["securityDefinitions"]!.location)
                ))
        }
        if !components.isEmpty { fields.append(("components", ContractNode.map(components, at: at))) }
        return ContractNode.map(fields, at: at)
    }

    /// `host`, `basePath`, `schemes` as one server per scheme.
    func servers() -> SourceNode? {
        let base = root["basePath"]?.scalarText ?? ""
        let host = root["host"]?.scalarText
        guard host != nil || !base.isEmpty else { return nil }
        let at = (root["basePath"] ?? root["host"])!.location
        let urls: [String]
        if let host {
            urls = (Self.strings(root["schemes"]) ?? ["https"]).map { "\($0)://\(host)\(base)" }
        } else {
            urls = [base]
        }
        return ContractNode.list(urls.map { ContractNode.map([("url", ContractNode.string($0, at: at))], at: at) }, at: at)
    }

    // MARK: Operations

    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch"]

    mutating func paths(_ node: SourceNode) -> SourceNode {
        ContractNode.map(
            (node.mappingPairs ?? []).compactMap { pair -> (String, SourceNode)? in
                guard let path = pair.key.scalarText else { return nil }
                if path.hasPrefix("x-") { return (path, pair.value) }
                return (path, pathItem(pair.value))
            }, at: node.location)
    }

    mutating func pathItem(_ item: SourceNode) -> SourceNode {
        let shared = (item["parameters"]?.sequenceItems ?? []).map(resolvedParameter)
        var fields: [(String, SourceNode)] = []
        let plain = shared.filter { !["body", "formData"].contains($0["in"]?.scalarText ?? "") }
        if !plain.isEmpty { fields.append(("parameters", ContractNode.list(plain.map { parameter($0) }, at: item["parameters"]!.location))) }
        for (key, value) in item.mappingPairs ?? [] {
            guard let name = key.scalarText else { continue }
            if Self.methods.contains(name) {
                fields.append((name, operation(value, shared: shared)))
            } else if name == "$ref" {
                fields.append((name, value))
            } else if name.hasPrefix("x-") || name == "summary" || name == "description" {
                fields.append((name, value))
            }
        }
        return ContractNode.map(fields, at: item.location)
    }

    mutating func operation(_ node: SourceNode, shared: [SourceNode]) -> SourceNode {
        let consumes = Self.strings(node["consumes"]) ?? globalConsumes
        let produces = Self.strings(node["produces"]) ?? globalProduces
        var own = (node["parameters"]?.sequenceItems ?? []).map(resolvedParameter)
        // The operation's own parameters win over the path item's of the same name and place.
        for parameter in shared
        where !own.contains(where: { $0["name"]?.scalarText == parameter["name"]?.scalarText && $0["in"]?.scalarText == parameter["in"]?.scalarText })
        {
            own.append(parameter)
        }
        var fields: [(String, SourceNode)] = []
        // The path item's parameters stay on it; the operation lists its own.
        let ownPlain = own.filter { parameter in
            !["body", "formData"].contains(parameter["in"]?.scalarText ?? "") && !shared.contains { $0 === parameter }
        }
        for (key, value) in node.mappingPairs ?? [] {
            guard let name = key.scalarText else { continue }
            switch name {
            case "parameters":
                if !ownPlain.isEmpty { fields.append((name, ContractNode.list(ownPlain.map { parameter($0) }, at: value.location))) }
            case "responses":
                fields.append(
                    (
                        name,
                        ContractNode.map(
                            (value.mappingPairs ?? []).compactMap { pair in
                                pair.key.scalarText.map { ($0, $0.hasPrefix("x-") ? pair.value : response(pair.value, produces: produces)) }
                            }, at: value.location)
                    ))
            case "consumes", "produces", "schemes":
                continue
            default:
                fields.append((name, value))
            }
        }
        if let body = requestBody(own, consumes: consumes, at: node["parameters"]?.location ?? node.location) {
            fields.append(("requestBody", body))
        }
        return ContractNode.map(fields, at: node.location)
    }

    /// A parameter, or the shared one its `$ref` names (body and form parameters are needed as they are).
    func resolvedParameter(_ node: SourceNode) -> SourceNode {
        guard let ref = node["$ref"]?.scalarText else { return node }
        let prefix = "#/parameters/"
        guard ref.hasPrefix(prefix), let target = root["parameters"]?[OpenAPIImporter.unescape(String(ref.dropFirst(prefix.count)))] else {
            return node
        }
        // Shared ordinary parameters stay references (to components.parameters).
        if !["body", "formData"].contains(target["in"]?.scalarText ?? "") { return node }
        return target
    }

    /// The body and form parameters as a request body.
    mutating func requestBody(_ parameters: [SourceNode], consumes: [String], at location: SourceLocation) -> SourceNode? {
        if let body = parameters.first(where: { $0["in"]?.scalarText == "body" }) {
            let schemaNode = body["schema"].map { schema($0) } ?? ContractNode.map([], at: body.location)
            var fields: [(String, SourceNode)] = [
                ("content", ContractNode.map(consumes.map { ($0, ContractNode.map([("schema", schemaNode)], at: body.location)) }, at: body.location))
            ]
            if let required = body["required"] { fields.append(("required", required)) }
            if let description = body["description"] { fields.append(("description", description)) }
            return ContractNode.map(fields, at: body.location)
        }
        let form = parameters.filter { $0["in"]?.scalarText == "formData" }
        guard let first = form.first else { return nil }
        let hasFile = form.contains { $0["type"]?.scalarText == "file" }
        let type = hasFile || consumes.contains("multipart/form-data") ? "multipart/form-data" : "application/x-www-form-urlencoded"
        var properties: [(String, SourceNode)] = []
        var required: [SourceNode] = []
        for parameter in form {
            guard let nameNode = parameter["name"], let name = nameNode.scalarText else { continue }
            properties.append((name, valueSchema(parameter)))
            if parameter["required"]?.json == .bool(true) { required.append(nameNode) }
        }
        var schemaFields: [(String, SourceNode)] = [
            ("type", ContractNode.string("object", at: first.location)), ("properties", ContractNode.map(properties, at: first.location)),
        ]
        if !required.isEmpty { schemaFields.append(("required", ContractNode.list(required, at: first.location))) }
        let schemaNode = ContractNode.map(schemaFields, at: first.location)
        return ContractNode.map(
            [
                ("content", ContractNode.map([(type, ContractNode.map([("schema", schemaNode)], at: first.location))], at: first.location)),
                ("required", ContractNode.plain(required.isEmpty ? "false" : "true", at: first.location)),
            ], at: location)
    }

    /// Keywords of a 2.0 parameter (or header, or items) that are its schema's in 3.0.
    static let schemaKeys: Set<String> = [
        "type", "format", "items", "enum", "default", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
        "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "multipleOf",
    ]

    /// A query, header or path parameter in 3.0's form.
    mutating func parameter(_ node: SourceNode) -> SourceNode {
        if node["$ref"] != nil { return reference(node) }
        var fields: [(String, SourceNode)] = []
        for (key, value) in node.mappingPairs ?? [] {
            guard let name = key.scalarText, !Self.schemaKeys.contains(name), name != "collectionFormat", name != "allowEmptyValue" else { continue }
            fields.append((name, value))
        }
        fields.append(("schema", valueSchema(node)))
        if let format = node["collectionFormat"], let text = format.scalarText {
            let inQuery = node["in"]?.scalarText == "query"
            switch text {
            case "multi":
                fields += [("style", ContractNode.string("form", at: format.location)), ("explode", ContractNode.plain("true", at: format.location))]
            case "ssv":
                fields += [
                    ("style", ContractNode.string("spaceDelimited", at: format.location)),
                    ("explode", ContractNode.plain("false", at: format.location)),
                ]
            case "pipes":
                fields += [
                    ("style", ContractNode.string("pipeDelimited", at: format.location)),
                    ("explode", ContractNode.plain("false", at: format.location)),
                ]
            case "csv":
                fields += [
                    ("style", ContractNode.string(inQuery ? "form" : "simple", at: format.location)),
                    ("explode", ContractNode.plain("false", at: format.location)),
                ]
            default: warnings.warning("collectionFormat '\(text)' is read as csv", at: format.location)
            }
        }
        return ContractNode.map(fields, at: node.location)
    }

    /// The schema of a parameter, header or `items` written in 2.0's way (its keywords beside its name).
    func valueSchema(_ node: SourceNode) -> SourceNode {
        var fields: [(String, SourceNode)] = []
        for (key, value) in node.mappingPairs ?? [] {
            guard let name = key.scalarText, Self.schemaKeys.contains(name) else { continue }
            switch name {
            case "type" where value.scalarText == "file":
                fields += [
                    ("type", ContractNode.string("string", at: value.location)), ("format", ContractNode.string("binary", at: value.location)),
                ]
            case "items":
                fields.append((name, value["$ref"] != nil ? reference(value) : valueSchema(value)))
            default:
                fields.append((name, value))
            }
        }
        return ContractNode.map(fields, at: node.location)
    }

    // MARK: Responses

    mutating func response(_ node: SourceNode, produces: [String]) -> SourceNode {
        if node["$ref"] != nil { return reference(node) }
        var fields: [(String, SourceNode)] = []
        fields.append(("description", node["description"] ?? ContractNode.string("", at: node.location)))
        if let headers = node["headers"]?.mappingPairs {
            fields.append(
                (
                    "headers",
                    ContractNode.map(
                        headers.compactMap { pair -> (String, SourceNode)? in
                            guard let name = pair.key.scalarText else { return nil }
                            var header: [(String, SourceNode)] = [("schema", valueSchema(pair.value))]
                            if let description = pair.value["description"] { header.insert(("description", description), at: 0) }
                            return (name, ContractNode.map(header, at: pair.value.location))
                        }, at: node["headers"]!.location)
                ))
        }
        let examples = node["examples"]?.mappingPairs ?? []
        if node["schema"] != nil || !examples.isEmpty {
            let schemaNode = node["schema"].map { schema($0) }
            // Every type the operation produces, and any an example is given in.
            var types = produces
            for (key, _) in examples { if let type = key.scalarText, !types.contains(type) { types.append(type) } }
            let content = types.map { type -> (String, SourceNode) in
                var media: [(String, SourceNode)] = []
                if let schemaNode { media.append(("schema", schemaNode)) }
                if let example = examples.first(where: { $0.key.scalarText == type })?.value { media.append(("example", example)) }
                return (type, ContractNode.map(media, at: node.location))
            }
            fields.append(("content", ContractNode.map(content, at: (node["schema"] ?? node).location)))
        }
        for (key, value) in node.mappingPairs ?? [] where key.scalarText?.hasPrefix("x-") == true { fields.append((key.scalarText!, value)) }
        return ContractNode.map(fields, at: node.location)
    }

    // MARK: Security

    mutating func securityScheme(_ node: SourceNode) -> SourceNode {
        let at = node.location
        var fields: [(String, SourceNode)] = []
        if let description = node["description"] { fields.append(("description", description)) }
        switch node["type"]?.scalarText {
        case "basic":
            fields += [("type", ContractNode.string("http", at: at)), ("scheme", ContractNode.string("basic", at: at))]
        case "apiKey":
            fields.append(("type", ContractNode.string("apiKey", at: at)))
            if let name = node["name"] { fields.append(("name", name)) }
            if let place = node["in"] { fields.append(("in", place)) }
        case "oauth2":
            fields.append(("type", ContractNode.string("oauth2", at: at)))
            let flowName =
                switch node["flow"]?.scalarText {
                case "implicit": "implicit"
                case "password": "password"
                case "application": "clientCredentials"
                default: "authorizationCode"
                }
            var flow: [(String, SourceNode)] = []
            if let url = node["authorizationUrl"] { flow.append(("authorizationUrl", url)) }
            if let url = node["tokenUrl"] { flow.append(("tokenUrl", url)) }
            flow.append(("scopes", node["scopes"] ?? ContractNode.map([], at: at)))
            fields.append(("flows", ContractNode.map([(flowName, ContractNode.map(flow, at: at))], at: at)))
        default:
            warnings.warning(
                "security definition of type '\(node["type"]?.scalarText ?? "")' is not Swagger 2.0's (basic, apiKey, oauth2)",
                at: (node["type"] ?? node).location)
            return node
        }
        return ContractNode.map(fields, at: at)
    }

    // MARK: Schemas and references

    /// What another file brings in by a reference, in 3.0's form:
    /// `DocumentBundler` calls this for each target it reads from another
    /// file of a Swagger 2.0 document (`keys`: where the reference is).
    static func adaptReferenced(_ node: SourceNode, keys: [String], schema isSchema: Bool, document: SourceNode) -> SourceNode {
        var converter = Swagger2Converter(root: document, movesReferences: false)
        if isSchema { return converter.schema(node) }
        if keys.last == "parameters" { return converter.parameter(node) }
        if keys.count >= 2, keys[keys.count - 2] == "responses" || keys.last == "responses" {
            return converter.response(node, produces: converter.globalProduces)
        }
        return node
    }

    /// A `$ref` to 2.0's shared places, as 3.0's.
    func reference(_ node: SourceNode) -> SourceNode {
        guard movesReferences, let refNode = node["$ref"], let ref = refNode.scalarText else { return node }
        let moved = Self.movedReference(ref)
        guard moved != ref else { return node }
        return ContractNode.map(
            (node.mappingPairs ?? []).map { pair in
                (pair.key.scalarText ?? "", pair.key.scalarText == "$ref" ? ContractNode.string(moved, at: refNode.location) : pair.value)
            }, at: node.location)
    }

    static func movedReference(_ ref: String) -> String {
        for (old, new) in [
            ("#/definitions/", "#/components/schemas/"), ("#/parameters/", "#/components/parameters/"), ("#/responses/", "#/components/responses/"),
        ]
        where ref.hasPrefix(old) {
            return new + ref.dropFirst(old.count)
        }
        // A reference into another file keeps its file; the place in it moves alike.
        if let hash = ref.firstIndex(of: "#"), hash != ref.startIndex {
            return String(ref[..<hash]) + movedReference(String(ref[hash...]))
        }
        return ref
    }

    /// A schema with 2.0's differences carried over, at every level.
    func schema(_ node: SourceNode) -> SourceNode {
        switch node.kind {
        case .scalar:
            return node
        case .sequence(let items):
            return ContractNode.list(items.map(schema), at: node.location)
        case .mapping(let pairs):
            var fields: [(String, SourceNode)] = []
            for (key, value) in pairs {
                guard let name = key.scalarText else { continue }
                switch name {
                case "$ref":
                    fields.append(
                        (
                            name,
                            movesReferences
                                ? value.scalarText.map { ContractNode.string(Self.movedReference($0), at: value.location) } ?? value : value
                        ))
                case "type" where value.scalarText == "file":
                    fields += [
                        ("type", ContractNode.string("string", at: value.location)), ("format", ContractNode.string("binary", at: value.location)),
                    ]
                case "x-nullable":
                    fields.append(("nullable", value))
                case "discriminator":
                    fields.append(
                        (
                            name,
                            value.scalarText.map {
                                ContractNode.map([("propertyName", ContractNode.string($0, at: value.location))], at: value.location)
                            } ?? value
                        ))
                case "example", "default", "enum":
                    fields.append((name, value))
                case "properties":
                    fields.append(
                        (
                            name,
                            ContractNode.map(
                                (value.mappingPairs ?? []).compactMap { pair in pair.key.scalarText.map { ($0, schema(pair.value)) } },
                                at: value.location)
                        ))
                case "items", "additionalProperties", "not", "allOf", "anyOf", "oneOf":
                    fields.append((name, schema(value)))
                default:
                    fields.append((name, value))
                }
            }
            return ContractNode.map(fields, at: node.location)
        }
    }
}
