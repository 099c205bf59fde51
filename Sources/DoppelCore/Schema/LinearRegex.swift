/// A regular expression matcher that runs in time linear in its input.
///
/// Written here because schema `pattern`s match client input, and the
/// backtracking engines at hand (NSRegularExpression/ICU, Swift `Regex`) take
/// exponential time on patterns like `(x+x+)+y`, and hit ICU's stack limit
/// on long valid inputs; no linear-time engine is among the mirrored
/// packages. This is Thompson's construction run as a Pike VM without
/// captures (a pattern only has to say match or no match): every input
/// character advances a set of at most `program.count` states, so a match
/// costs O(input × pattern) whatever either holds.
///
/// Supported: the ECMA-262 syntax JSON Schema patterns use: literals and
/// escapes (`\n \t \r \f \v \0 \xHH \uHHHH \u{H…}`, escaped punctuation),
/// `.`, classes `[a-z]` `[^…]` with `\d \D \w \W \s \S` inside and out,
/// anchors `^ $ \b \B`, groups `( )`, `(?: )`, `(?<name> )`, alternation, and
/// the quantifiers `* + ? {n} {n,} {n,m}` with their lazy forms (the same
/// for match or no match), and Unicode property escapes `\p{…}` `\P{…}` of
/// general categories and a few binary properties (`UnicodeProperties`). Backreferences and lookaround cannot run in
/// linear time and are refused when the contract loads.
package struct LinearRegex: Sendable {
    /// The most instructions a compiled pattern may have (counted repeats like `{1,500}` expand).
    package static let maximumProgramSize = 2_000

    /// Why a pattern was refused.
    package struct SyntaxError: Error, Sendable, CustomStringConvertible {
        package let message: String
        package var description: String { message }
    }

    private enum Instruction: Sendable {
        case character(CharacterSet)
        case split(Int, Int)
        case jump(Int)
        case assertion(Assertion)
        case match
    }

    private enum Assertion: Sendable { case start, end, wordBoundary, notWordBoundary }

    /// A set of Unicode scalars as sorted ranges, possibly negated.
    struct CharacterSet: Sendable {
        var ranges: [ClosedRange<UInt32>]
        var negated = false

        /// Whether the set holds `scalar`. Compiled sets are `merged`: sorted
        /// and apart, so a set of many ranges (`\p{L}` has hundreds) is
        /// searched by halves.
        func contains(_ scalar: UInt32) -> Bool {
            var hit = false
            if ranges.count <= 8 {
                for range in ranges where range.contains(scalar) {
                    hit = true
                    break
                }
            } else {
                var low = 0
                var high = ranges.count
                while low < high {
                    let middle = (low + high) / 2
                    if ranges[middle].upperBound < scalar { low = middle + 1 } else { high = middle }
                }
                hit = low < ranges.count && ranges[low].contains(scalar)
            }
            return hit != negated
        }

        /// The same set with its ranges sorted and joined where they touch.
        func merged() -> CharacterSet {
            var joined: [ClosedRange<UInt32>] = []
            for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
                if let last = joined.last, range.lowerBound <= last.upperBound &+ 1 {
                    joined[joined.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
                } else {
                    joined.append(range)
                }
            }
            return CharacterSet(ranges: joined, negated: negated)
        }

        static func single(_ scalar: UInt32) -> CharacterSet { CharacterSet(ranges: [scalar...scalar]) }
        static let digit = CharacterSet(ranges: [48...57])
        static let word = CharacterSet(ranges: [48...57, 65...90, 95...95, 97...122])
        static let space = CharacterSet(ranges: [
            9...13, 32...32, 0xA0...0xA0, 0x1680...0x1680, 0x2000...0x200A,
            0x2028...0x2029, 0x202F...0x202F, 0x205F...0x205F, 0x3000...0x3000, 0xFEFF...0xFEFF,
        ])
        static let anyButNewline = CharacterSet(ranges: [10...10, 13...13, 0x2028...0x2029], negated: true)
    }

    private let program: [Instruction]
    /// The parsed pattern, for `example(minLength:maxLength:)`.
    private let tree: Node

    /// Compiles a pattern; throws for syntax errors, unsupported constructs and oversized programs.
    package init(_ pattern: String) throws(SyntaxError) {
        var parser = Parser(scalars: Array(pattern.unicodeScalars.map(\.value)))
        let tree = try parser.parse()
        var compiler = Compiler()
        try compiler.emit(tree)
        compiler.program.append(.match)
        guard compiler.program.count <= Self.maximumProgramSize else {
            throw SyntaxError(message: "the pattern is too large (more than \(Self.maximumProgramSize) steps once counted repeats are expanded)")
        }
        program = compiler.program
        self.tree = tree
    }

    /// A short text the pattern matches, within the lengths when it can be:
    /// each repetition taken its least number of times (then more, while
    /// the text is shorter than `minLength`), each alternation's first
    /// branch, each class's first readable member. Checked with `matches`
    /// before it is returned; nil when no text so made matches.
    package func example(minLength: Int = 0, maxLength: Int? = nil) -> String? {
        for extra in [0, 1, 2, 4, 8, 16, 32, 64] {
            var scalars: [UInt32] = []
            guard Self.generate(tree, extra: extra, into: &scalars, budget: 10_000) else { return nil }
            // An unanchored pattern still matches with text after it: pad to the least length.
            var text = String(String.UnicodeScalarView(scalars.compactMap(Unicode.Scalar.init)))
            if text.unicodeScalars.count < minLength, extra == 64 || !Self.repeats(tree) {
                text += String(repeating: "x", count: minLength - text.unicodeScalars.count)
            }
            if text.unicodeScalars.count < minLength { continue }
            if let maxLength, text.unicodeScalars.count > maxLength { return nil }
            return matches(text) ? text : nil
        }
        return nil
    }

    /// Whether the pattern has a repetition that could take more turns.
    private static func repeats(_ node: Node) -> Bool {
        switch node {
        case .empty, .set, .assertion: return false
        case .sequence(let items), .alternation(let items): return items.contains(where: repeats)
        case .repeated(let inner, let min, let max): return max.map { $0 > min } ?? true || repeats(inner)
        }
    }

    /// Appends text for `node`; false past `budget` scalars.
    private static func generate(_ node: Node, extra: Int, into scalars: inout [UInt32], budget: Int) -> Bool {
        switch node {
        case .empty, .assertion:
            return true
        case .set(let set):
            guard let scalar = readable(set) else { return false }
            scalars.append(scalar)
        case .sequence(let items):
            for item in items where !generate(item, extra: extra, into: &scalars, budget: budget) { return false }
        case .alternation(let branches):
            guard let first = branches.first else { return true }
            return generate(first, extra: extra, into: &scalars, budget: budget)
        case .repeated(let inner, let min, let max):
            let turns = Swift.min(min + extra, max ?? Int.max)
            for _ in 0..<turns where !generate(inner, extra: extra, into: &scalars, budget: budget) { return false }
        }
        return scalars.count <= budget
    }

    /// A member of the set a reader would expect: a lowercase letter, an
    /// uppercase one, a digit, then anything printable it holds.
    private static func readable(_ set: CharacterSet) -> UInt32? {
        let preferred: [UInt32] = [0x61, 0x41, 0x30, 0x2D, 0x5F, 0x2E, 0x20] + Array(0x62...0x7A) + Array(0x42...0x5A) + Array(0x31...0x39)
        if let scalar = preferred.first(where: set.contains) { return scalar }
        if !set.negated { return set.ranges.first { $0.upperBound >= 0x20 }.map { Swift.max($0.lowerBound, 0x20) } }
        return (0x21...0x7E).first(where: set.contains)
    }

    /// Whether the pattern matches anywhere in `text` (JSON Schema's `pattern` is unanchored).
    package func matches(_ text: String) -> Bool {
        let input = Array(text.unicodeScalars.map(\.value))
        var current: [Int] = []
        var next: [Int] = []
        var marks = [Int](repeating: -1, count: program.count)
        var stack: [Int] = []
        current.reserveCapacity(program.count)
        next.reserveCapacity(program.count)

        // Adds pc and everything reachable from it without consuming input.
        func add(_ start: Int, at position: Int, generation: Int, to list: inout [Int]) -> Bool {
            stack.append(start)
            while let pc = stack.popLast() {
                guard marks[pc] != generation else { continue }
                marks[pc] = generation
                switch program[pc] {
                case .jump(let target): stack.append(target)
                case .split(let first, let second):
                    stack.append(second)
                    stack.append(first)
                case .assertion(let kind):
                    if holds(kind, at: position, in: input) { stack.append(pc + 1) }
                case .match:
                    stack.removeAll()
                    return true
                case .character:
                    list.append(pc)
                }
            }
            return false
        }

        for position in 0...input.count {
            // A new thread at every position: the search is unanchored.
            if add(0, at: position, generation: position, to: &current) { return true }
            guard position < input.count else { break }
            let scalar = input[position]
            next.removeAll(keepingCapacity: true)
            for pc in current {
                guard case .character(let set) = program[pc], set.contains(scalar) else { continue }
                if add(pc + 1, at: position + 1, generation: position + 1, to: &next) { return true }
            }
            swap(&current, &next)
        }
        return false
    }

    private func holds(_ assertion: Assertion, at position: Int, in input: [UInt32]) -> Bool {
        switch assertion {
        case .start: return position == 0
        case .end: return position == input.count
        case .wordBoundary, .notWordBoundary:
            let before = position > 0 && CharacterSet.word.contains(input[position - 1])
            let after = position < input.count && CharacterSet.word.contains(input[position])
            return (before != after) == (assertion == .wordBoundary)
        }
    }

    // MARK: Parsing

    private indirect enum Node: Sendable {
        case empty
        case set(CharacterSet)
        case assertion(Assertion)
        case sequence([Node])
        case alternation([Node])
        case repeated(Node, min: Int, max: Int?)
    }

    private struct Parser {
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

    // MARK: Compiling

    private struct Compiler {
        var program: [Instruction] = []

        mutating func emit(_ node: Node) throws(SyntaxError) {
            guard program.count <= LinearRegex.maximumProgramSize else {
                throw SyntaxError(
                    message: "the pattern is too large (more than \(LinearRegex.maximumProgramSize) steps once counted repeats are expanded)")
            }
            switch node {
            case .empty: break
            case .set(let set): program.append(.character(set.merged()))
            case .assertion(let kind): program.append(.assertion(kind))
            case .sequence(let items): for item in items { try emit(item) }
            case .alternation(let options):
                var jumps: [Int] = []
                for (i, option) in options.enumerated() {
                    if i < options.count - 1 {
                        let split = program.count
                        program.append(.split(split + 1, 0))
                        try emit(option)
                        jumps.append(program.count)
                        program.append(.jump(0))
                        program[split] = .split(split + 1, program.count)
                    } else {
                        try emit(option)
                    }
                }
                for jump in jumps { program[jump] = .jump(program.count) }
            case .repeated(let inner, let min, let max):
                for _ in 0..<min { try emit(inner) }
                if let max {
                    // Each optional copy may be skipped to the end.
                    var splits: [Int] = []
                    for _ in min..<max {
                        splits.append(program.count)
                        program.append(.split(program.count + 1, 0))
                        try emit(inner)
                    }
                    for split in splits { program[split] = .split(split + 1, program.count) }
                } else {
                    let loop = program.count
                    program.append(.split(loop + 1, 0))
                    try emit(inner)
                    program.append(.jump(loop))
                    program[loop] = .split(loop + 1, program.count)
                }
            }
        }
    }
}
