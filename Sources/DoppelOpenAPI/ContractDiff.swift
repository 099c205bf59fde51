import DoppelCore
import DoppelGraphQL
import Foundation

/// `doppel diff`: what changed between two versions of a contract (Doppel
/// contracts or OpenAPI documents, in any mix), each change breaking or
/// compatible for a client built against the old one.
///
/// The rule: a client keeps working when every request it sends is still
/// accepted, and every answer it may get is one it can read. So a request
/// may accept more (a field added as optional, a wider range, a new enum
/// value) and an answer may say more (a field added); a request that
/// accepts less, an answer that may lack what it had or carry what it did
/// not (a removed field, a field that may be absent or null, an enum value
/// a client's exhaustive `switch` does not know), a removed endpoint or
/// status, or credentials the client does not send are breaking.
///
/// Endpoints are matched by method and path (parameter names aside), below
/// each version's base path. Schemas are compared in their JSON Schema form
/// (`OpenAPIExporter.schemaJSON`); a response without a schema by the shape
/// of its body.
public enum ContractDiff {
    /// One difference.
    public struct Change: Sendable, Equatable {
        /// What kind of change: `endpoint-removed`, `response-field-removed`, ...
        public let kind: String
        /// Whether a client built against the old version may break.
        public let breaking: Bool
        /// `GET /children/{}`, or empty for the whole contract.
        public let endpoint: String
        /// Where: `200 response body /name`, `query limit`, ...
        public let place: String
        /// What changed, in words.
        public let detail: String

        package init(kind: String, breaking: Bool, endpoint: String, place: String, detail: String) {
            (self.kind, self.breaking, self.endpoint, self.place, self.detail) = (kind, breaking, endpoint, place, detail)
        }

        /// The change as JSON, for `--format json`.
        public var json: JSON {
            .object(
                JSONObject([
                    ("kind", .string(kind)), ("breaking", .bool(breaking)), ("endpoint", .string(endpoint)),
                    ("place", .string(place)), ("detail", .string(detail)),
                ]))
        }
    }

    /// The most changes listed: two documents that share nothing are told
    /// apart without listing every schema keyword of each.
    public static let maximumChanges = 1_000

    /// Every change from `old` to `new`, breaking ones first (at most `maximumChanges`).
    public static func changes(from old: Contract, to new: Contract) -> [Change] {
        var differ = Differ(old: old, new: new)
        differ.compare()
        return differ.changes.filter(\.breaking) + differ.changes.filter { !$0.breaking }
    }

    struct Differ {
        let old: Contract
        let new: Contract
        let oldSchemas: [String: JSON]
        let newSchemas: [String: JSON]
        var changes: [Change] = []
        /// Named schema pairs being compared (per endpoint and place), so recursive schemas end.
        var comparing: Set<String> = []
        /// Named schema pairs compared in all: a bound on the work for documents of many shared schemas.
        var comparisons = 0

        init(old: Contract, new: Contract) {
            self.old = old
            self.new = new
            oldSchemas = old.schemas.mapValues(OpenAPIExporter.schemaJSON)
            newSchemas = new.schemas.mapValues(OpenAPIExporter.schemaJSON)
        }

        mutating func add(_ kind: String, _ breaking: Bool, _ endpoint: String, _ place: String, _ detail: String) {
            guard changes.count < maximumChanges else { return }
            let change = Change(kind: kind, breaking: breaking, endpoint: endpoint, place: place, detail: detail)
            if !changes.contains(change) { changes.append(change) }
        }

        /// `GET /children/{}` below the base path.
        static func signature(_ endpoint: Endpoint, basePath: String) -> String {
            var path = OpenAPIExporter.relativePath(endpoint.path.template, basePath: basePath)
            for name in endpoint.path.parameterNames {
                path = path.replacingOccurrences(of: "{\(name)...}", with: "{}").replacingOccurrences(of: "{\(name)}", with: "{}")
            }
            return endpoint.method + " " + path
        }

        mutating func compare() {
            if old.basePath != new.basePath {
                add(
                    "base-path-changed", true, "", "base path",
                    "'\(old.basePath.isEmpty ? "/" : old.basePath)' became '\(new.basePath.isEmpty ? "/" : new.basePath)': every path moved")
            }
            let oldEndpoints = Dictionary(grouping: old.endpoints) { Self.signature($0, basePath: old.basePath) }
            let newEndpoints = Dictionary(grouping: new.endpoints) { Self.signature($0, basePath: new.basePath) }
            var seen: Set<String> = []
            for endpoint in old.endpoints {
                let signature = Self.signature(endpoint, basePath: old.basePath)
                guard seen.insert(signature).inserted else { continue }
                guard let counterpart = newEndpoints[signature]?.first else {
                    add("endpoint-removed", true, signature, "", "the endpoint is gone")
                    continue
                }
                compare(oldEndpoints[signature]!.first!, counterpart, signature)
            }
            for endpoint in new.endpoints {
                let signature = Self.signature(endpoint, basePath: new.basePath)
                if oldEndpoints[signature] == nil, seen.insert(signature).inserted {
                    add("endpoint-added", false, signature, "", "a new endpoint")
                }
            }
            compareGraphQL()
        }

        /// Two versions of a GraphQL section: their schemas compared type by type (`SchemaDiff`).
        mutating func compareGraphQL() {
            guard let before = old.graphql, let after = new.graphql,
                let schemaChanges = SchemaDiff.changes(from: before.schema, to: after.schema)
            else { return }
            let endpoint = "POST " + OpenAPIExporter.relativePath(after.path, basePath: new.basePath)
            for change in schemaChanges { add(change.kind, change.breaking, endpoint, change.place, change.detail) }
        }

        // MARK: One endpoint

        mutating func compare(_ a: Endpoint, _ b: Endpoint, _ signature: String) {
            compareAuth(a, b, signature)
            compareParameters("path", Self.pathSchema(a), Self.pathSchema(b), signature)
            // A querystring of form fields is the query's parameters by another name.
            func query(_ endpoint: Endpoint) -> Schema? {
                endpoint.query ?? endpoint.queryString.flatMap { $0.contentTypes.first == "application/x-www-form-urlencoded" ? $0.schema : nil }
            }
            for (place, oldSchema, newSchema) in [("query", query(a), query(b)), ("header", a.headers, b.headers)] {
                compareParameters(place, oldSchema.map(OpenAPIExporter.schemaJSON), newSchema.map(OpenAPIExporter.schemaJSON), signature)
            }
            compareBody(a.body, b.body, signature)
            compareResponses(a, b, signature)
            compareSocket(a, b, signature)
        }

        mutating func compareAuth(_ a: Endpoint, _ b: Endpoint, _ signature: String) {
            let oldKinds = Set(a.auth.compactMap { old.authSchemes[$0] }.map(Self.describe))
            let newKinds = Set(b.auth.compactMap { new.authSchemes[$0] }.map(Self.describe))
            if oldKinds.isEmpty, !newKinds.isEmpty {
                add("auth-added", true, signature, "auth", "the endpoint now requires credentials (\(newKinds.sorted().joined(separator: " or ")))")
            } else if !oldKinds.isEmpty, newKinds.isEmpty {
                add("auth-removed", false, signature, "auth", "the endpoint no longer requires credentials")
            } else if !oldKinds.isEmpty, oldKinds.isDisjoint(with: newKinds) {
                add(
                    "auth-scheme-changed", true, signature, "auth",
                    "\(oldKinds.sorted().joined(separator: " or ")) became \(newKinds.sorted().joined(separator: " or "))")
            } else if !oldKinds.isEmpty, !oldKinds.isSubset(of: newKinds) {
                add(
                    "auth-scheme-removed", true, signature, "auth",
                    "\(oldKinds.subtracting(newKinds).sorted().joined(separator: ", ")) is no longer accepted")
            }
        }

        /// The path parameters' schema: the template names them all, as
        /// strings where no `path` schema says more; each is required.
        static func pathSchema(_ endpoint: Endpoint) -> JSON? {
            guard !endpoint.path.parameterNames.isEmpty else { return nil }
            let declared = endpoint.pathParameters.map(OpenAPIExporter.schemaJSON)?["properties"]?.objectValue ?? JSONObject()
            let properties = endpoint.path.parameterNames.map { ($0, declared[$0] ?? ["type": "string"]) }
            return .object(
                JSONObject([
                    ("type", "object"), ("properties", .object(JSONObject(properties))),
                    ("required", .array(endpoint.path.parameterNames.map { .string($0) })),
                ]))
        }

        static func describe(_ scheme: AuthScheme) -> String {
            switch scheme.kind {
            case .bearer: scheme.format == .jwt ? "bearer (JWT)" : "bearer"
            case .basic: "basic"
            case .apiKey(let header, let query, let cookie):
                "API key in "
                    + ([header.map { "header \($0)" }, query.map { "query \($0)" }, cookie.map { "cookie \($0)" }].compactMap { $0 }.joined(
                        separator: ", "))
            }
        }

        mutating func compareParameters(_ place: String, _ a: JSON?, _ b: JSON?, _ signature: String) {
            let oldProperties = a?["properties"]?.objectValue ?? JSONObject()
            let newProperties = b?["properties"]?.objectValue ?? JSONObject()
            let oldRequired = Set(a?["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            let newRequired = Set(b?["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            for (name, schema) in newProperties.pairs {
                guard let before = oldProperties[name] else {
                    if newRequired.contains(name) || place == "path" {
                        add("parameter-added-required", true, signature, "\(place) \(name)", "a new required parameter")
                    } else {
                        add("parameter-added", false, signature, "\(place) \(name)", "a new optional parameter")
                    }
                    continue
                }
                if newRequired.contains(name), !oldRequired.contains(name) {
                    add("parameter-now-required", true, signature, "\(place) \(name)", "the parameter is now required")
                }
                compareSchema(before, schema, request: true, signature, "\(place) \(name)", "")
            }
            for (name, _) in oldProperties.pairs where newProperties[name] == nil {
                add(
                    "parameter-removed", false, signature, "\(place) \(name)",
                    "the parameter is no longer read (a client that sends it is not refused)")
            }
        }

        mutating func compareBody(_ a: BodySpec?, _ b: BodySpec?, _ signature: String) {
            guard let b else {
                if a != nil { add("request-body-removed", false, signature, "request body", "the body is no longer read") }
                return
            }
            guard let a else {
                add(
                    b.required ? "request-body-added-required" : "request-body-added", b.required, signature, "request body",
                    b.required ? "a body is now required" : "an optional body is now read")
                return
            }
            if b.required, !a.required { add("request-body-now-required", true, signature, "request body", "the body is now required") }
            let dropped = Set(a.contentTypes).subtracting(b.contentTypes)
            if !dropped.isEmpty {
                add(
                    "request-media-type-removed", true, signature, "request body", "\(dropped.sorted().joined(separator: ", ")) is no longer accepted"
                )
            }
            let oldSchema = a.schema.map(OpenAPIExporter.schemaJSON) ?? [:]
            let newSchema = b.schema.map(OpenAPIExporter.schemaJSON) ?? [:]
            compareSchema(oldSchema, newSchema, request: true, signature, "request body", "")
        }

        mutating func compareResponses(_ a: Endpoint, _ b: Endpoint, _ signature: String) {
            // A socket's close codes are compared with its rules (`compareSocket`).
            let oldStatuses = Self.statuses(old.documentedResponses(of: a))
            let newStatuses = Self.statuses(new.documentedResponses(of: b))
            // An endpoint that no longer asks for credentials no longer refuses them: its 401 goes with `auth-removed`.
            let refusals = b.auth.isEmpty ? old.unauthorizedStatuses(of: a) : []
            for status in oldStatuses where !newStatuses.contains(status) && !refusals.contains(status) {
                add("status-removed", true, signature, "\(status) response", "the status is no longer documented")
            }
            for status in newStatuses where !oldStatuses.contains(status) {
                add("status-added", false, signature, "\(status) response", "a newly documented status")
            }
            for status in oldStatuses where newStatuses.contains(status) {
                let before = old.documentedResponses(of: a).filter { $0.status == status }
                let after = new.documentedResponses(of: b).filter { $0.status == status }
                let place = "\(status) response"
                compareCallbacks(before, after, signature, place)
                comparePushes(before, after, signature, place)
                let oldHeaders = Set(before.flatMap { $0.headers.map { $0.0.lowercased() } }).subtracting(["content-type"])
                let newHeaders = Set(after.flatMap { $0.headers.map { $0.0.lowercased() } })
                for header in oldHeaders.subtracting(newHeaders).sorted() {
                    add("response-header-removed", true, signature, place, "header \(header) is no longer sent")
                }
                let oldType = before.lazy.compactMap { $0.body.contentType ?? $0.stream?.contentType }.first.map(MediaTypes.essence)
                let newType = after.lazy.compactMap { $0.body.contentType ?? $0.stream?.contentType }.first.map(MediaTypes.essence)
                if let oldType, let newType, oldType != newType {
                    add("response-media-type-changed", true, signature, place, "\(oldType) became \(newType)")
                    continue
                }
                guard let oldSchema = Self.bodySchema(before), let newSchema = Self.bodySchema(after) else { continue }
                compareSchema(oldSchema, newSchema, request: false, signature, place + " body", "")
            }
        }

        /// The statuses of responses, in order, without repeats.
        static func statuses(_ responses: [ResponseDefinition]) -> [Int] {
            var seen: Set<Int> = []
            return responses.map(\.status).filter { seen.insert($0).inserted }
        }

        /// A status's body schema: the first declared, else the first body's shape.
        static func bodySchema(_ responses: [ResponseDefinition]) -> JSON? {
            let leaves = responses.flatMap { $0.sequence.map(\.responses) ?? [$0] }
            if let declared = leaves.lazy.compactMap(\.schema).first { return OpenAPIExporter.schemaJSON(declared) }
            guard let first = leaves.first(where: { if case .json = $0.body { true } else { false } }) else { return nil }
            return OpenAPIExporter.inferredSchema(first.body)
        }

    }
}
