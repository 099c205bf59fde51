import DoppelCore
import Testing

/// Bodies Doppel generates from a schema (an OpenAPI response without an
/// example) keep that schema: each sample is checked by the validator.
@Suite struct SchemaSamplerTests {
    /// Schemas (as YAML under `schemas:`) whose `Sample` each must keep.
    static let cases: [(name: String, yaml: String)] = [
        (
            "a pattern",
            """
            Sample: { type: string, pattern: "^[A-Z]{3}-[0-9]{2}$" }
            """
        ),
        (
            "a pattern with alternatives, classes and a least length",
            """
            Sample: { type: string, pattern: "^(ord|inv)_[a-f0-9]+$", minLength: 12 }
            """
        ),
        (
            "a pattern with a negated class and a bounded length",
            """
            Sample: { type: string, pattern: "^[^@ ]+@[^@ ]+\\\\.[a-z]{2,3}$", maxLength: 20 }
            """
        ),
        (
            "if/then/else and dependents, which the sampled members bring in",
            """
            Sample:
              type: object
              required: [kind]
              properties: { kind: { type: string, enum: [big, small] }, size: { type: integer }, label: { type: string } }
              if: { properties: { kind: { const: big } } }
              then: { properties: { size: { minimum: 100 } }, required: [size] }
              else: { properties: { size: { maximum: 10 } } }
              dependentSchemas: { size: { properties: { unit: { const: cm } }, required: [unit] } }
              dependentRequired: { label: [note] }
            """
        ),
        (
            "an else branch that requires what the object lacks",
            """
            Sample:
              type: object
              properties: { kind: { type: string, example: small } }
              if: { properties: { kind: { const: big } }, required: [kind] }
              else: { properties: { count: { type: integer, minimum: 3 } }, required: [count] }
            """
        ),
        (
            "an unanchored pattern inside a format",
            """
            Sample: { type: string, format: date, pattern: "^20[0-9]{2}-" }
            """
        ),
        (
            "required in one allOf branch, defined in another",
            """
            Sample:
              allOf:
                - { type: object, required: [code, name] }
                - type: object
                  properties:
                    code: { type: string, pattern: "^[A-Z]{2}[0-9]{4}$" }
                    name: { type: string, minLength: 3 }
            """
        ),
        (
            "allOf through references, deeper than optional members go",
            """
            Base: { type: object, required: [id], properties: { id: { type: string, pattern: "^id_[0-9]{6}$" } } }
            Named: { allOf: [ { $ref: Base }, { type: object, required: [label], properties: { label: { type: string } } } ] }
            Sample:
              type: object
              required: [a]
              properties:
                a: { type: object, required: [b], properties: { b: { type: object, required: [c], properties: { c: { type: object, required: [d], properties: { d: { type: object, required: [e], properties: { e: { $ref: Named } } } } } } } } }
            """
        ),
        (
            "oneOf whose first branches' samples another branch also accepts",
            """
            Sample:
              oneOf:
                - { type: number, minimum: 0 }
                - { type: integer, minimum: 0 }
                - { type: string }
            """
        ),
        (
            "an array that must contain items of a kind (Prism's harness: it came out as [null])",
            """
            Sample: { type: array, contains: { type: integer, exclusiveMinimum: 20, exclusiveMaximum: 50 } }
            """
        ),
        (
            "contains with minContains after prefixItems, and items",
            """
            Sample: { type: array, prefixItems: [{ type: string }], items: { type: integer }, contains: { type: integer, minimum: 7 }, minContains: 2 }
            """
        ),
        (
            "a recursive schema",
            """
            Node: { type: object, required: [name], properties: { name: { type: string }, children: { type: array, items: { $ref: Node } } } }
            Sample: { $ref: Node }
            """
        ),
    ]

    @Test(arguments: cases.map(\.name))
    func aGeneratedSampleKeepsItsSchema(_ name: String) throws {
        let yaml = try #require(Self.cases.first { $0.name == name }).yaml
        let (validator, schemas) = try SchemaValidatorTests().validator(yaml)
        let schema = try #require(schemas["Sample"])
        let sample = try #require(SchemaSampler(registry: schemas).sample(schema))
        let issues = validator.validate(sample, against: schema)
        #expect(issues.isEmpty, "\(JSONWriter.encodeString(sample)): \(issues.map(\.message))")
    }

    @Test(arguments: ["^[A-Z]{3}-[0-9]{2}$", "^(a|b)+c?$", "x[0-9]{2,4}y", "^\\d{3}\\s\\w+$", "^[^a-z]{5}$", "^(?:foo|bar)baz$", "^\\.[a-z]$"])
    func aPatternsExampleMatchesIt(_ source: String) throws {
        let regex = try LinearRegex(source)
        let text = try #require(regex.example(minLength: 0, maxLength: nil), "no example for \(source)")
        #expect(regex.matches(text), "\(text) for \(source)")
        // When a longer one is asked for and given, it is as long and still matches.
        if let longer = regex.example(minLength: 8, maxLength: nil) {
            #expect(longer.unicodeScalars.count >= 8 && regex.matches(longer), "\(longer) for \(source)")
        }
    }

    /// Every format Doppel asserts is generated as a value of that format
    /// (an imported document keeps them, and a body generated for it must
    /// keep its own schema), and a value of another format is refused.
    @Test(arguments: Schema.formats.sorted())
    func aGeneratedStringHasItsFormat(format: String) throws {
        let contract = try loadContract("doppel: 1\nschemas:\n  S: { type: string, format: \(format) }\nendpoints: {}")
        let schema = try #require(contract.schemas["S"])
        let value = try #require(SchemaSampler(registry: contract.schemas).sample(schema))
        let validator = SchemaValidator(registry: contract.schemas)
        #expect(validator.validate(value, against: schema).isEmpty, "\(value)")
        #expect(!validator.validate(" not one ", against: schema).isEmpty)
    }
}
