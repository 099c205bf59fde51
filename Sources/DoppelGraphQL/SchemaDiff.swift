import DoppelCore
import GraphQL

/// What changed between two versions of a GraphQL schema, each change
/// breaking or compatible for a client built against the old one, by the
/// rule `doppel diff` applies to HTTP APIs: a client keeps working when
/// every operation it sends is still valid and every answer is one it can
/// read. So removing a type, field, argument, enum value or union member,
/// a new required argument or input field, a field's type changed unsafely
/// (an output made nullable, an input made non-null), and an answer that
/// may carry what a client's exhaustive `switch` does not know (a new enum
/// value of an output enum, a new union member) are breaking; what only
/// adds is compatible. The type rules are graphql-js's `findBreakingChanges`.
package enum SchemaDiff {
    package struct Change: Sendable, Equatable {
        package let kind: String
        package let breaking: Bool
        /// `Type.field`, `Type.field(argument)`, `Type`.
        package let place: String
        package let detail: String
    }

    /// The changes from `old` to `new` SDL; nil when either cannot be built (its problems are lint's to tell).
    package static func changes(from old: String, to new: String) -> [Change]? {
        guard let before = try? buildSchema(source: old), let after = try? buildSchema(source: new) else { return nil }
        var changes: [Change] = []
        func add(_ kind: String, _ breaking: Bool, _ place: String, _ detail: String) {
            changes.append(Change(kind: kind, breaking: breaking, place: place, detail: detail))
        }
        let outputEnums = enumsInOutput(after)
        let oldTypes = before.typeMap.filter { !$0.key.hasPrefix("__") }
        let newTypes = after.typeMap.filter { !$0.key.hasPrefix("__") }
        for (name, old) in oldTypes.sorted(by: { $0.key < $1.key }) {
            guard let new = newTypes[name] else {
                add("graphql-type-removed", true, name, "the type is gone")
                continue
            }
            guard kind(of: old) == kind(of: new) else {
                add(
                    "graphql-type-kind-changed", true, name,
                    "a\(article(kind(of: old))) \(kind(of: old)) became a\(article(kind(of: new))) \(kind(of: new))")
                continue
            }
            switch (old, new) {
            case (let a as GraphQLObjectType, let b as GraphQLObjectType):
                compareFields(name, (try? a.fields()) ?? [:], (try? b.fields()) ?? [:], add: add)
                let kept = Set(((try? b.interfaces()) ?? []).map(\.name))
                for interface in (try? a.interfaces()) ?? [] where !kept.contains(interface.name) {
                    add("graphql-interface-removed", true, name, "no longer implements \(interface.name)")
                }
            case (let a as GraphQLInterfaceType, let b as GraphQLInterfaceType):
                compareFields(name, (try? a.fields()) ?? [:], (try? b.fields()) ?? [:], add: add)
            case (let a as GraphQLUnionType, let b as GraphQLUnionType):
                let before = Set(((try? a.types()) ?? []).map(\.name))
                let after = Set(((try? b.types()) ?? []).map(\.name))
                for member in before.subtracting(after).sorted() {
                    add("graphql-union-member-removed", true, name, "\(member) is no longer a member")
                }
                for member in after.subtracting(before).sorted() {
                    add(
                        "graphql-union-member-added", true, name,
                        "\(member) is a new member, which a client's exhaustive switch on __typename does not know")
                }
            case (let a as GraphQLEnumType, let b as GraphQLEnumType):
                let before = Set(a.values.map(\.name))
                let after = Set(b.values.map(\.name))
                for value in before.subtracting(after).sorted() { add("graphql-enum-value-removed", true, name, "\(value) is gone") }
                for value in after.subtracting(before).sorted() {
                    if outputEnums.contains(name) {
                        add(
                            "graphql-enum-value-added", true, name,
                            "\(value) is new, and answers may carry it where a client's exhaustive switch does not know it")
                    } else {
                        add("graphql-enum-value-added", false, name, "\(value) is new (the enum is only an input)")
                    }
                }
            case (let a as GraphQLInputObjectType, let b as GraphQLInputObjectType):
                let before = (try? a.fields()) ?? [:]
                let after = (try? b.fields()) ?? [:]
                for (field, old) in before {
                    guard let new = after[field] else {
                        add("graphql-input-field-removed", true, "\(name).\(field)", "the input field is gone")
                        continue
                    }
                    if !safeForInput(old.type, new.type) {
                        add("graphql-input-field-type-changed", true, "\(name).\(field)", "\(describe(old.type)) became \(describe(new.type))")
                    }
                }
                for (field, new) in after where before[field] == nil {
                    let required = new.type is GraphQLNonNull && new.defaultValue == nil
                    add(
                        required ? "graphql-input-field-added-required" : "graphql-input-field-added", required, "\(name).\(field)",
                        required ? "a new required input field (\(describe(new.type)))" : "a new optional input field")
                }
            default:
                break
            }
        }
        for name in newTypes.keys.sorted() where oldTypes[name] == nil {
            add("graphql-type-added", false, name, "a new \(kind(of: newTypes[name]!))")
        }
        return changes
    }

    /// Fields of an object or interface type: removed, retyped unsafely, their arguments; added.
    static func compareFields(_ type: String, _ before: GraphQLFieldMap, _ after: GraphQLFieldMap, add: (String, Bool, String, String) -> Void) {
        for (name, old) in before {
            let place = "\(type).\(name)"
            guard let new = after[name] else {
                add("graphql-field-removed", true, place, "the field is gone")
                continue
            }
            if !safeForOutput(old.type, new.type) {
                add("graphql-field-type-changed", true, place, "\(describe(old.type)) became \(describe(new.type))")
            }
            for (argument, oldArgument) in old.args {
                guard let newArgument = new.args[argument] else {
                    add("graphql-argument-removed", true, "\(place)(\(argument))", "the argument is gone")
                    continue
                }
                if !safeForInput(oldArgument.type, newArgument.type) {
                    add(
                        "graphql-argument-type-changed", true, "\(place)(\(argument))",
                        "\(describe(oldArgument.type)) became \(describe(newArgument.type))")
                }
            }
            for (argument, newArgument) in new.args where old.args[argument] == nil {
                let required = newArgument.type is GraphQLNonNull && newArgument.defaultValue == nil
                add(
                    required ? "graphql-argument-added-required" : "graphql-argument-added", required, "\(place)(\(argument))",
                    required ? "a new required argument (\(describe(newArgument.type)))" : "a new optional argument")
            }
        }
        for name in after.keys where before[name] == nil {
            add("graphql-field-added", false, "\(type).\(name)", "a new field")
        }
    }

    /// Whether an output field's new type is one every old answer's reader still reads.
    static func safeForOutput(_ old: GraphQLType, _ new: GraphQLType) -> Bool {
        switch old {
        case let list as GraphQLList:
            if let newList = new as? GraphQLList { return safeForOutput(list.ofType, newList.ofType) }
            if let nonNull = new as? GraphQLNonNull { return safeForOutput(old, nonNull.ofType) }
            return false
        case let nonNull as GraphQLNonNull:
            guard let newNonNull = new as? GraphQLNonNull else { return false }
            return safeForOutput(nonNull.ofType, newNonNull.ofType)
        case let named as GraphQLNamedType:
            if let newNamed = new as? GraphQLNamedType, !(new is GraphQLList), !(new is GraphQLNonNull) { return newNamed.name == named.name }
            if let nonNull = new as? GraphQLNonNull { return safeForOutput(old, nonNull.ofType) }
            return false
        default:
            return false
        }
    }

    /// Whether an argument's or input field's new type takes every value the old one took.
    static func safeForInput(_ old: GraphQLType, _ new: GraphQLType) -> Bool {
        switch old {
        case let list as GraphQLList:
            guard let newList = new as? GraphQLList else { return false }
            return safeForInput(list.ofType, newList.ofType)
        case let nonNull as GraphQLNonNull:
            if let newNonNull = new as? GraphQLNonNull { return safeForInput(nonNull.ofType, newNonNull.ofType) }
            return safeForInput(nonNull.ofType, new)
        case let named as GraphQLNamedType:
            guard !(new is GraphQLList), !(new is GraphQLNonNull), let newNamed = new as? GraphQLNamedType else { return false }
            return newNamed.name == named.name
        default:
            return false
        }
    }

    /// A type as SDL writes it: `[Story!]!`.
    static func describe(_ type: GraphQLType) -> String {
        switch type {
        case let list as GraphQLList: "[\(describe(list.ofType))]"
        case let nonNull as GraphQLNonNull: describe(nonNull.ofType) + "!"
        case let named as GraphQLNamedType: named.name
        default: "\(type)"
        }
    }

    static func kind(of type: GraphQLNamedType) -> String {
        switch type {
        case is GraphQLObjectType: "object type"
        case is GraphQLInterfaceType: "interface"
        case is GraphQLUnionType: "union"
        case is GraphQLEnumType: "enum"
        case is GraphQLInputObjectType: "input type"
        default: "scalar"
        }
    }

    static func article(_ word: String) -> String { ["a", "e", "i", "o", "u"].contains(word.prefix(1)) ? "n" : "" }

    /// The enums some object or interface field returns (where a new value reaches a client).
    static func enumsInOutput(_ schema: GraphQLSchema) -> Set<String> {
        var names: Set<String> = []
        for type in schema.typeMap.values where !type.name.hasPrefix("__") {
            let fields: GraphQLFieldMap
            switch type {
            case let object as GraphQLObjectType: fields = (try? object.fields()) ?? [:]
            case let interface as GraphQLInterfaceType: fields = (try? interface.fields()) ?? [:]
            default: continue
            }
            for field in fields.values {
                if let enumeration = getNamedType(type: field.type) as? GraphQLEnumType { names.insert(enumeration.name) }
            }
        }
        return names
    }
}
