/// Parsing a pattern into its tree.
extension LinearRegex {
    // MARK: Parsing

    indirect enum Node: Sendable {
        case empty
        case set(CharacterSet)
        case assertion(Assertion)
        case sequence([Node])
        case alternation([Node])
        case repeated(Node, min: Int, max: Int?)
    }

    struct Parser {
        let scalars: [UInt32]
        var index = 0
        var depth = 0

        init(scalars: [UInt32]) { self.scalars = scalars }

        var current: UInt32? { index < scalars.count ? scalars[index] : nil }

        func fail(_ message: String) -> SyntaxError { SyntaxError(message: message) }

        mutating func parse() throws(SyntaxError) -> Node {
            let node = try alternation()
            if index < scalars.count { throw fail("unmatched ')' at character \(index + 1)") }
            return node
        }

        mutating func alternation() throws(SyntaxError) -> Node {
            depth += 1
            defer { depth -= 1 }
            guard depth <= 100 else { throw fail("the pattern nests groups deeper than 100 levels") }
            var options = [try sequence()]
            while current == 0x7C {  // |
                index += 1
                options.append(try sequence())
            }
            return options.count == 1 ? options[0] : .alternation(options)
        }

        mutating func sequence() throws(SyntaxError) -> Node {
            var items: [Node] = []
            while let c = current, c != 0x7C, c != 0x29 {  // | )
                var atom = try self.atom()
                atom = try quantified(atom)
                items.append(atom)
            }
            return items.count == 1 ? items[0] : .sequence(items)
        }

        mutating func quantified(_ atom: Node) throws(SyntaxError) -> Node {
            var min = 0
            var max: Int? = nil
            switch current {
            case 0x2A:
                min = 0
                max = nil  // *
            case 0x2B:
                min = 1
                max = nil  // +
            case 0x3F:
                min = 0
                max = 1  // ?
            case 0x7B:  // {
                guard let (low, high, length) = counted() else { return atom }  // a literal '{'
                index += length - 1
                min = low
                max = high
            default: return atom
            }
            if case .assertion = atom { throw fail("a quantifier cannot follow an anchor") }
            index += 1
            if current == 0x3F { index += 1 }  // lazy: the same for match or no match
            if current == 0x2A || current == 0x2B || current == 0x3F || (current == 0x7B && counted() != nil) {
                throw fail("nothing to repeat at character \(index + 1)")
            }
            return .repeated(atom, min: min, max: max)
        }

        /// `{n}`, `{n,}` or `{n,m}` at the current position: bounds and length, or nil when it is not one.
        func counted() -> (Int, Int?, Int)? {
            var i = index + 1
            func digits() -> Int? {
                let start = i
                var value = 0
                while i < scalars.count, (48...57).contains(scalars[i]) {
                    value = min(value * 10 + Int(scalars[i] - 48), 100_000)
                    i += 1
                }
                return i > start ? value : nil
            }
            guard let low = digits() else { return nil }
            var high: Int? = low
            if i < scalars.count, scalars[i] == 0x2C {  // ,
                i += 1
                high = digits()
            }
            guard i < scalars.count, scalars[i] == 0x7D else { return nil }
            if let high, high < low { return nil }
            return (low, high, i - index + 1)
        }

        mutating func atom() throws(SyntaxError) -> Node {
            let c = scalars[index]
            index += 1
            switch c {
            case 0x28:  // (
                if current == 0x3F {  // ?
                    index += 1
                    switch current {
                    case 0x3A: index += 1  // (?:
                    case 0x3C where index + 1 < scalars.count && scalars[index + 1] != 0x3D && scalars[index + 1] != 0x21:  // (?<name>
                        while let n = current, n != 0x3E { index += 1 }
                        guard current == 0x3E else { throw fail("unterminated group name") }
                        index += 1
                    case 0x3D, 0x21, 0x3C: throw fail("lookahead and lookbehind are not supported (they cannot run in linear time)")
                    default: throw fail("unknown group syntax '(?' at character \(index)")
                    }
                }
                let inner = try alternation()
                guard current == 0x29 else { throw fail("missing ')'") }
                index += 1
                return inner
            case 0x29: throw fail("unmatched ')' at character \(index)")
            case 0x5B: return .set(try characterClass())
            case 0x2E: return .set(.anyButNewline)
            case 0x5E: return .assertion(.start)
            case 0x24: return .assertion(.end)
            case 0x5C: return try escape(inClass: false)
            case 0x2A, 0x2B, 0x3F: throw fail("nothing to repeat at character \(index)")
            default: return .set(.single(c))
            }
        }

        mutating func escape(inClass: Bool) throws(SyntaxError) -> Node {
            guard let c = current else { throw fail("the pattern ends with '\\'") }
            index += 1
            switch c {
            case 0x64: return .set(.digit)  // d
            case 0x44: return .set(CharacterSet(ranges: CharacterSet.digit.ranges, negated: true))
            case 0x77: return .set(.word)  // w
            case 0x57: return .set(CharacterSet(ranges: CharacterSet.word.ranges, negated: true))
            case 0x73: return .set(.space)  // s
            case 0x53: return .set(CharacterSet(ranges: CharacterSet.space.ranges, negated: true))
            case 0x62 where !inClass: return .assertion(.wordBoundary)  // b
            case 0x62: return .set(.single(8))
            case 0x42 where !inClass: return .assertion(.notWordBoundary)
            case 0x6E: return .set(.single(10))
            case 0x74: return .set(.single(9))
            case 0x72: return .set(.single(13))
            case 0x66: return .set(.single(12))
            case 0x76: return .set(.single(11))
            case 0x30: return .set(.single(0))
            case 0x31...0x39: throw fail("backreferences are not supported (they cannot run in linear time)")
            case 0x6B where current == 0x3C: throw fail("backreferences are not supported (they cannot run in linear time)")
            case 0x78: return .set(.single(try hex(count: 2)))
            case 0x75:
                if current == 0x7B {
                    index += 1
                    var value: UInt32 = 0
                    var count = 0
                    while let h = current, let digit = Self.hexDigit(h) {
                        value = value * 16 + digit
                        count += 1
                        index += 1
                        guard count <= 6 else { throw fail("\\u{…} has too many digits") }
                    }
                    guard count > 0, current == 0x7D else { throw fail("bad \\u{…} escape") }
                    index += 1
                    return .set(.single(value))
                }
                return .set(.single(try hex(count: 4)))
            case 0x70, 0x50:  // p, P: \p{Letter}, \P{Nd}, \p{gc=Lu}
                guard current == 0x7B else { throw fail("\\p and \\P need a property in braces, as \\p{Letter}") }
                index += 1
                var name = ""
                while let h = current, h != 0x7D, name.unicodeScalars.count < 64 {
                    name.unicodeScalars.append(Unicode.Scalar(h) ?? "?")
                    index += 1
                }
                guard current == 0x7D else { throw fail("missing '}' after \\p{") }
                index += 1
                guard let ranges = UnicodeProperties.ranges(of: name) else {
                    throw fail(
                        "unknown Unicode property '\(name)' (general categories such as Letter, Lu or Nd, and Alphabetic, White_Space, Uppercase, Lowercase, ASCII, Any are known)"
                    )
                }
                return .set(CharacterSet(ranges: ranges, negated: c == 0x50))
            default:
                let isLetter = (65...90).contains(c) || (97...122).contains(c)
                if isLetter { throw fail("unknown escape '\\\(Character(Unicode.Scalar(c)!))'") }
                return .set(.single(c))
            }
        }

        mutating func hex(count: Int) throws(SyntaxError) -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<count {
                guard let h = current, let digit = Self.hexDigit(h) else { throw fail("bad hexadecimal escape") }
                value = value * 16 + digit
                index += 1
            }
            return value
        }

        static func hexDigit(_ c: UInt32) -> UInt32? {
            switch c {
            case 48...57: c - 48
            case 65...70: c - 55
            case 97...102: c - 87
            default: nil
            }
        }

        mutating func characterClass() throws(SyntaxError) -> CharacterSet {
            var set = CharacterSet(ranges: [])
            var negatedParts: [CharacterSet] = []
            if current == 0x5E {
                set.negated = true
                index += 1
            }
            var first = true
            while let c = current, c != 0x5D || first {
                first = false
                let low: UInt32
                index += 1
                if c == 0x5C {
                    guard case .set(let escaped) = try escape(inClass: true) else { continue }
                    if escaped.negated {
                        negatedParts.append(escaped)
                        continue
                    }
                    if escaped.ranges.count != 1 || escaped.ranges[0].count != 1 {
                        set.ranges += escaped.ranges
                        continue
                    }
                    low = escaped.ranges[0].lowerBound
                } else {
                    low = c
                }
                if current == 0x2D, index + 1 < scalars.count, scalars[index + 1] != 0x5D {  // a-z
                    index += 1
                    var high = scalars[index]
                    index += 1
                    if high == 0x5C {
                        guard case .set(let escaped) = try escape(inClass: true), !escaped.negated, escaped.ranges.count == 1,
                            escaped.ranges[0].count == 1
                        else { throw fail("a class range cannot end in a class like \\d") }
                        high = escaped.ranges[0].lowerBound
                    }
                    guard low <= high else { throw fail("class range out of order") }
                    set.ranges.append(low...high)
                } else {
                    set.ranges.append(low...low)
                }
            }
            guard current == 0x5D else { throw fail("missing ']'") }
            index += 1
            // [\D] and friends: the complement of a class inside a class.
            for part in negatedParts { set.ranges += Self.complement(part.ranges) }
            return set
        }

        static func complement(_ ranges: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
            var result: [ClosedRange<UInt32>] = []
            var next: UInt32 = 0
            for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
                if range.lowerBound > next { result.append(next...(range.lowerBound - 1)) }
                next = max(next, range.upperBound &+ 1)
            }
            if next <= 0x10FFFF { result.append(next...0x10FFFF) }
            return result
        }
    }
}
