import DoppelCore
import Foundation

/// Whether an answer's body is what a contract's response describes: its
/// declared `schema`, else the shape of its body (every member the
/// contract's body has, with the same JSON type; a templated value may be
/// anything, a templated string is a string). Extra members are fine: a
/// client ignores what it does not read. Problems are listed by JSON
/// pointer, like `/error/code: expected string, got integer`.
enum BodyShape {
    /// The problems of `body` (with its Content-Type) against one response.
    static func problems(_ body: [UInt8], contentType: String?, against response: ResponseDefinition, registry: [String: Schema]) -> [String] {
        var problems: [String] = []
        for leaf in response.sequence.map(\.responses) ?? [response] {
            problems = check(body, contentType: contentType, against: leaf, registry: registry)
            if problems.isEmpty { return [] }
        }
        return problems
    }

    private static func check(_ body: [UInt8], contentType: String?, against response: ResponseDefinition, registry: [String: Schema]) -> [String] {
        let type = contentType.map(MediaTypes.essence)
        if let stream = response.stream {
            // A stream's parts arrive as one body: its type, and each item against `item_schema` where one is given.
            guard type == MediaTypes.essence(stream.contentType) else {
                return ["Content-Type is \(contentType ?? "absent"), not \(stream.contentType)"]
            }
            guard let itemSchema = response.itemSchema, let media = contentType.flatMap(SequentialMedia.init) else { return [] }
            return itemProblems(body, media: media, schema: itemSchema, registry: registry)
        }
        switch response.body {
        case .empty:
            return []
        case .bytes(_, let expected), .text(_, let expected):
            if let type, type == MediaTypes.essence(expected) || (expected.hasPrefix("text/") && type.hasPrefix("text/")) { return [] }
            return ["Content-Type is \(contentType ?? "absent"), not \(expected)"]
        case .json(let template, _, _):
            guard type.map(MediaTypes.isJSON) ?? false else { return ["Content-Type is \(contentType ?? "absent"), not JSON"] }
            guard let value = try? JSONReader.parse(body) else { return ["the body is not JSON"] }
            if let schema = response.schema {
                return SchemaValidator(registry: registry).validate(value, against: schema).map {
                    "\($0.pointer.isEmpty ? "/" : $0.pointer): \($0.message)"
                }
            }
            var problems: [String] = []
            shape(of: value, against: template, at: "", into: &problems)
            return problems
        }
    }

    /// The problems of a body read item by item (`/items/2/id: expected
    /// integer, got string`); at most 20.
    static func itemProblems(_ body: [UInt8], media: SequentialMedia, schema: Schema, registry: [String: Schema]) -> [String] {
        let items: [JSON]
        do { items = try media.read(body) } catch { return ["the body cannot be read item by item: \(error.reason)"] }
        let validator = SchemaValidator(registry: registry)
        var problems: [String] = []
        for (index, item) in items.enumerated() where problems.count < 20 {
            problems += validator.validate(item, against: schema).map { "/items/\(index)\($0.pointer): \($0.message)" }
        }
        return Array(problems.prefix(20))
    }

    /// The problems of a value against a body template's shape.
    static func shape(of value: JSON, against template: ValueTemplate, at pointer: String, into problems: inout [String]) {
        guard problems.count < 20 else { return }
        switch template {
        case .expression:
            return
        case .interpolated:
            if value.stringValue == nil { problems.append("\(pointer.isEmpty ? "/" : pointer): expected string, got \(kind(of: value))") }
        case .constant(let expected):
            shape(of: value, against: expected, at: pointer, into: &problems)
        case .array(let items):
            guard let actual = value.arrayValue else {
                problems.append("\(pointer.isEmpty ? "/" : pointer): expected array, got \(kind(of: value))")
                return
            }
            guard let first = items.first else { return }
            for (index, item) in actual.enumerated() {
                // A list written with items of several shapes (an MCP server's
                // tools) takes an item of any of them; else the problems are
                // the item's at the same place (or the first's).
                if items.count > 1, items.prefix(16).contains(where: { fits(item, $0) }) { continue }
                shape(of: item, against: index < items.count ? items[index] : first, at: "\(pointer)/\(index)", into: &problems)
            }
        case .object(let members):
            guard let actual = value.objectValue else {
                problems.append("\(pointer.isEmpty ? "/" : pointer): expected object, got \(kind(of: value))")
                return
            }
            each(members.pairs.lazy.map { ($0.0, $0.1) }, of: actual, at: pointer, into: &problems) { shape(of: $0, against: $1, at: $2, into: &$3) }
        }
    }

    /// Whether a value has a template's shape.
    static func fits(_ value: JSON, _ template: ValueTemplate) -> Bool {
        var problems: [String] = []
        shape(of: value, against: template, at: "", into: &problems)
        return problems.isEmpty
    }

    /// Whether a value has an example value's shape.
    static func fits(_ value: JSON, _ expected: JSON) -> Bool {
        var problems: [String] = []
        shape(of: value, against: expected, at: "", into: &problems)
        return problems.isEmpty
    }

    /// Each member the contract gives: present in `actual`, then checked by `check`.
    static func each<Member>(
        _ members: some Sequence<(String, Member)>, of actual: JSONObject, at pointer: String, into problems: inout [String],
        check: (JSON, Member, String, inout [String]) -> Void
    ) {
        for (name, member) in members {
            let at = pointer + "/" + SchemaValidator.escape(name)
            guard let present = actual[name] else {
                problems.append("\(at): missing")
                continue
            }
            check(present, member, at, &problems)
        }
    }

    /// The problems of a value against an example value's shape. `null` in
    /// the contract stands for a value not known yet: anything is taken.
    ///
    /// Against the contract's own rendering of the same request
    /// (`rendering`), each item is held to the rendering's item at the same
    /// place (the first where the rendering has fewer), and integers and
    /// numbers are one kind: a rendering writes a whole number without its fraction.
    static func shape(of value: JSON, against expected: JSON, at pointer: String, into problems: inout [String], rendering: Bool = false) {
        guard problems.count < 20 else { return }
        let place = pointer.isEmpty ? "/" : pointer
        switch expected {
        case .null:
            return
        case .object(let members):
            guard let actual = value.objectValue else { return problems.append("\(place): expected object, got \(kind(of: value))") }
            each(members.pairs.lazy.map { ($0.key, $0.value) }, of: actual, at: pointer, into: &problems) {
                shape(of: $0, against: $1, at: $2, into: &$3, rendering: rendering)
            }
        case .array(let items):
            guard let actual = value.arrayValue else { return problems.append("\(place): expected array, got \(kind(of: value))") }
            guard let first = items.first else { return }
            for (index, item) in actual.enumerated() {
                if !rendering, items.count > 1, items.prefix(16).contains(where: { fits(item, $0) }) { continue }
                shape(
                    of: item, against: index < items.count ? items[index] : first, at: "\(pointer)/\(index)", into: &problems,
                    rendering: rendering)
            }
        default:
            let want = kind(of: expected)
            let got = kind(of: value)
            // An integer is a number; a number where an integer was shown is not (unless rendered).
            if want == got || (want == "number" && got == "integer") || (rendering && want == "integer" && got == "number") { return }
            problems.append("\(place): expected \(want), got \(got)")
        }
    }

    static func kind(of value: JSON) -> String {
        switch value {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double(let number): number == number.rounded() && abs(number) < 1e15 ? "integer" : "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}
