import DoppelCore

extension ProtoCodec {
    /// How deep a sample message nests messages in messages (a recursive type stops here).
    static let sampleDepth = 4

    /// A message of `type` in the JSON mapping with every field given a
    /// value (the first member of each oneof; one item of a list, one
    /// entry of a map), for `doppel verify`'s calls: strings `example`,
    /// numbers 1, an enum's first value after its zero, a timestamp, a
    /// duration. `encode` takes it as it is.
    package func sample(_ type: String, depth: Int = 0) -> JSON {
        if let special = Self.specialSample(type) { return special }
        guard let message = schema.messages[type], depth < Self.sampleDepth else { return .object(JSONObject()) }
        var object = JSONObject()
        var oneofs: Set<Int> = []
        for field in message.fields {
            // An Any names the type it holds, and a sample has none to name: it is left out.
            if case .message("google.protobuf.Any") = field.kind { continue }
            if let oneof = field.oneof, !oneofs.insert(oneof).inserted { continue }
            if field.isMap(in: schema), case .message(let entryName) = field.kind, let entry = schema.messages[entryName],
                let key = entry.field(number: 1), let value = entry.field(number: 2)
            {
                let keyText = sample(key, depth: depth + 1).stringValue ?? (key.kind == .scalar(.bool) ? "true" : "1")
                object[field.jsonName] = .object(JSONObject([(keyText, sample(value, depth: depth + 1))]))
            } else if field.cardinality == .repeated {
                object[field.jsonName] = .array([sample(field, depth: depth + 1)])
            } else {
                object[field.jsonName] = sample(field, depth: depth + 1)
            }
        }
        return .object(object)
    }

    /// One value of a field's type.
    private func sample(_ field: ProtoField, depth: Int) -> JSON {
        switch field.kind {
        case .scalar(let scalar):
            switch scalar {
            case .string: return "example"
            case .bytes: return "ZXhhbXBsZQ=="
            case .bool: return true
            case .double, .float: return .double(1.5)
            default: return scalar.isWide ? "1" : 1
            }
        case .enumeration(let name):
            let values = schema.enums[name]?.values ?? []
            return .string((values.first { $0.number != 0 } ?? values.first)?.name ?? "0")
        case .message(let name):
            return sample(name, depth: depth)
        }
    }

    /// The well-known types' JSON, which is not an object of their fields.
    private static func specialSample(_ type: String) -> JSON? {
        switch type {
        case "google.protobuf.Timestamp": "2025-01-15T10:00:00Z"
        case "google.protobuf.Duration": "2s"
        case "google.protobuf.FieldMask": "example"
        case "google.protobuf.Struct": .object(JSONObject([("example", "value")]))
        case "google.protobuf.Value": "example"
        case "google.protobuf.ListValue": ["example"]
        case "google.protobuf.StringValue": "example"
        case "google.protobuf.BytesValue": "ZXhhbXBsZQ=="
        case "google.protobuf.BoolValue": true
        case "google.protobuf.DoubleValue", "google.protobuf.FloatValue": .double(1.5)
        case "google.protobuf.Int64Value", "google.protobuf.UInt64Value": "1"
        case "google.protobuf.Int32Value", "google.protobuf.UInt32Value": 1
        default: nil
        }
    }
}
