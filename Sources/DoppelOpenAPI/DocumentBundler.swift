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
/// never a URL; at most `maximumFiles` files, each no larger than a
/// contract; at most `maximumInlinedNodes` nodes copied in by inlining (a
/// file that references another many times, nested, is refused rather than
/// multiplied); at most `maximumTotalBytes` in all the referenced files
/// together (each read is held in memory with its marks, so a hundred files
/// each within the limit of one would need gigabytes); cycles of inlined
/// references are errors.
package struct DocumentBundler {
    /// The most files one document may reference, itself excluded.
    package static let maximumFiles = 100
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

    /// The document with every reference to another file resolved, the
    /// errors found on the way, and the files read (to be watched).
    static func bundle(_ root: SourceNode, file: String) -> (root: SourceNode, diagnostics: [Diagnostic], files: [String]) {
        guard hasExternalReference(root) else { return (root, [], []) }
        let rootURL = URL(fileURLWithPath: file).standardizedFileURL.resolvingSymlinksInPath()
        let folder = rootURL.deletingLastPathComponent().path
        let schemaNames = Set(root["components"]?["schemas"]?.mappingPairs?.compactMap(\.key.scalarText) ?? [])
        let shownFolder = (file as NSString).deletingLastPathComponent
        var bundler = DocumentBundler(folder: folder == "/" ? "" : folder, rootPath: rootURL.path, shownFolder: shownFolder, takenNames: schemaNames)
        bundler.files[rootURL.path] = root
        // `components.schemas.Pet: {$ref: pet.yaml}` names pet.yaml's schema `Pet`.
        for pair in root["components"]?["schemas"]?.mappingPairs ?? [] {
            guard let name = pair.key.scalarText, pair.value.mappingPairs?.count == 1, let ref = pair.value["$ref"]?.scalarText,
                  !ref.hasPrefix("#"), let (path, pointer) = bundler.place(ref, from: rootURL.path), bundler.schemaNames[path + "#" + pointer] == nil else { continue }
            bundler.schemaNames[path + "#" + pointer] = name
        }
        var bundled = bundler.rewrite(root, in: rootURL.path, keys: [], schema: false)
        if !bundler.added.isEmpty { bundled = bundler.addingSchemas(to: bundled) }
        let read = bundler.files.keys.filter { $0 != rootURL.path }.sorted()
        return (bundled, bundler.errors.diagnostics, read)
    }

    /// Whether any `$ref` in the tree names something other than `#…`.
    static func hasExternalReference(_ node: SourceNode) -> Bool {
        switch node.kind {
        case .scalar: return false
        case .sequence(let items): return items.contains(where: hasExternalReference)
        case .mapping(let pairs):
            for pair in pairs {
                if pair.key.scalarText == "$ref", let text = pair.value.scalarText, !text.hasPrefix("#") { return true }
                if hasExternalReference(pair.value) { return true }
            }
            return false
        }
    }

    // MARK: Rewriting

    static let literalKeys: Set<String> = ["example", "default", "enum", "const", "value"]

    /// The node with its references resolved. `keys` are the mapping keys
    /// from the top of its file (to tell where schemas go); `schema` says
    /// the node is a schema or inside one.
    mutating func rewrite(_ node: SourceNode, in file: String, keys: [String], schema: Bool) -> SourceNode {
        if refused { return node }
        switch node.kind {
        case .scalar:
            return node
        case .sequence(let items):
            var changed = false
            let rewritten = items.map { item in
                let new = rewrite(item, in: file, keys: keys, schema: schema)
                changed = changed || new !== item
                return new
            }
            return changed ? SourceNode(kind: .sequence(rewritten), placedAs: node) : node
        case .mapping(let pairs):
            if let refNode = node["$ref"], let ref = refNode.scalarText, file != rootPath || !ref.hasPrefix("#") {
                return reference(ref, at: refNode, in: node, file: file, keys: keys, schema: schema)
            }
            var changed = false
            let rewritten = pairs.map { pair in
                let key = pair.key.scalarText ?? ""
                // Literal values: a `$ref` in them is data, not a reference.
                if Self.literalKeys.contains(key) || (schema && key == "examples") { return pair }
                let isSchema = schema || key == "schema" || (key == "schemas" && keys == ["components"])
                let new = rewrite(pair.value, in: file, keys: keys + [key], schema: isSchema)
                changed = changed || new !== pair.value
                return (key: pair.key, value: new)
            }
            return changed ? SourceNode(kind: .mapping(rewritten), placedAs: node) : node
        }
    }

    /// A `$ref` in `file`: a schema reference named in `components.schemas`,
    /// or any other reference replaced by its target.
    mutating func reference(_ ref: String, at refNode: SourceNode, in node: SourceNode, file: String, keys: [String], schema: Bool) -> SourceNode {
        guard let (target, path, pointer) = locate(ref, at: refNode, from: file) else { return node }
        let key = path + "#" + pointer
        if schema {
            // `components.schemas.Pet: {$ref: pet.yaml}` in the document: the
            // target is `Pet` itself (named so before anything was rewritten).
            if file == rootPath, keys.count == 3, keys[0] == "components", keys[1] == "schemas", schemaNames[key] == keys[2] {
                return rewrite(target, in: path, keys: Self.tokens(pointer), schema: true)
            }
            let name: String
            if path == rootPath, let own = Self.componentSchemaName(pointer) {
                name = own
            } else if let known = schemaNames[key] {
                name = known
            } else {
                name = freshName(pointer: pointer, path: path)
                schemaNames[key] = name
                let content = rewrite(target, in: path, keys: Self.tokens(pointer), schema: true)
                added.append((name, content))
            }
            let pairs = (node.mappingPairs ?? []).map { pair in
                pair.key.scalarText == "$ref" ? (key: pair.key, value: ContractNode.string("#/components/schemas/" + SchemaValidator.escape(name), at: pair.value.location)) : pair
            }
            return SourceNode(kind: .mapping(pairs), placedAs: node)
        }
        if path == rootPath && pointer.isEmpty {
            errors.error("$ref '\(ref)' names the whole document", at: refNode.location)
            return node
        }
        let content: SourceNode
        if let done = inlined[key] {
            content = done.node
            inlinedNodes += done.size
        } else {
            guard !inlining.contains(key) else {
                errors.error("$ref '\(ref)' leads back to itself through other references", at: refNode.location)
                return node
            }
            inlining.insert(key)
            content = rewrite(target, in: path, keys: Self.tokens(pointer), schema: false)
            inlining.remove(key)
            let size = Self.count(content)
            inlined[key] = (content, size)
            inlinedNodes += size
        }
        if inlinedNodes > Self.maximumInlinedNodes {
            if !refused { errors.error("references to other files bring in more than \(Self.maximumInlinedNodes) nodes; a document may not multiply its files by referencing them over and over", at: refNode.location) }
            refused = true
            return node
        }
        // Sibling keys of the reference (3.1's summary and description) win.
        let siblings = (node.mappingPairs ?? []).filter { $0.key.scalarText != "$ref" }
        guard !siblings.isEmpty, let targetPairs = content.mappingPairs else { return content }
        let overridden = Set(siblings.compactMap(\.key.scalarText))
        return SourceNode(kind: .mapping(targetPairs.filter { !overridden.contains($0.key.scalarText ?? "") } + siblings), placedAs: content)
    }

    /// The node a reference names, with its file's resolved path and its
    /// pointer; nil, with an error, when it cannot be read.
    mutating func locate(_ ref: String, at refNode: SourceNode, from file: String) -> (SourceNode, String, String)? {
        let filePart = ref.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        if filePart.contains("://") {
            errors.error("$ref '\(ref)' is a URL; Doppel reads references to files in the document's folder, not from the network", at: refNode.location)
            return nil
        }
        guard let (path, pointer) = place(ref, from: file) else {
            errors.error("$ref '\(ref)' resolves outside the document's folder; Doppel reads only files beside the document or below it", at: refNode.location)
            return nil
        }
        guard let root = read(path, ref: ref, at: refNode) else { return nil }
        guard pointer.isEmpty || pointer.hasPrefix("/") else {
            errors.error("$ref '\(ref)' has a fragment that is not a JSON pointer (it must start with '/')", at: refNode.location)
            return nil
        }
        var target: SourceNode? = root
        for token in Self.tokens(pointer) {
            if let index = Int(token), let items = target?.sequenceItems {
                target = items.indices.contains(index) ? items[index] : nil
            } else {
                target = target?[token]
            }
        }
        guard let target else {
            errors.error("unresolved $ref '\(ref)': \(path == rootPath ? "the document" : "'\(filePart)'") has nothing at '\(pointer)'", at: refNode.location)
            return nil
        }
        return (target, path, pointer)
    }

    /// The resolved path of the file a reference names and its pointer; nil
    /// for a URL or a file outside the folder.
    func place(_ ref: String, from file: String) -> (path: String, pointer: String)? {
        let hash = ref.firstIndex(of: "#")
        let filePart = String(ref[..<(hash ?? ref.endIndex)])
        let pointer = hash.map { String(ref[ref.index(after: $0)...]) } ?? ""
        guard !filePart.isEmpty else { return (file, pointer) }
        guard !filePart.contains("://") else { return nil }
        let relative = filePart.removingPercentEncoding ?? filePart
        let base = URL(fileURLWithPath: file).deletingLastPathComponent()
        let url = (relative.hasPrefix("/") ? URL(fileURLWithPath: relative) : base.appendingPathComponent(relative))
            .standardizedFileURL.resolvingSymlinksInPath()
        guard url.path.hasPrefix(folder + "/") else { return nil }
        return (url.path, pointer)
    }

    /// A referenced file's tree, read once.
    mutating func read(_ path: String, ref: String, at refNode: SourceNode) -> SourceNode? {
        if let root = files[path] { return root }
        guard files.count <= Self.maximumFiles else {
            if !refused { errors.error("the document references more than \(Self.maximumFiles) files", at: refNode.location) }
            refused = true
            return nil
        }
        let relative = String(path.dropFirst(folder.count + 1))
        let shown = shownFolder.isEmpty ? relative : shownFolder + "/" + relative
        let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
        guard totalBytes + size <= Self.maximumTotalBytes else {
            if !refused {
                errors.error("the files the document references hold more than \(Self.maximumTotalBytes >> 20) MiB together ('\(relative)' would bring them to \((totalBytes + size) >> 20) MiB)",
                             at: refNode.location)
            }
            refused = true
            return nil
        }
        totalBytes += size
        switch SourceReader.readTree(file: shown, what: "referenced file") {
        case .success(let root?):
            files[path] = root
            return root
        case .success(nil):
            errors.error("$ref '\(ref)': '\(relative)' is empty", at: refNode.location)
        case .failure(let error):
            let unreadable = "cannot read referenced file: "
            if error.diagnostics.count == 1, let only = error.diagnostics.first, only.message.hasPrefix(unreadable) {
                errors.error("$ref '\(ref)' cannot be read: \(only.message.dropFirst(unreadable.count))", at: refNode.location)
            } else {
                errors.append(contentsOf: error.diagnostics)
            }
        }
        // Read once, even when it fails: later references to it say nothing more.
        files[path] = SourceNode(kind: .mapping([]), location: refNode.location)
        return nil
    }

    // MARK: Names

    /// `Pet` for `/components/schemas/Pet`.
    static func componentSchemaName(_ pointer: String) -> String? {
        let tokens = tokens(pointer)
        guard tokens.count == 3, tokens[0] == "components", tokens[1] == "schemas" else { return nil }
        return tokens[2]
    }

    /// A name for `components.schemas` not taken yet: the pointer's last
    /// token, or the file's name, in the characters OpenAPI allows.
    mutating func freshName(pointer: String, path: String) -> String {
        let last = Self.tokens(pointer).last ?? URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        var base = String(last.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") ? $0 : "_" })
        if base.isEmpty { base = "Schema" }
        var name = base
        var suffix = 2
        while takenNames.contains(name) {
            name = "\(base)_\(suffix)"
            suffix += 1
        }
        takenNames.insert(name)
        return name
    }

    /// A JSON pointer's tokens, unescaped.
    static func tokens(_ pointer: String) -> [String] {
        guard pointer.hasPrefix("/") else { return [] }
        return pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map { OpenAPIImporter.unescape(String($0)) }
    }

    static func count(_ node: SourceNode) -> Int {
        switch node.kind {
        case .scalar: 1
        case .sequence(let items): items.reduce(1) { $0 + count($1) }
        case .mapping(let pairs): pairs.reduce(1) { $0 + count($1.value) }
        }
    }

    /// The document with the referenced schemas added to `components.schemas`.
    func addingSchemas(to root: SourceNode) -> SourceNode {
        let components = root["components"]
        let schemas = components?["schemas"]
        let newSchemas = ContractNode.map((schemas?.mappingPairs?.map { ($0.key.scalarText ?? "", $0.value) } ?? []) + added,
                                          at: schemas?.location ?? root.location)
        let newComponents = ContractNode.setting("schemas", newSchemas, in: components ?? ContractNode.map([], at: root.location))
        return ContractNode.setting("components", newComponents, in: root)
    }
}
