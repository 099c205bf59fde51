import DoppelCore
import Testing

@Suite struct SchemaValidatorTests {
    /// Compiles schemas from YAML through the contract loader.
    func validator(_ schemasYAML: String) throws -> (SchemaValidator, [String: Schema]) {
        let contract = try loadContract(
            """
            doppel: 1
            schemas:
            \(schemasYAML.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            endpoints:
              e: { request: GET /, responses: [ { status: 200 } ] }
            """)
        return (SchemaValidator(registry: contract.schemas), contract.schemas)
    }

    @Test func reportsEveryFailingFieldByPointer() throws {
        let (validator, schemas) = try validator(
            """
            Child:
              type: object
              required: [name, age_category, gender, interests]
              additionalProperties: false
              properties:
                name: { type: string, minLength: 1 }
                age_category: { type: string, enum: ["2-3", "3-5", "5-7"] }
                gender: { type: string, enum: [male, female] }
                interests: { type: array, items: { type: string }, minItems: 1 }
                id: { type: string, format: uuid }
            """)
        let issues = validator.validate(["name": "", "age_category": "9", "interests": [1], "id": "nope", "extra": true], against: schemas["Child"]!)
        #expect(issues.map(\.pointer) == ["/gender", "/name", "/age_category", "/interests/0", "/id", "/extra"])
        #expect(
            issues.map(\.message) == [
                "is required", "must be at least 1 character long", #"must be one of "2-3", "3-5", "5-7", got "9""#,
                "expected string, got integer", "must be a valid uuid", "is not an allowed property",
            ])
    }

    @Test func numbersStringsAndCombinators() throws {
        let (validator, schemas) = try validator(
            """
            Length: { type: integer, minimum: 1, maximum: 30 }
            Code: { type: string, pattern: "^[A-Z]{3}$", maxLength: 3 }
            Either: { anyOf: [ { type: string }, { type: integer } ] }
            One: { oneOf: [ { type: number }, { type: integer } ] }
            Both: { allOf: [ { $ref: Length }, { exclusiveMaximum: 10 } ] }
            Maybe: { type: string, nullable: true }
            MaybeLength: { $ref: Length, nullable: true }
            Fixed: { const: v1 }
            Email: { type: string, format: email }
            When: { type: string, format: date-time }
            Id: { type: string, format: uuid }
            """)
        #expect(validator.validate(31, against: schemas["Length"]!).map(\.message) == ["must be at most 30, got 31"])
        #expect(validator.validate(2.5, against: schemas["Length"]!).map(\.message) == ["expected integer, got number"])
        #expect(validator.validate("usd", against: schemas["Code"]!).map(\.message) == ["must match the pattern ^[A-Z]{3}$"])
        #expect(validator.validate(true, against: schemas["Either"]!).count == 1)
        #expect(validator.validate(3, against: schemas["One"]!).map(\.message) == ["must match exactly one allowed shape (oneOf), matches 2"])
        #expect(validator.validate(12, against: schemas["Both"]!).map(\.message) == ["must be less than 10, got 12"])
        #expect(validator.validate(nil, against: schemas["Maybe"]!).isEmpty)
        // `nullable` beside a `$ref` admits null; other values still meet the reference.
        #expect(validator.validate(nil, against: schemas["MaybeLength"]!).isEmpty)
        #expect(validator.validate(31, against: schemas["MaybeLength"]!).map(\.message) == ["must be at most 30, got 31"])
        #expect(validator.validate("v2", against: schemas["Fixed"]!).map(\.message) == [#"must be "v1""#])
        #expect(validator.validate("a@b.co", against: schemas["Email"]!).isEmpty)
        // RFC 5321: a one-label domain is an address (`admin@localhost`); a dot at either end of the local part is not.
        #expect(validator.validate("a@localhost", against: schemas["Email"]!).isEmpty)
        #expect(validator.validate("a.@b.co", against: schemas["Email"]!).count == 1)
        #expect(validator.validate("2025-01-01T00:00:00Z", against: schemas["When"]!).isEmpty)
        let uuid = try #require(schemas["Id"])
        #expect(validator.validate("123e4567-E89B-12d3-a456-426614174000", against: uuid).isEmpty)
        for bad in [
            "123e4567e89b12d3a456426614174000", "g23e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-42661417400",
            "123e4567-e89b-12d3-a456_426614174000",
        ] {
            #expect(validator.validate(.string(bad), against: uuid).count == 1, "\(bad)")
        }
        #expect(validator.validate("2025-01-01", against: schemas["When"]!).count == 1)
        // RFC 3339: seconds and an offset required; a fraction, a lower-case t or z, a numeric offset allowed.
        for good in ["2025-01-01T00:00:00.125Z", "2025-01-01t10:00:00z", "2025-01-01T10:00:00+05:30", "2024-02-29T23:59:59-01:00"] {
            #expect(validator.validate(.string(good), against: schemas["When"]!).isEmpty, "\(good)")
        }
        for bad in [
            "2024-01-01T10:00Z", "2024-01-01T10:00", "2024-01-01T10:00:00", "2024-01-01 10:00:00Z", "2024-01-01T10:00:00.Z",
            "2024-01-01T10:00:00+0530", "2023-02-29T10:00:00Z", "2024-01-01T25:00:00Z", "2024-01-01T10:00:00Zjunk",
        ] {
            #expect(validator.validate(.string(bad), against: schemas["When"]!).count == 1, "\(bad)")
        }
    }

    @Test func coercesParametersByTheirDeclaredTypes() throws {
        let (validator, schemas) = try validator(
            """
            Query:
              properties:
                limit: { type: integer, default: 50 }
                ratio: { type: number }
                flag: { type: boolean }
                ids: { type: array, items: { type: integer } }
                name: { type: string }
            """)
        let (value, issues) = validator.coerceParameters(
            [("limit", "10"), ("ratio", "0.5"), ("flag", "true"), ("ids", "1,2"), ("ids", "3"), ("name", "7")], by: schemas["Query"])
        #expect(issues.isEmpty)
        #expect(value == ["limit": 10, "ratio": 0.5, "flag": true, "ids": [1, 2, 3], "name": "7"])
        let (_, bad) = validator.coerceParameters([("limit", "ten")], by: schemas["Query"])
        #expect(bad == [ValidationIssue(pointer: "/limit", message: "expected integer, got 'ten'")])
        #expect(validator.applyingDefaults(to: ["name": "x"], schema: schemas["Query"]) == ["name": "x", "limit": 50])
        // A number is one JSON can hold: not nan, inf, infinity, hexadecimal, or past Double's range.
        for text in ["nan", "NaN", "inf", "-inf", "infinity", "1e400", "-1e400", "0x1p3", "+.5", " 1"] {
            let (_, refused) = validator.coerceParameters([("ratio", text)], by: schemas["Query"])
            #expect(refused == [ValidationIssue(pointer: "/ratio", message: "expected number, got '\(text)'")], "\(text)")
        }
        let (numbers, fine) = validator.coerceParameters([("ratio", "-2.5e3")], by: schemas["Query"])
        #expect(fine.isEmpty)
        #expect(numbers == ["ratio": -2500.0])
    }

    @Test func parametersKeepTheirFirstOrderAndIssuesPointAtTheirItem() throws {
        let (validator, schemas) = try validator(
            """
            Query:
              properties:
                ids: { type: array, items: { type: integer } }
                "a/b": { type: integer }
                Count: { type: integer }
            """)
        let (value, issues) = validator.coerceParameters([("z", "1"), ("ids", "1,x"), ("a/b", "y"), ("z", "2"), ("ids", "z")], by: schemas["Query"])
        #expect(value.objectValue?.keys == ["z", "ids", "a/b"])
        #expect(value["z"] == "2")
        #expect(
            issues == [
                ValidationIssue(pointer: "/ids/1", message: "expected integer, got 'x'"),
                ValidationIssue(pointer: "/ids/2", message: "expected integer, got 'z'"),
                ValidationIssue(pointer: "/a~1b", message: "expected integer, got 'y'"),
            ])
        let (form, _) = validator.coerceParameters([("tag", "a"), ("tag", "b")], by: nil, repeatedAsList: true)
        #expect(form == ["tag": ["a", "b"]])
        let (headers, headerIssues) = validator.coerceParameters([("COUNT", "3"), ("count", "4")], by: schemas["Query"], caseInsensitive: true)
        #expect(headers == ["count": 4])
        #expect(headerIssues.isEmpty)
    }
}
