import DoppelCore
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

        // MARK: Schemas

        /// The schema a `$ref` names, and its name.
        func resolve(_ schema: JSON, in schemas: [String: JSON]) -> (JSON, String?) {
            var current = schema
            var name: String?
            for _ in 0..<16 {
                guard let ref = current["$ref"]?.stringValue, ref.hasPrefix("#/components/schemas/") else { break }
                name = String(ref.dropFirst("#/components/schemas/".count))
                guard let target = schemas[name!] else { break }
                // Keywords beside the reference stay with it.
                var merged = target.objectValue ?? JSONObject()
                for (key, value) in current.objectValue?.pairs ?? JSONObject().pairs where key != "$ref" { merged[key] = value }
                current = .object(merged)
            }
            return (current, name)
        }

        /// The most `allOf` branches merged into one schema, however deep:
        /// a document's nesting is followed to any depth, and a branch that
        /// names itself again (a cycle) ends at this budget, not in a loop.
        static let maximumMergedBranches = 10_000

        /// `allOf` branches merged, at any depth: their properties and `required`, for comparing.
        func flattened(_ schema: JSON, in schemas: [String: JSON]) -> JSON {
            var budget = Self.maximumMergedBranches
            return flattened(schema, in: schemas, budget: &budget)
        }

        private func flattened(_ schema: JSON, in schemas: [String: JSON], budget: inout Int) -> JSON {
            guard budget > 0, let branches = schema["allOf"]?.arrayValue, var object = schema.objectValue else { return schema }
            object["allOf"] = nil
            var properties = object["properties"]?.objectValue ?? JSONObject()
            var required = object["required"]?.arrayValue ?? []
            for branch in branches {
                budget -= 1
                guard budget > 0 else { break }
                let part = flattened(resolve(branch, in: schemas).0, in: schemas, budget: &budget)
                for (name, value) in part["properties"]?.objectValue?.pairs ?? JSONObject().pairs where properties[name] == nil {
                    properties[name] = value
                }
                for name in part["required"]?.arrayValue ?? [] where !required.contains(name) { required.append(name) }
                if object["type"] == nil, let type = part["type"] { object["type"] = type }
            }
            if !properties.isEmpty { object["properties"] = .object(properties) }
            if !required.isEmpty { object["required"] = .array(required) }
            return .object(object)
        }

        static func types(_ schema: JSON) -> Set<String>? {
            var set: Set<String>?
            if let one = schema["type"]?.stringValue { set = [one] }
            if let many = schema["type"]?.arrayValue { set = Set(many.compactMap(\.stringValue)) }
            if schema["enum"]?.arrayValue?.contains(.null) == true { set?.insert("null") }
            return set
        }

        /// Whether every value of `narrow`'s types is one of `wide`'s (an integer is a number).
        static func admits(_ wide: Set<String>, _ narrow: Set<String>) -> Bool {
            narrow.allSatisfy { wide.contains($0) || ($0 == "integer" && wide.contains("number")) }
        }

        /// Compares one schema's versions. A request's must accept all the old
        /// accepted; a response's must send nothing the old could not.
        var maximumChanges: Int { ContractDiff.maximumChanges }

        mutating func compareSchema(_ a: JSON, _ b: JSON, request: Bool, _ signature: String, _ place: String, _ pointer: String) {
            let (oldResolved, oldName) = resolve(a, in: oldSchemas)
            let (newResolved, newName) = resolve(b, in: newSchemas)
            // A named pair is compared once per endpoint and place, and not
            // again inside itself (a recursive schema ends): a change to a
            // shared schema is reported at every endpoint that uses it.
            var entered: String?
            if let oldName, let newName {
                let key = "\(request)|\(signature)|\(place)|\(oldName)|\(newName)"
                guard !comparing.contains(key), comparisons < 100_000 else { return }
                comparing.insert(key)
                comparisons += 1
                entered = key
            }
            defer { if let entered { comparing.remove(entered) } }
            guard changes.count < maximumChanges else { return }
            let old = flattened(oldResolved, in: oldSchemas)
            let new = flattened(newResolved, in: newSchemas)
            // Equal text is an equal schema only where no reference inside may have changed (`items: Item`).
            if old == new, oldName == nil, newName == nil, !Self.hasReference(old) { return }
            let where_ = pointer.isEmpty ? place : "\(place) \(pointer)"

            if let oldTypes = Self.types(old), let newTypes = Self.types(new), oldTypes != newTypes {
                if request {
                    if Self.admits(newTypes, oldTypes) {
                        add("request-type-widened", false, signature, where_, "\(Self.list(oldTypes)) became \(Self.list(newTypes))")
                    } else {
                        add(
                            "request-type-narrowed", true, signature, where_,
                            "\(Self.list(oldTypes)) became \(Self.list(newTypes)): values clients send may be refused")
                    }
                } else if Self.admits(oldTypes, newTypes) {
                    add("response-type-narrowed", false, signature, where_, "\(Self.list(oldTypes)) became \(Self.list(newTypes))")
                } else if newTypes.subtracting(oldTypes) == ["null"] {
                    add("response-field-nullable", true, signature, where_, "the value may now be null")
                } else {
                    add("response-type-changed", true, signature, where_, "\(Self.list(oldTypes)) became \(Self.list(newTypes))")
                }
            }

            if let oldValues = old["enum"]?.arrayValue, let newValues = new["enum"]?.arrayValue {
                // Sets, so 60,000 values compare in linear time.
                let oldSet = Set(oldValues)
                let newSet = Set(newValues)
                let removed = oldValues.filter { !newSet.contains($0) }
                let added = newValues.filter { !oldSet.contains($0) }
                if request {
                    if !removed.isEmpty { add("request-enum-narrowed", true, signature, where_, "no longer accepts \(Self.values(removed))") }
                    if !added.isEmpty { add("request-enum-widened", false, signature, where_, "also accepts \(Self.values(added))") }
                } else {
                    if !added.isEmpty {
                        add(
                            "response-enum-widened", true, signature, where_,
                            "may now be \(Self.values(added)), which a client's exhaustive switch does not know")
                    }
                    if !removed.isEmpty { add("response-enum-narrowed", false, signature, where_, "is no longer \(Self.values(removed))") }
                }
            } else if request, old["enum"] == nil, let newValues = new["enum"]?.arrayValue {
                add("request-enum-narrowed", true, signature, where_, "now only \(Self.values(newValues))")
            }

            if request { compareBounds(old, new, signature, where_) }

            // Objects: their members.
            let oldProperties = old["properties"]?.objectValue ?? JSONObject()
            let newProperties = new["properties"]?.objectValue ?? JSONObject()
            let oldRequired = Set(old["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            let newRequired = Set(new["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            for (name, schema) in oldProperties.pairs {
                let member = pointer + "/" + SchemaValidator.escape(name)
                guard let after = newProperties[name] else {
                    if request {
                        add(
                            "request-field-removed", new["additionalProperties"] == .bool(false), signature, "\(place) \(member)",
                            new["additionalProperties"] == .bool(false) ? "the field is gone and others are refused" : "the field is no longer read")
                    } else {
                        add("response-field-removed", true, signature, "\(place) \(member)", "the field is gone")
                    }
                    continue
                }
                if request, newRequired.contains(name), !oldRequired.contains(name) {
                    add("request-field-now-required", true, signature, "\(place) \(member)", "the field is now required")
                }
                if !request, oldRequired.contains(name), !newRequired.contains(name) {
                    add("response-field-now-optional", true, signature, "\(place) \(member)", "the field may now be absent")
                }
                compareSchema(schema, after, request: request, signature, place, member)
            }
            for (name, _) in newProperties.pairs where oldProperties[name] == nil {
                let member = pointer + "/" + SchemaValidator.escape(name)
                if request {
                    if newRequired.contains(name) {
                        add("request-field-added-required", true, signature, "\(place) \(member)", "a new required field")
                    } else {
                        add("request-field-added", false, signature, "\(place) \(member)", "a new optional field")
                    }
                } else {
                    add("response-field-added", false, signature, "\(place) \(member)", "a new field")
                }
            }
            if let oldItems = old["items"], let newItems = new["items"] {
                compareSchema(oldItems, newItems, request: request, signature, place, pointer + "/[]")
            }
            for keyword in ["oneOf", "anyOf"] {
                compareVariants(keyword, old[keyword]?.arrayValue, new[keyword]?.arrayValue, request: request, signature, place, pointer)
            }
        }

        /// A `oneOf` or `anyOf`'s branches: matched by the schema they name
        /// (`$ref`), the rest by position. A request that loses a branch
        /// refuses values clients send; an answer that gains one may send
        /// what clients cannot read. Matched branches are compared as schemas.
        mutating func compareVariants(
            _ keyword: String, _ old: [JSON]?, _ new: [JSON]?, request: Bool, _ signature: String, _ place: String, _ pointer: String
        ) {
            guard old != nil || new != nil else { return }
            let oldBranches = old ?? []
            let newBranches = new ?? []
            let at = "\(place) \(pointer)/\(keyword)"
            if old == nil || new == nil {
                // A schema that became a choice, or a choice that became one schema.
                add(
                    request ? "request-variants-changed" : "response-variants-changed", true, signature, at,
                    old == nil ? "the value is now one of \(newBranches.count) schemas" : "the value is no longer one of \(oldBranches.count) schemas"
                )
                return
            }
            func name(_ branch: JSON) -> String? { branch["$ref"]?.stringValue }
            var unmatched = Array(newBranches.indices)
            var pairs: [(Int, Int)] = []
            var removed: [Int] = []
            for (index, branch) in oldBranches.enumerated() {
                if let ref = name(branch), let found = unmatched.firstIndex(where: { name(newBranches[$0]) == ref }) {
                    pairs.append((index, unmatched.remove(at: found)))
                } else {
                    removed.append(index)
                }
            }
            // Branches without a matching name pair up in order (an inline branch edited in place).
            var stillRemoved: [Int] = []
            for index in removed {
                if name(oldBranches[index]) == nil, let found = unmatched.firstIndex(where: { name(newBranches[$0]) == nil }) {
                    pairs.append((index, unmatched.remove(at: found)))
                } else {
                    stillRemoved.append(index)
                }
            }
            func label(_ branch: JSON, _ index: Int) -> String {
                name(branch).map { String($0.split(separator: "/").last ?? "") } ?? "branch \(index + 1)"
            }
            for index in stillRemoved {
                add(
                    request ? "request-variant-removed" : "response-variant-removed", request, signature, at,
                    request ? "\(label(oldBranches[index], index)) is no longer accepted" : "\(label(oldBranches[index], index)) is no longer sent")
            }
            for index in unmatched {
                add(
                    request ? "request-variant-added" : "response-variant-added", !request, signature, at,
                    request
                        ? "\(label(newBranches[index], index)) is also accepted"
                        : "\(label(newBranches[index], index)) may now be sent, which clients do not know")
            }
            for (a, b) in pairs.sorted(by: { $0.0 < $1.0 }) {
                compareSchema(oldBranches[a], newBranches[b], request: request, signature, place, "\(pointer)/\(keyword)/\(a)")
            }
        }

        /// A request's bounds: tighter ones refuse what clients sent.
        mutating func compareBounds(_ old: JSON, _ new: JSON, _ signature: String, _ place: String) {
            func number(_ schema: JSON, _ key: String) -> Double? { schema[key]?.numberValue }
            let lower = ["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"]
            let upper = ["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"]
            for key in lower + upper {
                let before = number(old, key)
                let after = number(new, key)
                guard before != after else { continue }
                let tighter: Bool
                switch (before, after) {
                case (nil, _?): tighter = true
                case (_?, nil): tighter = false
                case (let b?, let a?): tighter = lower.contains(key) ? a > b : a < b
                default: continue
                }
                let text = "\(key) \(before.map(Self.format) ?? "none") became \(after.map(Self.format) ?? "none")"
                add(tighter ? "request-range-narrowed" : "request-range-widened", tighter, signature, place, text)
            }
            if let pattern = new["pattern"], pattern != old["pattern"] {
                add("request-pattern-changed", true, signature, place, "the pattern became \(pattern.stringValue ?? "")")
            }
            if let format = new["format"], format != old["format"] {
                add("request-format-changed", true, signature, place, "the format became \(format.stringValue ?? "")")
            }
        }

        /// Whether a schema refers to a named one anywhere inside.
        static func hasReference(_ schema: JSON) -> Bool {
            switch schema {
            case .object(let members): members.pairs.contains { $0.key == "$ref" || hasReference($0.value) }
            case .array(let items): items.contains(where: hasReference)
            default: false
            }
        }

        static func list(_ types: Set<String>) -> String { types.sorted().joined(separator: " or ") }

        static func values(_ values: [JSON]) -> String {
            values.prefix(5).map { String(decoding: JSONWriter.encode($0), as: UTF8.self) }.joined(separator: ", ") + (values.count > 5 ? ", …" : "")
        }

        static func format(_ value: Double) -> String {
            value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
        }
    }
}
