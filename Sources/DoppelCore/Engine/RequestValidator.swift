/// Stage 3: reads query, headers and body into typed JSON and checks them
/// against the endpoint's schemas.
public struct RequestValidator: Sendable {
    let validator: SchemaValidator

    public init(schemas: [String: Schema]) {
        self.validator = SchemaValidator(registry: schemas)
    }

    /// The request's parts as expressions see them.
    public struct ValidatedRequest: Sendable {
        public var query: JSON
        public var headers: JSON
        public var body: JSON
    }

    public enum Outcome: Sendable {
        case valid(ValidatedRequest)
        /// Failed the schemas: the endpoint's `on_invalid` response, or the built-in 422.
        case invalid([ValidationIssue], ValidatedRequest)
        /// Unreadable before any schema could apply (415, 400 malformed JSON).
        case rejected(Problem)
    }

    public func validate(_ request: RecordedRequest, queryItems: [(String, String)], for endpoint: Endpoint) -> Outcome {
        var issues: [ValidationIssue] = []
        let (rawQuery, queryIssues) = validator.coerceParameters(queryItems, by: endpoint.query)
        issues += queryIssues.map { ValidationIssue(pointer: "/query" + $0.pointer, message: $0.message) }
        var query = validator.applyingDefaults(to: rawQuery, schema: endpoint.query)
        let (rawHeaders, headerIssues) = validator.coerceParameters(request.headers.map { ($0.name, $0.value) }, by: endpoint.headers, caseInsensitive: true)
        issues += headerIssues.map { ValidationIssue(pointer: "/headers" + $0.pointer, message: $0.message) }
        let headers = validator.applyingDefaults(to: rawHeaders, schema: endpoint.headers.map(lowercasedProperties))

        // A parameter that could not be read as its type is reported once, not
        // again by the schema check of the same field.
        let unreadable = Set(issues.map(\.pointer))
        if let schema = endpoint.query {
            issues += validator.validate(query, against: schema).map { ValidationIssue(pointer: "/query" + $0.pointer, message: $0.message) }
                .filter { !unreadable.contains($0.pointer) }
        }
        if let schema = endpoint.headers {
            issues += validator.validate(headers, against: lowercasedProperties(schema)).map { ValidationIssue(pointer: "/headers" + $0.pointer, message: $0.message) }
                .filter { !unreadable.contains($0.pointer) }
        }
        var body: JSON = .null
        let contentType = request.header("content-type")
        if !request.body.isEmpty {
            if let spec = endpoint.body, !Self.accepts(spec.contentTypes, contentType) {
                return .rejected(.unsupportedMediaType(contentType, accepted: spec.contentTypes))
            }
            if let contentType, MediaTypes.isJSON(contentType) {
                do {
                    body = try JSONReader.parse(request.body)
                } catch {
                    return .rejected(.malformedJSON(error.description))
                }
            } else {
                body = .string(String(decoding: request.body, as: UTF8.self))
            }
        }
        if let spec = endpoint.body {
            if request.body.isEmpty {
                if spec.required { issues.append(ValidationIssue(pointer: "/body", message: "a request body is required")) }
            } else if let schema = spec.schema {
                issues += validator.validate(body, against: schema).map { ValidationIssue(pointer: "/body" + $0.pointer, message: $0.message) }
                body = validator.applyingDefaults(to: body, schema: schema)
            }
        }
        if query.objectValue == nil { query = .object(JSONObject()) }
        let validated = ValidatedRequest(query: query, headers: headers, body: body)
        return issues.isEmpty ? .valid(validated) : .invalid(issues, validated)
    }

    /// Header schemas are written with any case; requests arrive lowercased.
    private func lowercasedProperties(_ schema: Schema) -> Schema {
        let resolved = validator.resolve(schema)
        guard resolved.properties.contains(where: { $0.0 != $0.0.lowercased() }) || resolved.required.contains(where: { $0 != $0.lowercased() }) else { return resolved }
        return Schema(
            types: resolved.types, properties: resolved.properties.map { ($0.0.lowercased(), $0.1) },
            required: resolved.required.map { $0.lowercased() }, additionalProperties: resolved.additionalProperties)
    }

    /// Whether a request's Content-Type is one the endpoint accepts (parameters ignored).
    static func accepts(_ accepted: [String], _ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let essence: String = contentType.split(separator: ";").first.map { String($0.trimmingSpaces).lowercased() } ?? ""
        for type in accepted {
            if type == "*/*" || type == essence { return true }
            if type.hasSuffix("/*"), essence.hasPrefix(String(type.dropLast())) { return true }
            if type == "application/json", essence.hasSuffix("+json") { return true }
        }
        return false
    }
}
