import Foundation
import OrderedCollections

/// Discriminated values, numbers, strings and their formats.
extension SchemaValidator {
    /// Checks a polymorphic value against the branch its discriminator names.
    func validateDiscriminated(_ value: JSON, _ schema: Schema, _ discriminator: Schema.Discriminator, depth: Int, run: inout Run) {
        guard case .object(let object) = value else { return }
        let property = discriminator.propertyName
        guard let named = object[property] else {
            run.add("is required (the discriminator)", child: property)
            return
        }
        guard case .string(let name) = named else {
            run.add("expected string, got \(named.typeName)", child: property)
            return
        }
        let target = discriminator.schemaName(for: name)
        let branches = schema.oneOf + schema.anyOf
        guard let branch = branches.first(where: { $0.ref == target }) ?? registry[target].flatMap({ _ in Schema(ref: target) }) else {
            let known = discriminator.mapping.map(\.0) + branches.compactMap(\.ref).filter { ref in !discriminator.mapping.contains { $0.1 == ref } }
            run.add("'\(name)' names none of the allowed shapes (\(known.joined(separator: ", ")))", child: property)
            return
        }
        validate(value, branch, depth: depth + 1, run: &run)
        if let negated = schema.not, !run.done, passes(value, negated, depth: depth + 1, run: &run), !run.exhausted {
            run.add("must not match the 'not' schema")
        }
    }

    func validateNumber(_ value: JSON, _ schema: Schema, into run: inout Run) {
        guard
            schema.minimum != nil || schema.maximum != nil || schema.exclusiveMinimum != nil || schema.exclusiveMaximum != nil
                || schema.multipleOf != nil
        else { return }
        let n = value.numberValue!
        let exact = schema.advanced?.exactBounds
        /// How `value` compares with a bound: exactly for an integer (with
        /// the bound as written, or the double when it is a whole number in
        /// range), else as doubles. -1, 0, 1.
        func order(_ key: String, _ bound: Double) -> Int {
            if case .int(let i) = value {
                let whole = exact?[key] ?? (bound.rounded() == bound && abs(bound) < 9.2e18 ? Int(bound) : nil)
                if let whole { return i < whole ? -1 : i == whole ? 0 : 1 }
            }
            return n < bound ? -1 : n == bound ? 0 : 1
        }
        // Whole numbers as digits, never as 1.8e+19: the value as sent, a bound as written.
        func text(_ d: Double) -> String {
            guard d.rounded() == d, abs(d) < 1e21 else { return String(d) }
            return abs(d) < 9e15 ? String(Int(d)) : String(format: "%.0f", d)
        }
        func bound(_ key: String, _ d: Double) -> String { exact?[key].map(String.init) ?? text(d) }
        // Written only for a message: a valid number builds no text.
        var got: String { if case .int(let i) = value { String(i) } else { text(n) } }
        if let min = schema.minimum, order("minimum", min) < 0 {
            run.add("must be at least \(bound("minimum", min)), got \(got)")
        }
        if let max = schema.maximum, order("maximum", max) > 0 {
            run.add("must be at most \(bound("maximum", max)), got \(got)")
        }
        if let min = schema.exclusiveMinimum, order("exclusiveMinimum", min) <= 0 {
            run.add("must be greater than \(bound("exclusiveMinimum", min)), got \(got)")
        }
        if let max = schema.exclusiveMaximum, order("exclusiveMaximum", max) >= 0 {
            run.add("must be less than \(bound("exclusiveMaximum", max)), got \(got)")
        }
        if let factor = schema.multipleOf {
            let quotient = n / factor
            if case .int(let i) = value, factor.rounded() == factor, factor >= 1, factor < 9.2e18 {
                // An integer by a whole factor: exactly, past 2^53 too.
                if i % Int(factor) != 0 { run.add("must be a multiple of \(text(factor)), got \(got)") }
            } else if quotient.rounded() != quotient || !quotient.isFinite {
                run.add("must be a multiple of \(text(factor)), got \(got)")
            }
        }
    }

    func validateString(_ s: String, _ schema: Schema, into run: inout Run) {
        // Lengths count code points (JSON Schema 2020-12 §6.3.1), not what
        // Swift counts as characters: "🇫🇷" is 2 long, "e\u{301}" is 2.
        if let min = schema.minLength, s.unicodeScalars.count < min {
            run.add("must be at least \(min) character\(min == 1 ? "" : "s") long")
        }
        if let max = schema.maxLength, s.unicodeScalars.count > max {
            run.add("must be at most \(max) character\(max == 1 ? "" : "s") long")
        }
        if let pattern = schema.pattern, !pattern.matches(s) {
            run.add("must match the pattern \(pattern.source)")
        }
        if let format = schema.format, !Self.string(s, hasFormat: format) {
            run.add("must be a valid \(format)")
        }
    }

    static func value(_ value: JSON, hasType type: String) -> Bool {
        Schema.TypeSet([type]).admits(value)
    }

    static func string(_ s: String, hasFormat format: String) -> Bool {
        switch format {
        case "uuid":
            return isUUID(s)
        case "date-time":
            // The time after the `T` as `time` is (a leap second only at 23:59 UTC).
            guard isDateTime(s), UTCCalendar.parse(s) != nil, let t = s.utf8.firstIndex(where: { $0 == 84 || $0 == 116 }) else { return false }
            return Formats.isTime(Array(s.utf8[s.utf8.index(after: t)...])[...])
        case "date":
            return s.count == 10 && UTCCalendar.parse(s) != nil
        case "email":
            return s.utf8.allSatisfy { $0 < 128 } && Formats.isIDNEmail(s)
        case "uri":
            return Formats.isURIReference(s, iri: false, absolute: true)
        default:
            return Formats.check(s, format) ?? true
        }
    }

    /// RFC 3339's `date-time`, as JSON Schema's format says: seconds and an
    /// offset (`Z` or `+01:00`) required, a fraction allowed
    /// (`2024-01-01T10:00:00.5Z`). The fields' ranges are `UTCCalendar`'s to
    /// check; this is the shape, which the calendar's parser (it also reads
    /// clock values written by hand) does not insist on.
    static func isDateTime(_ s: String) -> Bool {
        let b = Array(s.utf8)
        func digits(_ range: Range<Int>) -> Bool { range.upperBound <= b.count && range.allSatisfy { b[$0] >= 48 && b[$0] <= 57 } }
        func byte(_ index: Int, _ allowed: String) -> Bool { index < b.count && allowed.utf8.contains(b[index]) }
        guard digits(0..<4), byte(4, "-"), digits(5..<7), byte(7, "-"), digits(8..<10), byte(10, "Tt"),
            digits(11..<13), byte(13, ":"), digits(14..<16), byte(16, ":"), digits(17..<19)
        else { return false }
        var i = 19
        if byte(i, ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
            if i == start { return false }
        }
        if byte(i, "Zz") { return i + 1 == b.count }
        return byte(i, "+-") && digits(i + 1..<i + 3) && byte(i + 3, ":") && digits(i + 4..<i + 6) && i + 6 == b.count
    }

    /// `8-4-4-4-12` hexadecimal digits, checked byte by byte (Foundation's
    /// UUID parser is slow on Linux, and this runs for every uuid field).
    static func isUUID(_ s: String) -> Bool {
        let bytes = s.utf8
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                let isHex = (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 70) || (byte >= 97 && byte <= 102)
                guard isHex else { return false }
            }
        }
        return true
    }

    /// Escapes a key for use in a JSON pointer (RFC 6901).
    package static func escape(_ key: String) -> String {
        guard key.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return key }
        var escaped = ""
        for character in key.unicodeScalars {
            switch character {
            case "~": escaped += "~0"
            case "/": escaped += "~1"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
