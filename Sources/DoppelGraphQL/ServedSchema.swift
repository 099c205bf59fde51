import DoppelCore
import Foundation
import GraphQL

/// A contract's SDL built into a schema the library executes, with one
/// resolver on every field of every object type (`FieldResolution`).
///
/// `buildSchema` makes interfaces and unions without a way to tell which
/// object type a value is (their `resolveType` is fixed when they are
/// made), so they are made again here with one that reads the value's
/// `__typename` (or takes the first possible type), and every field that
/// names them is made again to name the new ones. Objects are kept; only
/// their field maps are replaced, which the library allows before execution.
struct ServedSchema: Sendable {
    let schema: GraphQLSchema

    /// The schema of `definition`, or every problem with it at its place in the contract or schema file.
    static func build(_ definition: GraphQLDefinition) -> Result<ServedSchema, SchemaProblems> {
        let built: GraphQLSchema
        do {
            built = try buildSchema(source: Source(body: definition.schema, name: definition.schemaOrigin.file))
        } catch let error as GraphQLError {
            return .failure(SchemaProblems([diagnostic(error, definition)]))
        } catch {
            return .failure(SchemaProblems([Diagnostic(at: definition.schemaOrigin, "the GraphQL schema cannot be built: \(error)")]))
        }
        let problems = validateSchema(schema: built)
        if !problems.isEmpty { return .failure(SchemaProblems(problems.map { diagnostic($0, definition) })) }
        var unknown: [Diagnostic] = []
        for id in definition.resolvers {
            let parts = id.split(separator: ".").map(String.init)
            guard let type = built.getType(name: parts[0]) as? GraphQLObjectType else {
                let types = built.typeMap.values.compactMap { $0 as? GraphQLObjectType }.map(\.name).filter { !$0.hasPrefix("__") }
                unknown.append(
                    Diagnostic(
                        at: definition.schemaOrigin,
                        "resolver '\(id)' names no object type of the schema; its object types are \(types.sorted().joined(separator: ", "))"))
                continue
            }
            let fields = (try? type.fields().keys.map { $0 }) ?? []
            if !fields.contains(parts[1]) {
                unknown.append(
                    Diagnostic(
                        at: definition.schemaOrigin,
                        "resolver '\(id)' names no field of \(parts[0]); its fields are \(fields.joined(separator: ", "))"))
            }
        }
        if !unknown.isEmpty { return .failure(SchemaProblems(unknown)) }
        do {
            return .success(ServedSchema(schema: try remade(built)))
        } catch {
            return .failure(SchemaProblems([Diagnostic(at: definition.schemaOrigin, "the GraphQL schema cannot be served: \(error)")]))
        }
    }

    /// A problem the library found, placed in the contract or the schema
    /// file: at the library's location, or for a problem it gives none (an
    /// unknown type), at the first use of the name it quotes.
    static func diagnostic(_ error: GraphQLError, _ definition: GraphQLDefinition) -> Diagnostic {
        var message = error.message.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? error.message
        // "Syntax Error NAME (3:8) Expected Name": the place is given as the diagnostic's own.
        if message.hasPrefix("Syntax Error "), let close = message.range(of: ") ") {
            message = "Syntax Error: " + message[close.upperBound...]
        }
        var place = definition.schemaOrigin
        let location = error.locations.first.map { (line: $0.line, column: $0.column) } ?? firstUse(quotedIn: message, in: definition.schema)
        if let location {
            place.line += location.line - 1
            place.column = definition.schemaOrigin.column - 1 + location.column
        }
        return Diagnostic(at: place, "GraphQL schema: \(message)")
    }

    /// Where the first name quoted in a message (`Unknown type "Nope".`) is used in the SDL after its own definition keyword.
    static func firstUse(quotedIn message: String, in sdl: String) -> (line: Int, column: Int)? {
        let parts = message.split(separator: "\"", omittingEmptySubsequences: false)
        guard parts.count >= 3, !parts[1].isEmpty else { return nil }
        let name = Array(parts[1].unicodeScalars)
        let isNameScalar: (Unicode.Scalar) -> Bool = { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
        var line = 1
        var column = 1
        let scalars = Array(sdl.unicodeScalars)
        var index = 0
        while index < scalars.count {
            if scalars[index] == "\n" {
                line += 1
                column = 1
                index += 1
                continue
            }
            if index == 0 || !isNameScalar(scalars[index - 1]), index + name.count <= scalars.count,
                Array(scalars[index..<index + name.count]) == name, index + name.count == scalars.count || !isNameScalar(scalars[index + name.count])
            {
                return (line, column)
            }
            index += 1
            column += 1
        }
        return nil
    }

    /// The built schema with abstract types that can tell their members apart, and a resolver on every field.
    private static func remade(_ built: GraphQLSchema) throws -> GraphQLSchema {
        var abstract: [String: GraphQLNamedType] = [:]
        let named = built.typeMap.values.filter { !$0.name.hasPrefix("__") }
        // Interfaces and unions first, with their fields still to come.
        for case let interface as GraphQLInterfaceType in named {
            abstract[interface.name] = try GraphQLInterfaceType(
                name: interface.name, description: interface.description, fields: { [:] }, resolveType: Self.typeOf)
        }
        for case let union as GraphQLUnionType in named {
            abstract[union.name] = try GraphQLUnionType(
                name: union.name, description: union.description, resolveType: Self.typeOf, types: try union.types())
        }
        func remap(_ type: GraphQLType) -> GraphQLType {
            switch type {
            case let list as GraphQLList: return GraphQLList(remap(list.ofType))
            case let nonNull as GraphQLNonNull: return (try? GraphQLNonNull(remap(nonNull.ofType))) ?? nonNull
            case let named as GraphQLNamedType: return abstract[named.name] ?? type
            default: return type
            }
        }
        func remapped(_ fields: GraphQLFieldMap, of owner: String, resolving: Bool) -> GraphQLFieldMap {
            var made: GraphQLFieldMap = [:]
            for (name, field) in fields {
                let type = remap(field.type) as? GraphQLOutputType ?? field.type
                made[name] = GraphQLField(
                    type: type, description: field.description, deprecationReason: field.deprecationReason, args: field.args,
                    resolve: resolving ? FieldResolution.resolve : nil, astNode: field.astNode)
            }
            return made
        }
        func interfaces(_ list: [GraphQLInterfaceType]) -> [GraphQLInterfaceType] {
            list.map { abstract[$0.name] as? GraphQLInterfaceType ?? $0 }
        }
        for case let interface as GraphQLInterfaceType in named {
            guard let made = abstract[interface.name] as? GraphQLInterfaceType else { continue }
            let fields = remapped(try interface.fields(), of: interface.name, resolving: false)
            let parents = interfaces(try interface.interfaces())
            made.fields = { fields }
            made.interfaces = { parents }
        }
        for case let object as GraphQLObjectType in named {
            let fields = remapped(try object.fields(), of: object.name, resolving: true)
            let parents = interfaces(try object.interfaces())
            object.fields = { fields }
            object.interfaces = { parents }
        }
        let types: [GraphQLNamedType] = named.map { abstract[$0.name] ?? $0 }
        let schema = try GraphQLSchema(
            query: built.queryType, mutation: built.mutationType, subscription: built.subscriptionType,
            types: types, directives: built.directives)
        introspectInputDefaults(of: schema)
        return schema
    }

    /// Two of the library's introspection fields of `__InputValue` are
    /// mended here, once, on its shared type, before any schema is served:
    /// `defaultValue` read arguments' defaults only, so an input object
    /// field's was null (a client's schema built from introspection lost
    /// it), and is now the SDL's literal; `isDeprecated` was null for every
    /// input value, failing the introspection query clients such as `gql`
    /// send (`inputFields(includeDeprecated: true) { isDeprecated }`).
    static func introspectInputDefaults(of schema: GraphQLSchema) {
        guard introspectionMended.setFirst() else { return }
        guard let inputValue = schema.getType(name: "__InputValue") as? GraphQLObjectType, var fields = try? inputValue.fields(),
            let original = fields["defaultValue"]
        else { return }
        let arguments = original.resolve
        fields["defaultValue"] = GraphQLField(
            type: original.type, description: original.description,
            resolve: { source, args, context, info in
                if let field = source as? InputObjectFieldDefinition {
                    return field.astNode?.defaultValue.map { Map.string(print(ast: $0)) }
                }
                return try await arguments?(source, args, context, info)
            })
        // `isDeprecated` is read from a property neither kind of input value has, so it was null for every one.
        if let deprecated = fields["isDeprecated"] {
            fields["isDeprecated"] = GraphQLField(
                type: deprecated.type, description: deprecated.description,
                resolve: { source, _, _, _ in
                    switch source {
                    case let field as InputObjectFieldDefinition: Map.bool(field.deprecationReason != nil)
                    case let argument as GraphQLArgumentDefinition: Map.bool(argument.deprecationReason != nil)
                    default: Map.bool(false)
                    }
                })
        }
        inputValue.fields = { fields }
    }

    private static let introspectionMended = Locked(false)

    /// Which member of an interface or union a value is: the value's
    /// `__typename` when it names one, else the first possible type.
    @Sendable static func typeOf(_ value: any Sendable, _ info: GraphQLResolveInfo) throws -> any TypeResolveResultRepresentable {
        let abstractType = getNamedType(type: info.returnType) as? GraphQLAbstractType
        let possible = abstractType.map { info.schema.getPossibleTypes(abstractType: $0) } ?? []
        if case .dictionary(let fields)? = value as? Map, case .string(let name)? = fields["__typename"] {
            if possible.contains(where: { $0.name == name }) { return name }
            throw GraphQLError(
                message: "'\(name)' is not a member of \(abstractType?.name ?? "the field's type"); the members are "
                    + possible.map(\.name).joined(separator: ", "),
                nodes: info.fieldASTs, path: info.path)
        }
        guard let first = possible.first else { throw GraphQLError(message: "no object type implements the field's type", nodes: info.fieldASTs) }
        return first.name
    }
}

/// What stops a contract's schema being served, each at its place.
package struct SchemaProblems: Error {
    package let diagnostics: [Diagnostic]
    init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }
}
