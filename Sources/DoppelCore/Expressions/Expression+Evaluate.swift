import Foundation

extension Expression {
    /// Evaluates the expression. A path that leads nowhere (`body.missing.x`)
    /// is `null`; a type error (`"a" - 1`) throws.
    package func evaluate(in context: EvaluationContext) throws(EvaluationError) -> JSON {
        if case .literal(let value) = root { return value }
        // The evaluator reads the context in place, for this call only: a
        // stored copy would retain and release each of its arrays on every
        // evaluation, and a request makes dozens.
        return try withUnsafePointer(to: context) { (context: UnsafePointer<EvaluationContext>) throws(EvaluationError) -> JSON in
            var evaluator = Evaluator(context: context)
            return try evaluator.eval(root)
        }
    }

    /// Evaluates the expression as a condition, by its truthiness.
    package func test(in context: EvaluationContext) throws(EvaluationError) -> Bool {
        try evaluate(in: context).isTruthy
    }
}

extension JSON {
    /// `null`, `false`, `0`, `""`, `[]` and `{}` are false; everything else is true.
    package var isTruthy: Bool {
        switch self {
        case .null: false
        case .bool(let b): b
        case .int(let i): i != 0
        case .double(let d): d != 0
        case .string(let s): !s.isEmpty
        case .array(let a): !a.isEmpty
        case .object(let o): !o.isEmpty
        }
    }

    /// Equality that treats `1` and `1.0` as the same number.
    package func looselyEquals(_ other: JSON) -> Bool {
        switch (self, other) {
        case (.int(let a), .double(let b)): return Double(a) == b
        case (.double(let a), .int(let b)): return a == Double(b)
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.looselyEquals($1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.pairs.allSatisfy { pair in b[pair.key].map { pair.value.looselyEquals($0) } ?? false }
        default: return self == other
        }
    }

    /// A value equal (`==`) to another exactly when `looselyEquals` holds:
    /// whole doubles as integers, object members in key order.
    var equalityKey: JSON {
        switch self {
        case .double(let d) where d.rounded() == d && abs(d) < 9e15: return .int(Int(d))
        case .array(let items): return .array(items.map(\.equalityKey))
        case .object(let object):
            return .object(JSONObject(object.pairs.sorted { $0.key < $1.key }.map { ($0.key, $0.value.equalityKey) }))
        default: return self
        }
    }
}

struct Evaluator {
    typealias Node = Expression.Node
    /// The context, valid for the evaluation only (see `Expression.evaluate(in:)`).
    let contextPointer: UnsafePointer<EvaluationContext>
    /// The element bound by `filter`, `map` and friends.
    var it: JSON?
    /// The key bound by `map_values`.
    var key: JSON?
    /// Names bound by lambdas (`t => ...`) around the current element.
    var locals: [String: JSON] = [:]
    /// What this evaluation has built so far, against `Expression.maximumBuild`.
    var built = 0

    init(context: UnsafePointer<EvaluationContext>) { contextPointer = context }

    /// A root's value: the one set, else the one derived from the clock or
    /// the request (`EvaluationContext.request`), else null. Read through the
    /// pointer field by field: a method of the context would copy it whole.
    private func root(_ slot: Roots.Slot) -> JSON {
        if let value = contextPointer.pointee.roots[slot] { return value }
        switch slot {
        case .clock: return Roots.clock(at: contextPointer.pointee.now)
        case .request, .headers, .client, .query: return contextPointer.pointee.request?.root(slot) ?? .null
        default: return .null
        }
    }

    /// Counts `cost` against the budget, before the value is built.
    mutating func charge(_ cost: Int, for what: @autoclosure () -> String) throws(EvaluationError) {
        built += cost
        if built > Expression.maximumBuild { throw .budget(what()) }
    }

    /// The cost of a new value at its top level (its children were charged when they were built).
    static func shallowCost(_ value: JSON) -> Int {
        switch value {
        case .string(let s): s.utf8.count
        case .array(let items): items.count * 8
        case .object(let object): object.count * 8
        default: 0
        }
    }

    mutating func eval(_ node: Node) throws(EvaluationError) -> JSON {
        switch node {
        case .literal(let value):
            return value
        case .name(let name, let slot, _):
            if !locals.isEmpty, let local = locals[name] { return local }
            if let slot { return root(slot) }
            if name == "it", let it { return it }
            if name == "key", let key { return key }
            return contextPointer.pointee.roots[bound: name] ?? .null
        case .member(let base, let name, _):
            // `clock.now` formats the instant alone, not the whole clock.
            if case .name(let root, .clock?, _) = base, contextPointer.pointee.roots[.clock] == nil, locals.isEmpty || locals[root] == nil {
                return Roots.clock(member: name, at: contextPointer.pointee.now)
            }
            return try eval(base)[name] ?? .null
        case .index(let base, let indexNode):
            let container = try eval(base)
            let index = try eval(indexNode)
            switch (container, index) {
            case (.array(let items), _):
                guard let i = index.intValue else { return .null }
                let position = i < 0 ? items.count + i : i
                return items.indices.contains(position) ? items[position] : .null
            case (.object(let object), .string(let key)):
                return object[key] ?? .null
            case (.object(let object), _):
                return object[index.interpolationText] ?? .null
            case (.string(let s), _):
                guard let i = index.intValue else { return .null }
                let chars = Array(s)
                let position = i < 0 ? chars.count + i : i
                return chars.indices.contains(position) ? .string(String(chars[position])) : .null
            default:
                return .null
            }
        case .not(let operand):
            return .bool(!(try eval(operand).isTruthy))
        case .negate(let operand):
            switch try eval(operand) {
            case .int(let i): return i == .min ? .double(-Double(i)) : .int(-i)
            case .double(let d): return .double(-d)
            case let other: throw EvaluationError("cannot negate \(other.typeName)")
            }
        case .and(let left, let right):
            return .bool(try eval(left).isTruthy ? try eval(right).isTruthy : false)
        case .or(let left, let right):
            return .bool(try eval(left).isTruthy ? true : try eval(right).isTruthy)
        case .coalesce(let left, let right):
            let value = try eval(left)
            return value.isNull ? try eval(right) : value
        case .binary(let op, let left, let right):
            let (a, b) = (try eval(left), try eval(right))
            if op == .add {
                switch (a, b) {
                case (.string, _), (_, .string): try charge(a.interpolationText.utf8.count + b.interpolationText.utf8.count, for: "'+'")
                case (.array(let x), .array(let y)): try charge((x.count + y.count) * 8, for: "'+'")
                default: break
                }
            }
            return try Self.apply(op, a, b)
        case .array(let items):
            try charge(items.count * 8, for: "a list")
            var values: [JSON] = []
            values.reserveCapacity(items.count)
            for item in items { values.append(try eval(item)) }
            return .array(values)
        case .object(let pairs):
            try charge(pairs.count * 8, for: "an object")
            var object = JSONObject()
            for (key, valueNode) in pairs { object[key] = try eval(valueNode) }
            return .object(object)
        case .call(let call):
            return try self.call(call)
        case .lambda(_, let body):
            // The list functions bind the parameter; elsewhere a lambda is its body.
            return try eval(body)
        }
    }

    static func apply(_ op: Expression.BinaryOperator, _ a: JSON, _ b: JSON) throws(EvaluationError) -> JSON {
        switch op {
        case .equal: return .bool(a.looselyEquals(b))
        case .notEqual: return .bool(!a.looselyEquals(b))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard let order = compare(a, b) else { return .bool(false) }
            switch op {
            case .less: return .bool(order < 0)
            case .lessOrEqual: return .bool(order <= 0)
            case .greater: return .bool(order > 0)
            default: return .bool(order >= 0)
            }
        case .contains: return .bool(contains(b, a))
        case .notContains: return .bool(!contains(b, a))
        case .add:
            switch (a, b) {
            case (.int(let x), .int(let y)):
                let (sum, overflow) = x.addingReportingOverflow(y)
                return overflow ? .double(Double(x) + Double(y)) : .int(sum)
            case (.string, _), (_, .string): return .string(a.interpolationText + b.interpolationText)
            case (.array(let x), .array(let y)): return .array(x + y)
            default:
                guard let x = a.numberValue, let y = b.numberValue else {
                    throw EvaluationError("cannot add \(a.typeName) and \(b.typeName)")
                }
                return .double(x + y)
            }
        case .subtract, .multiply, .divide, .remainder:
            if case .int(let x) = a, case .int(let y) = b {
                switch op {
                case .subtract:
                    let (r, o) = x.subtractingReportingOverflow(y)
                    if !o { return .int(r) }
                case .multiply:
                    let (r, o) = x.multipliedReportingOverflow(by: y)
                    if !o { return .int(r) }
                case .divide:
                    guard y != 0 else { throw EvaluationError("division by zero") }
                    let (quotient, overflow) = x.dividedReportingOverflow(by: y)
                    if !overflow, x % y == 0 { return .int(quotient) }
                default:
                    guard y != 0 else { throw EvaluationError("division by zero") }
                    let (remainder, overflow) = x.remainderReportingOverflow(dividingBy: y)
                    if !overflow { return .int(remainder) }
                }
            }
            guard let x = a.numberValue, let y = b.numberValue else {
                throw EvaluationError("'\(op.rawValue)' needs numbers, not \(a.typeName) and \(b.typeName)")
            }
            switch op {
            case .subtract: return .double(x - y)
            case .multiply: return .double(x * y)
            case .divide:
                guard y != 0 else { throw EvaluationError("division by zero") }
                return .double(x / y)
            default:
                guard y != 0 else { throw EvaluationError("division by zero") }
                return .double(x.truncatingRemainder(dividingBy: y))
            }
        }
    }

    /// Orders two numbers or two strings; nil when they cannot be ordered.
    static func compare(_ a: JSON, _ b: JSON) -> Int? {
        if let x = a.numberValue, let y = b.numberValue { return x < y ? -1 : x > y ? 1 : 0 }
        if case .string(let x) = a, case .string(let y) = b { return x < y ? -1 : x > y ? 1 : 0 }
        return nil
    }

    /// `needle in haystack`: an element of a list, a key of an object, or a substring.
    static func contains(_ haystack: JSON, _ needle: JSON) -> Bool {
        switch haystack {
        case .array(let items): return items.contains { $0.looselyEquals(needle) }
        case .object(let object): return object[needle.interpolationText] != nil
        case .string(let s):
            guard case .string(let n) = needle else { return false }
            return s.contains(n)
        default: return false
        }
    }
}
