import Foundation

/// A path like `/children/{id}` or `/v1beta/models/{model}:predict`, matched
/// segment by segment. A parameter matches at least one character and never a
/// `/`; literal text may stand before and after it within a segment. A last
/// segment `{name...}` takes the rest of the path: one segment or more,
/// slashes included (`/files/{path...}` gives `path` = `a/b.txt` for
/// `/files/a/b.txt`).
package struct PathTemplate: Sendable, CustomStringConvertible {
    enum Part: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    package let template: String
    var segments: [[Part]]
    /// Names of the parameters in order.
    package let parameterNames: [String]
    /// The `{name...}` parameter that takes the rest of the path, if any;
    /// `segments` are those before it.
    package private(set) var restParameter: String?

    package var description: String { template }

    /// True when no segment has a parameter.
    package var isLiteral: Bool { parameterNames.isEmpty }

    /// Parses a template; the error says what is wrong with it.
    package init(_ template: String) throws(TemplateError) {
        guard template.hasPrefix("/") else { throw TemplateError(message: "a path must start with '/'") }
        var segments: [[Part]] = []
        var names: [String] = []
        var rest: String?
        // The segments after the leading `/`, split on the bytes (a
        // Character split and a zip of indices were most of this init).
        var raws: [Substring] = []
        let utf8 = template.utf8
        var segmentStart = utf8.index(after: utf8.startIndex)
        var position = segmentStart
        while position < utf8.endIndex {
            if utf8[position] == UInt8(ascii: "/") {
                raws.append(template[segmentStart..<position])
                segmentStart = utf8.index(after: position)
            }
            position = utf8.index(after: position)
        }
        raws.append(template[segmentStart...])
        for (index, raw) in raws.enumerated() {
            if raw.includes("...}") {
                let name = raw.hasPrefix("{") && raw.hasSuffix("...}") ? raw.dropFirst().dropLast(4) : ""
                guard index == raws.count - 1, !name.isEmpty, !name.includes("{"), !name.includes("}") else {
                    throw TemplateError(message: "a '{name...}' parameter, which takes the rest of the path, must be the whole last segment")
                }
                guard Self.isParameterName(name) else {
                    throw TemplateError(message: "invalid parameter name '\(name)' in path")
                }
                guard !names.contains(String(name)) else { throw TemplateError(message: "parameter '\(name)' appears twice") }
                names.append(String(name))
                rest = String(name)
                continue
            }
            // Scanned as bytes: braces are ASCII, so every index found is
            // also a character boundary of the segment.
            let bytes = raw.utf8
            if !raw.isEmpty, !bytes.contains(where: { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "}") }) {
                segments.append([.literal(String(raw))])
                continue
            }
            var parts: [Part] = []
            var position = bytes.startIndex
            var literalStart = position
            while position < bytes.endIndex {
                switch bytes[position] {
                case UInt8(ascii: "{"):
                    if literalStart < position { parts.append(.literal(String(raw[literalStart..<position]))) }
                    guard let close = bytes[position...].firstIndex(of: UInt8(ascii: "}")) else {
                        throw TemplateError(message: "'{' without '}' in path")
                    }
                    let name = raw[bytes.index(after: position)..<close]
                    guard Self.isParameterName(name) else {
                        throw TemplateError(message: "invalid parameter name '\(name)' in path")
                    }
                    if case .parameter = parts.last {
                        throw TemplateError(message: "two parameters side by side in one segment cannot be told apart")
                    }
                    guard !names.contains(String(name)) else { throw TemplateError(message: "parameter '\(name)' appears twice") }
                    names.append(String(name))
                    parts.append(.parameter(String(name)))
                    position = bytes.index(after: close)
                    literalStart = position
                case UInt8(ascii: "}"):
                    throw TemplateError(message: "'}' without '{' in path")
                default:
                    position = bytes.index(after: position)
                }
            }
            if literalStart < bytes.endIndex { parts.append(.literal(String(raw[literalStart...]))) }
            segments.append(parts)
        }
        self.template = template
        self.segments = segments
        self.parameterNames = names
        self.restParameter = rest
    }

    /// Letters, digits, `_` and `-`: checked on the bytes of an ASCII name,
    /// by Unicode's properties otherwise.
    static func isParameterName(_ name: Substring) -> Bool {
        guard !name.isEmpty else { return false }
        if name.utf8.allSatisfy({ $0 < 0x80 }) {
            return name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "_"), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
        }
        return name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
    }

    package struct TemplateError: Error, Sendable {
        package let message: String
    }

    /// The parameters when `path` (already split into segments) matches; nil otherwise.
    ///
    /// Literal text is compared byte for byte, as RFC 3986 compares paths
    /// (and without `String`'s Unicode-equivalence comparison, which costs
    /// more than the rest of routing on every request).
    package func match(_ pathSegments: [Substring]) -> [String: String]? {
        guard restParameter == nil ? pathSegments.count == segments.count : pathSegments.count > segments.count else { return nil }
        var captured: [String: String] = [:]
        for (parts, segment) in zip(segments, pathSegments) {
            guard Self.match(parts[...], segment.utf8, &captured) else { return nil }
        }
        if let restParameter {
            let rest = pathSegments[segments.count...]
            // At least one character: `/files/` has no path to give.
            guard rest.contains(where: { !$0.isEmpty }) else { return nil }
            captured[restParameter] = rest.map { PercentDecoding.decode($0, keepingEncodedSlashes: true) }.joined(separator: "/")
        }
        return captured
    }

    private static func match(_ parts: ArraySlice<Part>, _ text: Substring.UTF8View, _ captured: inout [String: String]) -> Bool {
        guard let first = parts.first else { return text.isEmpty }
        switch first {
        case .literal(let literal):
            let literal = literal.utf8
            guard hasPrefix(text, literal) else { return false }
            return match(parts.dropFirst(), text.dropFirst(literal.count), &captured)
        case .parameter(let name):
            let rest = parts.dropFirst()
            guard !text.isEmpty else { return false }
            if rest.isEmpty {
                captured[name] = PercentDecoding.decode(Substring(text), keepingEncodedSlashes: true)
                return true
            }
            // Try the shortest capture first so `{a}:b` splits at the first ':'.
            // The literal after the parameter starts with a whole character's
            // first byte, so a split can only succeed on a character boundary.
            var end = text.index(after: text.startIndex)
            while true {
                var attempt = captured
                if match(rest, text[end...], &attempt) {
                    attempt[name] = PercentDecoding.decode(Substring(text[..<end]), keepingEncodedSlashes: true)
                    captured = attempt
                    return true
                }
                if end == text.endIndex { return false }
                end = text.index(after: end)
            }
        }
    }

    /// Whether `text` starts with `prefix`, compared as contiguous bytes
    /// (the generic `starts(with:)` walks both views index by index).
    private static func hasPrefix(_ text: Substring.UTF8View, _ prefix: String.UTF8View) -> Bool {
        let count = prefix.count
        guard count <= text.count else { return false }
        guard count > 0 else { return true }
        let same = text.withContiguousStorageIfAvailable { text in
            prefix.withContiguousStorageIfAvailable { prefix in memcmp(text.baseAddress!, prefix.baseAddress!, count) == 0 }
        }
        return (same ?? nil) ?? text.starts(with: prefix)
    }

    /// 1 when the first literal segment that differs from the path is a near
    /// misspelling of it (`childs` for `children`), else 0.
    package func spellingCloseness(to pathSegments: [Substring]) -> Int {
        for (parts, segment) in zip(segments, pathSegments) {
            var ignored: [String: String] = [:]
            if Self.match(parts[...], segment.utf8, &ignored) { continue }
            guard parts.count == 1, case .literal(let literal) = parts[0] else { return 0 }
            return Self.isNearMisspelling(segment, of: literal) ? 1 : 0
        }
        return 0
    }

    /// `agreement(with:)` and `spellingCloseness(to:)` in one pass,
    /// each segment matched without capturing its parameters (which decodes
    /// them): scoring every endpoint for an unmatched request's near misses
    /// (`EndpointRouter.nearMisses`) would otherwise copy and decode a
    /// segment per endpoint; `near(index, literal)` says whether the path's
    /// segment at `index` is a near misspelling of `literal`, so that a
    /// caller scoring many templates measures each pair once. The two
    /// definitions above are the reference it is tested against.
    func nearness(to pathSegments: [Substring], near: (Int, String) -> Bool) -> (agreement: Int, spelling: Int) {
        var agreed = 0
        var spelling: Int?
        for index in 0..<min(segments.count, pathSegments.count) {
            if Self.segmentMatches(segments[index], pathSegments[index]) {
                agreed += 1
            } else if spelling == nil {
                let parts = segments[index]
                if parts.count == 1, case .literal(let literal) = parts[0] {
                    spelling = near(index, literal) ? 1 : 0
                } else {
                    spelling = 0
                }
            }
        }
        return (agreed - abs(segments.count - pathSegments.count), spelling ?? 0)
    }

    /// Whether one segment of a path matches one of the template's.
    static func segmentMatches(_ parts: [Part], _ segment: Substring) -> Bool {
        if parts.count == 1 {
            switch parts[0] {
            case .literal(let literal): return segment.utf8.count == literal.utf8.count && hasPrefix(segment.utf8, literal.utf8)
            case .parameter: return !segment.isEmpty
            }
        }
        var ignored: [String: String] = [:]
        return match(parts[...], segment.utf8, &ignored)
    }

    static func isNearMisspelling(_ segment: Substring, of literal: String) -> Bool {
        Suggestion.editDistance(String(segment).lowercased(), literal.lowercased()) <= max(2, literal.count / 2)
    }

    /// How many leading segments of `pathSegments` agree with this template, for near-miss ranking.
    package func agreement(with pathSegments: [Substring]) -> Int {
        var score = 0
        for (parts, segment) in zip(segments, pathSegments) {
            var ignored: [String: String] = [:]
            if Self.match(parts[...], segment.utf8, &ignored) { score += 1 }
        }
        return score - abs(segments.count - pathSegments.count)
    }
}
