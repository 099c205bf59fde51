import DoppelCore
import Foundation

/// Brings the files an OpenAPI document's `$ref`s name (`./schemas/pet.yaml`,
/// `common.yaml#/components/parameters/Limit`) into the document, so that
/// the importer reads one tree, as `swagger-cli bundle` or Redocly's
/// `bundle` would write it:
/// - a reference where a **schema** goes is kept as a reference: its target
///   is added to `components.schemas` under a name of its own (the last
///   token of its pointer, or the file's name), so recursive schemas across
///   files stay references and are named once;
/// - any other reference (a path item, parameter, response, request body,
///   header, example) is replaced by its target, whose sibling keys (3.1's
///   `summary` and `description`) win.
///
/// Inside a referenced file, `#/…` means that file. Every node keeps its
/// own file's line and column, so a diagnostic points into the file it is
/// in. Written here rather than taken from OpenAPIKit, whose external
/// loader is asynchronous, decodes into its model (dropping the lines and
/// columns every later diagnostic needs) and reads any URL it is given.
///
/// Bounded: files only inside the document's folder (after symbolic links),
/// never a URL; files each no larger than a contract (as many as a real
/// document has: vendors publish documents of thousands of files, so the
/// bound is on what they hold, not on their count); at most `maximumInlinedNodes` nodes copied in by inlining (a
/// file that references another many times, nested, is refused rather than
/// multiplied); at most `maximumTotalBytes` in all the referenced files
/// together (each read is held in memory with its marks, so a hundred files
/// each within the limit of one would need gigabytes); cycles of inlined
/// references are errors.
package struct DocumentBundler {
    /// The most bytes the referenced files may hold together.
    package static let maximumTotalBytes = 64 << 20
    /// The most nodes references may bring in by inlining, counted each time
    /// a target is used.
    static let maximumInlinedNodes = SourceReader.maximumNodes

    /// The folder references must stay in, without a trailing slash.
    let folder: String
    /// The document's own path, as resolved.
    let rootPath: String
    /// The folder as the document was named (`contracts` for
    /// `contracts/store.yaml`), so that diagnostics in other files name them
    /// as the user would.
    let shownFolder: String
    var errors = DiagnosticCollector()
    /// Each file read, by resolved path (the document's own included).
    var files: [String: SourceNode] = [:]
    /// The name given to each schema target, by `path#pointer`.
    var schemaNames: [String: String] = [:]
    /// Names taken in `components.schemas`.
    var takenNames: Set<String>
    /// The schemas to add to `components.schemas`, in order.
    var added: [(String, SourceNode)] = []
    /// Inlined targets, by `path#pointer`, with their node counts.
    var inlined: [String: (node: SourceNode, size: Int)] = [:]
    /// Targets being inlined, to find cycles.
    var inlining: Set<String> = []
    var inlinedNodes = 0
    /// Bytes of the referenced files read so far.
    var totalBytes = 0
    var refused = false
    /// Schema resources by absolute URI (no fragment): each file's own
    /// `file://` URL and every `$id`, resolved against the base it is in;
    /// their file and pointer.
    var resources: [String: (path: String, pointer: String)] = [:]
    /// `$anchor`s and `$dynamicAnchor`s, as `RESOURCE-URI#NAME`.
    var anchors: [String: (path: String, pointer: String)] = [:]
    /// The `$dynamicAnchor` names of each schema resource (by its absolute URI), in order.
    var dynamicAnchors: [String: [String]] = [:]
    /// The files whose resources are in `resources` and `anchors`.
    var indexed: Set<String> = []
    /// Files that are local copies of a URL (see `mirrored(_:)`), by
    /// resolved path: the URL, their base URI in place of their own.
    var copiedFrom: [String: String] = [:]
    /// The folder of the document's `$self` URI (OpenAPI 3.2), ending in
    /// `/`: the URI the document says it has, so the base of its relative
    /// references, while it is read from its folder here. A URI below it
    /// names the file at the same place below the document's folder.
    var selfFolder: String?
    /// See `bundle(_:file:adapt:)`.
    var adapt: ((SourceNode, [String], Bool) -> SourceNode)?

    /// The document with every reference to another file resolved, the
    /// errors found on the way, and the files read (to be watched).
    /// `adapt`: what a target read from another file becomes before it is
    /// brought in (a Swagger 2.0 document's parts, in 3.0's form), given
    /// the keys where the reference is and whether it is a schema.
    static func bundle(
        _ root: SourceNode, file: String,
        adapt: ((SourceNode, [String], Bool) -> SourceNode)? = nil
    ) -> (root: SourceNode, diagnostics: [Diagnostic], files: [String]) {
        guard hasExternalReference(root) || needsSchemaResolution(root) else { return (root, [], []) }
        let rootURL = URL(fileURLWithPath: file).standardizedFileURL.resolvingSymlinksInPath()
        let folder = rootURL.deletingLastPathComponent().path
        let schemaNames = Set(root["components"]?["schemas"]?.mappingPairs?.compactMap(\.key.scalarText) ?? [])
        let shownFolder = (file as NSString).deletingLastPathComponent
        var bundler = DocumentBundler(folder: folder == "/" ? "" : folder, rootPath: rootURL.path, shownFolder: shownFolder, takenNames: schemaNames)
        bundler.adapt = adapt
        if let own = root["$self"]?.scalarText, let uri = resolve(own, against: rootURL.absoluteString), !uri.hasPrefix("file:"),
            let slash = withoutFragment(uri).lastIndex(of: "/")
        {
            bundler.copiedFrom[rootURL.path] = withoutFragment(uri)
            bundler.selfFolder = String(uri[...slash])
        }
        bundler.files[rootURL.path] = root
        bundler.index(root, path: rootURL.path)
        bundler.indexed.insert(rootURL.path)
        // `components.schemas.Pet: {$ref: pet.yaml}` names pet.yaml's schema `Pet`.
        for pair in root["components"]?["schemas"]?.mappingPairs ?? [] {
            guard let name = pair.key.scalarText, pair.value.mappingPairs?.count == 1, let ref = pair.value["$ref"]?.scalarText,
                !ref.hasPrefix("#"), let (path, pointer) = bundler.place(ref, from: rootURL.path), bundler.schemaNames[path + "#" + pointer] == nil
            else { continue }
            bundler.schemaNames[path + "#" + pointer] = name
        }
        var bundled = bundler.rewrite(root, in: rootURL.path, keys: [], schema: false)
        if !bundler.added.isEmpty { bundled = bundler.addingSchemas(to: bundled) }
        let read = bundler.files.keys.filter { $0 != rootURL.path }.sorted()
        return (bundled, bundler.errors.diagnostics, read)
    }

    /// Whether any `$ref` in the tree names something other than `#…`.
    static func hasExternalReference(_ node: SourceNode, parent: String? = nil) -> Bool {
        switch node.kind {
        case .scalar: return false
        case .sequence(let items): return items.contains { hasExternalReference($0, parent: parent) }
        case .mapping(let pairs):
            for pair in pairs {
                guard let key = pair.key.scalarText else { continue }
                if key.hasPrefix("x-"), isSkipped(key, parent: parent) { continue }
                if key == "$ref", let text = pair.value.scalarText, !text.hasPrefix("#") { return true }
                if hasExternalReference(pair.value, parent: key) { return true }
            }
            return false
        }
    }

    /// Whether a schema of the document uses what the importer cannot take
    /// as written: an `$id` or `$anchor`, or a `$ref` within the document
    /// to anything but a whole component (`#/components/schemas/Pet/$defs/tag`,
    /// `#/$defs/x`, `#node`).
    static func needsSchemaResolution(_ node: SourceNode, parent: String? = nil) -> Bool {
        switch node.kind {
        case .scalar: return false
        case .sequence(let items): return items.contains { needsSchemaResolution($0, parent: parent) }
        case .mapping(let pairs):
            for pair in pairs {
                guard let key = pair.key.scalarText else { continue }
                if isSkipped(key, parent: parent) { continue }
                if key == "$id" || key == "$anchor" || key == "$dynamicRef" || key == "$dynamicAnchor" { return true }
                if key == "$ref", let text = pair.value.scalarText, text.hasPrefix("#") {
                    let tokens = tokens(String(text.dropFirst()))
                    // A path item (`#/paths/~1pets`) is whole; a schema inside one (`…/schema/properties/x`) is not.
                    let whole = (tokens.count == 3 && tokens[0] == "components") || (tokens.first == "paths" && !tokens.contains("schema"))
                    if !whole { return true }
                }
                if needsSchemaResolution(pair.value, parent: key) { return true }
            }
            return false
        }
    }

    // MARK: Schema resources

    /// Records the schema resources and anchors of a file read.
    mutating func index(_ root: SourceNode, path: String) {
        let own = ownURI(path)
        if resources[own] == nil { resources[own] = (path, "") }
        var pending: [(node: SourceNode, pointer: String, base: String, parent: String?)] = [(root, "", own, nil)]
        while let (node, pointer, outer, parent) = pending.popLast() {
            switch node.kind {
            case .scalar:
                continue
            case .sequence(let items):
                for (index, item) in items.enumerated() { pending.append((item, pointer + "/\(index)", outer, parent)) }
            case .mapping(let pairs):
                var base = outer
                if let id = node["$id"]?.scalarText, let resolved = Self.resolve(id, against: outer) {
                    base = Self.withoutFragment(resolved)
                    if resources[base] == nil { resources[base] = (path, pointer) }
                }
                for key in ["$anchor", "$dynamicAnchor"] {
                    if let name = node[key]?.scalarText, anchors[base + "#" + name] == nil { anchors[base + "#" + name] = (path, pointer) }
                }
                if let name = node["$dynamicAnchor"]?.scalarText, !(dynamicAnchors[base]?.contains(name) ?? false) {
                    dynamicAnchors[base, default: []].append(name)
                }
                for pair in pairs {
                    guard let key = pair.key.scalarText, !Self.isSkipped(key, parent: parent) else { continue }
                    pending.append((pair.value, pointer + "/" + SchemaValidator.escape(key), base, key))
                }
            }
        }
    }

    /// The base URI at a place in a file: the file's URL, changed by every
    /// `$id` on the way down to it.
    /// The node's own `$id` is left out: rewriting it applies it.
    func base(of path: String, pointer: String) -> String {
        var base = ownURI(path)
        guard var node = files[path] else { return base }
        for token in Self.tokens(pointer) {
            if let id = node["$id"]?.scalarText, let resolved = Self.resolve(id, against: base) { base = Self.withoutFragment(resolved) }
            guard
                let next = Int(token).flatMap({ index in node.sequenceItems.flatMap { $0.indices.contains(index) ? $0[index] : nil } }) ?? node[token]
            else { break }
            node = next
        }
        return base
    }

    /// `reference` resolved against `base` (RFC 3986), as an absolute URI.
    static func resolve(_ reference: String, against base: String) -> String? {
        if reference.hasPrefix("#") { return withoutFragment(base) + reference }
        // Absolute already (`https://…`, `urn:uuid:…`): a scheme, then a colon.
        if let colon = reference.firstIndex(of: ":"), reference[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
            reference[..<colon].first?.isLetter == true
        {
            return reference
        }
        guard let baseURL = URL(string: withoutFragment(base)), let url = URL(string: reference, relativeTo: baseURL) else { return nil }
        return url.absoluteString
    }

    static func withoutFragment(_ uri: String) -> String {
        uri.firstIndex(of: "#").map { String(uri[..<$0]) } ?? uri
    }

    /// A file's own base URI: its `file://` URL, or the URL it is a copy of.
    func ownURI(_ path: String) -> String {
        if let copied = copiedFrom[path] { return copied }
        if let selfFolder, path.hasPrefix(folder + "/") {
            let relative = String(path.dropFirst(folder.count + 1))
            return selfFolder + (relative.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? relative)
        }
        return URL(fileURLWithPath: path).absoluteString
    }

    /// The local copy of an `http(s)` URL a reference names, when the
    /// document's folder has one where `wget -x URL` saves it:
    /// `HOST[:PORT]/PATH` (`localhost:1234/integer.json`,
    /// `raw.githubusercontent.com/org/api/main/common.yaml`). Doppel never
    /// fetches from the network, which would make what a document means
    /// depend on a server's day (and let a document make Doppel call any
    /// address); a copy is read like any file beside the document, in its
    /// bounds, and references inside it resolve against the URL.
    func mirrored(_ uri: String) -> String? {
        if let selfFolder, uri.hasPrefix(selfFolder) {
            // Below the document's own `$self`: the file at that place below its folder.
            var rest = String(uri.dropFirst(selfFolder.count))
            if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = String(rest[..<end]) }
            guard !rest.isEmpty, let decoded = rest.removingPercentEncoding else { return nil }
            let local = URL(fileURLWithPath: folder + "/" + decoded).standardizedFileURL.resolvingSymlinksInPath().path
            guard local.hasPrefix(folder + "/"), FileManager.default.fileExists(atPath: local) else { return nil }
            return local
        }
        guard let url = URL(string: uri), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty, !host.contains("/")
        else { return nil }
        let path = url.path
        guard !path.isEmpty, !path.hasSuffix("/") else { return nil }
        let hostPart = host.lowercased() + (url.port.map { ":\($0)" } ?? "")
        let local = URL(fileURLWithPath: folder + "/" + hostPart + path).standardizedFileURL.resolvingSymlinksInPath().path
        guard local.hasPrefix(folder + "/" + hostPart + "/"), FileManager.default.fileExists(atPath: local) else { return nil }
        return local
    }

    /// Where a schema reference leads, by the schema resources known (and
    /// the files it names, read and indexed on the way): its file and
    /// pointer; nil, with an error, when it leads nowhere Doppel may read.
    mutating func locateSchema(_ ref: String, base: String, at refNode: SourceNode) -> (SourceNode, String, String)? {
        guard let absolute = Self.resolve(ref, against: base) else {
            errors.error("$ref '\(ref)' is not a URI reference", at: refNode.location)
            return nil
        }
        let resource = Self.withoutFragment(absolute)
        let fragment = absolute.firstIndex(of: "#").map { String(absolute[absolute.index(after: $0)...]) } ?? ""
        if resources[resource] == nil, resource.hasPrefix("file:"),
            let path = URL(string: resource)?.standardizedFileURL.resolvingSymlinksInPath().path
        {
            guard path.hasPrefix(folder + "/") || path == rootPath else {
                errors.error(
                    "$ref '\(ref)' resolves outside the document's folder; Doppel reads only files beside the document or below it",
                    at: refNode.location)
                return nil
            }
            guard let root = read(path, ref: ref, at: refNode) else { return nil }
            if indexed.insert(path).inserted { index(root, path: path) }
            if resources[resource] == nil { resources[resource] = (path, "") }
        }
        if resources[resource] == nil, let path = mirrored(resource) {
            guard let root = read(path, ref: ref, at: refNode) else { return nil }
            if indexed.insert(path).inserted {
                copiedFrom[path] = resource
                index(root, path: path)
            }
            if resources[resource] == nil { resources[resource] = (path, "") }
        }
        guard let found = resources[resource] else {
            errors.error(
                "$ref '\(ref)' names \(resource), which is neither a file beside the document nor a schema with that $id in it; Doppel does not fetch from the network: save a copy of it in the document's folder as HOST/PATH (where `wget -x URL` saves it)",
                at: refNode.location)
            return nil
        }
        var (path, pointer) = found
        if !fragment.isEmpty {
            let decoded = fragment.removingPercentEncoding ?? fragment
            if decoded.hasPrefix("/") {
                pointer = found.pointer + decoded
            } else if let anchored = anchors[resource + "#" + decoded] {
                (path, pointer) = anchored
            } else {
                errors.error("unresolved $ref '\(ref)': no $anchor '\(decoded)' in \(resource)", at: refNode.location)
                return nil
            }
        }
        // In the OpenAPI document itself, schemas live under `components.schemas`,
        // a `schema` of something, or `$defs`; a pointer elsewhere (`#/paths`) is a mistake.
        let tokens = Self.tokens(pointer)
        if path == rootPath, !tokens.contains(where: { ["schemas", "schema", "$defs", "definitions"].contains($0) }) {
            errors.error(
                "$ref '\(ref)' does not point at a schema (schemas are under components.schemas, a 'schema' or '$defs')", at: refNode.location)
            return nil
        }
        var target = files[path]
        for token in tokens {
            if let index = Int(token), let items = target?.sequenceItems {
                target = items.indices.contains(index) ? items[index] : nil
            } else {
                target = target?[token]
            }
        }
        guard let target else {
            errors.error(
                "unresolved $ref '\(ref)': nothing at '\(pointer)' in \(path == rootPath ? "the document" : URL(fileURLWithPath: path).lastPathComponent)",
                at: refNode.location)
            return nil
        }
        return (target, path, pointer)
    }

    // MARK: Rewriting

    static let literalKeys: Set<String> = ["example", "default", "enum", "const", "value"]
    /// Mappings whose keys are names (a property, a status, a media type),
    /// never keywords: a property named `default` or a `default` response is
    /// no literal value.
    static let nameMaps: Set<String> = [
        "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "schemas", "responses", "parameters", "headers",
        "securitySchemes", "callbacks", "links", "requestBodies", "pathItems", "paths", "content", "encoding", "examples",
    ]

    /// Schema keywords whose value is a map of names to schemas.
    static let schemaMaps: Set<String> = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]

    /// Whether the value under `key` is a literal value (in which a `$ref` is data), in a mapping that is the value of `parent`.
    static func isLiteral(_ key: String, parent: String?) -> Bool {
        literalKeys.contains(key) && !(parent.map(nameMaps.contains) ?? false)
    }

    /// Whether the value under `key` is left as it is: a literal value, or
    /// an extension (`x-…`: its vendor's own, never followed), in a mapping
    /// that is the value of `parent`. In a mapping of names, `x-request-id`
    /// is a header's name and `default` a property's (but the Paths and
    /// Responses Objects take extensions beside their paths and statuses).
    static func isSkipped(_ key: String, parent: String?) -> Bool {
        if isLiteral(key, parent: parent) { return true }
        guard key.hasPrefix("x-") else { return false }
        guard let parent, nameMaps.contains(parent) else { return true }
        return parent == "paths" || parent == "responses"
    }

    /// The node with its references resolved. `keys` are the mapping keys
    /// from the top of its file (to tell where schemas go); `schema` says
    /// the node is a schema or inside one.
    /// `base` is the base URI a schema's references resolve against, when
    /// an `$id` made it other than the file's own URL.
    mutating func rewrite(_ node: SourceNode, in file: String, keys: [String], schema: Bool, base: String? = nil) -> SourceNode {
        if refused { return node }
        switch node.kind {
        case .scalar:
            return node
        case .sequence(let items):
            var changed = false
            let rewritten = items.map { item in
                let new = rewrite(item, in: file, keys: keys, schema: schema, base: base)
                changed = changed || new !== item
                return new
            }
            return changed ? SourceNode(kind: .sequence(rewritten), placedAs: node) : node
        case .mapping(let pairs):
            var base = base
            if schema, let id = node["$id"]?.scalarText, let resolved = Self.resolve(id, against: base ?? ownURI(file)) {
                base = Self.withoutFragment(resolved)
            }
            if schema, node["$dynamicRef"] != nil || resourceRoot(node, file: file, keys: keys) {
                return dynamic(node, in: file, keys: keys, base: base)
            }
            if let refNode = node["$ref"], let ref = refNode.scalarText {
                // In a schema, any reference but one to a whole component of
                // the document as written goes by URI (`$id`, `$anchor`, pointers into schemas).
                let plain =
                    file == rootPath && base == nil && ref.hasPrefix("#") && (!schema || Self.componentSchemaName(String(ref.dropFirst())) != nil)
                if !plain {
                    return reference(ref, at: refNode, in: node, file: file, keys: keys, schema: schema, base: base)
                }
            }
            let (rewritten, changed) = rewrite(pairs, in: file, keys: keys, schema: schema, base: base)
            return changed ? SourceNode(kind: .mapping(rewritten), placedAs: node) : node
        }
    }

    /// The members of a mapping with their references resolved, and whether any changed.
    mutating func rewrite(
        _ pairs: [(key: SourceNode, value: SourceNode)], in file: String, keys: [String], schema: Bool,
        base: String?
    ) -> ([(key: SourceNode, value: SourceNode)], Bool) {
        var changed = false
        let rewritten = pairs.map { pair in
            let key = pair.key.scalarText ?? ""
            // Literal values: a `$ref` in them is data, not a reference. An
            // extension (`x-…`) is its vendor's own: never followed.
            if Self.isSkipped(key, parent: keys.last) || (schema && key == "examples" && !(keys.last.map(Self.nameMaps.contains) ?? false)) {
                return pair
            }
            let isSchema = schema || key == "schema" || (key == "schemas" && keys == ["components"])
            if schema, Self.schemaMaps.contains(key), keys.last.map({ !Self.nameMaps.contains($0) }) ?? true,
                pair.value.mappingPairs?.count == 1, let refNode = pair.value["$ref"], let ref = refNode.scalarText
            {
                // `properties: {$ref: attributes.yml#/ids}`: a vendor's way to
                // share a map of properties. JSON Schema would read a property
                // named `$ref`; the document means the map it names, as bundlers write it in.
                guard let (target, path, _) = locate(ref, at: refNode, from: file), target.mappingPairs != nil else { return pair }
                errors.warning(
                    "a $ref as the whole of '\(key)' is read as the map it names (JSON Schema reads it as one member named '$ref')",
                    at: refNode.location)
                changed = true
                return (key: pair.key, value: rewrite(target, in: path, keys: keys + [key], schema: true, base: nil))
            }
            if schema, key == "discriminator", keys.last.map({ !Self.nameMaps.contains($0) }) ?? true {
                let new = discriminator(pair.value, in: file, keys: keys, base: base)
                changed = changed || new !== pair.value
                return (key: pair.key, value: new)
            }
            let new = rewrite(pair.value, in: file, keys: keys + [key], schema: isSchema, base: isSchema ? base : nil)
            changed = changed || new !== pair.value
            return (key: pair.key, value: new)
        }
        return (rewritten, changed)
    }

}
