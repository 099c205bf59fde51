/// Stage 2: reads query, headers and body into typed JSON and checks them
/// against the endpoint's schemas.
package struct RequestValidator: Sendable {
    let validator: SchemaValidator

    package init(schemas: [String: Schema]) {
        self.validator = SchemaValidator(registry: schemas)
    }

    /// The request's parts as expressions see them.
    package struct ValidatedRequest: Sendable {
        /// Path parameters read by the endpoint's `path` schema; nil when it has none.
        package var path: JSON?
        package var query: JSON
        /// Headers read by the endpoint's header schema; nil when it has none
        /// and they are the request's as they came.
        package var headers: JSON?
        package var body: JSON
    }

    package enum Outcome: Sendable {
        case valid(ValidatedRequest)
        /// Failed the schemas: the endpoint's `on_invalid` response, or the built-in 422.
        case invalid([ValidationIssue], ValidatedRequest)
        /// Unreadable before any schema could apply (415, 400 malformed JSON).
        case rejected(Problem)
    }

    package func validate(
        _ request: RecordedRequest, queryItems: [(String, String)], pathParameters: [String: String] = [:], for endpoint: Endpoint
    ) -> Outcome {
        var issues: [ValidationIssue] = []
        var path: JSON?
        if let schema = endpoint.pathParameters {
            let (raw, pathIssues) = validator.coerceParameters(pathParameters.sorted { $0.key < $1.key }, by: schema)
            issues += pathIssues.map { ValidationIssue(pointer: "/path" + $0.pointer, message: $0.message) }
            let unreadable = Set(pathIssues.map(\.pointer))
            issues += validator.validate(raw, against: schema).filter { !unreadable.contains($0.pointer) }
                .map { ValidationIssue(pointer: "/path" + $0.pointer, message: $0.message) }
            path = raw
        }
        var query: JSON
        if let spec = endpoint.queryString {
            query = readQueryString(request.query, items: queryItems, spec: spec, issues: &issues)
        } else {
            let (rawQuery, queryIssues) = validator.coerceParameters(queryItems, by: endpoint.query)
            issues += queryIssues.map { ValidationIssue(pointer: "/query" + $0.pointer, message: $0.message) }
            query = validator.applyingDefaults(to: rawQuery, schema: endpoint.query)
        }
        var headers: JSON?
        if let schema = endpoint.headers {
            let (rawHeaders, headerIssues) = validator.coerceParameters(
                request.headers.map { ($0.name, $0.value) }, by: schema, caseInsensitive: true)
            issues += headerIssues.map { ValidationIssue(pointer: "/headers" + $0.pointer, message: $0.message) }
            headers = validator.applyingDefaults(to: rawHeaders, schema: lowercasedProperties(schema))
        }

        if let schema = endpoint.cookies {
            let (rawCookies, cookieIssues) = validator.coerceParameters(Self.cookies(request.header("cookie")), by: schema)
            issues += cookieIssues.map { ValidationIssue(pointer: "/cookies" + $0.pointer, message: $0.message) }
            let unreadable = Set(cookieIssues.map(\.pointer))
            issues += validator.validate(validator.applyingDefaults(to: rawCookies, schema: schema), against: schema)
                .filter { !unreadable.contains($0.pointer) }
                .map { ValidationIssue(pointer: "/cookies" + $0.pointer, message: $0.message) }
        }

        // A parameter that could not be read as its type is reported once, not
        // again by the schema check of the same field.
        let unreadable = issues.isEmpty ? [] : Set(issues.map(\.pointer))
        if let schema = endpoint.query {
            issues += validator.validate(query, against: schema).map { ValidationIssue(pointer: "/query" + $0.pointer, message: $0.message) }
                .filter { !unreadable.contains($0.pointer) }
        }
        if let schema = endpoint.headers, let headers {
            issues += validator.validate(headers, against: lowercasedProperties(schema)).map {
                ValidationIssue(pointer: "/headers" + $0.pointer, message: $0.message)
            }
            .filter { !unreadable.contains($0.pointer) }
        }
        var body: JSON
        /// What the body schema checks, when it is not `body` itself (`readBody`).
        let checked: JSON?
        switch readBody(request, for: endpoint, issues: &issues) {
        case .read(let read, let view): (body, checked) = (read, view)
        case .rejected(let problem): return .rejected(problem)
        }
        if let spec = endpoint.body {
            if request.body.isEmpty {
                if spec.required { issues.append(ValidationIssue(pointer: "/body", message: "a request body is required")) }
            } else if let schema = spec.schema {
                let bodyIssues = validator.validate(checked ?? body, against: schema)
                if !bodyIssues.isEmpty {
                    let unreadableFields = Set(issues.map(\.pointer))
                    issues += bodyIssues.map { ValidationIssue(pointer: "/body" + $0.pointer, message: $0.message) }
                        .filter { !unreadableFields.contains($0.pointer) }
                }
                body = validator.applyingDefaults(to: body, schema: schema)
            }
        }
        if query.objectValue == nil, endpoint.queryString == nil { query = .object(JSONObject()) }
        let validated = ValidatedRequest(path: path, query: query, headers: headers, body: body)
        return issues.isEmpty ? .valid(validated) : .invalid(issues, validated)
    }

    /// What reading a body gave: the body as expressions see it and, when
    /// it differs, what its schema checks; or the problem that it cannot be
    /// read at all.
    enum BodyRead {
        case read(JSON, checked: JSON?)
        case rejected(Problem)
    }

    /// The body by its content type: JSON, a form, multipart parts, items
    /// of a sequential media type, or text. A multipart file sent for a
    /// property of type string is checked as its content (OpenAPI's `type:
    /// string, format: binary`), while expressions still see `{filename,
    /// content_type, size}`.
    func readBody(_ request: RecordedRequest, for endpoint: Endpoint, issues: inout [ValidationIssue]) -> BodyRead {
        var body: JSON = .null
        var checked: JSON?
        let contentType = request.header("content-type")
        guard !request.body.isEmpty else { return .read(.null, checked: nil) }
        let essence = contentType.map(MediaTypes.essence) ?? ""
        if let spec = endpoint.body, contentType == nil || !Self.accepts(spec.contentTypes, essence: essence) {
            return .rejected(.unsupportedMediaType(contentType, accepted: spec.contentTypes))
        }
        if let itemSchema = endpoint.body?.itemSchema, let media = contentType.flatMap(SequentialMedia.init) {
            // Item by item (OpenAPI 3.2's itemSchema): expressions see the list of items.
            do {
                let items = try media.read(request.body)
                body = .array(items)
                for (index, item) in items.enumerated() where issues.count < 100 {
                    issues += validator.validate(item, against: itemSchema).map {
                        ValidationIssue(pointer: "/body/\(index)" + $0.pointer, message: $0.message)
                    }
                }
            } catch {
                issues.append(ValidationIssue(pointer: "/body", message: "cannot be read item by item: \(error.reason)"))
            }
        } else if let contentType, MediaTypes.isJSON(contentType) {
            do {
                body = try JSONReader.parse(request.body)
            } catch {
                return .rejected(.malformedJSON(error.description))
            }
        } else if essence == "application/x-www-form-urlencoded" {
            let (form, formIssues) = validator.coerceParameters(
                FormBody.urlEncodedPairs(request.body), by: endpoint.body?.schema, repeatedAsList: true)
            body = form
            issues += formIssues.map { ValidationIssue(pointer: "/body" + $0.pointer, message: $0.message) }
        } else if essence == "multipart/form-data" {
            guard let boundary = FormBody.boundary(of: contentType!) else {
                return .rejected(.malformedMultipart("the Content-Type has no boundary parameter"))
            }
            do {
                let (form, view, formIssues) = multipartObject(
                    try FormBody.multipartParts(request.body, boundary: boundary), schema: endpoint.body?.schema)
                body = form
                checked = view
                issues += formIssues.map { ValidationIssue(pointer: "/body" + $0.pointer, message: $0.message) }
            } catch {
                return .rejected(.malformedMultipart(error.reason))
            }
        } else {
            body = .string(String(decoding: request.body, as: UTF8.self))
        }
        return .read(body, checked: checked)
    }

    /// The whole query string as one value (`querystring`), checked by its
    /// schema: form fields as `query` reads them, a JSON text (percent-decoded),
    /// or the decoded text. Absent or empty: null (form fields: `{}`), an
    /// issue when it is required.
    func readQueryString(_ raw: String?, items: [(String, String)], spec: BodySpec, issues: inout [ValidationIssue]) -> JSON {
        let type = spec.contentTypes.first ?? "application/x-www-form-urlencoded"
        let form = type == "application/x-www-form-urlencoded"
        guard let raw, !raw.isEmpty else {
            if spec.required { issues.append(ValidationIssue(pointer: "/query", message: "a query string is required")) }
            return form ? .object(JSONObject()) : .null
        }
        var value: JSON
        if form {
            let (read, formIssues) = validator.coerceParameters(items, by: spec.schema, repeatedAsList: true)
            issues += formIssues.map { ValidationIssue(pointer: "/query" + $0.pointer, message: $0.message) }
            value = spec.schema.map { validator.applyingDefaults(to: read, schema: $0) } ?? read
            if !formIssues.isEmpty { return value }
        } else {
            // RFC 3986 percent-decoding (a `+` is a plus sign here, not a space).
            guard let text = raw.removingPercentEncoding else {
                issues.append(ValidationIssue(pointer: "/query", message: "is not valid percent-encoding"))
                return .null
            }
            if MediaTypes.isJSON(type) {
                do { value = try JSONReader.parse(Array(text.utf8)) } catch {
                    issues.append(ValidationIssue(pointer: "/query", message: "is not JSON: \(error.description)"))
                    return .string(text)
                }
            } else {
                value = .string(text)
            }
        }
        if let schema = spec.schema {
            issues += validator.validate(value, against: schema).map { ValidationIssue(pointer: "/query" + $0.pointer, message: $0.message) }
        }
        return value
    }

    /// Multipart parts as an object: fields as text read by their schema
    /// type, JSON parts (a JSON `Content-Type`, or a property of type object
    /// or array) parsed, files as `{filename, content_type, size}`; repeated
    /// names become lists. With it, the value the schema checks (nil when it
    /// is the same): files sent for a property of type string as their content.
    private func multipartObject(_ parts: [FormBody.Part], schema: Schema?) -> (JSON, JSON?, [ValidationIssue]) {
        let resolved = schema.map(validator.resolve)
        func propertyTypes(_ name: String) -> Schema.TypeSet? {
            guard let property = resolved?.property(name).map(validator.resolve), property.types != nil else { return nil }
            return property.typeSet
        }
        // OpenAPI's default for a part of an object or array property is application/json.
        func isJSONPart(_ part: FormBody.Part) -> Bool {
            if let type = part.contentType, MediaTypes.isJSON(type) { return true }
            guard part.contentType == nil, let types = propertyTypes(part.name) else { return false }
            return !types.contains(.string) && (types.contains(.object) || types.contains(.array))
        }
        var issues: [ValidationIssue] = []
        var parsed: [(String, JSON)] = []
        for part in parts where !part.isFile && isJSONPart(part) {
            do {
                parsed.append((part.name, try JSONReader.parse(part.content)))
            } catch {
                issues.append(
                    ValidationIssue(pointer: "/" + SchemaValidator.escape(part.name), message: "the part is not valid JSON: \(error.description)"))
            }
        }
        let fields = parts.filter { !$0.isFile && !isJSONPart($0) }.map { ($0.name, String(decoding: $0.content, as: UTF8.self)) }
        let (coerced, coercionIssues) = validator.coerceParameters(fields, by: schema, repeatedAsList: true)
        issues += coercionIssues
        var object = coerced.objectValue ?? JSONObject()
        for (name, value) in parsed {
            switch object[name] {
            case .array(let items)?: object[name] = .array(items + [value])
            case let earlier?: object[name] = .array([earlier, value])
            case nil: object[name] = value
            }
        }
        // Files are gathered per name first and stored once: appending to a
        // list still held by the object would copy it on every part.
        var files: [String: [(file: JSON, content: JSON)]] = [:]
        var order: [String] = []
        for part in parts where part.isFile {
            let file = JSON.object(
                JSONObject([
                    ("filename", .string(part.filename!)), ("content_type", part.contentType.map { .string($0) } ?? .null),
                    ("size", .int(part.content.count)),
                ]))
            // The content as text of one code point a byte, so lengths count bytes.
            let content = JSON.string(String(String.UnicodeScalarView(part.content.map { Unicode.Scalar($0) })))
            if files[part.name] == nil { order.append(part.name) }
            files[part.name, default: []].append((file, content))
        }
        guard !order.isEmpty else { return (.object(object), nil, issues) }
        var view = object
        for name in order {
            var list = files[name]!.map(\.file)
            // A property of type string (and not object) takes a file as its content.
            let property = resolved?.property(name).map(validator.resolve)
            let target = property?.typeSet.contains(.array) == true ? property?.items.map(validator.resolve) : property
            let asContent =
                target.map { $0.types == nil ? $0.format == "binary" : $0.typeSet.contains(.string) && !$0.typeSet.contains(.object) } ?? false
            var checkedList = asContent ? files[name]!.map(\.content) : list
            switch object[name] {
            case .array(let fields)?:
                list = fields + list
                checkedList = fields + checkedList
            case let field?:
                list.insert(field, at: 0)
                checkedList.insert(field, at: 0)
            case nil: break
            }
            let wantsList = resolved?.property(name).map(validator.resolve)?.types?.contains("array") == true
            object[name] = list.count == 1 && !wantsList ? list[0] : .array(list)
            view[name] = checkedList.count == 1 && !wantsList ? checkedList[0] : .array(checkedList)
        }
        return (.object(object), .object(view), issues)
    }

    /// The name-value pairs of a `Cookie` header (`a=1; b=2`), in order.
    static func cookies(_ header: String?) -> [(String, String)] {
        guard let header else { return [] }
        return header.split(separator: ";").compactMap { part in
            let pair = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2 else { return nil }
            return (String(pair[0].trimmingSpaces), String(pair[1].trimmingSpaces))
        }
    }

    /// Header schemas are written with any case; requests arrive lowercased.
    private func lowercasedProperties(_ schema: Schema) -> Schema {
        let resolved = validator.resolve(schema)
        guard resolved.properties.contains(where: { $0.0 != $0.0.lowercased() }) || resolved.required.contains(where: { $0 != $0.lowercased() })
        else { return resolved }
        return Schema(
            types: resolved.types, properties: resolved.properties.map { ($0.0.lowercased(), $0.1) },
            required: resolved.required.map { $0.lowercased() }, additionalProperties: resolved.additionalProperties)
    }

    /// Whether a media type's essence (`MediaTypes.essence`) is one the endpoint accepts.
    static func accepts(_ accepted: [String], essence: String) -> Bool {
        for type in accepted {
            if type == "*/*" || type == essence { return true }
            if type.hasSuffix("/*"), essence.hasPrefix(String(type.dropLast())) { return true }
            if type == "application/json", essence.hasSuffix("+json") { return true }
        }
        return false
    }
}
