extension ContractLoader {
    static let discriminatorKeys: Set<String> = ["propertyName", "mapping"]
    mutating func readSchemas(_ node: SourceNode?) {
        guard let node else { return }
        let entries = MappingReader.entries(of: node, context: "schemas", diagnostics: &diagnostics)
        // Names first, so schemas may refer to each other in any order.
        for entry in entries { schemaNodes[entry.name] = entry.value }
        for entry in entries {
            if let schema = readSchema(entry.value, context: "schema '\(entry.name)'") {
                schemas[entry.name] = schema
            }
        }
        for cycle in SchemaCycles.find(in: schemas) {
            let location = schemaNodes[cycle[0]]?.location ?? node.location
            diagnostics.error(
                "schema '\(cycle[0])' refers back to itself without descending into a property or item (\(cycle.joined(separator: " → "))), so no value could ever be checked against it",
                at: location)
        }
    }

    static let typeNames: Set<String> = ["string", "integer", "number", "boolean", "object", "array", "null"]

    /// Compiles a schema node; reports every unknown keyword and bad value.
    /// An `allOf` branch may require what another branch defines.
    mutating func readSchema(_ node: SourceNode, context: String, asAllOfBranch: Bool = false) -> Schema? {
        // `true` and `false` are schemas in JSON Schema 2020-12: anything, nothing.
        // Only a plain scalar can be one (`json` of a mapping would convert the whole schema).
        if case .scalar(let text, plain: true) = node.kind, case .bool(let allows) = SourceNode.resolvePlain(text) {
            return allows ? Schema() : Schema.never
        }
        if let name = node.scalarText, node.mappingPairs == nil {
            // A bare name is shorthand for `$ref: name`.
            return reference(name, at: node.location)
        }
        // `{ $ref: name }` alone, the commonest schema of a large document, is
        // the same schema as the bare name.
        if let pairs = node.mappingPairs, pairs.count == 1, pairs[0].key.scalarText == "$ref", let text = pairs[0].value.scalarText {
            return reference(text, at: pairs[0].value.location)
        }
        guard let reader = MappingReader(node, allowed: Schema.keywords, context: context, diagnostics: &diagnostics) else { return nil }

        var types: [String]?
        if let typeNode = reader["type"] {
            let names = typeNode.sequenceItems?.compactMap(\.scalarText) ?? typeNode.scalarText.map { [$0] } ?? []
            for name in names where !Self.typeNames.contains(name) {
                documentMistake(
                    "unknown type '\(name)' in \(context)\(Suggestion.hint(for: name, in: Self.typeNames))", at: typeNode.location,
                    servedAs: "it is left out, and the other types checked")
            }
            types = names.filter(Self.typeNames.contains)
            if types?.isEmpty == true { types = nil }
        }
        var properties: [(String, Schema)] = []
        for entry in reader.entries("properties", diagnostics: &diagnostics) {
            if let schema = readSchema(entry.value, context: "property '\(entry.name)' of \(context)") {
                properties.append((entry.name, schema))
            }
        }
        var required: [String] = []
        if let requiredNode = reader["required"] {
            if let items = requiredNode.sequenceItems {
                required = items.compactMap(\.scalarText)
                // In an allOf branch, valid JSON Schema: another branch defines it.
                if !properties.isEmpty, !asAllOfBranch {
                    for item in items {
                        if let name = item.scalarText, !properties.contains(where: { $0.0 == name }) {
                            documentMistake(
                                "required property '\(name)' is not among the properties of \(context)\(Suggestion.hint(for: name, in: properties.map(\.0)))",
                                at: item.location, servedAs: "it is required as written")
                        }
                    }
                }
            } else {
                // `required: true` on a property is a Swagger 2.0-era habit that JSON Schema does not know.
                documentMistake(
                    "'required' in \(context) must be a list of property names\(requiredNode.json == .bool(true) ? " (a property is required by listing it in its object's 'required')" : "")",
                    at: requiredNode.location, servedAs: "it is left out")
            }
        }
        var additional: Schema??
        if let node = reader["additionalProperties"] {
            switch node.json {
            // Kept, as a schema that takes anything: it still says every
            // other member was looked at, for `unevaluatedProperties`.
            case .bool(true): additional = .some(Schema())
            case .bool(false): additional = .some(nil)
            default: additional = .some(readSchema(node, context: "additionalProperties of \(context)"))
            }
        }
        var pattern: Schema.Pattern?
        if let patternNode = reader["pattern"], let source = patternNode.scalarText {
            do {
                pattern = try Schema.Pattern(source)
            } catch {
                documentMistake(
                    "unusable 'pattern' in \(context): \(error.message)", at: patternNode.location, servedAs: "the pattern is not checked")
            }
        }
        let style = reader.string("style", diagnostics: &diagnostics)
        if let style, !Schema.styles.contains(style) {
            diagnostics.error(
                "unknown parameter style '\(style)' in \(context)\(Suggestion.hint(for: style, in: Schema.styles))", at: reader["style"]!.location)
        }
        let format = reader.string("format", diagnostics: &diagnostics)
        if let format, !Schema.formats.contains(format) {
            diagnostics.error(
                "unknown format '\(format)' in \(context)\(Suggestion.hint(for: format, in: Schema.formats))", at: reader["format"]!.location)
        }
        var enumValues: [JSON]?
        if let enumNode = reader["enum"] {
            enumValues = enumNode.sequenceItems?.map(\.json)
            if enumValues == nil { diagnostics.error("'enum' in \(context) must be a list", at: enumNode.location) }
        }
        func list(_ key: String) -> [Schema] {
            guard let listNode = reader[key] else { return [] }
            guard let items = listNode.sequenceItems else {
                diagnostics.error("'\(key)' in \(context) must be a list of schemas", at: listNode.location)
                return []
            }
            return items.enumerated().compactMap { readSchema($1, context: "\(key)[\($0)] of \(context)", asAllOfBranch: key == "allOf") }
        }
        var discriminator: Schema.Discriminator?
        if let discriminatorNode = reader["discriminator"],
            let spec = MappingReader(
                discriminatorNode, allowed: Self.discriminatorKeys, context: "discriminator of \(context)", diagnostics: &diagnostics),
            let property = spec.required("propertyName", diagnostics: &diagnostics)?.scalarText
        {
            var mapping: [(String, String)] = []
            for entry in spec.entries("mapping", diagnostics: &diagnostics) {
                if let target = entry.value.scalarText, let named = reference(target, at: entry.value.location)?.ref {
                    mapping.append((entry.name, named))
                }
            }
            if reader["oneOf"] == nil, reader["anyOf"] == nil {
                diagnostics.warning(
                    "discriminator of \(context) has no oneOf or anyOf to choose from; it is not checked", at: discriminatorNode.location)
            }
            discriminator = Schema.Discriminator(propertyName: property, mapping: mapping)
        }
        var multipleOf = reader.number("multipleOf", diagnostics: &diagnostics)
        if let value = multipleOf, value <= 0 {
            diagnostics.error("'multipleOf' in \(context) must be greater than 0", at: reader["multipleOf"]!.location)
            multipleOf = nil
        }
        var ref: String?
        if let refNode = reader["$ref"], let text = refNode.scalarText {
            ref = reference(text, at: refNode.location)?.ref
        }
        var advanced = readAdvanced(reader, context: context)
        for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            if case .int(let bound)? = reader[key]?.json, Int(exactly: Double(bound)) != bound { advanced.exactBounds[key] = bound }
        }
        // `$dynamicRef: {ref: Name, anchor: A}` (as `doppel import` writes JSON Schema's): `ref` is its initial target.
        if let dynamic = reader["$dynamicRef"] {
            if ref == nil, let refNode = dynamic["ref"], let text = refNode.scalarText, let anchor = dynamic["anchor"]?.scalarText {
                ref = reference(text, at: refNode.location)?.ref
                advanced.dynamicAnchor = anchor
            } else {
                diagnostics.error("$dynamicRef in \(context) must be {ref: NAME, anchor: ANCHOR}, in a schema without $ref", at: dynamic.location)
            }
        }
        return Schema(
            types: types,
            nullable: reader.bool("nullable", diagnostics: &diagnostics) ?? false,
            enumValues: enumValues,
            constValue: reader["const"]?.json,
            minimum: reader.number("minimum", diagnostics: &diagnostics),
            maximum: reader.number("maximum", diagnostics: &diagnostics),
            exclusiveMinimum: reader.number("exclusiveMinimum", diagnostics: &diagnostics),
            exclusiveMaximum: reader.number("exclusiveMaximum", diagnostics: &diagnostics),
            minLength: reader.int("minLength", diagnostics: &diagnostics),
            maxLength: reader.int("maxLength", diagnostics: &diagnostics),
            pattern: pattern,
            format: format,
            properties: properties,
            required: required,
            additionalProperties: additional,
            items: reader["items"].flatMap { readSchema($0, context: "items of \(context)") },
            prefixItems: list("prefixItems"),
            minItems: reader.int("minItems", diagnostics: &diagnostics),
            maxItems: reader.int("maxItems", diagnostics: &diagnostics),
            uniqueItems: reader.bool("uniqueItems", diagnostics: &diagnostics) ?? false,
            minProperties: reader.int("minProperties", diagnostics: &diagnostics),
            maxProperties: reader.int("maxProperties", diagnostics: &diagnostics),
            multipleOf: multipleOf,
            allOf: list("allOf"),
            anyOf: list("anyOf"),
            oneOf: list("oneOf"),
            discriminator: discriminator,
            not: reader["not"].flatMap { readSchema($0, context: "not of \(context)") },
            ref: ref,
            defaultValue: reader["default"]?.json,
            example: reader["example"]?.json ?? reader["examples"]?.sequenceItems?.first?.json,
            style: style,
            explode: reader.bool("explode", diagnostics: &diagnostics),
            advanced: advanced
        )
    }

    /// The rarer keywords of a schema (`Schema.Advanced`).
    mutating func readAdvanced(_ reader: MappingReader, context: String) -> Schema.Advanced {
        var advanced = Schema.Advanced()
        func sub(_ key: String) -> Schema? {
            reader[key].flatMap { readSchema($0, context: "\(key) of \(context)") }
        }
        for entry in reader.entries("patternProperties", diagnostics: &diagnostics) {
            do {
                let pattern = try Schema.Pattern(entry.name)
                if let schema = readSchema(entry.value, context: "patternProperties '\(entry.name)' of \(context)") {
                    advanced.patternProperties.append((pattern, schema))
                }
            } catch {
                documentMistake(
                    "unusable pattern '\(entry.name)' in patternProperties of \(context): \(error.message)", at: entry.value.location,
                    servedAs: "members are not checked by it")
            }
        }
        advanced.propertyNames = sub("propertyNames")
        for entry in reader.entries("dependentRequired", diagnostics: &diagnostics) {
            guard let names = entry.value.sequenceItems?.compactMap(\.scalarText) else {
                diagnostics.error("dependentRequired '\(entry.name)' in \(context) must be a list of property names", at: entry.value.location)
                continue
            }
            advanced.dependentRequired.append((entry.name, names))
        }
        for entry in reader.entries("dependentSchemas", diagnostics: &diagnostics) {
            if let schema = readSchema(entry.value, context: "dependentSchemas '\(entry.name)' of \(context)") {
                advanced.dependentSchemas.append((entry.name, schema))
            }
        }
        advanced.ifSchema = sub("if")
        advanced.thenSchema = sub("then")
        advanced.elseSchema = sub("else")
        advanced.contains = sub("contains")
        advanced.minContains = reader.int("minContains", diagnostics: &diagnostics)
        advanced.maxContains = reader.int("maxContains", diagnostics: &diagnostics)
        advanced.unevaluatedProperties = sub("unevaluatedProperties")
        advanced.unevaluatedItems = sub("unevaluatedItems")
        for entry in reader.entries("$dynamicScope", diagnostics: &diagnostics) {
            if let text = entry.value.scalarText, let name = reference(text, at: entry.value.location)?.ref {
                advanced.dynamicScope.append((entry.name, name))
            }
        }
        return advanced
    }

    /// A schema that refers to a named one: `Name`, `#/schemas/Name` or `#/components/schemas/Name`.
    mutating func reference(_ text: String, at location: SourceLocation) -> Schema? {
        // A schema's own name (which may have a `/` in it: an OpenAPI
        // document's `A~1B` is `A/B`), else the last part of a pointer.
        let name = schemaNodes[text] != nil || schemas[text] != nil ? text : text.split(separator: "/").last.map(String.init) ?? text
        if let shared = referenceSchemas[name] { return shared }
        guard schemaNodes[name] != nil || schemas[name] != nil else {
            diagnostics.error("undefined schema '\(name)'\(Suggestion.hint(for: name, in: schemaNodes.keys))", at: location)
            return nil
        }
        let schema = Schema(ref: name)
        referenceSchemas[name] = schema
        return schema
    }

    /// Checks request examples and static response bodies against their schemas.
    mutating func checkExamples() {
        let validator = SchemaValidator(registry: schemas)
        let isVendorDocument = self.isVendorDocument
        // A large contract's examples (two thousand for a document of 1,000
        // operations) are checked in slices on every core.
        let slices = Parallel.mapSlices(pendingExamples, minimumPerSlice: 250) { slice in
            var found = DiagnosticCollector()
            for pending in slice {
                for issue in validator.validate(pending.value, against: pending.schema) {
                    let message = "\(pending.what) breaks its schema at \(issue.pointer.isEmpty ? "/" : issue.pointer): \(issue.message)"
                    if isVendorDocument {
                        found.warning(message + "; it is served as written", at: pending.location)
                    } else {
                        found.error(message, at: pending.location)
                    }
                }
            }
            return found.diagnostics
        }
        for slice in slices { diagnostics.append(contentsOf: slice) }
    }
}
