import DoppelCore
import GraphQL

/// The bounds an operation is held to before it runs: how deeply its
/// selections nest (`max_depth`) and how many fields it selects with its
/// fragments spread (`max_fields`; list items are counted as they resolve).
/// Fragments are measured once each, so a document whose spreads multiply
/// is measured in time proportional to its text, not to what it expands to.
enum OperationBounds {
    static func check(_ operation: OperationDefinition, in document: Document, definition: GraphQLDefinition) -> GraphQLError? {
        var fragments: [String: FragmentDefinition] = [:]
        for case let fragment as FragmentDefinition in document.definitions { fragments[fragment.name.value] = fragment }
        var measured: [String: (depth: Int, fields: Int)] = [:]
        var open: Set<String> = []

        /// The depth and field count of a selection set, counts saturating past the bound.
        func measure(_ set: SelectionSet) -> (depth: Int, fields: Int) {
            var depth = 0
            var fields = 0
            for selection in set.selections {
                var inner: (depth: Int, fields: Int) = (0, 0)
                switch selection {
                case let field as Field:
                    if let nested = field.selectionSet { inner = measure(nested) }
                    inner = (inner.depth + 1, inner.fields + 1)
                case let spread as FragmentSpread:
                    let name = spread.name.value
                    if let known = measured[name] {
                        inner = known
                    } else if let fragment = fragments[name], !open.contains(name) {
                        // Validation has refused cycles already; `open` keeps this safe whatever reaches it.
                        open.insert(name)
                        inner = measure(fragment.selectionSet)
                        open.remove(name)
                        measured[name] = inner
                    }
                case let fragment as InlineFragment:
                    inner = measure(fragment.selectionSet)
                default:
                    break
                }
                depth = max(depth, inner.depth)
                fields = min(fields + inner.fields, Int.max / 4)
            }
            return (depth, fields)
        }

        if let tooDeep = introspectionDepth(operation, fragments: fragments) { return tooDeep }
        let (depth, fields) = measure(operation.selectionSet)
        if depth > definition.maxDepth {
            return GraphQLError(
                message: "The operation nests \(depth) levels of fields; at most \(definition.maxDepth) are answered (max_depth)",
                nodes: [operation], extensions: ["code": "DEPTH_LIMIT_EXCEEDED"])
        }
        if fields > definition.maxFields {
            return GraphQLError(
                message:
                    "The operation selects \(fields) fields with its fragments spread; at most \(definition.maxFields) are answered (max_fields)",
                nodes: [operation], extensions: ["code": "FIELD_LIMIT_EXCEEDED"])
        }
        return nil
    }

    /// The list fields of introspection types that repeat the schema when nested in each other.
    static let introspectionLists: Set<String> = ["fields", "interfaces", "possibleTypes", "inputFields"]
    /// How many of them may nest: the standard introspection query needs 3.
    static let maxIntrospectionDepth = 3

    /// graphql-js's `MaxIntrospectionDepthRule`: introspection's list
    /// fields nested in each other (`fields { type { fields { type { ... }
    /// } } }`) multiply the schema at each level, so a short query within
    /// `max_depth` could make millions of objects (they are the library's,
    /// not counted by `max_fields`); past three levels it is refused.
    static func introspectionDepth(_ operation: OperationDefinition, fragments: [String: FragmentDefinition]) -> GraphQLError? {
        var seen: Set<String> = []
        /// `depth` is nil outside `__schema` and `__type`, where the schema's own fields of these names are not counted.
        func exceeds(_ set: SelectionSet, depth: Int?) -> Bool {
            for selection in set.selections {
                switch selection {
                case let field as Field:
                    let name = field.name.value
                    var deeper = depth ?? (name == "__schema" || name == "__type" ? 0 : nil)
                    if let counted = deeper, introspectionLists.contains(name) { deeper = counted + 1 }
                    if let deeper, deeper > maxIntrospectionDepth { return true }
                    if let nested = field.selectionSet, exceeds(nested, depth: deeper) { return true }
                case let spread as FragmentSpread:
                    // Each fragment once per depth it is reached at: at most five visits each.
                    let name = spread.name.value
                    guard let fragment = fragments[name], seen.insert("\(depth ?? -1) \(name)").inserted else { continue }
                    if exceeds(fragment.selectionSet, depth: depth) { return true }
                case let fragment as InlineFragment:
                    if exceeds(fragment.selectionSet, depth: depth) { return true }
                default:
                    break
                }
            }
            return false
        }
        guard exceeds(operation.selectionSet, depth: nil) else { return nil }
        return GraphQLError(
            message: "The introspection query nests fields, interfaces, possibleTypes or inputFields more than \(maxIntrospectionDepth) deep",
            nodes: [operation], extensions: ["code": "INTROSPECTION_DEPTH_EXCEEDED"])
    }
}
