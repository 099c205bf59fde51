import DoppelCore
import Foundation

/// `doppel import api.graphql`: a contract serving an SDL schema, every
/// field answered with a value made from the schema until a resolver
/// answers it from the session's state.
package enum SchemaImport {
    /// Whether a file is SDL by its name.
    package static func isSDL(_ file: String) -> Bool {
        [".graphql", ".graphqls", ".gql"].contains { file.lowercased().hasSuffix($0) }
    }

    /// The contract's text; the schema's problems, at their places in `file`, when it cannot be served.
    package static func contract(fromSDL sdl: String, file: String) -> Result<String, SchemaProblems> {
        let text = sdl.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        let definition = GraphQLDefinition(
            path: "/graphql", schema: text, schemaOrigin: SourceLocation(file: file, line: 1, column: 1), schemaIsFile: true, resolvers: [],
            maxDepth: GraphQLDefinition.defaultMaxDepth, maxFields: GraphQLDefinition.defaultMaxFields)
        if case .failure(let problems) = ServedSchema.build(definition) { return .failure(problems) }
        let title = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
        // The SDL kept inline (a block whose indentation is given, so a first line that starts with spaces reads back as written).
        let block = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.isEmpty ? "" : "    " + $0 }
        let body = (block.last == "" ? block.dropLast() : block[...]).joined(separator: "\n")
        return .success(
            """
            # Imported from \(URL(fileURLWithPath: file).lastPathComponent) by `doppel import`. Every field is
            # answered with a value made from the schema (the same for the same query);
            # answer one from the session's state with a resolver, as docs/graphql.md
            # shows, for example:
            #   resolvers:
            #     Query.story:
            #       value: "{{ state.stories[args.id] }}"
            doppel: 1
            info:
              title: \(JSONWriter.encodeString(.string(title)))
              version: "1.0"
            graphql:
              path: /graphql
              schema: |2
            \(body)
              resolvers: {}

            """)
    }
}
