import DoppelCore

/// The messages, enums and services of a set of `.proto` files, with every
/// type reference resolved to a fully qualified name (without the leading
/// dot): what the codec (`ProtoCodec`) reads and writes messages by.
///
/// Written here because swift-protobuf has no dynamic messages and no
/// `.proto` parser (it reads what `protoc` compiled); a mock server reads
/// the user's `.proto` files as they are, with no compiler installed.
package struct ProtoSchema: Sendable {
    /// Messages by fully qualified name (`tales.v1.Story`).
    package internal(set) var messages: [String: ProtoMessage] = [:]
    /// Enums by fully qualified name.
    package internal(set) var enums: [String: ProtoEnum] = [:]
    /// Services by fully qualified name, in the order the files declare them.
    package internal(set) var services: [ProtoService] = []
    /// The files read, by name: what each declares (server reflection serves them as descriptors).
    package internal(set) var files: [String: ProtoFile] = [:]

    package init() {}

    /// The message named `name` (fully qualified, a leading dot allowed).
    package func message(_ name: String) -> ProtoMessage? {
        messages[name.hasPrefix(".") ? String(name.dropFirst()) : name]
    }
}

/// One `.proto` file: its package, syntax and imports, and the fully
/// qualified names of what it declares, nested ones included, in order.
package struct ProtoFile: Sendable {
    package let name: String
    package let package: String
    package let syntax: String
    package let dependencies: [String]
    package let messages: [String]
    package let enums: [String]
    package let services: [String]
}

/// A message type.
package struct ProtoMessage: Sendable {
    /// The fully qualified name.
    package let name: String
    /// The fields, in the order declared.
    package internal(set) var fields: [ProtoField]
    /// The names of its oneofs, by index (`ProtoField.oneof`).
    package internal(set) var oneofs: [String]
    /// Whether it is the entry of a map field (`key` = 1, `value` = 2).
    package let isMapEntry: Bool
    /// Where it is declared.
    package let location: SourceLocation

    /// The field with `number`.
    package func field(number: Int) -> ProtoField? { fields.first { $0.number == number } }

    /// The field a JSON member names: its JSON name, or its name as declared.
    package func field(json key: String) -> ProtoField? { fields.first { $0.jsonName == key } ?? fields.first { $0.name == key } }
}

/// A field of a message.
package struct ProtoField: Sendable {
    package enum Kind: Sendable, Equatable {
        case scalar(ProtoScalar)
        /// A message, by fully qualified name.
        case message(String)
        /// An enum, by fully qualified name.
        case enumeration(String)
    }

    package enum Cardinality: Sendable, Equatable {
        /// proto3's plain field: absent when it holds its default.
        case implicit
        /// `optional` (or proto2's `optional`/`required`), a message, or a oneof member: present or not.
        case explicit
        case repeated
    }

    package let name: String
    /// The name in JSON: `json_name`, else the lowerCamelCase of `name`.
    package let jsonName: String
    package let number: Int
    package internal(set) var kind: Kind
    package internal(set) var cardinality: Cardinality
    /// The oneof it belongs to (an index of `ProtoMessage.oneofs`).
    package let oneof: Int?
    /// Repeated numbers written packed (proto3's default).
    package internal(set) var packed: Bool
    /// The type as written, until resolved.
    let typeName: String
    let location: SourceLocation

    /// Whether it is a map (a repeated field of a map entry message).
    package func isMap(in schema: ProtoSchema) -> Bool {
        guard cardinality == .repeated, case .message(let name) = kind else { return false }
        return schema.messages[name]?.isMapEntry == true
    }
}

/// A scalar type of protobuf.
package enum ProtoScalar: String, Sendable, CaseIterable {
    case double, float, int32, int64, uint32, uint64, sint32, sint64, fixed32, fixed64, sfixed32, sfixed64, bool, string, bytes

    /// The wire type its values are written with.
    var wireType: WireType {
        switch self {
        case .double, .fixed64, .sfixed64: .fixed64
        case .float, .fixed32, .sfixed32: .fixed32
        case .string, .bytes: .lengthDelimited
        default: .varint
        }
    }

    /// Whether repeated values may be packed (every numeric type).
    var packable: Bool { self != .string && self != .bytes }

    /// Whether JSON writes it as a string (the 64-bit integers).
    var isWide: Bool { [.int64, .uint64, .sint64, .fixed64, .sfixed64].contains(self) }
}

/// The wire types of protobuf's binary format.
enum WireType: Int {
    case varint = 0
    case fixed64 = 1
    case lengthDelimited = 2
    case startGroup = 3
    case endGroup = 4
    case fixed32 = 5
}

/// An enum type.
package struct ProtoEnum: Sendable {
    package let name: String
    /// Values in the order declared (an alias shares a number).
    package let values: [(name: String, number: Int)]

    package func name(of number: Int) -> String? { values.first { $0.number == number }?.name }
    package func number(of name: String) -> Int? { values.first { $0.name == name }?.number }
}

/// A service and its methods.
package struct ProtoService: Sendable {
    /// The fully qualified name (`tales.v1.Tales`): the path's first part.
    package let name: String
    package internal(set) var methods: [ProtoMethod]
}

/// A method of a service: `/SERVICE/METHOD` on the wire.
package struct ProtoMethod: Sendable {
    package let name: String
    /// Request and response messages, fully qualified.
    package internal(set) var input: String
    package internal(set) var output: String
    package let clientStreaming: Bool
    package let serverStreaming: Bool
    let location: SourceLocation
}
