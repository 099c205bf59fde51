import DoppelCore

/// The `FileDescriptorProto` of each `.proto` file read, in protobuf's
/// binary format: what server reflection sends, so that a client (grpcurl,
/// `grpcio-reflection`) can list the services and call them knowing no
/// `.proto`.
///
/// Written field by field with the numbers of `google/protobuf/descriptor.proto`
/// rather than through the codec: the codec would need descriptor.proto's
/// own schema (and its options' extensions) only to write these few fields.
/// What the schema does not keep is left out: options other than
/// `map_entry` and `packed`, proto2's defaults and `required`, comments.
enum FileDescriptors {
    /// The descriptor of `file`, or nil when the schema read no such file.
    static func encode(_ name: String, in schema: ProtoSchema) -> [UInt8]? {
        guard let file = schema.files[name] else { return nil }
        var out = ProtoWriter()
        out.string(1, file.name)
        if !file.package.isEmpty { out.string(2, file.package) }
        for dependency in file.dependencies { out.string(3, dependency) }
        let declared = Set(file.messages)
        for message in file.messages where !declared.contains(parent(of: message)) {
            out.message(4, self.message(message, file: file, schema: schema))
        }
        for enumeration in file.enums where !declared.contains(parent(of: enumeration)) {
            out.message(5, self.enumeration(enumeration, schema: schema))
        }
        for service in schema.services where file.services.contains(service.name) {
            var written = ProtoWriter()
            written.string(1, last(service.name))
            for method in service.methods {
                var entry = ProtoWriter()
                entry.string(1, method.name)
                entry.string(2, "." + method.input)
                entry.string(3, "." + method.output)
                if method.clientStreaming { entry.bool(5, true) }
                if method.serverStreaming { entry.bool(6, true) }
                written.message(2, entry)
            }
            out.message(6, written)
        }
        if file.syntax == "proto3" { out.string(12, "proto3") }
        return out.bytes
    }

    /// A `DescriptorProto`: its fields, the messages and enums declared in it, its oneofs.
    private static func message(_ name: String, file: ProtoFile, schema: ProtoSchema) -> ProtoWriter {
        var out = ProtoWriter()
        guard let message = schema.messages[name] else { return out }
        out.string(1, last(name))
        // proto3's `optional` scalars are each in a oneof of their own (protoc's "synthetic" oneofs), after the real ones.
        var oneofs = message.oneofs
        for field in message.fields {
            var written = ProtoWriter()
            written.string(1, field.name)
            written.int(3, field.number)
            written.int(4, field.cardinality == .repeated ? 3 : 1)
            switch field.kind {
            case .scalar(let scalar): written.int(5, scalarType(scalar))
            case .message(let type):
                written.int(5, 11)
                written.string(6, "." + type)
            case .enumeration(let type):
                written.int(5, 14)
                written.string(6, "." + type)
            }
            if let oneof = field.oneof {
                written.int(9, oneof)
            } else if file.syntax == "proto3", field.cardinality == .explicit, !isMessage(field) {
                written.int(9, oneofs.count)
                oneofs.append("_" + field.name)
                written.bool(17, true)
            }
            written.string(10, field.jsonName)
            if case .scalar(let scalar) = field.kind, field.cardinality == .repeated, scalar.packable {
                var options = ProtoWriter()
                if file.syntax == "proto3", !field.packed { options.bool(2, false) }
                if file.syntax != "proto3", field.packed { options.bool(2, true) }
                if !options.bytes.isEmpty { written.message(8, options) }
            }
            out.message(2, written)
        }
        let prefix = name + "."
        for nested in file.messages where nested.hasPrefix(prefix) && parent(of: nested) == name {
            out.message(3, self.message(nested, file: file, schema: schema))
        }
        for nested in file.enums where nested.hasPrefix(prefix) && parent(of: nested) == name {
            out.message(4, enumeration(nested, schema: schema))
        }
        if message.isMapEntry {
            var options = ProtoWriter()
            options.bool(7, true)
            out.message(7, options)
        }
        for oneof in oneofs {
            var written = ProtoWriter()
            written.string(1, oneof)
            out.message(8, written)
        }
        return out
    }

    private static func enumeration(_ name: String, schema: ProtoSchema) -> ProtoWriter {
        var out = ProtoWriter()
        out.string(1, last(name))
        for value in schema.enums[name]?.values ?? [] {
            var written = ProtoWriter()
            written.string(1, value.name)
            written.int(2, value.number)
            out.message(2, written)
        }
        return out
    }

    private static func isMessage(_ field: ProtoField) -> Bool {
        if case .message = field.kind { return true }
        return false
    }

    /// `FieldDescriptorProto.Type`'s number of a scalar.
    private static func scalarType(_ scalar: ProtoScalar) -> Int {
        switch scalar {
        case .double: 1
        case .float: 2
        case .int64: 3
        case .uint64: 4
        case .int32: 5
        case .fixed64: 6
        case .fixed32: 7
        case .bool: 8
        case .string: 9
        case .bytes: 12
        case .uint32: 13
        case .sfixed32: 15
        case .sfixed64: 16
        case .sint32: 17
        case .sint64: 18
        }
    }

    static func parent(of name: String) -> String {
        guard let dot = name.lastIndex(of: ".") else { return "" }
        return String(name[..<dot])
    }

    static func last(_ name: String) -> String {
        guard let dot = name.lastIndex(of: ".") else { return name }
        return String(name[name.index(after: dot)...])
    }
}

/// protobuf's binary format written field by field.
struct ProtoWriter {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func int(_ number: Int, _ value: Int) {
        varint(UInt64(number << 3))
        varint(UInt64(bitPattern: Int64(value)))
    }

    mutating func bool(_ number: Int, _ value: Bool) { int(number, value ? 1 : 0) }

    mutating func data(_ number: Int, _ value: [UInt8]) {
        varint(UInt64(number << 3 | 2))
        varint(UInt64(value.count))
        bytes += value
    }

    mutating func string(_ number: Int, _ value: String) { data(number, Array(value.utf8)) }

    mutating func message(_ number: Int, _ value: ProtoWriter) { data(number, value.bytes) }
}
