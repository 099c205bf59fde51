/// Compares a response with a step's expectation and says what differs.
///
/// Objects match as subsets: every expected member must match, extra members
/// are fine. Lists must have the same length and match element by element.
/// A mapping whose keys all start with `$` is a matcher:
/// `{$type: string}`, `{$regex: "^txn_"}`, `{$present: true}`,
/// `{$absent: true}`, `{$length: 3}`, `{$any: true}`.
package enum BodyMatcher {
    /// Matcher keywords.
    package static let keywords: Set<String> = ["$type", "$regex", "$present", "$absent", "$length", "$any"]

    /// Every difference, each as `path: expected X, got Y`; empty when it matches.
    package static func differences(expected: JSON, actual: JSON?, at path: String = "body") -> [String] {
        if case .object(let object) = expected, !object.isEmpty, object.keys.allSatisfy({ $0.hasPrefix("$") }) {
            return matcherDifferences(object, actual, path)
        }
        guard let actual else { return ["\(path): expected \(describe(expected)), but it is missing"] }
        switch (expected, actual) {
        case (.object(let want), .object(let have)):
            var found: [String] = []
            for pair in want.pairs {
                let childPath = path + "." + pair.key
                if case .object(let m) = pair.value, m.keys == ["$absent"] {
                    if have[pair.key] != nil { found.append("\(childPath): expected absent, got \(describe(have[pair.key]!))") }
                    continue
                }
                found += differences(expected: pair.value, actual: have[pair.key], at: childPath)
            }
            return found
        case (.array(let want), .array(let have)):
            guard want.count == have.count else {
                return ["\(path): expected a list of \(want.count), got \(have.count): \(describe(actual))"]
            }
            return zip(want, have).enumerated().flatMap { index, pair in differences(expected: pair.0, actual: pair.1, at: "\(path)[\(index)]") }
        default:
            return expected.looselyEquals(actual) ? [] : ["\(path): expected \(describe(expected)), got \(describe(actual))"]
        }
    }

    private static func matcherDifferences(_ matcher: JSONObject, _ actual: JSON?, _ path: String) -> [String] {
        var found: [String] = []
        for pair in matcher.pairs {
            switch pair.key {
            case "$any":
                break
            case "$present":
                let want = pair.value.isTruthy
                if want != (actual != nil) {
                    found.append("\(path): expected \(want ? "present" : "absent"), \(actual.map { "got \(describe($0))" } ?? "it is missing")")
                }
            case "$absent":
                if let actual { found.append("\(path): expected absent, got \(describe(actual))") }
            case "$type":
                guard let actual else {
                    found.append("\(path): expected a \(pair.value.interpolationText), but it is missing")
                    continue
                }
                let types = pair.value.arrayValue?.compactMap(\.stringValue) ?? [pair.value.stringValue ?? ""]
                if !types.contains(where: { SchemaValidator.value(actual, hasType: $0) }) {
                    found.append("\(path): expected a \(types.joined(separator: " or ")), got \(actual.typeName) \(describe(actual))")
                }
            case "$regex":
                guard case .string(let text)? = actual else {
                    found.append("\(path): expected a string matching /\(pair.value.interpolationText)/, got \(actual.map(describe) ?? "nothing")")
                    continue
                }
                if let pattern = try? Schema.Pattern(pair.value.interpolationText), !pattern.matches(text) {
                    found.append("\(path): expected a match for /\(pattern.source)/, got \(describe(actual!))")
                }
            case "$length":
                let length: Int? =
                    switch actual {
                    case .array(let a)?: a.count
                    case .string(let s)?: s.count
                    case .object(let o)?: o.count
                    default: nil
                    }
                if length != pair.value.intValue {
                    found.append("\(path): expected length \(pair.value.interpolationText), got \(length.map(String.init) ?? "no length")")
                }
            default:
                found.append("\(path): unknown matcher \(pair.key)")
            }
        }
        return found
    }

    /// A value as compact JSON, shortened for messages.
    static func describe(_ value: JSON) -> String {
        let text = JSONWriter.encodeString(value)
        return text.count > 120 ? String(text.prefix(117)) + "..." : text
    }
}
