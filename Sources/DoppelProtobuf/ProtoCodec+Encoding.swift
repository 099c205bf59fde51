import DoppelCore
import Foundation

extension ProtoCodec {
    // MARK: JSON to binary

    /// `json`, a message of type `name` in protobuf's JSON mapping, as
    /// protobuf's binary format: fields in number order, repeated numbers
    /// packed where the field is, proto3's defaults left out. A member the
    /// message has no field for, or a value of the wrong type, is a failure
    /// naming it (by its JSON pointer).
    package func encode(_ json: JSON, as name: String) throws(Failure) -> [UInt8] {
        guard let message = schema.message(name) else { throw Failure(message: "no message \(name) in the schema") }
        var out: [UInt8] = []
        try encodeMessage(json, message, pointer: "", depth: 0, into: &out)
        return out
    }

    private func encodeMessage(_ json: JSON, _ message: ProtoMessage, pointer: String, depth: Int, into out: inout [UInt8]) throws(Failure) {
        guard depth < Self.maximumDepth else {
            throw Failure(message: "\(pointer.isEmpty ? "/" : pointer): nested more than \(Self.maximumDepth) deep")
        }
        let json = WellKnownTypes.special.contains(message.name) ? try fieldsJSON(json, message, pointer: pointer, depth: depth) : json
        guard case .object(let object) = json else {
            throw Failure(message: "\(pointer.isEmpty ? "/" : pointer): \(message.name) is written as a JSON object")
        }
        var byField: [Int: (key: String, value: JSON)] = [:]
        for (key, value) in object.pairs {
            guard let field = message.field(json: key) else {
                let known = message.fields.map(\.jsonName).joined(separator: ", ")
                throw Failure(message: "\(pointer)/\(key): \(message.name) has no field \(key) (it has \(known.isEmpty ? "none" : known))")
            }
            if byField[field.number] != nil { throw Failure(message: "\(pointer)/\(key): field \(field.name) is given twice") }
            byField[field.number] = (key, value)
        }
        var chosen: [Int: String] = [:]
        for field in message.fields.sorted(by: { $0.number < $1.number }) {
            // null leaves a field out, but for a Value, where it is the null value.
            guard let (key, value) = byField[field.number], value != .null || field.kind == .message("google.protobuf.Value") else { continue }
            let here = "\(pointer)/\(key)"
            if let oneof = field.oneof {
                if let other = chosen[oneof] {
                    throw Failure(message: "\(here): \(other) and \(key) are of one oneof (\(message.oneofs[oneof])); give one of them")
                }
                chosen[oneof] = key
            }
            try encodeField(field, value, pointer: here, depth: depth, into: &out)
        }
    }

    /// A well-known type's JSON as its fields' object.
    private func fieldsJSON(_ json: JSON, _ message: ProtoMessage, pointer: String, depth: Int) throws(Failure) -> JSON {
        let at = pointer.isEmpty ? "/" : pointer
        switch message.name {
        case "google.protobuf.Timestamp":
            guard case .string(let text) = json, let (seconds, nanos) = WellKnownTypes.parseTimestamp(text) else {
                throw Failure(message: "\(at): a Timestamp is RFC 3339 text from 0001 to 9999, such as 1972-01-01T10:00:20.021Z")
            }
            return .object(JSONObject([("seconds", .string(String(seconds))), ("nanos", .int(nanos))]))
        case "google.protobuf.Duration":
            guard case .string(let text) = json, let (seconds, nanos) = WellKnownTypes.parseDuration(text) else {
                throw Failure(message: "\(at): a Duration is seconds with an s, such as 1.5s or -0.000001s")
            }
            return .object(JSONObject([("seconds", .string(String(seconds))), ("nanos", .int(nanos))]))
        case "google.protobuf.Struct":
            guard case .object = json else { throw Failure(message: "\(at): a Struct is a JSON object") }
            return .object(JSONObject([("fields", json)]))
        case "google.protobuf.ListValue":
            guard case .array = json else { throw Failure(message: "\(at): a ListValue is a JSON array") }
            return .object(JSONObject([("values", json)]))
        case "google.protobuf.Value":
            switch json {
            case .null: return .object(JSONObject([("nullValue", .string("NULL_VALUE"))]))
            case .int, .double: return .object(JSONObject([("numberValue", json)]))
            case .string: return .object(JSONObject([("stringValue", json)]))
            case .bool: return .object(JSONObject([("boolValue", json)]))
            case .object: return .object(JSONObject([("structValue", json)]))
            case .array: return .object(JSONObject([("listValue", json)]))
            }
        case "google.protobuf.FieldMask":
            guard case .string(let text) = json else {
                throw Failure(message: "\(at): a FieldMask is one string of paths, such as user.displayName,photo")
            }
            return .object(JSONObject([("paths", .array(WellKnownTypes.maskPaths(text).map(JSON.string)))]))
        case "google.protobuf.Any":
            guard case .object(var members) = json else { throw Failure(message: "\(at): an Any is a JSON object with @type") }
            if members.count == 0 { return .object(JSONObject()) }
            guard let url = members["@type"]?.stringValue, let typeName = url.split(separator: "/").last.map(String.init),
                let inner = schema.messages[typeName]
            else { throw Failure(message: "\(at)/@type: an Any names its type (type.googleapis.com/NAME) of a message the schema has") }
            members["@type"] = nil
            let value = WellKnownTypes.special.contains(inner.name) ? members["value"] ?? .null : .object(members)
            var bytes: [UInt8] = []
            try encodeMessage(value, inner, pointer: pointer, depth: depth + 1, into: &bytes)
            return .object(JSONObject([("typeUrl", .string(url)), ("value", .string(Data(bytes).base64EncodedString()))]))
        default:
            // A wrapper: its value.
            return .object(JSONObject([("value", json)]))
        }
    }

    private func encodeField(_ field: ProtoField, _ value: JSON, pointer: String, depth: Int, into out: inout [UInt8]) throws(Failure) {
        if field.isMap(in: schema) {
            guard case .object(let entries) = value, case .message(let entryName) = field.kind, let entry = schema.messages[entryName],
                let keyField = entry.field(number: 1), let valueField = entry.field(number: 2)
            else { throw Failure(message: "\(pointer): the map \(field.name) is written as a JSON object") }
            // In the order of their keys, as protobuf's deterministic serialization writes them: the same map, the same bytes.
            for (key, item) in try sortedEntries(entries, keyField: keyField, pointer: pointer) {
                var body: [UInt8] = []
                try encodeSingle(
                    keyField, try mapKey(key, keyField, pointer: pointer), pointer: "\(pointer)/\(key)", depth: depth, into: &body, always: true)
                try encodeSingle(valueField, item, pointer: "\(pointer)/\(key)", depth: depth, into: &body, always: true)
                Self.tag(field.number, .lengthDelimited, into: &out)
                Self.varint(UInt64(body.count), into: &out)
                out += body
            }
            return
        }
        guard field.cardinality == .repeated else {
            try encodeSingle(field, value, pointer: pointer, depth: depth, into: &out, always: field.cardinality == .explicit)
            return
        }
        guard case .array(let items) = value else { throw Failure(message: "\(pointer): \(field.name) is repeated: a JSON array") }
        if field.packed {
            var body: [UInt8] = []
            for (index, item) in items.enumerated() { try writeValue(field, item, pointer: "\(pointer)/\(index)", depth: depth, into: &body) }
            guard !body.isEmpty else { return }
            Self.tag(field.number, .lengthDelimited, into: &out)
            Self.varint(UInt64(body.count), into: &out)
            out += body
        } else {
            for (index, item) in items.enumerated() {
                try encodeSingle(field, item, pointer: "\(pointer)/\(index)", depth: depth, into: &out, always: true)
            }
        }
    }

    /// A map's members by key: numbers by value, strings by their UTF-8 bytes, bools true first (as
    /// Python's runtime, upb, writes them; any order reads the same).
    private func sortedEntries(_ entries: JSONObject, keyField: ProtoField, pointer: String) throws(Failure) -> [(key: String, value: JSON)] {
        let pairs = entries.pairs.map { (key: $0.key, value: $0.value) }
        guard case .scalar(let scalar) = keyField.kind else { return pairs }
        switch scalar {
        case .string: return pairs.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
        case .bool: return pairs.sorted { $0.key == "true" && $1.key == "false" }
        case .uint32, .uint64, .fixed32, .fixed64:
            var keyed: [(UInt64, (key: String, value: JSON))] = []
            for pair in pairs { keyed.append((try Self.unsigned(.string(pair.key), pointer: "\(pointer)/\(pair.key)"), pair)) }
            return keyed.sorted { $0.0 < $1.0 }.map(\.1)
        default:
            var keyed: [(Int64, (key: String, value: JSON))] = []
            for pair in pairs {
                keyed.append((try Self.integer(.string(pair.key), in: Int64.min...Int64.max, pointer: "\(pointer)/\(pair.key)"), pair))
            }
            return keyed.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// A map key from its JSON member name, as the key field's JSON value.
    private func mapKey(_ key: String, _ field: ProtoField, pointer: String) throws(Failure) -> JSON {
        guard case .scalar(let scalar) = field.kind else { return .string(key) }
        switch scalar {
        case .string: return .string(key)
        case .bool:
            guard key == "true" || key == "false" else { throw Failure(message: "\(pointer)/\(key): a bool map key is true or false") }
            return .bool(key == "true")
        default: return .string(key)
        }
    }

    /// One value with its tag; a default of an implicit field is left out unless `always`.
    private func encodeSingle(
        _ field: ProtoField, _ value: JSON, pointer: String, depth: Int, into out: inout [UInt8], always: Bool
    ) throws(Failure) {
        var body: [UInt8] = []
        try writeValue(field, value, pointer: pointer, depth: depth, into: &body)
        if !always, case .scalar = field.kind, Self.isZero(body, field) { return }
        if !always, case .enumeration = field.kind, body == [0] { return }
        let wire: WireType
        switch field.kind {
        case .message: wire = .lengthDelimited
        case .enumeration: wire = .varint
        case .scalar(let scalar): wire = scalar.wireType
        }
        Self.tag(field.number, wire, into: &out)
        if wire == .lengthDelimited { Self.varint(UInt64(body.count), into: &out) }
        out += body
    }

    /// Whether a scalar's encoding is its default's (0, false, empty, +0.0).
    private static func isZero(_ body: [UInt8], _ field: ProtoField) -> Bool {
        guard case .scalar(let scalar) = field.kind else { return false }
        switch scalar.wireType {
        case .lengthDelimited: return body.isEmpty
        default: return body.allSatisfy { $0 == 0 }
        }
    }

    /// A value without its tag (a message's or string's without its length).
    private func writeValue(_ field: ProtoField, _ value: JSON, pointer: String, depth: Int, into out: inout [UInt8]) throws(Failure) {
        switch field.kind {
        case .message(let typeName):
            guard let type = schema.messages[typeName] else { throw Failure(message: "no message \(typeName) in the schema") }
            try encodeMessage(value, type, pointer: pointer, depth: depth + 1, into: &out)
        case .enumeration(let typeName):
            let enumeration = schema.enums[typeName]
            switch value {
            case .string(let name):
                guard let number = enumeration?.number(of: name) else {
                    let names = enumeration?.values.map(\.name).joined(separator: ", ") ?? ""
                    throw Failure(message: "\(pointer): \(name) is not a value of \(typeName) (\(names))")
                }
                Self.varint(UInt64(bitPattern: Int64(number)), into: &out)
            default:
                Self.varint(UInt64(bitPattern: Int64(try Self.integer(value, in: Int64(Int32.min)...Int64(Int32.max), pointer: pointer))), into: &out)
            }
        case .scalar(let scalar):
            try writeScalar(scalar, value, pointer: pointer, into: &out)
        }
    }

    private func writeScalar(_ scalar: ProtoScalar, _ value: JSON, pointer: String, into out: inout [UInt8]) throws(Failure) {
        switch scalar {
        case .int32: Self.varint(UInt64(bitPattern: try Self.integer(value, in: Int64(Int32.min)...Int64(Int32.max), pointer: pointer)), into: &out)
        case .int64: Self.varint(UInt64(bitPattern: try Self.integer(value, in: Int64.min...Int64.max, pointer: pointer)), into: &out)
        case .uint32: Self.varint(UInt64(try Self.integer(value, in: 0...Int64(UInt32.max), pointer: pointer)), into: &out)
        case .uint64: Self.varint(try Self.unsigned(value, pointer: pointer), into: &out)
        case .sint32:
            let number = Int32(try Self.integer(value, in: Int64(Int32.min)...Int64(Int32.max), pointer: pointer))
            Self.varint(UInt64(UInt32(bitPattern: (number << 1) ^ (number >> 31))), into: &out)
        case .sint64:
            let number = try Self.integer(value, in: Int64.min...Int64.max, pointer: pointer)
            Self.varint(UInt64(bitPattern: (number << 1) ^ (number >> 63)), into: &out)
        case .bool:
            guard case .bool(let flag) = value else { throw Failure(message: "\(pointer): a bool is true or false") }
            out.append(flag ? 1 : 0)
        case .fixed32: Self.little(UInt64(try Self.integer(value, in: 0...Int64(UInt32.max), pointer: pointer)), bytes: 4, into: &out)
        case .sfixed32:
            let number = Int32(try Self.integer(value, in: Int64(Int32.min)...Int64(Int32.max), pointer: pointer))
            Self.little(UInt64(UInt32(bitPattern: number)), bytes: 4, into: &out)
        case .fixed64: Self.little(try Self.unsigned(value, pointer: pointer), bytes: 8, into: &out)
        case .sfixed64: Self.little(UInt64(bitPattern: try Self.integer(value, in: Int64.min...Int64.max, pointer: pointer)), bytes: 8, into: &out)
        case .float:
            let number = try Self.floating(value, pointer: pointer)
            // Rounded to the nearest float (3.4028235e38, the largest, written short, is a little over it as a double).
            guard !number.isFinite || Float(number).isFinite else {
                throw Failure(message: "\(pointer): \(number) is out of a float's range")
            }
            Self.little(UInt64(Float(number).bitPattern), bytes: 4, into: &out)
        case .double: Self.little(try Self.floating(value, pointer: pointer).bitPattern, bytes: 8, into: &out)
        case .string:
            guard case .string(let text) = value else { throw Failure(message: "\(pointer): a string field takes a JSON string") }
            out += Array(text.utf8)
        case .bytes:
            guard case .string(let text) = value, let data = Self.base64(text) else {
                throw Failure(message: "\(pointer): a bytes field takes base64 text")
            }
            out += Array(data)
        }
    }

    // MARK: JSON's numbers

    /// A whole number from a JSON number or a string of one, within `range`.
    static func integer(_ value: JSON, in range: ClosedRange<Int64>, pointer: String) throws(Failure) -> Int64 {
        let number: Int64?
        switch value {
        case .int(let whole): number = Int64(whole)
        case .double(let fraction): number = fraction == fraction.rounded() ? Int64(exactly: fraction) : nil
        case .string(let text): number = Int64(text) ?? Double(text).flatMap { $0 == $0.rounded() ? Int64(exactly: $0) : nil }
        default: number = nil
        }
        guard let number, range.contains(number) else {
            throw Failure(
                message: "\(pointer): \(JSONWriter.encodeString(value)) is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    static func unsigned(_ value: JSON, pointer: String) throws(Failure) -> UInt64 {
        switch value {
        case .int(let whole) where whole >= 0: return UInt64(whole)
        case .double(let fraction) where fraction >= 0 && fraction == fraction.rounded():
            if let number = UInt64(exactly: fraction) { return number }
        case .string(let text): if let number = UInt64(text) { return number }
        default: break
        }
        throw Failure(message: "\(pointer): \(JSONWriter.encodeString(value)) is not a whole number from 0 to \(UInt64.max)")
    }

    static func floating(_ value: JSON, pointer: String) throws(Failure) -> Double {
        switch value {
        case .int(let whole): return Double(whole)
        case .double(let fraction): return fraction
        case .string("NaN"): return .nan
        case .string("Infinity"): return .infinity
        case .string("-Infinity"): return -.infinity
        case .string(let text): if let number = Double(text), number.isFinite { return number }
        default: break
        }
        throw Failure(message: "\(pointer): \(JSONWriter.encodeString(value)) is not a number")
    }

    /// Standard or URL-safe base64, with or without padding.
    static func base64(_ text: String) -> Data? {
        var normalized = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while normalized.count % 4 != 0 { normalized += "=" }
        return Data(base64Encoded: normalized)
    }

    // MARK: Wire format

    static func tag(_ number: Int, _ wire: WireType, into out: inout [UInt8]) {
        varint(UInt64(number) << 3 | UInt64(wire.rawValue), into: &out)
    }

    static func varint(_ value: UInt64, into out: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }

    static func little(_ value: UInt64, bytes: Int, into out: inout [UInt8]) {
        for index in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
    }
}
