import DoppelCore

/// A provider's schema read by introspection, written back as SDL so that
/// `SchemaDiff` compares it with the contract's (`doppel verify`).
///
/// GraphQLSwift 4.3.0 has no `buildClientSchema` (graphql-js's reader of an
/// introspection result), so the result is printed as SDL here: only what
/// `SchemaDiff` compares (types, fields, arguments, their types and
/// defaults, interfaces, union members, enum values, root types).
package enum IntrospectedSchema {
    /// The introspection query sent: graphql-js's standard one without descriptions.
    package static let query = """
        query IntrospectionQuery {
          __schema {
            queryType { name }
            mutationType { name }
            subscriptionType { name }
            types { ...FullType }
          }
        }
        fragment FullType on __Type {
          kind
          name
          fields(includeDeprecated: true) { name args { ...InputValue } type { ...TypeRef } }
          inputFields { ...InputValue }
          interfaces { ...TypeRef }
          enumValues(includeDeprecated: true) { name }
          possibleTypes { ...TypeRef }
        }
        fragment InputValue on __InputValue { name type { ...TypeRef } defaultValue }
        fragment TypeRef on __Type {
          kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }
        }
        """

    static let builtInScalars: Set<String> = ["String", "Int", "Float", "Boolean", "ID"]

    /// The SDL of an introspection answer (`{"data": {"__schema": ...}}` or
    /// its `data`), or why it cannot be read.
    package static func sdl(from answer: JSON) -> Result<String, FailureReason> {
        guard let schema = (answer["data"] ?? answer)["__schema"]?.objectValue, let types = schema["types"]?.arrayValue else {
            return .failure(FailureReason("the answer has no data.__schema.types"))
        }
        var blocks: [String] = []
        let roots = ["query", "mutation", "subscription"].map { ($0, schema["\($0)Type"]?["name"]?.stringValue) }
        if roots.contains(where: { kind, name in name != nil && name != kind.prefix(1).uppercased() + kind.dropFirst() }) {
            blocks.append("schema {\n" + roots.compactMap { kind, name in name.map { "  \(kind): \($0)" } }.joined(separator: "\n") + "\n}")
        }
        for type in types {
            guard let kind = type["kind"]?.stringValue, let name = type["name"]?.stringValue, !name.hasPrefix("__") else { continue }
            do throws(FailureReason) {
                switch kind {
                case "SCALAR":
                    if !builtInScalars.contains(name) { blocks.append("scalar \(name)") }
                case "OBJECT", "INTERFACE":
                    let interfaces = try each(type["interfaces"]) { node throws(FailureReason) in try reference(node) }
                    let fields = try each(type["fields"]) { field throws(FailureReason) in
                        let arguments = try each(field["args"], inputValue)
                        let list = arguments.isEmpty ? "" : "(" + arguments.joined(separator: ", ") + ")"
                        return "  \(try text(field["name"], "a field's name"))\(list): \(try reference(field["type"]))"
                    }
                    guard !fields.isEmpty else { continue }
                    let implements = interfaces.isEmpty ? "" : " implements " + interfaces.joined(separator: " & ")
                    blocks.append((kind == "OBJECT" ? "type " : "interface ") + name + implements + " {\n" + fields.joined(separator: "\n") + "\n}")
                case "UNION":
                    let members = try each(type["possibleTypes"]) { node throws(FailureReason) in try reference(node) }
                    if !members.isEmpty { blocks.append("union \(name) = " + members.joined(separator: " | ")) }
                case "ENUM":
                    let values = try each(type["enumValues"]) { node throws(FailureReason) in "  " + (try text(node["name"], "an enum value's name"))
                    }
                    if !values.isEmpty { blocks.append("enum \(name) {\n" + values.joined(separator: "\n") + "\n}") }
                case "INPUT_OBJECT":
                    let fields = try each(type["inputFields"]) { node throws(FailureReason) in "  " + (try inputValue(node)) }
                    if !fields.isEmpty { blocks.append("input \(name) {\n" + fields.joined(separator: "\n") + "\n}") }
                default:
                    return .failure(FailureReason("type \(name) has the unknown kind \(kind)"))
                }
            } catch {
                return .failure(FailureReason("type \(name): \(error.message)"))
            }
        }
        return .success(blocks.joined(separator: "\n\n") + "\n")
    }

    /// Each item of a list (none for a null or absent one), written by `write`.
    static func each(_ list: JSON?, _ write: (JSON) throws(FailureReason) -> String) throws(FailureReason) -> [String] {
        var written: [String] = []
        for item in list?.arrayValue ?? [] { written.append(try write(item)) }
        return written
    }

    /// A type reference (`[Story!]!`), at most 16 wrappers deep.
    static func reference(_ node: JSON?, depth: Int = 0) throws(FailureReason) -> String {
        guard depth < 16, let node, let kind = node["kind"]?.stringValue else { throw FailureReason("a type reference cannot be read") }
        switch kind {
        case "NON_NULL": return try reference(node["ofType"], depth: depth + 1) + "!"
        case "LIST": return "[" + (try reference(node["ofType"], depth: depth + 1)) + "]"
        default: return try text(node["name"], "a type's name")
        }
    }

    static func inputValue(_ node: JSON) throws(FailureReason) -> String {
        var text = try Self.text(node["name"], "an argument's name") + ": " + (try reference(node["type"]))
        if let value = node["defaultValue"]?.stringValue { text += " = " + value }
        return text
    }

    static func text(_ node: JSON?, _ what: String) throws(FailureReason) -> String {
        guard let name = node?.stringValue, ContractLoader.isGraphQLName(name) else { throw FailureReason("\(what) is not a GraphQL name") }
        return name
    }
}

/// Why something could not be read, as a sentence.
package struct FailureReason: Error, Sendable {
    package let message: String
    package init(_ message: String) { self.message = message }
}
