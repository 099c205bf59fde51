import DoppelCore
import Foundation

extension ProtoSchema {
    /// The most `.proto` files one schema reads (the file and its imports).
    package static let maximumFiles = 100
    /// The largest `.proto` file read.
    package static let maximumFileSize = 1 << 20

    /// Reads `file` and the files it imports, each named relative to
    /// `folder` and inside it (an import that leaves it is refused, as a
    /// `$ref` that does), bounded in count and size. Every problem of every
    /// file is in `diagnostics`; the schema is nil when there is an error.
    /// `builtIn`: files of `WellKnownTypes` read beside it (gRPC's `google/rpc/…`), unless the folder has its own.
    /// `from`: where the file is named (a contract's `proto:`), where problems reading the file itself are reported.
    package static func load(
        file: String, folder: URL, builtIn: [String] = [], from: SourceLocation? = nil
    ) -> (schema: ProtoSchema?, diagnostics: [Diagnostic]) {
        var parsed: [String: ProtoParser] = [:]
        var problems = DiagnosticCollector()
        // Imports refused here (outside the folder, too large, unreadable), each reported once.
        var refused = Set<String>()
        var waiting: [(path: String, from: SourceLocation?)] = builtIn.map { ($0, nil) } + [(file, from)]
        while let (path, from) = waiting.popLast() {
            guard parsed[path] == nil, !refused.contains(path) else { continue }
            refused.insert(path)
            let place = from ?? SourceLocation(file: path, line: 1, column: 1)
            guard parsed.count < maximumFiles else {
                problems.error("more than \(maximumFiles) .proto files are imported", at: place)
                break
            }
            guard !path.hasPrefix("/"), !path.split(separator: "/").contains(".."),
                let url = Optional(folder.appendingPathComponent(path).standardizedFileURL),
                url.path.hasPrefix(folder.standardizedFileURL.path + "/")
            else {
                problems.error("'\(path)' is outside the contract's folder", at: place)
                continue
            }
            // A well-known type's file (or gRPC's own), the folder having no copy of its own.
            if let text = WellKnownTypes.files[path] ?? WellKnownTypes.grpcServiceFiles[path],
                !FileManager.default.fileExists(atPath: url.path)
            {
                refused.remove(path)
                let parser = parse(path, text)
                parsed[path] = parser
                waiting += parser.imports.map { ($0.path, $0.location) }
                continue
            }
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
                let size = (attributes[FileAttributeKey.size] as? NSNumber)?.intValue
            else {
                if !FileManager.default.fileExists(atPath: url.path) {
                    let builtIn = path.hasPrefix("google/") || path.hasPrefix("grpc/") ? ", nor is it a well-known type's file" : ""
                    problems.error("there is no '\(path)' in the contract's folder\(builtIn)", at: place)
                } else {
                    problems.error("cannot read '\(path)'", at: place)
                }
                continue
            }
            // Measured before it is read: a file past the bound is never held.
            guard size <= maximumFileSize else {
                problems.error("'\(path)' is over \(maximumFileSize) bytes", at: place)
                continue
            }
            guard let data = FileManager.default.contents(atPath: url.path) else {
                problems.error("cannot read '\(path)'", at: place)
                continue
            }
            guard let text = String(data: data, encoding: .utf8) else {
                problems.error("'\(path)' is not UTF-8 text", at: place)
                continue
            }
            refused.remove(path)
            let parser = parse(path, text)
            parsed[path] = parser
            waiting += parser.imports.map { ($0.path, $0.location) }
        }
        let (schema, diagnostics) = build(parsed, refused: refused)
        return (problems.hasErrors ? nil : schema, problems.diagnostics + diagnostics)
    }

    /// Reads `.proto` texts by file name (imports name the others) into one schema.
    package static func read(_ texts: [String: String]) -> (schema: ProtoSchema?, diagnostics: [Diagnostic]) {
        build(Dictionary(uniqueKeysWithValues: texts.map { ($0.key, parse($0.key, $0.value)) }), refused: [])
    }

    private static func parse(_ file: String, _ text: String) -> ProtoParser {
        var parser = ProtoParser(file: file, text: text)
        parser.parse()
        return parser
    }

    /// One schema of the files read, by name; imports of `refused` files were reported already.
    private static func build(_ parsed: [String: ProtoParser], refused: Set<String>) -> (schema: ProtoSchema?, diagnostics: [Diagnostic]) {
        var schema = ProtoSchema()
        var diagnostics = DiagnosticCollector()
        var scopes: [String: String] = [:]
        var problems: [Diagnostic] = []
        for (name, parser) in parsed.sorted(by: { $0.key < $1.key }) {
            problems += parser.diagnostics.diagnostics
            for imported in parser.imports where parsed[imported.path] == nil && !refused.contains(imported.path) {
                diagnostics.error("'\(imported.path)' is not among the files read", at: imported.location)
            }
            for message in parser.messages {
                if schema.messages[message.name] != nil || schema.enums[message.name] != nil {
                    diagnostics.error("\(message.name) is declared twice", at: message.location)
                }
                schema.messages[message.name] = message
            }
            for enumeration in parser.enums { schema.enums[enumeration.name] = enumeration }
            schema.services += parser.services
            scopes.merge(parser.scopes) { first, _ in first }
            schema.files[name] = ProtoFile(
                name: name, package: parser.package, syntax: parser.syntax, dependencies: parser.imports.map(\.path),
                messages: parser.messages.map(\.name), enums: parser.enums.map(\.name), services: parser.services.map(\.name))
        }
        schema.resolve(scopes: scopes, diagnostics: &diagnostics)
        let all = problems + diagnostics.diagnostics
        return (all.contains { $0.severity == .error } ? nil : schema, all)
    }

    /// Every field's and method's type, as a fully qualified name.
    private mutating func resolve(scopes: [String: String], diagnostics: inout DiagnosticCollector) {
        for (name, var message) in messages {
            let scope = scopes[name] ?? name
            for index in message.fields.indices {
                let field = message.fields[index]
                guard case .message(let written) = field.kind else { continue }
                switch lookup(written, from: scope) {
                case .message(let full)?:
                    message.fields[index].kind = .message(full)
                    // A message field has presence, and messages are never packed.
                    if field.cardinality == .implicit { message.fields[index].cardinality = .explicit }
                    message.fields[index].packed = false
                case .enumeration(let full)?:
                    message.fields[index].kind = .enumeration(full)
                default:
                    diagnostics.error("'\(written)' names no message or enum here", at: field.location)
                }
            }
            messages[name] = message
        }
        for serviceIndex in services.indices {
            let scope = scopes[services[serviceIndex].name] ?? ""
            for index in services[serviceIndex].methods.indices {
                let method = services[serviceIndex].methods[index]
                for (written, isInput) in [(method.input, true), (method.output, false)] {
                    guard case .message(let full)? = lookup(written, from: scope) else {
                        diagnostics.error("'\(written)' names no message here (a method takes and returns messages)", at: method.location)
                        continue
                    }
                    if isInput { services[serviceIndex].methods[index].input = full } else { services[serviceIndex].methods[index].output = full }
                }
            }
        }
    }

    /// protobuf's scoping: a name is looked for in the innermost scope first, then each outer one.
    private func lookup(_ written: String, from scope: String) -> ProtoField.Kind? {
        func found(_ full: String) -> ProtoField.Kind? {
            if messages[full] != nil { return .message(full) }
            if enums[full] != nil { return .enumeration(full) }
            return nil
        }
        if written.hasPrefix(".") { return found(String(written.dropFirst())) }
        var parts = scope.split(separator: ".").map(String.init)
        while true {
            if let kind = found((parts + [written]).joined(separator: ".")) { return kind }
            if parts.isEmpty { return nil }
            parts.removeLast()
        }
    }
}
