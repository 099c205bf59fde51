/// A contract's `graphql:` section: the schema the GraphQL door serves at
/// `path`, the fields the contract answers itself (the rest get values
/// made from the schema), and the bounds on one operation.
package struct GraphQLDefinition: Sendable {
    /// The most nested selections an operation may have (`max_depth`).
    package static let defaultMaxDepth = 15
    /// The most fields an operation may resolve, counting each list item's (`max_fields`).
    package static let defaultMaxFields = 2_000
    /// The id of the WebSocket endpoint the section makes at its path, for subscriptions (`graphql-transport-ws`).
    package static let socketEndpointID = "graphql-ws"
    /// The subprotocol that endpoint speaks.
    package static let socketProtocol = "graphql-transport-ws"

    /// Where the door answers (`path`, by default `/graphql`, under the contract's `base_path`).
    package var path: String
    /// The SDL.
    package let schema: String
    /// Where the SDL's first line is: the schema file's start, or the line in the contract where inline SDL starts.
    package let schemaOrigin: SourceLocation
    /// Whether the SDL came from a file of its own.
    package let schemaIsFile: Bool
    /// The fields the contract answers (`Type.field`), each an endpoint of that id.
    package let resolvers: [String]
    package let maxDepth: Int
    package let maxFields: Int

    package init(
        path: String, schema: String, schemaOrigin: SourceLocation, schemaIsFile: Bool, resolvers: [String], maxDepth: Int, maxFields: Int
    ) {
        self.path = path
        self.schema = schema
        self.schemaOrigin = schemaOrigin
        self.schemaIsFile = schemaIsFile
        self.resolvers = resolvers
        self.maxDepth = maxDepth
        self.maxFields = maxFields
    }
}
