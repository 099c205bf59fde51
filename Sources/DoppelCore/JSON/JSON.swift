import OrderedCollections

/// A JSON value with object keys kept in their written order.
///
/// Integers and fractional numbers are kept apart so that a body written as
/// `5` is sent as `5` and one written as `0.0` is sent as `0.0`.
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSON])
    case object(JSONObject)
}

/// An ordered JSON object: lookups by key, iteration in insertion order.
///
/// Backed by swift-collections' `OrderedDictionary`: objects of up to 15
/// members (most request and response bodies) are searched linearly with no
/// hashing at all, iteration reads the stored pairs without lookups, and
/// larger objects (collections of records) get a hash table. Equality and
/// hashing ignore member order, as JSON's do.
public struct JSONObject: Sendable, Hashable {
    private var members: OrderedDictionary<String, JSON>

    /// An empty object.
    public init() { members = [:] }

    /// An object of `pairs`, in order; a repeated key keeps its last value.
    public init(_ pairs: [(String, JSON)]) {
        members = OrderedDictionary(minimumCapacity: pairs.count)
        for (key, value) in pairs { members[key] = value }
    }

    /// An object of `keys`, which must not repeat, and their `values`: the
    /// keys' storage is shared, not copied, and not searched.
    init(uniqueKeys keys: ContiguousArray<String>, values: ContiguousArray<JSON>) {
        members = OrderedDictionary(uncheckedUniqueKeys: keys, values: values)
    }

    /// Keys in insertion order.
    public var keys: [String] { members.keys.elements }
    /// How many members.
    public var count: Int { members.count }
    /// Whether it has no members.
    public var isEmpty: Bool { members.isEmpty }

    /// The member named `key`; setting nil removes it.
    public subscript(key: String) -> JSON? {
        get { members[key] }
        set { members[key] = newValue }
    }

    /// Moves a member's value out, leaving null in its place (the key keeps its
    /// position), so the caller holds the only reference and can change it in
    /// place; nil when there is no such member (nothing is added).
    mutating func take(_ key: String) -> JSON? {
        guard let index = members.index(forKey: key) else { return nil }
        return swap(&members.values[index], .null)
    }

    /// Reserves room for `count` members in all.
    mutating func reserveCapacity(_ count: Int) { members.reserveCapacity(count) }

    /// The key/value pairs in insertion order.
    public var pairs: OrderedDictionary<String, JSON>.Elements { members.elements }

    /// The values in insertion order (the stored array, not a copy).
    public var values: [JSON] { members.values.elements }

    /// Calls `body` with the keys and values in insertion order, read in
    /// place: a writer that walks every member borrows them rather than
    /// copying (and retaining) each one.
    func withMembers<R>(_ body: (UnsafeBufferPointer<String>, UnsafeBufferPointer<JSON>) throws -> R) rethrows -> R {
        try members.keys.elements.withUnsafeBufferPointer { keys in
            try members.values.elements.withUnsafeBufferPointer { values in try body(keys, values) }
        }
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for (key, value) in lhs.members where rhs.members[key] != value { return false }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent, like `Dictionary`'s: members combined commutatively.
        var combined = 0
        for (key, value) in members {
            var member = Hasher()
            member.combine(key)
            member.combine(value)
            combined ^= member.finalize()
        }
        hasher.combine(members.count)
        hasher.combine(combined)
    }
}

private func swap(_ slot: inout JSON, _ replacement: JSON) -> JSON {
    let old = slot
    slot = replacement
    return old
}

extension JSON {
    /// The name of the value's JSON type, as used in messages and `type` schemas.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The string, if this is one.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The object, if this is one.
    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The array, if this is one.
    public var arrayValue: [JSON]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The value as a query parameter, a form field or a header carries it:
    /// a string as it is, a number, boolean or null as JSON writes it; nil
    /// for an array or an object.
    package var parameterText: String? {
        switch self {
        case .string(let s): s
        case .array, .object: nil
        default: JSONWriter.encodeString(self)
        }
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The value as a Double when it is a number.
    public var numberValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    /// The value as an Int when it is an integer, or a whole fractional number.
    public var intValue: Int? {
        switch self {
        case .int(let i): i
        case .double(let d) where d.rounded() == d && abs(d) < 9.0e15: Int(d)
        default: nil
        }
    }

    /// Member lookup for objects; nil for anything else.
    public subscript(key: String) -> JSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// Text for interpolation into a string: strings as they are, the rest as JSON.
    public var interpolationText: String {
        switch self {
        case .string(let s): s
        case .null: "null"
        default: JSONWriter.encodeString(self)
        }
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) { self = .object(JSONObject(elements)) }
    public init(nilLiteral: ()) { self = .null }
}
