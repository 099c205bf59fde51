import DoppelCore
import DoppelServer
import Foundation

/// A run's requests: the valid one, and each invalid one, built from the contract.
extension ProviderVerifier.Run {
    // MARK: Requests

    /// The endpoint's sample request for one side: its credentials, and
    /// the ids that side's earlier answers gave.
    func request(for endpoint: Endpoint, side: Side, oracle: Bool, credentials: Bool = true, lastPathValue: String? = nil) -> RecordedRequest {
        let sample = samples.request(for: endpoint, from: self.oracle)
        // Path values: the sample's, or an id the run created under a collection.
        var values = endpoint.path.match(EndpointRouter.segments(of: sample.path)) ?? [:]
        let template = endpoint.path.template
        for name in endpoint.path.parameterNames {
            for (collection, id) in side.ids
            where template.hasPrefix(collection + "/{" + name + "}") || template.hasPrefix(collection + "/{" + name + "...}") {
                values[name] = id
            }
        }
        if let lastPathValue, let last = endpoint.path.parameterNames.last { values[last] = lastPathValue }
        var path = template
        for name in endpoint.path.parameterNames {
            let value = ScenarioRunner.encode(values[name] ?? "1")
            path = path.replacingOccurrences(of: "{\(name)...}", with: value).replacingOccurrences(of: "{\(name)}", with: value)
        }
        var headers = sample.headers.filter { $0.name.lowercased() != "authorization" && $0.name.lowercased() != "doppel-session" }
        var query = sample.query.map { [$0] } ?? []
        if credentials, !endpoint.auth.isEmpty {
            let schemes = endpoint.auth.compactMap { contract.authSchemes[$0] }
            if oracle {
                if let scheme = schemes.first { add(sampleCredential(for: scheme, token: side.token), to: &headers, query: &query) }
            } else if let token = side.freshToken ?? options.token ?? side.token, schemes.contains(where: { $0.kind == .bearer }) {
                headers.append((name: "Authorization", value: "Bearer \(token)"))
            } else if !options.headers.contains(where: { isCredential($0.name, in: schemes) }), let scheme = schemes.first {
                add(sampleCredential(for: scheme, token: side.token), to: &headers, query: &query)
            }
        }
        if !oracle {
            let schemes = endpoint.auth.compactMap { contract.authSchemes[$0] }
            for header in options.headers + side.freshHeaders where credentials || !isCredential(header.name, in: schemes) {
                headers.removeAll { $0.name.lowercased() == header.name.lowercased() }
                headers.append(header)
            }
            if let session = side.session ?? options.session, !headers.contains(where: { $0.name.lowercased() == MockEngine.sessionHeader }) {
                headers.append((name: "Doppel-Session", value: session))
            }
        } else {
            headers.append((name: "Doppel-Session", value: side.session ?? "doppel-verify"))
        }
        // A gRPC method's message, made from the `.proto`, is the request's JSON body (as the HTTP/2 door makes it).
        let grpcBody = grpcSampleBody(for: endpoint.id)
        if grpcBody != nil {
            headers.removeAll { $0.name.lowercased() == "content-type" }
            headers.append((name: "Content-Type", value: "application/json"))
        }
        // The template has the base path already.
        return RecordedRequest(
            method: sample.method, path: path,
            query: query.isEmpty ? nil : query.joined(separator: "&"), headers: headers,
            body: Self.withCreatedIDs(grpcBody ?? sample.body, side.ids))
    }

    /// A JSON body whose members name records the run created (`child_id`
    /// for a record POSTed to `/children`) carries those records' ids.
    static func withCreatedIDs(_ body: [UInt8], _ ids: [String: String]) -> [UInt8] {
        guard !ids.isEmpty, case .object(var object)? = try? JSONReader.parse(body) else { return body }
        var changed = false
        for (key, value) in object.pairs where value.stringValue != nil || value.intValue != nil {
            guard let stem = idStem(of: key) else { continue }
            let names: Set = [stem, plural(stem)]
            guard let id = ids.first(where: { names.contains(($0.key.split(separator: "/").last.map(String.init) ?? "").lowercased()) })?.value
            else { continue }
            object[key] = value.intValue != nil ? (Int(id).map(JSON.int) ?? .string(id)) : .string(id)
            changed = true
        }
        return changed ? JSONWriter.encode(.object(object)) : body
    }

    /// The record a member names by its id, lowercased: `child_id` and
    /// `childId` name `child`; any other member names none.
    static func idStem(of key: String) -> String? {
        let stem = key.hasSuffix("_id") ? key.dropLast(3) : key.hasSuffix("Id") ? key.dropLast(2) : ""
        return stem.isEmpty ? nil : stem.lowercased()
    }

    /// The English plural of a resource's name: `child` → `children`, `story` → `stories`.
    static func plural(_ word: String) -> String {
        let irregular = ["child": "children", "person": "people", "man": "men", "woman": "women", "mouse": "mice"]
        if let known = irregular[word.lowercased()] { return known }
        if word.hasSuffix("y"), let before = word.dropLast().last, !"aeiou".contains(before) { return word.dropLast() + "ies" }
        if ["s", "x", "z", "ch", "sh"].contains(where: word.hasSuffix) { return word + "es" }
        return word + "s"
    }

    /// A credential the contract takes: the first it lists, else one of the right shape.
    func sampleCredential(for scheme: AuthScheme, token: String?) -> Credential {
        let listed = scheme.accepted?.sorted().first
        switch scheme.kind {
        case .bearer:
            return .header(
                "Authorization", "Bearer " + (token ?? listed ?? "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJzYW1wbGUtdXNlciJ9.c2FtcGxl"))
        case .basic:
            return .header("Authorization", "Basic " + Data((listed ?? "user:password").utf8).base64EncodedString())
        case .apiKey(let header, let query, let cookie):
            let key = listed ?? "doppel-verify-key"
            if let header { return .header(header, key) }
            if let query { return .query(query, key) }
            return .header("Cookie", "\(cookie ?? "key")=\(key)")
        }
    }

    enum Credential {
        case header(String, String)
        case query(String, String)
    }

    func add(_ credential: Credential, to headers: inout [(name: String, value: String)], query: inout [String]) {
        switch credential {
        case .header(let name, let value): headers.append((name: name, value: value))
        case .query(let name, let value): query.append(ScenarioRunner.encode(name) + "=" + ScenarioRunner.encode(value))
        }
    }

    /// Whether a header carries one of these schemes' credentials.
    func isCredential(_ name: String, in schemes: [AuthScheme]) -> Bool {
        let lowered = name.lowercased()
        if lowered == "authorization" || lowered == "cookie" { return true }
        return schemes.contains { if case .apiKey(let header?, _, _) = $0.kind { header.lowercased() == lowered } else { false } }
    }

    /// Invalid variants of the valid request, by what makes them invalid.
    func invalidInputs(of endpoint: Endpoint) -> [(String, (inout RecordedRequest) -> Void)] {
        invalidBodies(of: endpoint) + invalidQueries(of: endpoint) + invalidHeaders(of: endpoint)
    }

    /// A body with a required member left out, a member of the wrong type
    /// or out of range, malformed JSON, an item of the wrong type.
    func invalidBodies(of endpoint: Endpoint) -> [(String, (inout RecordedRequest) -> Void)] {
        var inputs: [(String, (inout RecordedRequest) -> Void)] = []
        if let spec = endpoint.body, let schema = spec.schema.map(resolved),
            spec.contentTypes.isEmpty || spec.contentTypes.contains(where: MediaTypes.isJSON)
        {
            if let name = schema.required.first {
                inputs.append(("required body member '\(name)' left out", { request in Self.editBody(&request) { $0[name] = nil } }))
            }
            if let (name, property) = schema.properties.first(where: { wrongValue(for: resolved($0.1)) != nil }),
                let wrong = wrongValue(for: resolved(property))
            {
                inputs.append(("body member '\(name)' of the wrong type", { request in Self.editBody(&request) { $0[name] = wrong } }))
            }
            if let (name, property) = schema.properties.first(where: { outOfRange(for: resolved($0.1)) != nil }),
                let outside = outOfRange(for: resolved(property))
            {
                inputs.append(("body member '\(name)' out of range", { request in Self.editBody(&request) { $0[name] = outside } }))
            }
            inputs.append(
                (
                    "malformed JSON",
                    { request in
                        request.body = Array("{\"unfinished\": ".utf8)
                        request.headers.removeAll { $0.name == "content-type" }
                        request.headers.append((name: "content-type", value: "application/json"))
                    }
                ))
        }
        if let spec = endpoint.body, let itemSchema = spec.itemSchema, let wrong = wrongValue(for: resolved(itemSchema)) {
            inputs.append(
                (
                    "an item of the wrong type",
                    { request in
                        guard let type = request.header("content-type"), let media = SequentialMedia(type),
                            let items = try? media.read(request.body), !items.isEmpty
                        else { return }
                        let sent = items + [wrong]
                        request.body = sent.enumerated().flatMap {
                            media.write($1, last: $0 == sent.count - 1, limit: Expression.maximumBuild) ?? []
                        }
                    }
                ))
        }
        return inputs
    }

    /// A query string that is not JSON or left out, a required parameter
    /// left out, a parameter's bad values.
    func invalidQueries(of endpoint: Endpoint) -> [(String, (inout RecordedRequest) -> Void)] {
        var inputs: [(String, (inout RecordedRequest) -> Void)] = []
        if let spec = endpoint.queryString, spec.schema != nil {
            let type = spec.contentTypes.first ?? "application/x-www-form-urlencoded"
            if MediaTypes.isJSON(type) {
                inputs.append(
                    (
                        "a query string that is not JSON",
                        { request in
                            request = RecordedRequest(
                                method: request.method, path: request.path, query: "%7Bunfinished", headers: request.headers, body: request.body)
                        }
                    ))
            } else if spec.required {
                inputs.append(
                    (
                        "the required query string left out",
                        { request in
                            request = RecordedRequest(
                                method: request.method, path: request.path, query: nil, headers: request.headers, body: request.body)
                        }
                    ))
            }
        }
        if let query = endpoint.query ?? endpoint.queryString?.schema.map(resolved), let name = query.required.first,
            endpoint.queryString.map({ ($0.contentTypes.first ?? "application/x-www-form-urlencoded") == "application/x-www-form-urlencoded" })
                ?? true
        {
            inputs.append(
                (
                    "required query parameter '\(name)' left out",
                    { request in
                        let kept = (request.query ?? "").split(separator: "&").filter { !$0.hasPrefix(ScenarioRunner.encode(name) + "=") }
                        request = RecordedRequest(
                            method: request.method, path: request.path, query: kept.isEmpty ? nil : kept.joined(separator: "&"),
                            headers: request.headers, body: request.body)
                    }
                ))
        }
        if endpoint.queryString == nil, let query = endpoint.query {
            inputs += Self.badValues(query.properties.map { ($0.0, resolved($0.1)) }, called: "query parameter", set: Self.setQuery)
        }
        return inputs
    }

    /// A required header left out, a header's bad values.
    func invalidHeaders(of endpoint: Endpoint) -> [(String, (inout RecordedRequest) -> Void)] {
        var inputs: [(String, (inout RecordedRequest) -> Void)] = []
        if let headers = endpoint.headers,
            let name = headers.required.first(where: { !["accept", "content-type", "authorization"].contains($0.lowercased()) })
        {
            inputs.append(("required header '\(name)' left out", { request in request.headers.removeAll { $0.name == name.lowercased() } }))
        }
        if let headers = endpoint.headers {
            // As for the query, never at a credential's header.
            let schemes = endpoint.auth.compactMap { contract.authSchemes[$0] }
            inputs += Self.badValues(
                headers.properties.map { ($0.0, resolved($0.1)) }
                    .filter { !["accept", "content-type", "content-length"].contains($0.0.lowercased()) && !isCredential($0.0, in: schemes) },
                called: "header", set: Self.setHeader)
        }
        return inputs
    }

    /// Each kind of bad value once, at the first parameter (of a query
    /// or of headers) that can take it: past its bounds, of the wrong
    /// type, outside its enum.
    static func badValues(
        _ properties: [(String, Schema)], called kind: String,
        set: @escaping @Sendable (inout RecordedRequest, String, String) -> Void
    ) -> [(String, (inout RecordedRequest) -> Void)] {
        var inputs: [(String, (inout RecordedRequest) -> Void)] = []
        if let (name, value) = properties.lazy.compactMap({ name, schema in queryOutOfRange(schema).map { (name, $0) } }).first {
            inputs.append(("\(kind) '\(name)' out of range (\(value))", { set(&$0, name, value) }))
        }
        if let (name, _) = properties.first(where: { _, schema in
            schema.enumValues == nil && (schema.types ?? []).count == 1 && ["integer", "number", "boolean"].contains(schema.types![0])
        }) {
            inputs.append(("\(kind) '\(name)' of the wrong type", { set(&$0, name, "not-a-number") }))
        }
        if let (name, _) = properties.first(where: { _, schema in schema.enumValues?.allSatisfy({ $0.stringValue != nil }) ?? false }) {
            inputs.append(("\(kind) '\(name)' not one of its values", { set(&$0, name, "doppel-verify-not-listed") }))
        }
        return inputs
    }

    /// A query parameter's value just past its bounds, as sent.
    static func queryOutOfRange(_ schema: Schema) -> String? {
        let integer = schema.types == ["integer"]
        func text(_ number: Double) -> String {
            integer && number.rounded() == number && abs(number) < 9e15 ? String(Int(number)) : String(number)
        }
        if let maximum = schema.maximum { return text(integer ? maximum.rounded(.down) + 1 : maximum + 1) }
        if let minimum = schema.minimum { return text(integer ? minimum.rounded(.up) - 1 : minimum - 1) }
        if let maxLength = schema.maxLength, maxLength < 2_000 { return String(repeating: "x", count: maxLength + 1) }
        return nil
    }

    /// The request with one query parameter set to `value` (added, or in place of its values).
    static func setQuery(_ request: inout RecordedRequest, _ name: String, _ value: String) {
        let key = ScenarioRunner.encode(name)
        var pairs = (request.query ?? "").split(separator: "&").map(String.init).filter { $0 != key && !$0.hasPrefix(key + "=") }
        pairs.append(key + "=" + ScenarioRunner.encode(value))
        request = RecordedRequest(
            method: request.method, path: request.path, query: pairs.joined(separator: "&"), headers: request.headers, body: request.body)
    }

    /// The request with one header set to `value` (added, or in place of its values).
    static func setHeader(_ request: inout RecordedRequest, _ name: String, _ value: String) {
        request.headers.removeAll { $0.name.lowercased() == name.lowercased() }
        request.headers.append((name: name.lowercased(), value: value))
    }

    static func editBody(_ request: inout RecordedRequest, _ edit: (inout JSONObject) -> Void) {
        guard case .object(var object)? = try? JSONReader.parse(request.body) else { return }
        edit(&object)
        request.body = JSONWriter.encode(.object(object))
    }

    func resolved(_ schema: Schema) -> Schema {
        var current = schema
        for _ in 0..<16 {
            guard let ref = current.ref, current.types == nil, current.properties.isEmpty, let target = contract.schemas[ref] else { break }
            current = target
        }
        return current
    }

    /// A value of another type than the schema's one type.
    func wrongValue(for schema: Schema) -> JSON? {
        guard let types = schema.types, types.count == 1, !schema.nullable else { return nil }
        switch types[0] {
        case "string": return .int(12345)
        case "integer", "number": return .string("not a number")
        case "boolean": return .string("not a boolean")
        case "array": return .string("not an array")
        case "object": return .string("not an object")
        default: return nil
        }
    }

    /// A value just past the schema's bounds.
    func outOfRange(for schema: Schema) -> JSON? {
        if let minimum = schema.minimum { return .double(minimum - 1) }
        if let maximum = schema.maximum { return .double(maximum + 1) }
        if let maxLength = schema.maxLength, maxLength < 10_000 { return .string(String(repeating: "x", count: maxLength + 1)) }
        if let minLength = schema.minLength, minLength > 0 { return .string("") }
        if let values = schema.enumValues, values.allSatisfy({ $0.stringValue != nil }) { return .string("doppel-verify-not-listed") }
        return nil
    }

    /// A value for the last path parameter no record has, where a 404 is documented.
    mutating func unknownID(for endpoint: Endpoint) -> String? {
        guard let last = endpoint.path.parameterNames.last, contract.statuses(of: endpoint).contains(404) else { return nil }
        let schema = endpoint.pathParameters?.property(last).map(resolved)
        let bits = random.next()
        if schema?.format == "uuid" {
            let hex = String(format: "%016llx%016llx", bits, random.next())
            let h = Array(hex)
            return String(h[0..<8]) + "-" + String(h[8..<12]) + "-4" + String(h[13..<16]) + "-8" + String(h[17..<20]) + "-" + String(h[20..<32])
        }
        if let types = schema?.types, types.contains("integer") || types.contains("number") {
            return String(900_000_000 + Int(bits % 99_999_999))
        }
        return "doppel-verify-unknown-" + String(bits % 0xFFFF_FFFF, radix: 16)
    }
}
