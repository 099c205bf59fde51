/// The string formats Doppel asserts beyond the five it always had, as
/// JSON Schema 2020-12 §7.3 and the RFCs it cites define them (tested
/// against the JSON-Schema-Test-Suite's `optional/format` cases): `time`,
/// `duration`, `ipv4`, `ipv6`, `hostname`, `idn-email`, `json-pointer`,
/// `relative-json-pointer`, `uri-reference`, `iri`, `iri-reference`,
/// `uri-template`, and OpenAPI's `byte` (base64).
///
/// Written here as byte scanners: each grammar is a few lines, Foundation
/// has no checker for them, and a backtracking regular expression per
/// request body member is what `LinearRegex` exists to avoid.
enum Formats {
    /// Whether `s` has the format; nil for a format not asserted here.
    static func check(_ s: String, _ format: String) -> Bool? {
        switch format {
        case "time": return isTime(Array(s.utf8)[...])
        case "duration": return isDuration(Array(s.utf8))
        case "ipv4": return isIPv4(Array(s.utf8)[...])
        case "ipv6": return isIPv6(Array(s.utf8)[...])
        case "hostname": return isHostname(s)
        case "idn-email": return isIDNEmail(s)
        case "json-pointer": return isJSONPointer(Array(s.utf8)[...])
        case "relative-json-pointer": return isRelativeJSONPointer(Array(s.utf8))
        case "uri-reference": return isURIReference(s, iri: false, absolute: false)
        case "iri": return isURIReference(s, iri: true, absolute: true)
        case "iri-reference": return isURIReference(s, iri: true, absolute: false)
        case "uri-template": return isURITemplate(Array(s.unicodeScalars))
        case "byte": return isBase64(Array(s.utf8))
        default: return nil
        }
    }

    static func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }
    static func isHex(_ b: UInt8) -> Bool { isDigit(b) || (b >= 65 && b <= 70) || (b >= 97 && b <= 102) }
    static func isAlpha(_ b: UInt8) -> Bool { (b >= 65 && b <= 90) || (b >= 97 && b <= 122) }

    /// Two ASCII digits at `i` as a number, or nil.
    static func twoDigits(_ b: ArraySlice<UInt8>, _ i: Int) -> Int? {
        guard i + 1 < b.endIndex, isDigit(b[i]), isDigit(b[i + 1]) else { return nil }
        return Int(b[i] - 48) * 10 + Int(b[i + 1] - 48)
    }

    /// RFC 3339 `full-time`: `hh:mm:ss[.frac](Z|±hh:mm)`, a leap second only at 23:59 UTC.
    static func isTime(_ b: ArraySlice<UInt8>) -> Bool {
        let s = b.startIndex
        guard b.count >= 9, let hour = twoDigits(b, s), b[s + 2] == 58, let minute = twoDigits(b, s + 3), b[s + 5] == 58,
            let second = twoDigits(b, s + 6), hour < 24, minute < 60, second <= 60
        else { return false }
        var i = s + 8
        if i < b.endIndex, b[i] == 46 {
            i += 1
            let start = i
            while i < b.endIndex, isDigit(b[i]) { i += 1 }
            guard i > start else { return false }
        }
        guard i < b.endIndex else { return false }
        var offset = 0
        if b[i] == 90 || b[i] == 122 {
            guard i + 1 == b.endIndex else { return false }
        } else if b[i] == 43 || b[i] == 45 {
            guard b.endIndex - i == 6, let oh = twoDigits(b, i + 1), b[i + 3] == 58, let om = twoDigits(b, i + 4), oh < 24, om < 60 else {
                return false
            }
            offset = (oh * 60 + om) * (b[i] == 43 ? 1 : -1)
        } else {
            return false
        }
        if second == 60 {
            // In UTC, a leap second is 23:59:60.
            let utc = ((hour * 60 + minute - offset) % 1440 + 1440) % 1440
            return utc == 23 * 60 + 59
        }
        return true
    }

    /// RFC 3339 Appendix A `duration`: `P` then date parts (Y, M, D in order,
    /// none skipped between the first and last), a `T` and time parts (H, M,
    /// S likewise), or weeks alone.
    static func isDuration(_ b: [UInt8]) -> Bool {
        guard b.first == 80, b.count > 1 else { return false }
        var i = 1
        /// Number-unit pairs up to `T` or the end.
        func parts() -> [UInt8]? {
            var units: [UInt8] = []
            while i < b.count, b[i] != 84 {
                let start = i
                while i < b.count, isDigit(b[i]) { i += 1 }
                guard i > start, i < b.count, isAlpha(b[i]), b[i] != 84 else { return nil }
                units.append(b[i])
                i += 1
            }
            return units
        }
        /// Whether the units are consecutive from the list, in order.
        func consecutive(_ units: [UInt8], in order: [UInt8]) -> Bool {
            guard let first = units.first, let start = order.firstIndex(of: first) else { return units.isEmpty }
            return start + units.count <= order.count && Array(order[start..<(start + units.count)]) == units
        }
        guard let date = parts() else { return false }
        if date == [87] { return i == b.count }  // weeks alone
        guard consecutive(date, in: [89, 77, 68]) else { return false }
        guard i < b.count else { return !date.isEmpty }
        i += 1  // T
        guard let time = parts(), i == b.count, !time.isEmpty else { return false }
        return consecutive(time, in: [72, 77, 83])
    }

    /// Dotted quad: four decimal bytes 0-255 of one to three ASCII digits.
    static func isIPv4(_ b: ArraySlice<UInt8>) -> Bool {
        let parts = b.split(separator: 46, omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(isDigit) else { return false }
            // A leading zero would read as octal to many parsers (RFC 6943 §3.1.1).
            if part.count > 1, part.first == 48 { return false }
            guard part.reduce(0, { $0 * 10 + Int($1 - 48) }) <= 255 else { return false }
        }
        return true
    }

    /// RFC 4291 §2.2: eight groups of up to four hex digits, `::` once for
    /// a run of zero groups, the last two as a dotted quad allowed.
    static func isIPv6(_ b: ArraySlice<UInt8>) -> Bool {
        guard !b.isEmpty, b.allSatisfy({ isHex($0) || $0 == 58 || $0 == 46 }) else { return false }
        let text = Array(b)
        var groups = 0
        var compressed = false
        var i = 0
        if text.starts(with: [58, 58]) {
            compressed = true
            i = 2
        } else if text.first == 58 {
            return false
        }
        while i < text.count {
            let start = i
            while i < text.count, isHex(text[i]) { i += 1 }
            if i < text.count, text[i] == 46 {
                // A dotted quad ends the address and counts for two groups.
                guard isIPv4(text[start...]) else { return false }
                groups += 2
                i = text.count
                break
            }
            guard (1...4).contains(i - start) else { return false }
            groups += 1
            guard i < text.count else { break }
            // text[i] is a colon.
            if i + 1 < text.count, text[i + 1] == 58 {
                guard !compressed else { return false }
                compressed = true
                i += 2
            } else {
                i += 1
                guard i < text.count else { return false }  // a trailing single colon
            }
        }
        return compressed ? groups <= 7 : groups == 8
    }

    /// RFC 1123 host name: ASCII labels of 1-63 letters, digits and inner
    /// hyphens, at most 253 characters in all. (An `xn--` label's Punycode
    /// is not decoded: IDNA2008's rules for it are not checked.)
    static func isHostname(_ s: String) -> Bool {
        let b = Array(s.utf8)
        guard !b.isEmpty, b.count <= 253 else { return false }
        for label in b.split(separator: 46, omittingEmptySubsequences: false) {
            guard (1...63).contains(label.count), label.allSatisfy({ isAlpha($0) || isDigit($0) || $0 == 45 }),
                label.first != 45, label.last != 45
            else { return false }
            // RFC 5891 §4.2.3.1: "--" in the third and fourth places only for an `xn--` label.
            if label.count >= 4, label[label.startIndex + 2] == 45, label[label.startIndex + 3] == 45,
                !label.prefix(2).map({ $0 | 0x20 }).elementsEqual([120, 110])
            {
                return false
            }
        }
        return true
    }

    /// RFC 6531 address: a local part (any characters but controls and
    /// unquoted specials; a quoted string) `@` a domain of non-empty labels.
    static func isIDNEmail(_ s: String) -> Bool {
        guard let at = s.lastIndex(of: "@") else { return false }
        let local = s[..<at]
        let domain = s[s.index(after: at)...]
        guard !local.isEmpty, !domain.isEmpty, local.utf8.count <= 64 || local.hasPrefix("\"") else { return false }
        if local.hasPrefix("\""), local.hasSuffix("\""), local.count >= 2 {
            // A quoted string.
        } else {
            let specials: Set<Character> = ["(", ")", "<", ">", "[", "]", ":", ";", "@", "\\", ",", "\"", " "]
            guard !local.contains(where: { specials.contains($0) || ($0.asciiValue.map { $0 < 32 || $0 == 127 } ?? false) }),
                !local.hasPrefix("."), !local.hasSuffix("."), !local.contains("..")
            else { return false }
        }
        if domain.hasPrefix("["), domain.hasSuffix("]") {
            let inner = domain.dropFirst().dropLast()
            if inner.hasPrefix("IPv6:") { return isIPv6(Array(inner.dropFirst(5).utf8)[...]) }
            return isIPv4(Array(inner.utf8)[...])
        }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            !label.isEmpty && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy {
                    $0.properties.isAlphabetic || $0.properties.numericType != nil || $0 == "-"
                        || $0.properties.isMath == false && !$0.properties.isWhitespace && $0.value > 127
                }
        }
    }

    /// RFC 6901: empty, or `/`-prefixed tokens in which `~` is `~0` or `~1`.
    static func isJSONPointer(_ b: ArraySlice<UInt8>) -> Bool {
        guard let first = b.first else { return true }
        guard first == 47 else { return false }
        var i = b.startIndex
        while i < b.endIndex {
            if b[i] == 126 {
                guard i + 1 < b.endIndex, b[i + 1] == 48 || b[i + 1] == 49 else { return false }
                i += 1
            }
            i += 1
        }
        return true
    }

    /// A non-negative integer (no leading zero), then `#` or a JSON pointer.
    static func isRelativeJSONPointer(_ b: [UInt8]) -> Bool {
        var i = 0
        while i < b.count, isDigit(b[i]) { i += 1 }
        guard i > 0, !(i > 1 && b[0] == 48) else { return false }
        if i == b.count { return true }
        if b[i] == 35 { return i + 1 == b.count }
        return isJSONPointer(b[i...])
    }

    /// RFC 3986 (or RFC 3987's IRIs, which also allow non-ASCII characters
    /// beyond the control and private ranges): a reference, or with
    /// `absolute` one with a scheme. Each character must be one the syntax
    /// allows where it is, `%` must start an escape, and an authority's
    /// host in brackets must be an IPv6 (or IPvFuture) address.
    static func isURIReference(_ s: String, iri: Bool, absolute: Bool) -> Bool {
        let scalars = Array(s.unicodeScalars)
        func allowed(_ c: Unicode.Scalar, extra: String) -> Bool {
            if c.value > 127 {
                return iri && !(c.value >= 0xE000 && c.value <= 0xF8FF && false) && !c.properties.isWhitespace
                    && c.properties.generalCategory != .control
            }
            let b = UInt8(c.value)
            return isAlpha(b) || isDigit(b) || "-._~!$&'()*+,;=".unicodeScalars.contains(c) || extra.unicodeScalars.contains(c)
        }
        /// Characters and escapes of one part.
        func valid(_ part: ArraySlice<Unicode.Scalar>, extra: String) -> Bool {
            var i = part.startIndex
            while i < part.endIndex {
                if part[i] == "%" {
                    guard i + 2 < part.endIndex, part[i + 1].isASCII, part[i + 2].isASCII,
                        isHex(UInt8(part[i + 1].value)), isHex(UInt8(part[i + 2].value))
                    else { return false }
                    i += 3
                    continue
                }
                guard allowed(part[i], extra: extra) else { return false }
                i += 1
            }
            return true
        }
        var rest = scalars[...]
        // The scheme: letters first, up to the first colon before any / ? #.
        if let colon = rest.firstIndex(of: ":"), !rest[..<colon].contains(where: { "/?#".unicodeScalars.contains($0) }) {
            let scheme = rest[..<colon]
            guard let first = scheme.first, first.isASCII, isAlpha(UInt8(first.value)),
                scheme.allSatisfy({ $0.isASCII && (isAlpha(UInt8($0.value)) || isDigit(UInt8($0.value)) || "+-.".unicodeScalars.contains($0)) })
            else { return false }
            rest = rest[(colon + 1)...]
        } else if absolute {
            return false
        }
        if let hash = rest.firstIndex(of: "#") {
            guard valid(rest[(hash + 1)...], extra: ":@/?") else { return false }
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: "?") {
            guard valid(rest[(question + 1)...], extra: ":@/?") else { return false }
            rest = rest[..<question]
        }
        if rest.starts(with: ["/", "/"]) {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            var authority = rest[..<end]
            rest = rest[end...]
            if let at = authority.lastIndex(of: "@") {
                guard valid(authority[..<at], extra: ":") else { return false }
                authority = authority[(at + 1)...]
            }
            if authority.first == "[" {
                guard let close = authority.firstIndex(of: "]") else { return false }
                let literal = authority[(authority.startIndex + 1)..<close]
                let text = String(String.UnicodeScalarView(literal))
                if text.first == "v" || text.first == "V" {
                    guard text.contains(".") else { return false }
                } else {
                    guard isIPv6(Array(text.utf8)[...]) else { return false }
                }
                authority = authority[(close + 1)...]
                guard authority.isEmpty || (authority.first == ":" && authority.dropFirst().allSatisfy { $0.isASCII && isDigit(UInt8($0.value)) })
                else { return false }
            } else {
                let colon = authority.lastIndex(of: ":")
                let host = colon.map { authority[..<$0] } ?? authority
                if let colon { guard authority[(colon + 1)...].allSatisfy({ $0.isASCII && isDigit(UInt8($0.value)) }) else { return false } }
                guard valid(host, extra: "") else { return false }
            }
        } else if !absolute, let colon = rest.firstIndex(of: ":"), scalars.first != ":" {
            // A relative reference's first segment has no colon (RFC 3986 §4.2).
            if !rest[..<colon].contains("/"), rest.startIndex == scalars.startIndex { return false }
        }
        return valid(rest, extra: ":@/")
    }

    /// RFC 6570: literals (no space, quote, angle brackets, backslash, caret,
    /// backtick, braces or pipe; `%` escapes) and expressions `{op? varspec,…}`.
    static func isURITemplate(_ s: [Unicode.Scalar]) -> Bool {
        var i = 0
        func hexAt(_ j: Int) -> Bool { j < s.count && s[j].isASCII && isHex(UInt8(s[j].value)) }
        while i < s.count {
            let c = s[i]
            if c == "{" {
                guard let close = s[i...].firstIndex(of: "}") else { return false }
                var body = s[(i + 1)..<close]
                if let op = body.first, "+#./;?&=,!@|".unicodeScalars.contains(op) {
                    guard "+#./;?&".unicodeScalars.contains(op) else { return false }
                    body = body.dropFirst()
                }
                guard !body.isEmpty else { return false }
                for varspec in body.split(separator: ",", omittingEmptySubsequences: false) {
                    var name = varspec[...]
                    if name.last == "*" {
                        name = name.dropLast()
                    } else if let colon = name.firstIndex(of: ":") {
                        let length = name[(colon + 1)...]
                        guard (1...4).contains(length.count), length.allSatisfy({ $0.isASCII && isDigit(UInt8($0.value)) }), length.first != "0"
                        else { return false }
                        name = name[..<colon]
                    }
                    guard !name.isEmpty, name.first != ".", name.last != "." else { return false }
                    var j = name.startIndex
                    var previousDot = false
                    while j < name.endIndex {
                        let ch = name[j]
                        if ch == "%" {
                            guard hexAt(j + 1), hexAt(j + 2), j + 2 < name.endIndex else { return false }
                            j += 3
                            previousDot = false
                            continue
                        }
                        if ch == "." {
                            guard !previousDot else { return false }
                            previousDot = true
                        } else {
                            guard ch.isASCII, isAlpha(UInt8(ch.value)) || isDigit(UInt8(ch.value)) || ch == "_" else { return false }
                            previousDot = false
                        }
                        j += 1
                    }
                }
                i = close + 1
                continue
            }
            if c == "%" {
                guard hexAt(i + 1), hexAt(i + 2) else { return false }
                i += 3
                continue
            }
            if c.value <= 0x20 || c.value == 0x7F || "\"<>\\^`{|}".unicodeScalars.contains(c) { return false }
            i += 1
        }
        return true
    }

    /// RFC 4648 base64: groups of four, `=` padding at the end only.
    static func isBase64(_ b: [UInt8]) -> Bool {
        guard b.count % 4 == 0 else { return false }
        for (index, byte) in b.enumerated() {
            if byte == 61 {
                guard index >= b.count - 2, b[index...].allSatisfy({ $0 == 61 }) else { return false }
            } else if !(isAlpha(byte) || isDigit(byte) || byte == 43 || byte == 47) {
                return false
            }
        }
        return true
    }
}
