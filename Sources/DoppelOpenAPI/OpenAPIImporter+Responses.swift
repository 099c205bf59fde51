import DoppelCore
import Foundation

/// The importer's callbacks and responses.
extension OpenAPIImporter {
    // MARK: Callbacks

    /// An operation's `callbacks`: each documented request as a contract
    /// callback, the runtime expressions of its URL as templates, its body
    /// generated from its schema when the contract loads. A URL that needs
    /// what Doppel does not have when it answers (`$response…`,
    /// `$statusCode`, `$url`) is left out with a warning.
    mutating func callbacks(_ raw: SourceNode?, of operation: String) -> SourceNode? {
        guard let raw, let named = resolved(raw)?.mappingPairs else { return nil }
        var items: [SourceNode] = []
        for (nameKey, value) in named {
            guard let name = nameKey.scalarText, let callback = resolved(value) else { continue }
            for (urlKey, pathItemRaw) in callback.mappingPairs ?? [] {
                guard let expression = urlKey.scalarText, let pathItem = resolved(pathItemRaw) else { continue }
                guard let url = Self.template(fromRuntimeExpression: expression) else {
                    warnings.warning(
                        "callback '\(name)' of \(operation) is not made: its URL '\(expression)' needs what only the response or the server's own URL has; Doppel fills $request.body, .query, .header, .path and $method",
                        at: urlKey.location)
                    continue
                }
                let methods = ["get", "put", "post", "delete", "options", "head", "patch"].filter { pathItem[$0] != nil }
                for method in methods {
                    guard let documented = resolved(pathItem[method]) else { continue }
                    let at = documented.location
                    var fields: [(String, SourceNode)] = [
                        ("name", ContractNode.string(methods.count > 1 ? "\(name).\(method)" : name, at: nameKey.location)),
                        ("url", ContractNode.string(url, at: urlKey.location)), ("method", ContractNode.string(method.uppercased(), at: at)),
                    ]
                    if let body = resolved(documented["requestBody"]), let content = mediaTypes(body["content"]), !content.isEmpty {
                        let chosen = content.first { $0.key.scalarText.map(Self.isJSON) ?? false } ?? content[0]
                        if let type = chosen.key.scalarText, !type.caseInsensitiveEquals("application/json"), type != "*/*" {
                            fields.append(("content_type", ContractNode.string(type, at: chosen.key.location)))
                        }
                        if let schemaNode = chosen.value["schema"] {
                            if let example = examples(of: chosen.value).first, Self.isJSON(chosen.key.scalarText ?? "") {
                                fields.append(("body", Self.escapedTemplates(example.value)))
                            } else {
                                fields.append(("schema", schema(schemaNode)))
                            }
                        }
                    }
                    items.append(ContractNode.map(fields, at: at))
                }
            }
        }
        return items.isEmpty ? nil : ContractNode.list(items, at: raw.location)
    }

    /// A callback URL with OpenAPI runtime expressions (`{$request.body#/callbackUrl}`,
    /// `https://hooks/{$request.query.id}`) as a contract template; nil when
    /// an expression asks for what a request does not have.
    package static func template(fromRuntimeExpression text: String) -> String? {
        var result = ""
        var rest = Substring(text)
        while let open = rest.range(of: "{$") {
            result += escaped(String(rest[..<open.lowerBound]))
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else { return nil }
            guard let expression = templateExpression("$" + rest[open.upperBound..<close]) else { return nil }
            result += "{{ \(expression) }}"
            rest = rest[rest.index(after: close)...]
        }
        return result + escaped(String(rest))
    }

    /// One runtime expression as an expression of the contract's.
    static func templateExpression(_ expression: Substring) -> String? {
        func member(_ base: String, _ name: String) -> String {
            let plain = name.first.map { $0.isLetter || $0 == "_" } == true && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
            return plain
                ? "\(base).\(name)" : "\(base)['\(name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'"))']"
        }
        if expression == "$method" { return "request.method" }
        if expression.hasPrefix("$request.body") {
            var result = "body"
            let pointer = expression.dropFirst("$request.body".count)
            guard pointer.isEmpty || pointer.hasPrefix("#") else { return nil }
            for token in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: true) {
                let key = unescape(String(token))
                result = Int(key).map { "\(result)[\($0)]" } ?? member(result, key)
            }
            return result
        }
        for (prefix, root, lowercase) in [
            ("$request.query.", "query", false), ("$request.header.", "headers", true), ("$request.path.", "path", false),
        ]
        where expression.hasPrefix(prefix) {
            let name = String(expression.dropFirst(prefix.count))
            guard !name.isEmpty else { return nil }
            return member(root, lowercase ? name.lowercased() : name)
        }
        return nil
    }

    /// JSON as the engine reads it, or any type (`*/*`), whose examples are JSON values.
    static func isJSON(_ type: String) -> Bool {
        MediaTypes.isJSON(type) || type.drop(while: { $0 == " " || $0 == "\t" }).hasPrefix("*/*")
    }

    // MARK: Responses

    /// A documented response as one contract response per example (the
    /// first named after nothing, the rest by their example names), or one
    /// whose body is generated from the schema when it has no example.
    mutating func responses(_ response: SourceNode, status: Int, at: SourceLocation) -> [SourceNode] {
        var base: [(String, SourceNode)] = []
        if status != 0 { base.append(("status", ContractNode.plain(String(status), at: at))) }
        if let description = response["description"]?.scalarText {
            base.append(("description", ContractNode.string(description, at: response.location)))
        }
        let headers = responseHeaders(response)
        if !headers.isEmpty { base.append(("headers", ContractNode.map(headers, at: response.location))) }

        // The media type answered first: a JSON one with something to send
        // (an example or a schema), else any with something, else as listed
        // (a Swagger 2.0 response `produces` JSON and XML, with an XML example only).
        func isJSON(_ entry: (key: SourceNode, value: SourceNode)) -> Bool { entry.key.scalarText.map(Self.isJSON) ?? false }
        func hasContent(_ entry: (key: SourceNode, value: SourceNode)) -> Bool {
            entry.value["example"] != nil || entry.value["examples"] != nil || entry.value["schema"] != nil || entry.value["itemSchema"] != nil
        }
        guard let content = mediaTypes(response["content"]),
            let (typeKey, media) = content.first(where: { isJSON($0) && hasContent($0) }) ?? content.first(where: hasContent) ?? content.first(
                where: isJSON) ?? content.first,
            let type = typeKey.scalarText
        else {
            return [ContractNode.map(base, at: response.location)]
        }
        // The response in each other media type the document gives, for `Accept` to choose (documented, after the first).
        let alternatives = content.filter { $0.key.scalarText != type }.compactMap { other -> SourceNode? in
            guard let otherType = other.key.scalarText, otherType != "*/*" else { return nil }
            return alternative(other.value, type: otherType, typeKey: other.key, base: base, at: response.location)
        }
        if media["itemSchema"] != nil, media["schema"] == nil {
            return itemResponses(media, type: type, typeKey: typeKey, base: base, at: response.location) + alternatives
        }
        let json = Self.isJSON(type)
        if !type.caseInsensitiveEquals("application/json") && type != "*/*" {
            base.append(("content_type", ContractNode.string(type, at: typeKey.location)))
        }
        var schemaField: [(String, SourceNode)] = []
        if json, let schemaNode = media["schema"] { schemaField.append(("schema", schema(schemaNode))) }
        let examples = self.examples(of: media)
        guard !examples.isEmpty else {
            return generated(media, type: type, typeKey: typeKey, json: json, base: base, schemaField: schemaField, at: response.location)
                + alternatives
        }
        return examples.map { example in
            var fields = base
            if let name = example.name { fields.insert(("name", ContractNode.string(name, at: example.value.location)), at: 0) }
            if json {
                fields.append(("body", Self.escapedTemplates(example.value)))
            } else if let text = example.value.scalarText {
                fields.append(("text", ContractNode.string(Self.escaped(text), at: example.value.location)))
            } else if Self.isXML(type) {
                fields.append(
                    (
                        "text",
                        ContractNode.string(Self.escaped(XMLExample.text(example.value.json, root: xmlRoot(of: media))), at: example.value.location)
                    ))
            }
            return ContractNode.map(fields + schemaField, at: response.location)
        } + alternatives
    }

    /// A response's headers with a value to send: an example, else the schema's example, default or first enum value.
    mutating func responseHeaders(_ response: SourceNode) -> [(String, SourceNode)] {
        var headers: [(String, SourceNode)] = []
        for (key, raw) in response["headers"]?.mappingPairs ?? [] {
            guard let name = key.scalarText, name.lowercased() != "content-type", let header = resolved(raw) else { continue }
            let value =
                header["example"] ?? header["examples"]?.mappingPairs?.first.flatMap { resolved($0.value)?["value"] }
                ?? header["schema"].flatMap { resolved($0) }.flatMap { $0["example"] ?? $0["default"] ?? $0["enum"]?.sequenceItems?.first }
            guard let value, let text = value.scalarText else { continue }
            headers.append((name, ContractNode.string(Self.escaped(text), at: value.location)))
        }
        return headers
    }

    /// A response with no example: a value generated from the schema, the
    /// same every time; text for a text media type (its schema then only
    /// makes it); a small file of a binary type.
    mutating func generated(
        _ media: SourceNode, type: String, typeKey: SourceNode, json: Bool, base: [(String, SourceNode)], schemaField: [(String, SourceNode)],
        at location: SourceLocation
    ) -> [SourceNode] {
        if json, !schemaField.isEmpty {
            return [
                ContractNode.map(
                    base + schemaField + [("body_from_schema", ContractNode.plain("true", at: typeKey.location))], at: location)
            ]

        }
        if !json, MediaTypes.isText(type), let schemaNode = media["schema"] {
            return [
                ContractNode.map(
                    base + [("schema", schema(schemaNode)), ("body_from_schema", ContractNode.plain("true", at: typeKey.location))],
                    at: location)
            ]
        }
        // A binary type: a small file of it (`SampleFiles`), or no bytes, with its type either way.
        if !json, type != "*/*" {
            return [
                ContractNode.map(
                    base + [("base64", ContractNode.string(SampleFiles.base64(for: MediaTypes.essence(type)) ?? "", at: typeKey.location))],
                    at: location)
            ]
        }
        return [ContractNode.map(base, at: location)]
    }

    /// Whether a media type is XML: `application/xml`, `text/xml`, `…+xml`.
    static func isXML(_ type: String) -> Bool {
        let essence = MediaTypes.essence(type)
        return essence == "application/xml" || essence == "text/xml" || essence.hasSuffix("+xml")
    }

    /// The root element of an XML example: the schema's `xml.name`, else
    /// the name of the component it refers to, else `root`.
    mutating func xmlRoot(of media: SourceNode) -> String {
        guard let schemaNode = media["schema"] else { return "root" }
        if let name = schemaNode["xml"]?["name"]?.scalarText { return name }
        // Looked up without a word: a reference that leads nowhere is reported where the schema is read.
        guard let ref = schemaNode["$ref"]?.scalarText, let last = ref.split(separator: "/").last else { return "root" }
        let component = Self.unescape(String(last))
        return root["components"]?["schemas"]?[component]?["xml"]?["name"]?.scalarText ?? component
    }

    /// A response in another of its media types: its first example (JSON as
    /// a body, else as text), or a body generated from its schema.
    mutating func alternative(
        _ media: SourceNode, type: String, typeKey: SourceNode, base: [(String, SourceNode)], at location: SourceLocation
    ) -> SourceNode? {
        if media["itemSchema"] != nil, media["schema"] == nil {
            return itemResponses(media, type: type, typeKey: typeKey, base: base, at: location).first
        }
        var fields = base + [("content_type", ContractNode.string(type, at: typeKey.location))]
        let json = Self.isJSON(type)
        if let example = examples(of: media).first {
            if json {
                fields.append(("body", Self.escapedTemplates(example.value)))
            } else if let text = example.value.scalarText {
                fields.append(("text", ContractNode.string(Self.escaped(text), at: example.value.location)))
            } else if Self.isXML(type) {
                fields.append(
                    (
                        "text",
                        ContractNode.string(Self.escaped(XMLExample.text(example.value.json, root: xmlRoot(of: media))), at: example.value.location)
                    ))
            } else {
                return nil
            }
        } else if let schemaNode = media["schema"], json || MediaTypes.isText(type) {
            fields += [("schema", schema(schemaNode)), ("body_from_schema", ContractNode.plain("true", at: typeKey.location))]
        } else if !json {
            fields.append(("base64", ContractNode.string(SampleFiles.base64(for: MediaTypes.essence(type)) ?? "", at: typeKey.location)))
        } else {
            return nil
        }
        return ContractNode.map(fields, at: location)
    }

    /// A `content` map's media types. A key that lists several
    /// (`text/csv, text/comma-separated-values`: a mistake seen in real
    /// documents, where a key is one media type or range) is read as one
    /// entry for each, with a warning; a type already given is not repeated.
    mutating func mediaTypes(_ content: SourceNode?) -> [(key: SourceNode, value: SourceNode)]? {
        guard let pairs = content?.mappingPairs else { return nil }
        guard pairs.contains(where: { $0.key.scalarText?.contains(",") == true }) else { return pairs }
        var entries: [(key: SourceNode, value: SourceNode)] = []
        for pair in pairs {
            guard let text = pair.key.scalarText, text.contains(",") else {
                entries.append(pair)
                continue
            }
            let types = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            warnings.warning("'\(text)' names \(types.count) media types in one key; each is read as a media type of its own", at: pair.key.location)
            for type in types where !entries.contains(where: { $0.key.scalarText == type }) {
                entries.append((key: ContractNode.string(type, at: pair.key.location), value: pair.value))
            }
        }
        return entries
    }

    /// How many items a stream described only by its `itemSchema` sends.
    static let generatedItems = 3

    /// A response of a sequential media type described item by item
    /// (OpenAPI 3.2's `itemSchema`: `text/event-stream`, `application/jsonl`,
    /// `application/json-seq`, `multipart/mixed`): one contract response per
    /// example, its items sent one by one, else `generatedItems` items
    /// generated from the item schema. An example is the list of items
    /// (`dataValue`, `value`) or the stream as sent (`serializedValue`).
    mutating func itemResponses(
        _ media: SourceNode, type: String, typeKey: SourceNode, base: [(String, SourceNode)], at location: SourceLocation
    ) -> [SourceNode] {
        let item = media["itemSchema"]!
        guard let framing = SequentialMedia(type) else {
            warnings.warning(
                "'\(type)' is described item by item (itemSchema), but Doppel writes items only as text/event-stream, application/jsonl (or x-ndjson), application/json-seq or multipart/mixed; the response is sent without a body",
                at: item.location)
            return [ContractNode.map(base + [("content_type", ContractNode.string(type, at: typeKey.location))], at: location)]
        }
        let fields = base + [("content_type", ContractNode.string(type, at: typeKey.location)), ("item_schema", schema(item))]
        var examples: [(name: String?, items: [SourceNode], at: SourceLocation)] = []
        var candidates: [(name: String?, node: SourceNode)] = media["example"].map { [(nil, $0)] } ?? []
        if candidates.isEmpty {
            for (key, raw) in media["examples"]?.mappingPairs ?? [] {
                guard let example = resolved(raw) else { continue }
                if let value = example["dataValue"] ?? example["value"] ?? example["serializedValue"] { candidates.append((key.scalarText, value)) }
            }
        }
        for (name, node) in candidates {
            if let list = node.sequenceItems, !list.isEmpty {
                examples.append((name, list, node.location))
            } else if let text = node.scalarText, let read = try? framing.read(Array(text.utf8)), !read.isEmpty {
                examples.append((name, read.map { ContractNode.value($0, at: node.location) }, node.location))
            } else {
                warnings.warning(
                    "example\(name.map { " '\($0)'" } ?? "") of '\(type)' is neither a list of items nor the stream as sent; it is left out",
                    at: node.location)
            }
        }
        guard !examples.isEmpty else {
            return [
                ContractNode.map(fields + [("items_from_schema", ContractNode.plain(String(Self.generatedItems), at: item.location))], at: location)
            ]
        }
        return examples.map { example in
            var own = fields
            if let name = example.name { own.insert(("name", ContractNode.string(name, at: example.at)), at: 0) }
            own.append(("items", ContractNode.list(example.items.map(Self.escapedTemplates), at: example.at)))
            return ContractNode.map(own, at: location)
        }
    }

    /// A media type's examples in order: `example`, else each of `examples`
    /// (by name), else the schema's own `example` or first of `examples`.
    mutating func examples(of media: SourceNode) -> [(name: String?, value: SourceNode)] {
        if let example = media["example"] { return [(nil, example)] }
        if let named = media["examples"]?.mappingPairs, !named.isEmpty {
            var list: [(name: String?, value: SourceNode)] = []
            for (key, raw) in named {
                guard let name = key.scalarText, let example = resolved(raw) else { continue }
                // OpenAPI 3.2's `dataValue` is the value as data, as `value` is.
                if let value = example["value"] ?? example["dataValue"] {
                    list.append((name, value))
                } else if example["externalValue"] != nil {
                    warnings.warning("example '\(name)' is an externalValue, which Doppel does not fetch; it is left out", at: example.location)
                }
            }
            return list
        }
        return []
    }
}
