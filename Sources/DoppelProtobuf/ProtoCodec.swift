import DoppelCore
import Foundation

/// Converts messages between protobuf's binary format and its JSON mapping
/// (https://protobuf.dev/programming-guides/json/), driven by a
/// `ProtoSchema`: what a contract writes as JSON goes out as protobuf, and
/// what a client sends as protobuf is read as JSON.
///
/// Decoding follows the parsers' rules: unknown fields (and fields of an
/// unexpected wire type) are skipped, repeated numbers are read packed or
/// not, a singular message seen twice is merged, the last member of a oneof
/// wins. JSON is written as `json_format` writes it: JSON names, 64-bit
/// integers as strings, enums by name, bytes in base64, fields that hold
/// proto3's defaults left out.
package struct ProtoCodec: Sendable {
    package let schema: ProtoSchema

    /// The deepest messages are nested, read or written (protobuf's own parsers stop at 100).
    package static let maximumDepth = 100

    package struct Failure: Error, CustomStringConvertible, Equatable {
        package let message: String
        package var description: String { message }
    }

    package init(schema: ProtoSchema) {
        self.schema = schema
    }

    // MARK: Binary to JSON

    /// The message of type `name` in `bytes`, as JSON.
    package func decode(_ bytes: [UInt8], as name: String) throws(Failure) -> JSON {
        guard let message = schema.message(name) else { throw Failure(message: "no message \(name) in the schema") }
        return try bytes.withUnsafeBufferPointer { (buffer) throws(Failure) -> JSON in
            try decodeValue(buffer[...], message, depth: 0)
        }
    }

    /// A message as JSON: its fields' object, or a well-known type's own JSON.
    func decodeValue(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ message: ProtoMessage, depth: Int) throws(Failure) -> JSON {
        let object = try decodeMessage(bytes, message, depth: depth)
        guard WellKnownTypes.special.contains(message.name) else { return .object(object) }
        return try wellKnownJSON(object, message, depth: depth)
    }

    private func decodeMessage(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ message: ProtoMessage, depth: Int) throws(Failure) -> JSONObject {
        guard depth < Self.maximumDepth else { throw Failure(message: "messages nested more than \(Self.maximumDepth) deep") }
        var reader = WireReader(bytes)
        var values: [Int: [JSON]] = [:]
        var nested: [Int: [UInt8]] = [:]
        var oneofChoice: [Int: Int] = [:]
        while !reader.isAtEnd {
            let tag = try reader.varint()
            let number = Int(tag >> 3)
            guard number > 0, let wire = WireType(rawValue: Int(tag & 7)) else { throw Failure(message: "a field tag is malformed") }
            guard let field = message.field(number: number), let expected = expectedWireType(field) else {
                try reader.skip(wire)
                continue
            }
            if let oneof = field.oneof { oneofChoice[oneof] = number }
            if field.cardinality == .repeated, wire == .lengthDelimited, case .scalar(let scalar) = resolvedScalar(field), scalar.packable {
                var packed = WireReader(try reader.lengthDelimited())
                while !packed.isAtEnd { values[number, default: []].append(try scalarJSON(scalar, field: field, from: &packed)) }
                continue
            }
            guard wire == expected else {
                try reader.skip(wire)
                continue
            }
            switch field.kind {
            case .message(let typeName):
                let body = try reader.lengthDelimited()
                guard let type = schema.messages[typeName] else { throw Failure(message: "no message \(typeName) in the schema") }
                if field.cardinality == .repeated {
                    values[number, default: []].append(try decodeValue(body, type, depth: depth + 1))
                } else {
                    // A singular message seen again is merged into the first: parsing the bytes one after the other does that.
                    nested[number, default: []] += body
                }
            case .enumeration(let typeName):
                let number32 = Int(Int32(truncatingIfNeeded: try reader.varint()))
                values[number, default: []].append(schema.enums[typeName]?.name(of: number32).map(JSON.string) ?? .int(number32))
            case .scalar(let scalar):
                values[number, default: []].append(try scalarJSON(scalar, field: field, from: &reader))
            }
        }
        var object = JSONObject()
        for field in message.fields.sorted(by: { $0.number < $1.number }) {
            if let oneof = field.oneof, oneofChoice[oneof] != field.number { continue }
            if let body = nested[field.number], case .message(let typeName) = field.kind, let type = schema.messages[typeName] {
                object[field.jsonName] = try body.withUnsafeBufferPointer { (buffer) throws(Failure) -> JSON in
                    try decodeValue(buffer[...], type, depth: depth + 1)
                }
                continue
            }
            guard let found = values[field.number] else { continue }
            if field.isMap(in: schema) {
                object[field.jsonName] = .object(try mapObject(found, field: field))
            } else if field.cardinality == .repeated {
                object[field.jsonName] = .array(found)
            } else if let last = found.last, field.cardinality == .explicit || !isDefault(last, of: field) {
                object[field.jsonName] = last
            }
        }
        return object
    }

    /// A well-known type's JSON, from its fields' object.
    private func wellKnownJSON(_ object: JSONObject, _ message: ProtoMessage, depth: Int) throws(Failure) -> JSON {
        func wide(_ key: String) -> Int64 { object[key]?.stringValue.flatMap { Int64($0) } ?? 0 }
        func int(_ key: String) -> Int { if case .int(let value)? = object[key] { value } else { 0 } }
        switch message.name {
        case "google.protobuf.Timestamp": return .string(try WellKnownTypes.timestampText(seconds: wide("seconds"), nanos: int("nanos")))
        case "google.protobuf.Duration": return .string(try WellKnownTypes.durationText(seconds: wide("seconds"), nanos: int("nanos")))
        case "google.protobuf.Struct": return object["fields"] ?? .object(JSONObject())
        case "google.protobuf.ListValue": return object["values"] ?? .array([])
        case "google.protobuf.FieldMask":
            guard case .array(let paths)? = object["paths"] else { return .string("") }
            return .string(WellKnownTypes.maskText(paths.compactMap(\.stringValue)))
        case "google.protobuf.Value":
            if object["nullValue"] != nil { return .null }
            for key in ["numberValue", "stringValue", "boolValue", "structValue", "listValue"] {
                if let value = object[key] { return value }
            }
            return .null
        case "google.protobuf.Any":
            guard let url = object["typeUrl"]?.stringValue, !url.isEmpty else { return .object(JSONObject()) }
            let typeName = String(url.split(separator: "/").last ?? "")
            guard let inner = schema.messages[typeName] else { throw Failure(message: "an Any holds \(url), a type the schema does not have") }
            let bytes = (object["value"]?.stringValue).flatMap { Data(base64Encoded: $0) } ?? Data()
            let value = try [UInt8](bytes).withUnsafeBufferPointer { (buffer) throws(Failure) -> JSON in
                try decodeValue(buffer[...], inner, depth: depth + 1)
            }
            var result = JSONObject([("@type", .string(url))])
            if WellKnownTypes.special.contains(inner.name) {
                result["value"] = value
            } else if case .object(let members) = value {
                for (key, member) in members.pairs { result[key] = member }
            }
            return .object(result)
        default:
            // A wrapper: its value, or the value's default.
            guard let field = message.field(number: 1) else { return .null }
            return object["value"] ?? defaultJSON(field)
        }
    }

    /// A map's entries (each `{key, value}` as decoded) as one JSON object, keys as strings.
    private func mapObject(_ entries: [JSON], field: ProtoField) throws(Failure) -> JSONObject {
        guard case .message(let entryName) = field.kind, let entry = schema.messages[entryName], let valueField = entry.field(number: 2) else {
            return JSONObject()
        }
        var object = JSONObject()
        for case .object(let pair) in entries {
            let key: String
            switch pair["key"] {
            case .string(let text)?: key = text
            case .int(let number)?: key = String(number)
            case .bool(let flag)?: key = flag ? "true" : "false"
            default: key = defaultKey(entry.field(number: 1))
            }
            object[key] = pair["value"] ?? defaultJSON(valueField)
        }
        return object
    }

    private func defaultKey(_ field: ProtoField?) -> String {
        guard case .scalar(let scalar)? = field?.kind else { return "" }
        switch scalar {
        case .string: return ""
        case .bool: return "false"
        default: return "0"
        }
    }

    /// What a map value that is absent reads as.
    private func defaultJSON(_ field: ProtoField) -> JSON {
        switch field.kind {
        case .message: return .object(JSONObject())
        case .enumeration(let name): return schema.enums[name]?.values.first.map { .string($0.name) } ?? .int(0)
        case .scalar(let scalar):
            switch scalar {
            case .string, .bytes: return .string("")
            case .bool: return .bool(false)
            case .double, .float: return .double(0)
            default: return scalar.isWide ? .string("0") : .int(0)
            }
        }
    }

    private func isDefault(_ value: JSON, of field: ProtoField) -> Bool {
        switch value {
        case .int(0), .bool(false), .string(""), .string("0"): return true
        case .double(let number): return number == 0 && number.sign == .plus
        case .string(let name):
            if case .enumeration(let enumName) = field.kind { return schema.enums[enumName]?.number(of: name) == 0 }
            return false
        default: return false
        }
    }

    private func resolvedScalar(_ field: ProtoField) -> ProtoField.Kind {
        if case .enumeration = field.kind { return .scalar(.int32) }
        return field.kind
    }

    private func expectedWireType(_ field: ProtoField) -> WireType? {
        switch field.kind {
        case .message: .lengthDelimited
        case .enumeration: .varint
        case .scalar(let scalar): scalar.wireType
        }
    }

    private func scalarJSON(_ scalar: ProtoScalar, field: ProtoField, from reader: inout WireReader) throws(Failure) -> JSON {
        if case .enumeration(let name) = field.kind {
            let number = Int(Int32(truncatingIfNeeded: try reader.varint()))
            return schema.enums[name]?.name(of: number).map(JSON.string) ?? .int(number)
        }
        switch scalar {
        case .int32: return .int(Int(Int32(truncatingIfNeeded: try reader.varint())))
        case .int64: return .string(String(Int64(bitPattern: try reader.varint())))
        case .uint32: return .int(Int(UInt32(truncatingIfNeeded: try reader.varint())))
        case .uint64: return .string(String(try reader.varint()))
        case .sint32:
            let raw = UInt32(truncatingIfNeeded: try reader.varint())
            return .int(Int(Int32(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))))
        case .sint64:
            let raw = try reader.varint()
            return .string(String(Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))))
        case .bool: return .bool(try reader.varint() != 0)
        case .fixed32: return .int(Int(try reader.fixed32()))
        case .sfixed32: return .int(Int(Int32(bitPattern: try reader.fixed32())))
        case .float: return Self.floatJSON(Float(bitPattern: try reader.fixed32()))
        case .fixed64: return .string(String(try reader.fixed64()))
        case .sfixed64: return .string(String(Int64(bitPattern: try reader.fixed64())))
        case .double: return Self.doubleJSON(Double(bitPattern: try reader.fixed64()))
        case .string:
            let bytes = try reader.lengthDelimited()
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw Failure(message: "field \(field.name) is not valid UTF-8 (a string field holds text)")
            }
            return .string(text)
        case .bytes: return .string(Data(try reader.lengthDelimited()).base64EncodedString())
        }
    }

    /// A float as JSON: its shortest decimal (as `json_format` writes it), or the names of the values JSON has no number for.
    static func floatJSON(_ value: Float) -> JSON {
        guard value.isFinite else { return .string(value.isNaN ? "NaN" : value < 0 ? "-Infinity" : "Infinity") }
        return .double(Double("\(value)") ?? Double(value))
    }

    static func doubleJSON(_ value: Double) -> JSON {
        guard value.isFinite else { return .string(value.isNaN ? "NaN" : value < 0 ? "-Infinity" : "Infinity") }
        return .double(value)
    }
}

/// Reads protobuf's wire format, every read bounded by the bytes left.
struct WireReader {
    private let bytes: Slice<UnsafeBufferPointer<UInt8>>
    private var index: Int

    init(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) {
        self.bytes = bytes
        index = bytes.startIndex
    }

    var isAtEnd: Bool { index >= bytes.endIndex }

    mutating func varint() throws(ProtoCodec.Failure) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard index < bytes.endIndex, shift < 64 else { throw ProtoCodec.Failure(message: "a varint is cut short or longer than 10 bytes") }
            let byte = bytes[index]
            index += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    mutating func fixed32() throws(ProtoCodec.Failure) -> UInt32 { try little(UInt32.self) }

    mutating func fixed64() throws(ProtoCodec.Failure) -> UInt64 { try little(UInt64.self) }

    /// A little-endian value of `T`'s width.
    private mutating func little<T: FixedWidthInteger & UnsignedInteger>(_: T.Type) throws(ProtoCodec.Failure) -> T {
        let width = T.bitWidth / 8
        guard bytes.endIndex - index >= width else { throw ProtoCodec.Failure(message: "a \(T.bitWidth)-bit value is cut short") }
        var value: T = 0
        for offset in 0..<width { value |= T(bytes[index + offset]) << (8 * offset) }
        index += width
        return value
    }

    mutating func lengthDelimited() throws(ProtoCodec.Failure) -> Slice<UnsafeBufferPointer<UInt8>> {
        let length = try varint()
        guard length <= UInt64(bytes.endIndex - index) else { throw ProtoCodec.Failure(message: "a length-delimited field runs past its message") }
        defer { index += Int(length) }
        return bytes[index..<(index + Int(length))]
    }

    /// Passes over a field this reader does not read.
    mutating func skip(_ wire: WireType) throws(ProtoCodec.Failure) {
        switch wire {
        case .varint: _ = try varint()
        case .fixed64: _ = try fixed64()
        case .fixed32: _ = try fixed32()
        case .lengthDelimited: _ = try lengthDelimited()
        case .startGroup, .endGroup: throw ProtoCodec.Failure(message: "groups are not read")
        }
    }
}
