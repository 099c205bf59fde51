import DoppelCore
import Foundation

/// The bundler's dynamic references and the names it gives what it brings in.
extension DocumentBundler {
    // MARK: Dynamic references

    /// Whether a schema node is the root of a schema resource that has
    /// `$dynamicAnchor`s: it has an `$id`, or it is a referenced file's top.
    func resourceRoot(_ node: SourceNode, file: String, keys: [String]) -> Bool {
        guard !dynamicAnchors.isEmpty else { return false }
        if node["$id"] != nil { return true }
        return keys.isEmpty && file != rootPath && dynamicAnchors[ownURI(file)] != nil
    }

    /// A schema with `$dynamicRef` or at the root of a resource with
    /// dynamic anchors, written for Doppel's validator, which keeps the
    /// dynamic scope (JSON Schema 2020-12 §8.2.3.2): `$dynamicRef` becomes
    /// `x-doppel-dynamic-ref: {ref: '#/components/schemas/NAME', anchor: A}`
    /// (its initial target, and the anchor to look for in the dynamic scope
    /// when that target has the same `$dynamicAnchor`; a plain `$ref` when
    /// it has not), and a resource root gets
    /// `x-doppel-dynamic-scope: {ANCHOR: '#/components/schemas/NAME', ...}`,
    /// each anchored schema brought into `components.schemas`.
    mutating func dynamic(_ node: SourceNode, in file: String, keys: [String], base: String?) -> SourceNode {
        guard var pairs = node.mappingPairs else { return node }
        // `rewrite` has applied the node's own `$id` to `base` already.
        let resource = base ?? ownURI(file)
        var extra: [(key: SourceNode, value: SourceNode)] = []
        if let refNode = node["$dynamicRef"], let ref = refNode.scalarText {
            pairs.removeAll { $0.key.scalarText == "$dynamicRef" }
            // Located once here (an error said once), then named as any reference's target is.
            if let (located, _, _) = locateSchema(ref, base: resource, at: refNode),
                let target = componentReference(ref, at: refNode, file: file, keys: keys, base: resource)
            {
                let fragment = ref.firstIndex(of: "#").map { String(ref[ref.index(after: $0)...]) } ?? ""
                let bookended = !fragment.isEmpty && !fragment.hasPrefix("/") && located["$dynamicAnchor"]?.scalarText == fragment
                // Not bookended: exactly a `$ref`. Beside a `$ref` the schema has, in an allOf.
                let member: (String, SourceNode) =
                    bookended
                    ? (
                        "x-doppel-dynamic-ref",
                        ContractNode.map([("ref", target), ("anchor", ContractNode.string(fragment, at: refNode.location))], at: refNode.location)
                    )
                    : ("$ref", target)
                if pairs.contains(where: { $0.key.scalarText == "$ref" }) {
                    let rewrittenAllOf = (node["allOf"]?.sequenceItems ?? []).map {
                        rewrite($0, in: file, keys: keys + ["allOf"], schema: true, base: resource)
                    }
                    extra.append(
                        (
                            key: ContractNode.string("allOf", at: refNode.location),
                            value: ContractNode.list([ContractNode.map([member], at: refNode.location)] + rewrittenAllOf, at: refNode.location)
                        ))
                    pairs.removeAll { $0.key.scalarText == "allOf" }
                } else {
                    extra.append((key: ContractNode.string(member.0, at: refNode.location), value: member.1))
                }
            }
        }
        if resourceRoot(node, file: file, keys: keys) || node["$dynamicAnchor"] != nil,
            let scope = dynamicScope(of: resource, file: file, keys: keys, at: node.location)
        {
            extra.append(scope)
        }
        // The rest as any schema's (its own `$ref` included), the dynamic keys beside.
        let rest = SourceNode(kind: .mapping(pairs), placedAs: node)
        var rewritten: SourceNode
        if let refNode = rest["$ref"], let ref = refNode.scalarText,
            !(file == rootPath && base == nil && ref.hasPrefix("#") && Self.componentSchemaName(String(ref.dropFirst())) != nil)
        {
            rewritten = reference(ref, at: refNode, in: rest, file: file, keys: keys, schema: true, base: resource)
        } else {
            let (members, _) = rewrite(pairs, in: file, keys: keys, schema: true, base: resource)
            rewritten = SourceNode(kind: .mapping(members), placedAs: node)
        }
        guard !extra.isEmpty, let done = rewritten.mappingPairs else { return rewritten }
        return SourceNode(kind: .mapping(done + extra), placedAs: node)
    }

    /// `x-doppel-dynamic-scope` for a schema of `resource`: its dynamic
    /// anchors, each brought into `components.schemas`; nil when it has none.
    mutating func dynamicScope(
        of resource: String, file: String, keys: [String], at location: SourceLocation
    ) -> (key: SourceNode, value: SourceNode)? {
        guard let names = dynamicAnchors[resource] else { return nil }
        var scope: [(String, SourceNode)] = []
        for name in names {
            let anchorRef = resource + "#" + name
            if let target = componentReference(anchorRef, at: ContractNode.string(anchorRef, at: location), file: file, keys: keys, base: resource) {
                scope.append((name, target))
            }
        }
        return scope.isEmpty ? nil : (key: ContractNode.string("x-doppel-dynamic-scope", at: location), value: ContractNode.map(scope, at: location))
    }

    /// The `#/components/schemas/NAME` node a schema reference written
    /// somewhere other than a `$ref` (a `$dynamicRef`, a dynamic anchor, a
    /// discriminator's mapping) becomes, its target brought into
    /// `components.schemas` as a `$ref`'s is; nil, with the error, when it
    /// leads nowhere.
    mutating func componentReference(_ ref: String, at refNode: SourceNode, file: String, keys: [String], base: String?) -> SourceNode? {
        let asReference = SourceNode(
            kind: .mapping([(key: ContractNode.string("$ref", at: refNode.location), value: refNode)]), location: refNode.location)
        let resolved = reference(ref, at: refNode, in: asReference, file: file, keys: keys, schema: true, base: base)
        return resolved === asReference ? nil : resolved["$ref"]
    }

    /// A discriminator whose `mapping` values that are references (not
    /// bare schema names) name the schemas as they are in the bundled
    /// document: a value in another file (`'#/cat'` in `models/pet.yml`,
    /// `cat.yaml`) is a reference like a `$ref`, its target brought into
    /// `components.schemas`.
    mutating func discriminator(_ node: SourceNode, in file: String, keys: [String], base: String?) -> SourceNode {
        guard let pairs = node.mappingPairs, let mapping = node["mapping"], let entries = mapping.mappingPairs else { return node }
        var changed = false
        let rewritten = entries.map { entry -> (key: SourceNode, value: SourceNode) in
            guard let value = entry.value.scalarText, value.contains("#") || value.contains("/") || value.contains(".") else { return entry }
            let plain = file == rootPath && base == nil && value.hasPrefix("#") && Self.componentSchemaName(String(value.dropFirst())) != nil
            if plain { return entry }
            guard let target = componentReference(value, at: entry.value, file: file, keys: keys, base: base) else { return entry }
            changed = true
            return (key: entry.key, value: target)
        }
        guard changed else { return node }
        let newMapping = SourceNode(kind: .mapping(rewritten), placedAs: mapping)
        return SourceNode(kind: .mapping(pairs.map { $0.key.scalarText == "mapping" ? (key: $0.key, value: newMapping) : $0 }), placedAs: node)
    }

    /// A `$ref` in `file`: a schema reference named in `components.schemas`,
    /// or any other reference replaced by its target.
    mutating func reference(
        _ ref: String, at refNode: SourceNode, in node: SourceNode, file: String, keys: [String], schema: Bool, base: String?
    ) -> SourceNode {
        let located = schema ? locateSchema(ref, base: base ?? ownURI(file), at: refNode) : locate(ref, at: refNode, from: file)
        guard let (target, path, pointer) = located else { return node }
        let key = path + "#" + pointer
        if schema {
            // `components.schemas.Pet: {$ref: pet.yaml}` in the document: the
            // target is `Pet` itself (named so before anything was rewritten).
            if file == rootPath, keys.count == 3, keys[0] == "components", keys[1] == "schemas", schemaNames[key] == keys[2] {
                return rewrite(target, in: path, keys: Self.tokens(pointer), schema: true, base: targetBase(path, pointer))
            }
            let name = schemaName(of: target, key: key, path: path, pointer: pointer, keys: keys)
            // The reference's siblings (JSON Schema 2020-12 keeps them) are schemas too, their references resolved alike.
            let (siblings, _) = rewrite(
                (node.mappingPairs ?? []).filter { $0.key.scalarText != "$ref" }, in: file, keys: keys, schema: true, base: base)
            let pairs =
                (node.mappingPairs ?? []).compactMap { pair in
                    pair.key.scalarText == "$ref"
                        ? (key: pair.key, value: ContractNode.string("#/components/schemas/" + SchemaValidator.escape(name), at: pair.value.location))
                        : nil
                } + siblings
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
            let adapted = path != rootPath ? adapt?(target, keys, false) ?? target : target
            content = rewrite(adapted, in: path, keys: Self.tokens(pointer), schema: false)
            inlining.remove(key)
            let size = Self.count(content)
            inlined[key] = (content, size)
            inlinedNodes += size
        }
        if inlinedNodes > Self.maximumInlinedNodes {
            if !refused {
                errors.error(
                    "references to other files bring in more than \(Self.maximumInlinedNodes) nodes; a document may not multiply its files by referencing them over and over",
                    at: refNode.location)
            }
            refused = true
            return node
        }
        // Sibling keys of the reference (3.1's summary and description) win.
        let siblings = (node.mappingPairs ?? []).filter { $0.key.scalarText != "$ref" }
        guard !siblings.isEmpty, let targetPairs = content.mappingPairs else { return content }
        let overridden = Set(siblings.compactMap(\.key.scalarText))
        return SourceNode(kind: .mapping(targetPairs.filter { !overridden.contains($0.key.scalarText ?? "") } + siblings), placedAs: content)
    }

    /// The name in `components.schemas` of a schema reached by a
    /// reference: the document's own, one given before, or a fresh one,
    /// its target rewritten and added under it.
    mutating func schemaName(of target: SourceNode, key: String, path: String, pointer: String, keys: [String]) -> String {
        if path == rootPath, let own = Self.componentSchemaName(pointer) { return own }
        if let known = schemaNames[key] { return known }
        let name = freshName(pointer: pointer, path: path)
        schemaNames[key] = name
        let adapted = path != rootPath ? adapt?(target, keys, true) ?? target : target
        var content = rewrite(adapted, in: path, keys: Self.tokens(pointer), schema: true, base: targetBase(path, pointer))
        // Reached inside a schema resource with dynamic anchors (not at its root): that resource joins the dynamic scope too.
        if !dynamicAnchors.isEmpty, let pairs = content.mappingPairs, content["x-doppel-dynamic-scope"] == nil {
            var resource = self.base(of: path, pointer: pointer)
            if let id = target["$id"]?.scalarText, let resolved = Self.resolve(id, against: resource) {
                resource = Self.withoutFragment(resolved)
            }
            if let scope = dynamicScope(of: resource, file: path, keys: Self.tokens(pointer), at: content.location) {
                content = SourceNode(kind: .mapping(pairs + [scope]), placedAs: content)
            }
        }
        added.append((name, content))
        return name
    }

    /// The base URI of a schema reached by a reference, nil when it is its file's own URL.
    func targetBase(_ path: String, _ pointer: String) -> String? {
        let base = base(of: path, pointer: pointer)
        return base == URL(fileURLWithPath: path).absoluteString ? nil : base
    }

    /// The node a reference names, with its file's resolved path and its
    /// pointer; nil, with an error, when it cannot be read.
    mutating func locate(_ ref: String, at refNode: SourceNode, from file: String) -> (SourceNode, String, String)? {
        let filePart = ref.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let copy = filePart.contains("://") ? mirrored(filePart) : nil
        if filePart.contains("://"), copy == nil {
            errors.error(
                "$ref '\(ref)' is a URL; Doppel reads references to files in the document's folder, not from the network: save a copy of it there as HOST/PATH (where `wget -x URL` saves it)",
                at: refNode.location)
            return nil
        }
        guard let (path, pointer) = copy.map({ ($0, String(ref.drop { $0 != "#" }.dropFirst())) }) ?? place(ref, from: file) else {
            errors.error(
                "$ref '\(ref)' resolves outside the document's folder; Doppel reads only files beside the document or below it", at: refNode.location)
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
            errors.error(
                "unresolved $ref '\(ref)': \(path == rootPath ? "the document" : "'\(filePart)'") has nothing at '\(pointer)'", at: refNode.location)
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
        let relative = String(path.dropFirst(folder.count + 1))
        let shown = shownFolder.isEmpty ? relative : shownFolder + "/" + relative
        let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
        guard totalBytes + size <= Self.maximumTotalBytes else {
            if !refused {
                errors.error(
                    "the files the document references hold more than \(Self.maximumTotalBytes >> 20) MiB together ('\(relative)' would bring them to \((totalBytes + size) >> 20) MiB)",
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
        let newSchemas = ContractNode.map(
            (schemas?.mappingPairs?.map { ($0.key.scalarText ?? "", $0.value) } ?? []) + added,
            at: schemas?.location ?? root.location)
        let newComponents = ContractNode.setting("schemas", newSchemas, in: components ?? ContractNode.map([], at: root.location))
        return ContractNode.setting("components", newComponents, in: root)
    }
}
