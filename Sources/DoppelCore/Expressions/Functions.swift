import Foundation
import Synchronization

/// The functions expressions may call. A call names its function when the
/// expression is parsed, so evaluation dispatches on this enum, never on text.
///
/// `filter`, `map`, `find`, `count`, `any`, `all`, `sort_by` and
/// `map_values` evaluate their second argument once per element, with the
/// element bound to `it` (and, for `map_values`, its key to `key`). The
/// argument may also be a lambda, `t => t.score`, which binds the element to
/// its own name so nested list functions can still see it.
/// `if(condition, then, else)` evaluates only the branch it returns.
enum Function: String, CaseIterable, Sendable {
    case uuid, now, date, epoch
    case dateAdd = "date_add"
    case monthStart = "month_start"
    case len
    case byteLen = "byte_len"
    case round, floor, ceil, abs, min, max, sum
    case values, keys, slice, merge, pick, first, last, reverse
    case filter, map, find, count, any, all
    case sortBy = "sort_by"
    case mapValues = "map_values"
    case findIndex = "find_index"
    case lower, upper, string, int, number, matches
    case startsWith = "starts_with"
    case endsWith = "ends_with"
    case split, join, replace, trim, base64, `if`, omit, unique, tally, flatten, tokens

    /// How many arguments it takes.
    var arity: ClosedRange<Int> {
        switch self {
        case .uuid, .now: 0...0
        case .monthStart, .round, .min, .max, .count: 1...2
        case .dateAdd, .merge, .pick, .filter, .map, .find, .any, .all, .sortBy, .matches, .startsWith, .endsWith, .split, .join,
            .mapValues, .omit, .findIndex:
            2...2
        case .slice: 2...3
        case .replace, .if: 3...3
        default: 1...1
        }
    }

    /// Whether the second argument is evaluated per element, with `it`.
    var isIterating: Bool {
        switch self {
        case .filter, .map, .find, .findIndex, .count, .any, .all, .sortBy, .mapValues: true
        default: false
        }
    }
}

extension Evaluator {
    mutating func call(_ call: Expression.Call) throws(EvaluationError) -> JSON {
        let arguments = call.arguments
        guard let function = call.function else { throw EvaluationError("unknown function \(call.name)()") }
        if function == .if { return try eval(arguments[try eval(arguments[0]).isTruthy ? 1 : 2]) }
        if function.isIterating { return try iterate(function, arguments) }
        if let pattern = call.pattern {
            guard case .string(let text) = try eval(arguments[0]) else {
                throw EvaluationError("matches() needs a string, not \(try eval(arguments[0]).typeName)")
            }
            return .bool(pattern.matches(text))
        }
        var args: [JSON] = []
        args.reserveCapacity(arguments.count)
        for argument in arguments { args.append(try eval(argument)) }
        try chargeAhead(function, args)
        let result = try Self.callEager(function, args, now: contextPointer.pointee.now)
        try charge(Self.shallowCost(result), for: "\(call.name)()")
        return result
    }

    /// Charges the functions whose result can be far larger than their
    /// arguments before they build it.
    private mutating func chargeAhead(_ function: Function, _ args: [JSON]) throws(EvaluationError) {
        switch function {
        case .join:
            guard case .array(let items) = args[0] else { return }
            let separator = args[1].interpolationText.utf8.count
            for item in items { try charge(item.interpolationText.utf8.count + separator, for: "join()") }
        case .replace:
            guard case .string(let text) = args[0], case .string(let target) = args[1], !target.isEmpty else { return }
            let occurrences = text.components(separatedBy: target).count - 1
            try charge(text.utf8.count + occurrences * args[2].interpolationText.utf8.count, for: "replace()")
        case .flatten:
            guard case .array(let items) = args[0] else { return }
            for item in items { try charge((item.arrayValue?.count ?? 1) * 8, for: "flatten()") }
        default:
            break
        }
    }

    /// Binds the current element to `it` and, for a lambda, to its parameter.
    private mutating func bind(_ element: JSON, for argument: Node) {
        it = element
        if case .lambda(let parameter, _) = argument { locals[parameter] = element }
    }

    private mutating func iterate(_ function: Function, _ arguments: [Node]) throws(EvaluationError) -> JSON {
        let name = function.rawValue
        let savedLocals = locals
        defer { locals = savedLocals }
        if function == .mapValues {
            guard case .object(let object) = try eval(arguments[0]) else {
                throw EvaluationError("map_values() needs an object")
            }
            let (savedIt, savedKey) = (it, key)
            defer { (it, key) = (savedIt, savedKey) }
            var result = JSONObject()
            try charge(object.count * 8, for: "map_values()")
            for pair in object.pairs {
                key = .string(pair.key)
                bind(pair.value, for: arguments[1])
                result[pair.key] = try eval(arguments[1])
            }
            return .object(result)
        }
        let items: [JSON]
        switch try eval(arguments[0]) {
        case .array(let a): items = a
        case .object(let o): items = o.values
        case .null: items = []
        case let other: throw EvaluationError("\(name)() needs a list, not \(other.typeName)")
        }
        if function == .count, arguments.count == 1 { return .int(items.count) }
        let saved = it
        defer { it = saved }
        var results: [JSON] = []
        switch function {
        case .map:
            try charge(items.count * 8, for: "map()")
            for item in items {
                bind(item, for: arguments[1])
                results.append(try eval(arguments[1]))
            }
            return .array(results)
        case .sortBy:
            var keyed: [(JSON, JSON)] = []
            for item in items {
                bind(item, for: arguments[1])
                keyed.append((try eval(arguments[1]), item))
            }
            // Stable: equal keys keep their order.
            let ordered = keyed.enumerated().sorted { a, b in
                let order = Self.compare(a.element.0, b.element.0) ?? 0
                return order != 0 ? order < 0 : a.offset < b.offset
            }
            return .array(ordered.map(\.element.1))
        default:
            var count = 0
            for (index, item) in items.enumerated() {
                bind(item, for: arguments[1])
                let hit = try eval(arguments[1]).isTruthy
                switch function {
                case .find: if hit { return item }
                case .findIndex: if hit { return .int(index) }
                case .any: if hit { return .bool(true) }
                case .all: if !hit { return .bool(false) }
                default:
                    if hit {
                        results.append(item)
                        count += 1
                    }
                }
            }
            switch function {
            case .find, .findIndex: return .null
            case .any: return .bool(false)
            case .all: return .bool(true)
            case .count: return .int(count)
            default: return .array(results)
            }
        }
    }

    static func callEager(_ function: Function, _ a: [JSON], now: Double) throws(EvaluationError) -> JSON {
        let name = function.rawValue
        func string(_ i: Int) throws(EvaluationError) -> String {
            guard case .string(let s) = a[i] else { throw EvaluationError("\(name)() needs a string, not \(a[i].typeName)") }
            return s
        }
        func number(_ i: Int) throws(EvaluationError) -> Double {
            guard let n = a[i].numberValue else { throw EvaluationError("\(name)() needs a number, not \(a[i].typeName)") }
            return n
        }
        // Counts and offsets: whole numbers a list or a date can use.
        func count(_ i: Int) throws(EvaluationError) -> Int {
            let n = try number(i)
            guard n.isFinite, abs(n) <= 1_000_000_000 else { throw EvaluationError("\(name)(): \(a[i].interpolationText) is out of range") }
            return Int(n)
        }
        // Positions in a list: any finite number, clamped to the list by the
        // caller (an offset past the end gives an empty slice, as a query's
        // `offset=1000000001` should), never out of range.
        func position(_ i: Int) throws(EvaluationError) -> Int {
            let n = try number(i)
            guard n.isFinite else { throw EvaluationError("\(name)(): \(a[i].interpolationText) is not a finite number") }
            return Int(Swift.max(-1e15, Swift.min(1e15, n.rounded(.down))))
        }
        func instant(_ i: Int) throws(EvaluationError) -> Double {
            switch a[i] {
            case .int, .double:
                let seconds = a[i].numberValue!
                guard UTCCalendar.supported.contains(seconds) else {
                    throw EvaluationError("\(name)(): \(a[i].interpolationText) is outside the years 1 to 9999")
                }
                return seconds
            case .string(let s):
                guard let e = UTCCalendar.parse(s) else { throw EvaluationError("\(name)(): '\(s)' is not an ISO 8601 date") }
                return e
            default: throw EvaluationError("\(name)() needs a date, not \(a[i].typeName)")
            }
        }
        func list(_ i: Int) throws(EvaluationError) -> [JSON] {
            switch a[i] {
            case .array(let items): return items
            case .object(let o): return o.values
            case .null: return []
            default: throw EvaluationError("\(name)() needs a list, not \(a[i].typeName)")
            }
        }
        func whole(_ d: Double) -> JSON { d.rounded() == d && abs(d) < 9e15 ? .int(Int(d)) : .double(d) }

        switch function {
        case .uuid: return .string(Self.randomUUID())
        case .now: return .string(UTCCalendar.format(epoch: now))
        case .date: return .string(UTCCalendar.format(epoch: try instant(0)))
        case .epoch: return whole(try instant(0))
        case .dateAdd:
            guard let duration = CalendarDuration.parse(try string(1)) else {
                throw EvaluationError("date_add(): '\(a[1].interpolationText)' is not a duration like 30s, 2h, 31d or 1mo")
            }
            let moved = duration.added(to: try instant(0))
            guard UTCCalendar.supported.contains(moved) else { throw EvaluationError("date_add(): the result is outside the years 1 to 9999") }
            return .string(UTCCalendar.format(epoch: moved))
        case .monthStart:
            let offset = a.count > 1 ? try count(1) : 0
            let start = UTCCalendar.monthStart(epoch: try instant(0), addingMonths: offset)
            guard UTCCalendar.supported.contains(start) else { throw EvaluationError("month_start(): the result is outside the years 1 to 9999") }
            return .string(UTCCalendar.format(epoch: start))
        case .len:
            switch a[0] {
            case .string(let s): return .int(s.count)
            case .array(let items): return .int(items.count)
            case .object(let o): return .int(o.count)
            case .null: return .int(0)
            default: throw EvaluationError("len() needs a string, list or object, not \(a[0].typeName)")
            }
        case .byteLen:
            switch a[0] {
            case .string(let s): return .int(s.utf8.count)
            case .null: return .int(0)
            default: throw EvaluationError("byte_len() needs a string, not \(a[0].typeName)")
            }
        case .round:
            let digits = a.count > 1 ? try count(1) : 0
            guard (-15...15).contains(digits) else { throw EvaluationError("round() takes -15 to 15 digits, not \(digits)") }
            let scale = pow(10.0, Double(digits))
            let value = (try number(0) * scale).rounded(.toNearestOrAwayFromZero) / scale
            return digits <= 0 ? whole(value) : .double(value)
        case .floor: return whole(try number(0).rounded(.down))
        case .ceil: return whole(try number(0).rounded(.up))
        case .abs:
            if case .int(let i) = a[0], i != .min { return .int(abs(i)) }
            return .double(abs(try number(0)))
        case .min, .max:
            let items = a.count == 2 ? a : try list(0)
            guard var best = items.first else { return .null }
            for item in items.dropFirst() {
                guard let order = compare(item, best) else { throw EvaluationError("\(name)() cannot compare \(item.typeName) and \(best.typeName)") }
                if function == .min ? order < 0 : order > 0 { best = item }
            }
            return best
        case .sum:
            var total: JSON = .int(0)
            for item in try list(0) { total = try apply(.add, total, item) }
            return total
        case .values: return .array(try list(0))
        case .keys:
            guard case .object(let o) = a[0] else { throw EvaluationError("keys() needs an object, not \(a[0].typeName)") }
            return .array(o.keys.map { .string($0) })
        case .slice:
            let items = try list(0)
            let start = max(0, min(items.count, try position(1)))
            let end = a.count > 2 && !a[2].isNull ? max(start, min(items.count, start + max(0, try position(2)))) : items.count
            return .array(Array(items[start..<end]))
        case .merge:
            guard case .object(var base) = a[0], case .object(let extra) = a[1] else {
                throw EvaluationError("merge() needs two objects, not \(a[0].typeName) and \(a[1].typeName)")
            }
            for pair in extra.pairs { base[pair.key] = pair.value }
            return .object(base)
        case .omit:
            guard case .object(let source) = a[0] else { throw EvaluationError("omit() needs an object, not \(a[0].typeName)") }
            // One pass over the object: removing keys one by one is O(n) each.
            let dropped = Set(try list(1).map(\.interpolationText))
            return .object(JSONObject(source.pairs.filter { !dropped.contains($0.key) }.map { ($0.key, $0.value) }))
        case .pick:
            guard case .object(let source) = a[0] else { throw EvaluationError("pick() needs an object, not \(a[0].typeName)") }
            var picked = JSONObject()
            for key in try list(1) { if let k = key.stringValue, let v = source[k] { picked[k] = v } }
            return .object(picked)
        case .flatten:
            return .array(try list(0).flatMap { $0.arrayValue ?? [$0] })
        case .unique:
            // Hashing a normal form (whole doubles as integers, as `==` sees
            // them) keeps this linear; a pairwise scan was quadratic.
            var seen = Set<JSON>()
            var kept: [JSON] = []
            for item in try list(0) where seen.insert(item.equalityKey).inserted { kept.append(item) }
            return .array(kept)
        case .tally:
            var counts = JSONObject()
            for item in try list(0) { counts[item.interpolationText] = .int((counts[item.interpolationText]?.intValue ?? 0) + 1) }
            return .object(counts)
        case .first: return try list(0).first ?? .null
        case .last: return try list(0).last ?? .null
        case .reverse: return .array(try list(0).reversed())
        case .lower: return .string(try string(0).lowercased())
        case .upper: return .string(try string(0).uppercased())
        case .trim: return .string(String(try string(0).trimmingSpaces))
        case .string: return .string(a[0].interpolationText)
        case .int:
            switch a[0] {
            case .int: return a[0]
            case .double(let d): return abs(d) < 9.0e15 ? .int(Int(d.rounded(.towardZero))) : .null
            case .string(let s): return Int(s.trimmingSpaces).map { .int($0) } ?? .null
            case .bool(let b): return .int(b ? 1 : 0)
            default: return .null
            }
        case .number:
            switch a[0] {
            case .int, .double: return a[0]
            case .string(let s):
                if let i = Int(s.trimmingSpaces) { return .int(i) }
                return Double(s.trimmingSpaces).map { .double($0) } ?? .null
            default: return .null
            }
        case .matches:
            // The linear-time matcher: the pattern or the text may come from the request.
            let text = try string(0)
            let pattern = try string(1)
            do {
                return .bool(try LinearRegex(pattern).matches(text))
            } catch {
                throw EvaluationError("matches(): unusable pattern '\(pattern)': \(error.message)")
            }
        case .startsWith: return .bool(try string(0).hasPrefix(try string(1)))
        case .endsWith: return .bool(try string(0).hasSuffix(try string(1)))
        case .split: return .array(try string(0).components(separatedBy: try string(1)).map { .string($0) })
        case .join: return .string(try list(0).map(\.interpolationText).joined(separator: try string(1)))
        case .replace: return .string(try string(0).replacingOccurrences(of: try string(1), with: try string(2)))
        case .base64: return .string(Data(try string(0).utf8).base64EncodedString())
        case .tokens:
            if a[0].isNull { return .array([]) }
            return .array(TextTokens.pieces(of: try string(0)).map { .string($0) })
        default: throw EvaluationError("\(name)() is not a function of its values")
        }
    }

    /// A random (version 4) UUID in lower case, written here without
    /// Foundation's `UUID().uuidString`, which formats through `printf` and
    /// then needs `lowercased()`.
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func randomUUID() -> String {
        var bytes = (UUIDBits.next(), UUIDBits.next())
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = raw[6] & 0x0F | 0x40  // version 4
            raw[8] = raw[8] & 0x3F | 0x80  // RFC 4122 variant
            return String(unsafeUninitializedCapacity: 36) { out in
                var i = 0
                for (index, byte) in raw.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        out[i] = UInt8(ascii: "-")
                        i += 1
                    }
                    out[i] = hexDigits[Int(byte >> 4)]
                    out[i + 1] = hexDigits[Int(byte & 0xF)]
                    i += 2
                }
                return i
            }
        }
    }
}

/// Random bits for `uuid()`: SplitMix64 over an atomic counter, seeded once
/// from the system's generator. Written here because the system generator
/// makes a `getrandom` system call per value (visible in profiles of
/// templated endpoints); this is one atomic add. Values are distinct for the
/// life of the process (the mix is a bijection of the counter) and well
/// spread, though not unpredictable, which a mock's identifiers need not be.
package enum UUIDBits {
    private static let seed: UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }()
    private static let counter = Atomic<UInt64>(0)

    /// Set while sample bodies are rendered (`UUIDBits.fixed`): `uuid()` then
    /// counts from seed 0, so an export is the same every time it is written.
    @TaskLocal static var fixedSequence: FixedSequence?

    /// A counter of its own for `uuid()`, from seed 0.
    final class FixedSequence: Sendable {
        let counter = Atomic<UInt64>(0)
    }

    /// Runs `body` with `uuid()` giving the same values in the same order every time.
    package static func fixed<T>(_ body: () throws -> T) rethrows -> T {
        try $fixedSequence.withValue(FixedSequence(), operation: body)
    }

    static func next() -> UInt64 {
        let base: UInt64
        let n: UInt64
        if let fixed = fixedSequence {
            (base, n) = (0, fixed.counter.wrappingAdd(1, ordering: .relaxed).newValue)
        } else {
            (base, n) = (seed, counter.wrappingAdd(1, ordering: .relaxed).newValue)
        }
        var z = base &+ n &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
