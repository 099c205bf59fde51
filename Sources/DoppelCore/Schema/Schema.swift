import Foundation

/// A compiled JSON Schema (the subset Doppel supports), immutable after loading.
///
/// Supported keywords: `type` (one or a list), `properties`, `required`,
/// `additionalProperties`, `enum`, `const`, `nullable`, `minimum`, `maximum`,
/// `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`, `pattern`,
/// `format` (`uuid`, `date-time`, `date`, `email`, `uri`), `items`,
/// `minItems`, `maxItems`, `uniqueItems`, `prefixItems`, `minProperties`,
/// `maxProperties`, `multipleOf`, `allOf`, `anyOf`, `oneOf` (with OpenAPI's
/// `discriminator`), `not`, `$ref` to a named schema (beside other keywords,
/// as JSON Schema 2020-12 allows), `true`/`false` as schemas, `default`
/// (filled in for missing top-level properties of query, headers and body),
/// and the rarer ones of `Advanced`: `patternProperties`, `propertyNames`,
/// `dependentRequired`, `dependentSchemas`, `if`/`then`/`else`, `contains`,
/// `minContains`, `maxContains`, `unevaluatedProperties`, `unevaluatedItems`.
package final class Schema: Sendable {
    package let types: [String]?
    /// `types` as a set of flags, read on every validation instead of comparing type names.
    let typeSet: TypeSet
    package let nullable: Bool
    package let enumValues: [JSON]?
    /// `enumValues` by their equality keys (`JSON.equalityKey`): a value is
    /// one of them in one lookup, however long the list (a 300,000-value
    /// enum compared one by one held a request for tens of seconds).
    let enumKeys: Set<JSON>?
    package let constValue: JSON?
    package let minimum: Double?
    package let maximum: Double?
    package let exclusiveMinimum: Double?
    package let exclusiveMaximum: Double?
    package let minLength: Int?
    package let maxLength: Int?
    package let pattern: Pattern?
    package let format: String?
    package let properties: [(String, Schema)]
    package let required: [String]
    /// nil: any extra property allowed; `.some(nil)`: none allowed; `.some(schema)`: each must match.
    package let additionalProperties: Schema??
    package let items: Schema?
    /// Schemas of the first items, in order (`prefixItems`); `items` covers the rest.
    package let prefixItems: [Schema]
    package let minItems: Int?
    package let maxItems: Int?
    package let uniqueItems: Bool
    package let minProperties: Int?
    package let maxProperties: Int?
    package let multipleOf: Double?
    package let allOf: [Schema]
    package let anyOf: [Schema]
    package let oneOf: [Schema]
    /// OpenAPI's `discriminator`: the member whose value names the `oneOf`/`anyOf` branch to check.
    package let discriminator: Discriminator?
    package let not: Schema?
    /// The named schema this one refers to.
    package let ref: String?
    package let defaultValue: JSON?
    /// The `example`, or the first of `examples`: an annotation, never checked against, used for generated samples.
    package let example: JSON?
    /// How a query or cookie parameter of this schema is written (OpenAPI's
    /// `style`: `form`, `pipeDelimited`, `spaceDelimited`, `deepObject`), and
    /// whether it is `explode`d; nil: `form`, exploded. Read only for the
    /// properties of an endpoint's `query` and `cookies` schemas.
    package let style: String?
    package let explode: Bool?
    /// The keywords few schemas use (conditions, dependencies, `contains`,
    /// `patternProperties`, `unevaluated*`), kept apart: nil for most schemas,
    /// so the common ones stay small and are checked without looking at them.
    package let advanced: Advanced?

    /// JSON Schema 2020-12's keywords beyond the common ones.
    package struct Advanced: Sendable {
        /// Members whose names match a pattern must match its schema (all that match).
        package var patternProperties: [(Pattern, Schema)] = []
        /// Every member name, as a string, must match this schema.
        package var propertyNames: Schema?
        /// When a member is present, these must be too.
        package var dependentRequired: [(String, [String])] = []
        /// When a member is present, the whole object must match the schema.
        package var dependentSchemas: [(String, Schema)] = []
        /// `if`, `then`, `else`: a value that matches `if` must match `then`; one that does not, `else`.
        package var ifSchema: Schema?
        package var thenSchema: Schema?
        package var elseSchema: Schema?
        /// Items matching `contains`: at least `minContains` (1 when not given), at most `maxContains`.
        package var contains: Schema?
        package var minContains: Int?
        package var maxContains: Int?
        /// Members (items) no other keyword of this schema, or of its passing subschemas, looked at must match this.
        package var unevaluatedProperties: Schema?
        package var unevaluatedItems: Schema?
        /// `$dynamicRef` (JSON Schema 2020-12 §8.2.3.2): the schema's `ref` is
        /// its initial target, which has `$dynamicAnchor` of this name; the
        /// outermost schema resource of the dynamic scope with an anchor of
        /// the name is used instead.
        package var dynamicAnchor: String?
        /// At a schema resource's root: its `$dynamicAnchor`s, each with the
        /// schema (by name) it is on. Entering the schema enters the
        /// resource into the dynamic scope.
        package var dynamicScope: [(anchor: String, schema: String)] = []
        /// Bounds written as integers that a `Double` cannot hold exactly
        /// (past 2^53: `maximum: 9223372036854775807`), by keyword
        /// (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`):
        /// integers are compared with them exactly, and messages name them as written.
        package var exactBounds: [String: Int] = [:]

        package init() {}

        /// Whether any keyword is set.
        package var isEmpty: Bool {
            patternProperties.isEmpty && propertyNames == nil && dependentRequired.isEmpty && dependentSchemas.isEmpty && ifSchema == nil
                && thenSchema == nil && elseSchema == nil && contains == nil && minContains == nil && maxContains == nil
                && unevaluatedProperties == nil && unevaluatedItems == nil && dynamicAnchor == nil && dynamicScope.isEmpty && exactBounds.isEmpty
        }

        /// Whether `unevaluatedProperties` or `unevaluatedItems` is set: validation then collects what was looked at.
        var needsEvaluation: Bool { unevaluatedProperties != nil || unevaluatedItems != nil }
    }

    /// The member that names a polymorphic value's schema, and the names it may take.
    package struct Discriminator: Sendable {
        package let propertyName: String
        /// Value to schema name; a value without an entry names the schema of that name.
        package let mapping: [(String, String)]

        package init(propertyName: String, mapping: [(String, String)] = []) {
            self.propertyName = propertyName
            self.mapping = mapping
        }

        /// The schema a discriminator value names.
        package func schemaName(for value: String) -> String {
            mapping.first { $0.0 == value }?.1 ?? value
        }
    }

    /// `false` as a schema: no value passes.
    package static let never = Schema(not: Schema())

    /// A compiled `pattern`, matched in linear time (`LinearRegex`).
    package struct Pattern: Sendable {
        package let source: String
        let regex: LinearRegex

        /// Compiles a pattern; the error says why one cannot be used.
        package init(_ source: String) throws(LinearRegex.SyntaxError) {
            self.source = source
            self.regex = try LinearRegex(source)
        }

        func matches(_ text: String) -> Bool {
            regex.matches(text)
        }

        /// A short text the pattern matches, within the lengths (`LinearRegex.example`).
        func example(minLength: Int, maxLength: Int?) -> String? {
            regex.example(minLength: minLength, maxLength: maxLength)
        }
    }

    package init(
        types: [String]? = nil, nullable: Bool = false, enumValues: [JSON]? = nil, constValue: JSON? = nil,
        minimum: Double? = nil, maximum: Double? = nil, exclusiveMinimum: Double? = nil, exclusiveMaximum: Double? = nil,
        minLength: Int? = nil, maxLength: Int? = nil, pattern: Pattern? = nil, format: String? = nil,
        properties: [(String, Schema)] = [], required: [String] = [], additionalProperties: Schema?? = nil,
        items: Schema? = nil, prefixItems: [Schema] = [], minItems: Int? = nil, maxItems: Int? = nil, uniqueItems: Bool = false,
        minProperties: Int? = nil, maxProperties: Int? = nil, multipleOf: Double? = nil,
        allOf: [Schema] = [], anyOf: [Schema] = [], oneOf: [Schema] = [], discriminator: Discriminator? = nil, not: Schema? = nil,
        ref: String? = nil, defaultValue: JSON? = nil, example: JSON? = nil, style: String? = nil, explode: Bool? = nil,
        advanced: Advanced? = nil
    ) {
        self.types = types
        self.typeSet = TypeSet(types ?? [])
        self.nullable = nullable
        self.enumValues = enumValues
        self.enumKeys = enumValues.map { Set($0.map(\.equalityKey)) }
        self.constValue = constValue
        self.minimum = minimum
        self.maximum = maximum
        self.exclusiveMinimum = exclusiveMinimum
        self.exclusiveMaximum = exclusiveMaximum
        self.minLength = minLength
        self.maxLength = maxLength
        self.pattern = pattern
        self.format = format
        self.properties = properties
        self.required = required
        self.additionalProperties = additionalProperties
        self.items = items
        self.prefixItems = prefixItems
        self.minItems = minItems
        self.maxItems = maxItems
        self.uniqueItems = uniqueItems
        self.minProperties = minProperties
        self.maxProperties = maxProperties
        self.multipleOf = multipleOf
        self.allOf = allOf
        self.anyOf = anyOf
        self.oneOf = oneOf
        self.discriminator = discriminator
        self.not = not
        self.ref = ref
        self.defaultValue = defaultValue
        self.example = example
        self.style = style
        self.explode = explode
        self.advanced = advanced?.isEmpty == false ? advanced : nil
    }

    /// JSON type names as flags.
    package struct TypeSet: OptionSet, Sendable {
        package let rawValue: UInt8
        static let null = TypeSet(rawValue: 1), boolean = TypeSet(rawValue: 2), integer = TypeSet(rawValue: 4), number = TypeSet(rawValue: 8)
        static let string = TypeSet(rawValue: 16), array = TypeSet(rawValue: 32), object = TypeSet(rawValue: 64)

        package init(rawValue: UInt8) { self.rawValue = rawValue }

        /// The flags of the names given; unknown names add none.
        package init(_ names: [String]) {
            var set: TypeSet = []
            for name in names {
                switch name {
                case "null": set.insert(.null)
                case "boolean": set.insert(.boolean)
                case "integer": set.insert(.integer)
                case "number": set.insert(.number)
                case "string": set.insert(.string)
                case "array": set.insert(.array)
                case "object": set.insert(.object)
                default: break
                }
            }
            self = set
        }

        /// Whether a value is of one of the types (a whole fractional number counts as an integer; any integer as a number).
        package func admits(_ value: JSON) -> Bool {
            switch value {
            case .null: contains(.null)
            case .bool: contains(.boolean)
            case .int: contains(.integer) || contains(.number)
            case .double(let d): contains(.number) || (contains(.integer) && d.rounded() == d)
            case .string: contains(.string)
            case .array: contains(.array)
            case .object: contains(.object)
            }
        }
    }

    /// The schema of a named property.
    package func property(_ name: String) -> Schema? {
        properties.first { $0.0 == name }?.1
    }

    /// The schema keywords a contract may use, for unknown-key diagnostics.
    package static let keywords: Set<String> = [
        "type", "properties", "required", "additionalProperties", "enum", "const", "nullable", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "format", "items", "minItems",
        "maxItems", "uniqueItems", "prefixItems", "minProperties", "maxProperties", "multipleOf", "allOf", "anyOf", "oneOf",
        "discriminator", "not", "$ref", "default", "description", "title", "example", "examples", "deprecated", "readOnly",
        "writeOnly", "$comment", "style", "explode",
        "patternProperties", "propertyNames", "dependentRequired", "dependentSchemas", "if", "then", "else", "contains",
        "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$dynamicScope",
    ]

    /// The parameter styles `style` understands.
    package static let styles: Set<String> = ["form", "pipeDelimited", "spaceDelimited", "deepObject"]

    /// The formats `format` understands.
    /// The formats Doppel asserts (`SchemaValidator.string(_:hasFormat:)`, `Formats`).
    package static let formats: Set<String> = [
        "uuid", "date-time", "date", "email", "uri", "time", "duration", "ipv4", "ipv6", "hostname", "idn-email", "json-pointer",
        "relative-json-pointer", "uri-reference", "iri", "iri-reference", "uri-template", "byte",
    ]
}

/// One way a value failed its schema, located by JSON pointer.
package struct ValidationIssue: Sendable, Equatable, CustomStringConvertible {
    /// RFC 6901 pointer into the validated value (`/interests/0`); empty for the root.
    package let pointer: String
    package let message: String

    package init(pointer: String, message: String) {
        self.pointer = pointer
        self.message = message
    }

    package var description: String { "\(pointer.isEmpty ? "/" : pointer): \(message)" }

    /// The issue as JSON, for problem bodies and templates.
    package var json: JSON { .object(JSONObject([("pointer", .string(pointer)), ("message", .string(message))])) }
}
