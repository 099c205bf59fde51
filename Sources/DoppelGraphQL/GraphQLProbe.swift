import DoppelCore
import GraphQL

/// An operation `doppel verify` sends to a GraphQL provider, built from the
/// contract's schema, and what its answer must keep: one per field of the
/// query type, selecting the field's leaf fields two levels deep (fields
/// that need arguments left out), required arguments given values made from
/// their types; an `ID` argument gets an id no record has.
///
/// Mutations are not sent: they would write to the provider, with inputs
/// made up.
package struct GraphQLProbe: Sendable {
    /// The field probed (`Query.story`).
    package let field: String
    /// The field's name, the key of its value in `data`.
    package let name: String
    package let query: String
    package let variables: JSON
    /// An `ID` argument was given an id no record has.
    package let unknownID: Bool
    /// What the answer's `data` must keep.
    let shape: Shape

    /// A selection's type, as a response's value must keep it.
    indirect enum Shape: Sendable {
        case nonNull(Shape)
        case list(Shape)
        /// `Int`, `Float`, `String`, `Boolean`, `ID`, or a custom scalar (any value).
        case scalar(String)
        case enumeration(String, Set<String>)
        /// An object type's selected fields, by response key.
        case object(String, [(String, Shape)])
        /// An interface or union: `__typename`, one of its possible types.
        case abstract(String, Set<String>)
    }

    /// The most fields one probe selects.
    static let maximumFields = 60
    /// How deeply a probe's selection nests below its field.
    static let maximumDepth = 2

    /// The probes of a contract's schema (none when the schema cannot be built or has no query type fields).
    package static func probes(for definition: GraphQLDefinition, seed: UInt64) -> [GraphQLProbe] {
        guard case .success(let served) = ServedSchema.build(definition) else { return [] }
        let schema = served.schema
        guard let fields = try? schema.queryType?.fields() else { return [] }
        var probes: [GraphQLProbe] = []
        var generator = SplitMix64(seed: seed)
        for (name, field) in fields where !name.hasPrefix("__") {
            var variables: [(String, JSON)] = []
            var declarations: [String] = []
            var arguments: [String] = []
            var unknownID = false
            var possible = true
            for (argumentName, argument) in field.args {
                guard argument.type is GraphQLNonNull, argument.defaultValue == nil else { continue }
                guard let value = madeInput(argument.type, schema: schema, depth: 0, generator: &generator, unknownID: &unknownID) else {
                    possible = false
                    break
                }
                declarations.append("$\(argumentName): \(SchemaDiff.describe(argument.type))")
                arguments.append("\(argumentName): $\(argumentName)")
                variables.append((argumentName, value))
            }
            guard possible else { continue }
            var budget = maximumFields
            let (selection, shape) = select(field.type, schema: schema, depth: 0, budget: &budget)
            let operationName = "Verify_" + name
            let header = declarations.isEmpty ? "" : "(" + declarations.joined(separator: ", ") + ")"
            let call = arguments.isEmpty ? "" : "(" + arguments.joined(separator: ", ") + ")"
            probes.append(
                GraphQLProbe(
                    field: (schema.queryType?.name ?? "Query") + "." + name, name: name,
                    query: "query \(operationName)\(header) { \(name)\(call)\(selection) }", variables: .object(JSONObject(variables)),
                    unknownID: unknownID, shape: shape))
        }
        return probes
    }

    /// A value of an input type: a required input object's required fields, one item of a list.
    static func madeInput(
        _ type: GraphQLType, schema: GraphQLSchema, depth: Int, generator: inout SplitMix64, unknownID: inout Bool
    ) -> JSON? {
        guard depth < 6 else { return nil }
        switch type {
        case let nonNull as GraphQLNonNull:
            return madeInput(nonNull.ofType, schema: schema, depth: depth, generator: &generator, unknownID: &unknownID)
        case let list as GraphQLList:
            return madeInput(list.ofType, schema: schema, depth: depth + 1, generator: &generator, unknownID: &unknownID).map { .array([$0]) }
        case let enumeration as GraphQLEnumType:
            return enumeration.values.first.map { .string($0.name) }
        case let input as GraphQLInputObjectType:
            guard let fields = try? input.fields() else { return nil }
            if input.isOneOf {
                // `@oneOf`: exactly one member.
                for (name, field) in fields {
                    if let value = madeInput(field.type, schema: schema, depth: depth + 1, generator: &generator, unknownID: &unknownID) {
                        return .object(JSONObject([(name, value)]))
                    }
                }
                return nil
            }
            var members: [(String, JSON)] = []
            for (name, field) in fields where field.type is GraphQLNonNull && field.defaultValue == nil {
                guard let value = madeInput(field.type, schema: schema, depth: depth + 1, generator: &generator, unknownID: &unknownID) else {
                    return nil
                }
                members.append((name, value))
            }
            return .object(JSONObject(members))
        case let scalar as GraphQLScalarType:
            switch scalar.name {
            case "Int": return .int(1)
            case "Float": return .double(1.5)
            case "Boolean": return .bool(true)
            case "ID":
                unknownID = true
                return .string("doppel-verify-unknown-" + String(generator.next() % 1_000_000_000, radix: 16))
            case "String": return .string("doppel verify")
            default: return nil
            }
        default:
            return nil
        }
    }

    /// The selection of a field of `type` (empty for a leaf) and its shape.
    static func select(_ type: GraphQLType, schema: GraphQLSchema, depth: Int, budget: inout Int) -> (String, Shape) {
        switch type {
        case let nonNull as GraphQLNonNull:
            let (selection, inner) = select(nonNull.ofType, schema: schema, depth: depth, budget: &budget)
            return (selection, .nonNull(inner))
        case let list as GraphQLList:
            let (selection, inner) = select(list.ofType, schema: schema, depth: depth, budget: &budget)
            return (selection, .list(inner))
        case let enumeration as GraphQLEnumType:
            return ("", .enumeration(enumeration.name, Set(enumeration.values.map(\.name))))
        case let scalar as GraphQLScalarType:
            return ("", .scalar(scalar.name))
        case let object as GraphQLObjectType:
            var selected: [(String, Shape)] = []
            var parts: [String] = []
            for (name, field) in (try? object.fields()) ?? [:] where budget > 0 {
                guard !field.args.values.contains(where: { $0.type is GraphQLNonNull && $0.defaultValue == nil }) else { continue }
                let named = getNamedType(type: field.type)
                let isLeaf = named is GraphQLScalarType || named is GraphQLEnumType
                guard isLeaf || depth + 1 < maximumDepth else { continue }
                budget -= 1
                let (selection, shape) = select(field.type, schema: schema, depth: depth + 1, budget: &budget)
                parts.append(name + selection)
                selected.append((name, shape))
            }
            if parts.isEmpty {
                parts = ["__typename"]
                selected = [("__typename", .nonNull(.scalar("String")))]
            }
            return (" { " + parts.joined(separator: " ") + " }", .object(object.name, selected))
        case let abstract as GraphQLAbstractType:
            let names = Set(schema.getPossibleTypes(abstractType: abstract).map(\.name))
            return (" { __typename }", .abstract(abstract.name, names))
        default:
            return (" { __typename }", .abstract("?", []))
        }
    }

    /// A value as JSON text, cut at 80 characters.
    static func shown(_ value: JSON) -> String {
        let text = String(decoding: JSONWriter.encode(value), as: UTF8.self)
        return text.count > 80 ? String(text.prefix(77)) + "..." : text
    }

    // MARK: Answers

    /// What a response says of the probed field: its value, null, or an error (with its `extensions.code`).
    package enum Outcome: Sendable, Equatable, CustomStringConvertible {
        case value
        case null
        case error(code: String?, message: String)

        package var description: String {
            switch self {
            case .value: "a value"
            case .null: "null"
            case .error(let code, let message): "an error" + (code.map { " (\($0))" } ?? "") + ": \(message)"
            }
        }
    }

    /// The probed field's outcome in a response; nil when it has neither `data` nor an error for the field.
    package func outcome(in response: JSON) -> Outcome? {
        for error in response["errors"]?.arrayValue ?? [] where error["path"]?.arrayValue?.first?.stringValue == name {
            return .error(
                code: error["extensions"]?["code"]?.stringValue, message: error["message"]?.stringValue ?? "")
        }
        guard let data = response["data"]?.objectValue, let value = data[name] else { return nil }
        return value.isNull ? .null : .value
    }

    /// Where a response departs from the GraphQL response format or from
    /// the probe's selection: a value of the wrong type, a field missing or
    /// not selected, a null for a non-null field that no error explains.
    package func problems(in response: JSON) -> [String] {
        guard case .object(let object) = response else { return ["the answer is not a JSON object"] }
        var problems: [String] = []
        for key in object.keys where !["data", "errors", "extensions"].contains(key) {
            problems.append("the answer has the member '\(key)', which a GraphQL response does not")
        }
        var errorPaths: [[String]] = []
        if let errors = object["errors"] {
            if let list = errors.arrayValue, !list.isEmpty {
                for (index, error) in list.enumerated() {
                    if error["message"]?.stringValue == nil { problems.append("errors[\(index)] has no message") }
                    if let path = error["path"]?.arrayValue {
                        errorPaths.append(path.map { $0.stringValue ?? $0.intValue.map(String.init) ?? "?" })
                    }
                }
            } else {
                problems.append("'errors' must be a non-empty list")
            }
        }
        guard let data = object["data"] else {
            if problems.isEmpty, object["errors"] == nil { problems.append("the answer has neither data nor errors") }
            return problems
        }
        if data.isNull {
            if errorPaths.isEmpty { problems.append("data is null without an error that has a path") }
            return problems
        }
        guard let members = data.objectValue else { return problems + ["data is not an object"] }
        for key in members.keys where key != name { problems.append("data has '\(key)', which was not selected") }
        check(members[name], shape, path: [name], errorPaths: errorPaths, into: &problems)
        return problems
    }

    private func check(_ value: JSON?, _ shape: Shape, path: [String], errorPaths: [[String]], into problems: inout [String]) {
        let place = path.joined(separator: ".")
        guard problems.count < 20 else { return }
        guard let value else {
            problems.append("\(place) is missing")
            return
        }
        switch shape {
        case .nonNull(let inner):
            if value.isNull {
                // A field error nulls the nearest nullable field above it: an error at or below this path explains the null.
                if !errorPaths.contains(where: { $0.starts(with: path) }) { problems.append("\(place) is null, but its type is non-null") }
                return
            }
            check(value, inner, path: path, errorPaths: errorPaths, into: &problems)
        case _ where value.isNull:
            return
        case .list(let inner):
            guard let items = value.arrayValue else {
                problems.append("\(place) is not a list")
                return
            }
            for (index, item) in items.enumerated() { check(item, inner, path: path + [String(index)], errorPaths: errorPaths, into: &problems) }
        case .scalar(let name):
            let fits: Bool
            switch (name, value) {
            case ("Int", .int(let number)): fits = Int32(exactly: number) != nil
            case ("Float", .int), ("Float", .double): fits = true
            case ("String", .string), ("Boolean", .bool), ("ID", .string), ("ID", .int): fits = true
            case ("Int", _), ("Float", _), ("String", _), ("Boolean", _), ("ID", _): fits = false
            default: fits = true
            }
            if !fits { problems.append("\(place) is \(Self.shown(value)), not a value of \(name)") }
        case .enumeration(let name, let values):
            guard let text = value.stringValue, values.contains(text) else {
                problems.append("\(place) is \(Self.shown(value)), not a value of the enum \(name)")
                return
            }
        case .object(let type, let fields):
            guard let members = value.objectValue else {
                problems.append("\(place) is not an object (\(type))")
                return
            }
            let selected = Set(fields.map(\.0))
            for key in members.keys where !selected.contains(key) { problems.append("\(place) has '\(key)', which was not selected") }
            for (key, inner) in fields { check(members[key], inner, path: path + [key], errorPaths: errorPaths, into: &problems) }
        case .abstract(let type, let names):
            guard let typename = value["__typename"]?.stringValue, names.contains(typename) else {
                problems.append("\(place).__typename is not one of \(type)'s types (\(names.sorted().joined(separator: ", ")))")
                return
            }
        }
    }
}
