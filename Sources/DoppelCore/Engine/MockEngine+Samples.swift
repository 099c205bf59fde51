/// Sample requests and bodies, made from a contract's schemas: what
/// `doppel export` shows as examples and `doppel verify` sends first.
extension MockEngine {
    /// The instant sample answers are rendered at (2026-01-01T00:00:00Z), so an export is the same every time.
    package static let sampleInstant = 1_767_225_600.0

    /// A request `endpoint` takes, made from its schemas: path parameters
    /// from their examples or samples, the query's required members (the
    /// others keep their defaults), a body sampled from its schema, and a
    /// bearer token where the endpoint takes one; in `session` when given.
    package func sampleRequest(for endpoint: Endpoint, session: String? = nil) -> RecordedRequest {
        let sampler = SchemaSampler(registry: contract.schemas)
        var path = endpoint.path.template
        let pathValues = endpoint.pathParameters.flatMap(sampler.sample)?.objectValue ?? JSONObject()
        for name in endpoint.path.parameterNames {
            let value = pathValues[name].map { $0.stringValue ?? JSONWriter.encodeString($0) } ?? "1"
            path = path.replacingOccurrences(of: "{\(name)...}", with: value).replacingOccurrences(of: "{\(name)}", with: value)
        }
        let query = Self.sampleQuery(for: endpoint, sampler: sampler)
        var headers: [(name: String, value: String)] = []
        // Required header parameters (a `User-Agent` of a documented form), from their schemas.
        if let schema = endpoint.headers, let values = sampler.sample(schema)?.objectValue {
            for pair in values.pairs
            where schema.required.contains(pair.key) && !["accept", "content-type", "authorization"].contains(pair.key.lowercased()) {
                if let text = pair.value.parameterText {
                    headers.append((name: pair.key, value: text))
                }
            }
        }
        let body = Self.sampleBody(for: endpoint, sampler: sampler)
        if let type = body.contentType { headers.append((name: "Content-Type", value: type)) }
        if endpoint.auth.contains(where: { contract.authSchemes[$0]?.kind == .bearer }) {
            // A JWT whose payload is {"sub":"sample-user"}: what a client's token looks like to templates reading claims.
            headers.append((name: "Authorization", value: "Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJzYW1wbGUtdXNlciJ9.c2FtcGxl"))
        }
        if let session { headers.append((name: "Doppel-Session", value: session)) }
        if endpoint.socket != nil {
            // A WebSocket endpoint takes an upgrade (RFC 6455's example key).
            headers += [
                (name: "Upgrade", value: "websocket"), (name: "Connection", value: "Upgrade"), (name: "Sec-WebSocket-Version", value: "13"),
                (name: "Sec-WebSocket-Key", value: "dGhlIHNhbXBsZSBub25jZQ=="),
            ]
        }
        return RecordedRequest(
            method: endpoint.method, path: path, query: query.isEmpty ? nil : query.joined(separator: "&"), headers: headers, body: body.bytes)
    }

    /// A sample request's query, as percent-encoded `name=value` pairs.
    static func sampleQuery(for endpoint: Endpoint, sampler: SchemaSampler) -> [String] {
        var query: [String] = []
        let encoded = FormEncoding.percentEncoded
        // The required members, and those the endpoint's `match` reads (a
        // variant told apart by `query.target != null` needs its target).
        let matched = endpoint.match.map(\.expression.source).joined(separator: " ")
        let sent = Set(endpoint.query?.required ?? []).union((endpoint.query?.properties ?? []).map(\.0).filter { matched.includes("query.\($0)") })
        let queryValues = endpoint.query.flatMap(sampler.sample)?.objectValue ?? JSONObject()
        for pair in queryValues.pairs where sent.contains(pair.key) {
            guard let text = pair.value.parameterText else { continue }
            query.append(encoded(pair.key) + "=" + encoded(text))
        }
        if let spec = endpoint.queryString, let value = spec.example ?? spec.schema.flatMap(sampler.sample) {
            // The whole query as one value: form fields, else its JSON or text, percent-encoded.
            if spec.contentTypes.first ?? "application/x-www-form-urlencoded" == "application/x-www-form-urlencoded", let fields = value.objectValue {
                for pair in fields.pairs {
                    for item in pair.value.arrayValue ?? [pair.value] {
                        if let text = item.parameterText { query.append(encoded(pair.key) + "=" + encoded(text)) }
                    }
                }
            } else {
                query.append(
                    encoded(
                        MediaTypes.isJSON(spec.contentTypes.first ?? "")
                            ? JSONWriter.encodeString(value) : value.stringValue ?? JSONWriter.encodeString(value)))
            }
        }
        return query
    }

    /// A sample request's body and its content type: the contract's
    /// example, else one made from the schema; as JSON where the endpoint
    /// takes JSON, else as a form, multipart parts, or items in their framing.
    static func sampleBody(for endpoint: Endpoint, sampler: SchemaSampler) -> (contentType: String?, bytes: [UInt8]) {
        let encoded = FormEncoding.percentEncoded
        var body: [UInt8] = []
        var contentType: String?
        // The body: the contract's example, else one made from the schema;
        // as JSON where the endpoint takes JSON, else as a form.
        if let spec = endpoint.body, spec.schema == nil, spec.example == nil, let itemSchema = spec.itemSchema,
            let type = spec.contentTypes.first(where: { SequentialMedia($0) != nil }).map(SequentialMedia.withBoundary),
            let media = SequentialMedia(type), let item = sampler.sample(itemSchema)
        {
            // Items: two made from the item schema, in the body's framing.
            contentType = type
            body =
                (media.write(item, last: false, limit: Expression.maximumBuild) ?? [])
                + (media.write(item, last: true, limit: Expression.maximumBuild) ?? [])
        } else if let spec = endpoint.body, let value = spec.example ?? spec.schema.flatMap(sampler.sample) {
            if let json = spec.contentTypes.first(where: MediaTypes.isJSON) ?? (spec.contentTypes.isEmpty ? "application/json" : nil) {
                contentType = json
                body = JSONWriter.encode(value)
            } else if spec.contentTypes.contains("application/x-www-form-urlencoded"), let fields = value.objectValue {
                contentType = "application/x-www-form-urlencoded"
                body = Array(
                    fields.pairs.compactMap { pair -> String? in
                        guard let text = pair.value.parameterText else { return nil }
                        return encoded(pair.key) + "=" + encoded(text)
                    }.joined(separator: "&").utf8)
            } else if spec.contentTypes.contains("multipart/form-data"), let fields = value.objectValue {
                let boundary = "doppel-sample-boundary"
                contentType = "multipart/form-data; boundary=\(boundary)"
                body = FormEncoding.multipart(
                    fields.pairs.map {
                        ($0.key, nil, nil, $0.value.stringValue ?? JSONWriter.encodeString($0.value))
                    }, boundary: boundary)
            } else {
                contentType = spec.contentTypes.first ?? "application/json"
                body = JSONWriter.encode(value)
            }
        }
        return (contentType, body)
    }

    /// What `response` of `endpoint` sends for a sample request in a fresh
    /// session: the contract's initial state and data, the clock at
    /// 2026-01-01, path, query and body made from the endpoint's schemas
    /// (their examples and defaults first), and no credentials. An example
    /// for an export; nil when the body has templates that need more than
    /// that (a token's claims, a record the request would have created),
    /// renders to something its schema refuses, or has no JSON or text body.
    package func sampleBody(of response: ResponseDefinition, for endpoint: Endpoint) -> JSON? {
        let request = sampleRequest(for: endpoint)
        let now = Self.sampleInstant
        var context = EvaluationContext(roots: baseRoots(sessionID: SessionStore.defaultID), now: now, request: request)
        guard case .valid(let parts) = validator.validate(request, queryItems: request.queryItems, pathParameters: [:], for: endpoint) else {
            return nil
        }
        context.use(parts)
        if case .matched(_, let parameters) = router.route(method: request.method, path: request.path, conditions: { _, _ in [] }),
            !parameters.isEmpty
        {
            context.roots[.path] = Self.object(parameters)
        }
        // What an error answer's templates see: one failing field, as a validation failure would give.
        let issues = [ValidationIssue(pointer: "/body", message: "is required")]
        context.roots[.errors] = .array(issues.map(\.json))
        context.roots[.problem] = Problem.validationFailed(issues).json
        context.roots[.retryAfter] = .int(60)
        if let limit = rateLimiter.limits.first(where: { $0.covers(endpoint.id) }) {
            context.roots[.rateLimit] = RateLimiter.value(limit, remaining: limit.limit - 1, reset: Int(limit.window.rounded(.up)))
        }
        var data = SessionData(state: contract.state.initial)
        data.clock.set(now, real: now)
        do {
            var why = Reason()
            let chosen = try selector.select(
                from: [response], forced: response, endpointBindings: endpoint.bindings, context: &context, data: &data,
                sequenceScope: endpoint.id, why: &why)
            context.roots[.state] = .object(data.state)
            let delivery = try renderer.render(chosen, in: context, endpointID: endpoint.id)
            guard var rendered = delivery.response else { return nil }
            // A stream's example is its parts together (the events of an event stream, the chunks of a body).
            if rendered.body.isEmpty, case .stream(_, let parts) = delivery { rendered.body = parts.flatMap(\.bytes) }
            guard !rendered.body.isEmpty else { return nil }
            let value: JSON?
            if let type = response.body.contentType, MediaTypes.isJSON(type) {
                value = try? JSONReader.parse(rendered.body)
            } else {
                value = String(bytes: rendered.body, encoding: .utf8).map { .string($0) }
            }
            // An example that breaks the response's own schema (a template that needed what the sample lacks) is no example.
            if let value, let schema = response.schema, !SchemaValidator(registry: contract.schemas).validate(value, against: schema).isEmpty {
                return nil
            }
            return value
        } catch {
            return nil
        }
    }
}
