import DoppelCore
import Foundation
import GraphQL
import OrderedCollections

/// One operation's execution: what every field's resolver reaches (the
/// contract through the server's own path, in the request's session), and
/// how many fields it may still resolve.
final class GraphQLCall: Sendable {
    let caller: any ContractCaller
    let definition: GraphQLDefinition
    let resolvers: Set<String>
    /// The request's header fields the contract's calls carry (its token, its session).
    let headers: [(name: String, value: String)]
    /// `{type, name}` of the operation, as the contract's calls see it (`operation`).
    let operation: JSON
    private let left: Locked<Int>

    init(
        caller: any ContractCaller, definition: GraphQLDefinition, headers: [(name: String, value: String)], operation: JSON,
        preference: (header: String, endpoints: Set<String>)? = nil
    ) {
        self.caller = caller
        self.preference = preference
        self.definition = definition
        self.resolvers = Set(definition.resolvers)
        self.headers = headers
        self.operation = operation
        self.left = Locked(definition.maxFields)
    }

    /// One more field resolved; past `max_fields` the field is an error (and null), and so is every later one.
    func spend(_ info: GraphQLResolveInfo) throws {
        let allowed = left.withLock { left in
            left -= 1
            return left >= 0
        }
        guard allowed else {
            throw GraphQLError(
                message: "The operation resolves more than \(definition.maxFields) fields (max_fields); ask for fewer",
                nodes: info.fieldASTs, path: info.path, extensions: ["code": "FIELD_LIMIT_EXCEEDED"])
        }
    }

    /// The request's `Prefer`, and the endpoints (the operation's, resolvers') that document what it asks for: their calls carry it.
    let preference: (header: String, endpoints: Set<String>)?

    /// A request of the contract's to endpoint `id`, in the operation's session and with its credentials.
    func request(_ body: JSON, naming query: String, to id: String) -> RecordedRequest {
        var headers = self.headers
        headers.append((name: "content-type", value: "application/json"))
        if let preference, preference.endpoints.contains(id) { headers.append((name: "prefer", value: preference.header)) }
        return RecordedRequest(
            method: "POST", target: definition.path + "?" + query, headers: headers, body: JSONWriter.encode(body))
    }

    /// A field the contract answers (`resolvers:`): its endpoint's answer,
    /// the field's value or its GraphQL error; any other answer (an auth
    /// failure, a rate limit, a problem) is an error naming its status.
    func resolve(_ id: String, args: Map, parent: Map?, info: GraphQLResolveInfo) async throws -> Map {
        let body = JSON.object(
            JSONObject([
                ("graphql", .string(id)), ("args", MapJSON.json(args)), ("parent", parent.map(MapJSON.json) ?? .null), ("operation", operation),
                (
                    "path",
                    .array(info.path.elements.map { element in if case .index(let i) = element { .int(i) } else { .string(element.description) } })
                ),
            ]))
        let response = await caller.send(request(body, naming: "field=" + id, to: id))
        let answer: JSON? = try? JSONReader.parse(response.body)
        let object: JSONObject? = answer?.objectValue
        if response.endpointID == id, let object {
            if let value = object["value"] { return MapJSON.map(value) }
            if object["skip"] == .bool(true) {
                throw GraphQLError(
                    message: "\(id) passed over this event", nodes: info.fieldASTs, path: info.path, extensions: [Self.skipMarker: true])
            }
            if let error = object["error"]?.objectValue { throw Self.error(error, id: id, info: info) }
        }
        var extensions: [String: Map] = ["code": .string("HTTP_\(response.status)"), "status": Map(response.status)]
        if let answer { extensions["body"] = MapJSON.map(answer) }
        var message = "\(id) was answered \(response.status)"
        for key in ["detail", "message", "error"] {
            if let text = object?[key]?.stringValue {
                message += ": " + text
                break
            }
        }
        throw GraphQLError(message: message, nodes: info.fieldASTs, path: info.path, extensions: extensions)
    }

    /// The extension of the error that says a subscription field's resolver answered `skip: true`: the event is not sent.
    static let skipMarker = "doppelSkippedEvent"

    /// A resolver's `error:` as the field's GraphQL error.
    static func error(_ error: JSONObject, id: String, info: GraphQLResolveInfo) -> GraphQLError {
        var extensions: [String: Map] = [:]
        if let given = error["extensions"]?.objectValue {
            for (key, value) in given.pairs { extensions[key] = MapJSON.map(value) }
        }
        let message: String = error["message"]?.interpolationText ?? "\(id) failed"
        return GraphQLError(message: message, nodes: info.fieldASTs, path: info.path, extensions: extensions)
    }
}

/// The resolver every field of a served schema has: the contract's answer
/// for a field it resolves (`Type.field`), else the parent value's member
/// of the field's name, else a value made from the schema.
enum FieldResolution {
    @Sendable static func resolve(
        _ source: any Sendable, _ args: Map, _ context: any Sendable, _ info: GraphQLResolveInfo
    ) async throws -> (
        any Sendable
    )? {
        guard let call = context as? GraphQLCall else { return nil }
        try call.spend(info)
        let id = info.parentType.name + "." + info.fieldName
        var parent = source as? Map
        // A subscription's root field: the root is `{field: event}`, and the pushed event is the field's value, or its resolver's `parent`.
        if info.operation.operation == .subscription, info.path.elements.count == 1, case .dictionary(let members)? = parent {
            let event = members[info.fieldName] ?? .null
            if !call.resolvers.contains(id) { return try shaped(event, as: info.returnType, info: info) }
            parent = event
        }
        let value: Map
        if call.resolvers.contains(id) {
            value = try await call.resolve(id, args: args, parent: parent, info: info)
        } else if case .dictionary(let members)? = parent, let member = members[info.fieldName] {
            value = member
        } else {
            value = MadeValue.of(info.returnType, info: info)
        }
        return try shaped(value, as: info.returnType, info: info)
    }

    /// A value as the library completes it: a list as a Swift array (of
    /// shaped items), null as nil, an object as its map; a value of the
    /// wrong kind for an object type is the field's error.
    static func shaped(_ value: Map, as type: GraphQLType, info: GraphQLResolveInfo) throws -> (any Sendable)? {
        let inner = (type as? GraphQLNonNull)?.ofType ?? type
        switch value {
        case .null, .undefined: return nil
        default: break
        }
        if let list = inner as? GraphQLList {
            guard case .array(let items) = value else {
                throw GraphQLError(
                    message: "expected a list for \(info.parentType.name).\(info.fieldName), got \(value)", nodes: info.fieldASTs, path: info.path)
            }
            return try items.map { try shaped($0, as: list.ofType, info: info) } as [(any Sendable)?]
        }
        if inner is GraphQLObjectType || inner is GraphQLAbstractType {
            guard case .dictionary = value else {
                throw GraphQLError(
                    message: "expected an object for \(info.parentType.name).\(info.fieldName), got \(value)", nodes: info.fieldASTs, path: info.path)
            }
        }
        return value
    }
}

/// Values made from the schema for fields nothing answers: deterministic
/// (the same query gets the same data), each a function of the field's
/// path; a field's description may give its value as `Example: ...`.
enum MadeValue {
    /// Items in a made list.
    static let listLength = 2

    static func of(_ type: GraphQLType, info: GraphQLResolveInfo) -> Map {
        var seed: UInt64 = 0xcbf2_9ce4_8422_2325
        for element in info.path.elements {
            for byte in element.description.utf8 {
                seed = (seed ^ UInt64(byte)) &* 0x100_0000_01b3
            }
            seed = (seed ^ 0x2f) &* 0x100_0000_01b3
        }
        let description = (info.parentType as? GraphQLObjectType).flatMap { try? $0.fields()[info.fieldName]?.description }
        return value(of: type, seed: seed, field: info.fieldName, example: description.flatMap(example(in:)), schema: info.schema)
    }

    /// The text after `Example:` in a description, to the end of its line.
    static func example(in description: String) -> String? {
        guard let marker = description.range(of: "Example:", options: .caseInsensitive) else { return nil }
        let rest = description[marker.upperBound...].prefix { $0 != "\n" }.trimmingCharacters(in: .whitespaces)
        return rest.isEmpty ? nil : rest
    }

    static func value(of type: GraphQLType, seed: UInt64, field: String, example: String?, schema: GraphQLSchema) -> Map {
        var generator = SplitMix64(seed: seed)
        let number = generator.next()
        switch type {
        case let nonNull as GraphQLNonNull:
            return value(of: nonNull.ofType, seed: seed, field: field, example: example, schema: schema)
        case let list as GraphQLList:
            return .array(
                (0..<listLength).map { _ in value(of: list.ofType, seed: generator.next(), field: field, example: example, schema: schema) })
        case let enumeration as GraphQLEnumType:
            let values = enumeration.values
            if let example, values.contains(where: { $0.name == example }) { return .string(example) }
            return values.isEmpty ? .null : .string(values[Int(number % UInt64(values.count))].name)
        case let scalar as GraphQLScalarType:
            switch scalar.name {
            case "Int": return Map(example.flatMap { Int($0) } ?? Int(number % 100))
            case "Float": return Map(example.flatMap { Double($0) } ?? Double(number % 10_000) / 100)
            case "Boolean": return Map(example.map { $0 == "true" } ?? (number % 2 == 0))
            case "ID": return .string(example ?? "\(field)_\(number % 1_000)")
            default: return .string(example ?? "\(field) \(number % 1_000)")
            }
        case let abstract as GraphQLAbstractType:
            let members = schema.getPossibleTypes(abstractType: abstract)
            guard !members.isEmpty else { return .null }
            return .dictionary(["__typename": .string(members[Int(number % UInt64(members.count))].name)])
        default:
            return .dictionary([:])
        }
    }
}

/// The library's values and Doppel's JSON, each into the other.
enum MapJSON {
    static func json(_ map: Map) -> JSON {
        switch map {
        case .undefined, .null: return .null
        case .bool(let value): return .bool(value)
        case .number(let number):
            switch number.storageType {
            case .bool: return .bool(number.boolValue)
            case .int: return .int(number.intValue)
            case .double, .unknown:
                let value = number.doubleValue
                if number.storageType == .unknown, value.rounded() == value, abs(value) < 9_007_199_254_740_992 { return .int(Int(value)) }
                return .double(value)
            }
        case .string(let value): return .string(value)
        case .array(let items): return .array(items.map(json))
        case .dictionary(let members): return .object(JSONObject(members.map { ($0.key, json($0.value)) }))
        }
    }

    static func map(_ json: JSON) -> Map {
        switch json {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .int(let value): return Map(value)
        case .double(let value): return Map(value)
        case .string(let value): return .string(value)
        case .array(let items): return .array(items.map(map))
        case .object(let object):
            var members: OrderedDictionary<String, Map> = [:]
            for (key, value) in object.pairs { members[key] = map(value) }
            return .dictionary(members)
        }
    }
}
