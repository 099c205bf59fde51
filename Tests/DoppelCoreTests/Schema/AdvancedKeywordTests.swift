import DoppelCore
import Testing

/// The JSON Schema 2020-12 keywords beyond the common ones, written in a
/// contract: each checked, with a message at the member it is about.
@Suite struct AdvancedKeywordTests {
    static let schemas = """
        Flags:
          type: object
          properties: { id: { type: integer } }
          patternProperties: { "^x-": { type: string } }
          additionalProperties: false
        Names:
          type: object
          propertyNames: { pattern: "^[a-z_]+$", maxLength: 8 }
        Billing:
          type: object
          dependentRequired: { card: [billing_address] }
          dependentSchemas: { coupon: { required: [coupon_owner] } }
        Shipping:
          type: object
          if: { properties: { country: { const: NL } }, required: [country] }
          then: { required: [postcode] }
          else: { required: [zip] }
        Tags:
          type: array
          contains: { type: string, pattern: "^#" }
          minContains: 2
          maxContains: 3
        Closed:
          type: object
          allOf: [ { properties: { a: { type: integer } } } ]
          anyOf: [ { properties: { b: { type: integer } }, required: [b] }, { properties: { c: { type: integer } }, required: [c] } ]
          unevaluatedProperties: false
        Tuple:
          type: array
          prefixItems: [ { type: string } ]
          contains: { type: integer }
          unevaluatedItems: false
        Short: { type: string, maxLength: 2 }
        Word: { type: string, pattern: "^\\\\p{L}+$" }
        Accent: { enum: ["é"] }
        """

    static func check(_ name: String, _ value: JSON) throws -> [String] {
        let contract = try loadContract(
            """
            doppel: 1
            schemas:
            \(schemas.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            endpoints:
              e: { request: GET /, responses: [ { status: 200 } ] }
            """)
        let validator = SchemaValidator(registry: contract.schemas)
        return validator.validate(value, against: try #require(contract.schemas[name])).map(\.description)
    }

    static let cases: [Case] = [
        Case("Flags", ["id": 1, "x-trace": "on"], []),
        Case("Flags", ["x-trace": 1, "other": true], ["/x-trace: expected string, got integer", "/other: is not an allowed property"]),
        Case("Names", ["ok_name": 1], []),
        Case(
            "Names", ["Bad-Name": 1, "much_too_long": 2],
            ["/Bad-Name: is not an allowed property name (propertyNames)", "/much_too_long: is not an allowed property name (propertyNames)"]),
        Case("Billing", ["card": "4111", "billing_address": "x"], []),
        Case("Billing", ["card": "4111", "coupon": "SAVE"], ["/billing_address: is required when 'card' is present", "/coupon_owner: is required"]),
        Case("Shipping", ["country": "NL", "postcode": "1011"], []),
        Case("Shipping", ["country": "NL", "zip": "1011"], ["/postcode: is required"]),
        Case("Shipping", ["country": "US"], ["/zip: is required"]),
        Case("Tags", ["#a", 1, "#b"], []),
        Case("Tags", ["#a", "b"], ["/: must contain at least 2 items matching 'contains', has 1"]),
        Case("Tags", ["#a", "#b", "#c", "#d"], ["/: must contain at most 3 items matching 'contains', has 4"]),
        Case("Closed", ["a": 1, "b": 2], []),
        Case("Closed", ["a": 1, "c": 2, "b": "x"], ["/b: is not an allowed property (unevaluatedProperties)"]),
        Case("Closed", ["a": 1, "c": 2, "d": 3], ["/d: is not an allowed property (unevaluatedProperties)"]),
        Case("Tuple", ["a", 1, 2], []),
        Case("Tuple", ["a", 1, true], ["/2: is not an allowed item (unevaluatedItems)"]),
        // Lengths in code points: a flag is two, a letter and its accent two.
        Case("Short", "🇫🇷", []),
        Case("Short", "e\u{301}x", ["/: must be at most 2 characters long"]),
        Case("Word", "Émile", []),
        Case("Word", "R2D2", ["/: must match the pattern ^\\p{L}+$"]),
        // Texts that look alike but differ in code points differ.
        Case("Accent", "é", []),
        Case("Accent", "e\u{301}", [#"/: must be one of "é", got "é""#]),
    ]

    struct Case: Sendable, CustomTestStringConvertible {
        let schema: String
        let value: JSON
        let expected: [String]
        init(_ schema: String, _ value: JSON, _ expected: [String]) {
            self.schema = schema
            self.value = value
            self.expected = expected
        }
        var testDescription: String { "\(schema): \(value)" }
    }

    @Test(arguments: cases)
    func keyword(_ test: Case) throws {
        #expect(try Self.check(test.schema, test.value) == test.expected)
    }

    @Test func aConditionThatComesBackToItsSchemaIsALintError() {
        let found = diagnostics(
            of: """
                doppel: 1
                schemas:
                  Loop: { if: { $ref: Other }, then: { type: object } }
                  Other: { dependentSchemas: { a: Loop } }
                endpoints:
                  e: { request: GET /, responses: [ { status: 200 } ] }
                """
        ).map(\.description)
        #expect(found.contains { $0.contains("refers back to itself without descending") }, "\(found)")
    }

    @Test func patternsOfManyPropertyEscapesLoadOnceEach() throws {
        // Every \\p{…} of one name is built once and kept: a contract of many costs one walk of Unicode per name.
        let many = (0..<200).map { "  P\($0): { type: string, pattern: '^\\p{L}\\p{Nd}*\\P{Lu}$' }" }.joined(separator: "\n")
        let contract = try loadContract("doppel: 1\nschemas:\n\(many)\nendpoints:\n  e: { request: GET /, responses: [ { status: 200 } ] }\n")
        let validator = SchemaValidator(registry: contract.schemas)
        #expect(validator.validate("ä1x", against: try #require(contract.schemas["P7"])).isEmpty)
        #expect(!validator.validate("ä1X", against: try #require(contract.schemas["P7"])).isEmpty)
    }
}
