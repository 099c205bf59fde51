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

    enum Instruction: Sendable {
        case character(CharacterSet)
        case split(Int, Int)
        case jump(Int)
        case assertion(Assertion)
        case match
    }

    enum Assertion: Sendable { case start, end, wordBoundary, notWordBoundary }

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

    let program: [Instruction]
    /// The parsed pattern, for `example(minLength:maxLength:)`.
    let tree: Node

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
    static func repeats(_ node: Node) -> Bool {
        switch node {
        case .empty, .set, .assertion: return false
        case .sequence(let items), .alternation(let items): return items.contains(where: repeats)
        case .repeated(let inner, let min, let max): return max.map { $0 > min } ?? true || repeats(inner)
        }
    }

    /// Appends text for `node`; false past `budget` scalars.
    static func generate(_ node: Node, extra: Int, into scalars: inout [UInt32], budget: Int) -> Bool {
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
    static func readable(_ set: CharacterSet) -> UInt32? {
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

    func holds(_ assertion: Assertion, at position: Int, in input: [UInt32]) -> Bool {
        switch assertion {
        case .start: return position == 0
        case .end: return position == input.count
        case .wordBoundary, .notWordBoundary:
            let before = position > 0 && CharacterSet.word.contains(input[position - 1])
            let after = position < input.count && CharacterSet.word.contains(input[position])
            return (before != after) == (assertion == .wordBoundary)
        }
    }

    // MARK: Compiling

    struct Compiler {
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
