import DoppelCore

/// What changed between two versions of a gRPC API's `.proto` files, each
/// change breaking or compatible for a client built against the old one,
/// on the wire and in the JSON mapping (the rules of Buf's `WIRE_JSON`
/// category, the strictest that still lets a field be added): a removed
/// service, method, message, field or enum value, a renumbered or renamed
/// field, a changed type, cardinality, oneof or streaming is breaking;
/// what is added is compatible.
package enum ProtoDiff {
    package struct Change: Sendable, Equatable {
        /// `method-removed`, `field-renumbered`, ...
        package let kind: String
        package let breaking: Bool
        /// The method (`/tales.v1.Tales/Generate`) or type (`tales.v1.Story`) it is of.
        package let subject: String
        /// Where in it: `field child_id (2)`, `value HAPPY`, or empty.
        package let place: String
        package let detail: String
    }

    /// Every change from `old` to `new`, breaking ones first.
    package static func changes(from old: ProtoSchema, to new: ProtoSchema) -> [Change] {
        var changes: [Change] = []
        func add(_ kind: String, _ breaking: Bool, _ subject: String, _ place: String, _ detail: String) {
            changes.append(Change(kind: kind, breaking: breaking, subject: subject, place: place, detail: detail))
        }
        let newServices = Dictionary(new.services.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for service in old.services {
            guard let now = newServices[service.name] else {
                add("service-removed", true, service.name, "", "service \(service.name) was removed")
                continue
            }
            for method in service.methods {
                let path = "/\(service.name)/\(method.name)"
                guard let after = now.methods.first(where: { $0.name == method.name }) else {
                    add("method-removed", true, path, "", "method \(method.name) was removed")
                    continue
                }
                for (what, before, then) in [("request", method.input, after.input), ("response", method.output, after.output)] where before != then {
                    add("method-type-changed", true, path, "", "its \(what) was \(before), now \(then)")
                }
                for (what, before, then) in [
                    ("requests", method.clientStreaming, after.clientStreaming), ("responses", method.serverStreaming, after.serverStreaming),
                ]
                where before != then {
                    add(
                        "method-streaming-changed", true, path, "",
                        "its \(what) were \(before ? "a stream" : "one message"), now \(then ? "a stream" : "one message")")
                }
            }
            for method in now.methods where !service.methods.contains(where: { $0.name == method.name }) {
                add("method-added", false, "/\(service.name)/\(method.name)", "", "method \(method.name) was added")
            }
        }
        for service in new.services where !old.services.contains(where: { $0.name == service.name }) {
            add("service-added", false, service.name, "", "service \(service.name) was added")
        }
        for name in old.messages.keys.sorted() {
            guard let before = old.messages[name], !before.isMapEntry else { continue }
            guard let after = new.messages[name] else {
                add("message-removed", true, name, "", "message \(name) was removed")
                continue
            }
            compare(before, after, old: old, new: new, add: add)
        }
        for name in new.messages.keys.sorted() where old.messages[name] == nil && new.messages[name]?.isMapEntry == false {
            add("message-added", false, name, "", "message \(name) was added")
        }
        for name in old.enums.keys.sorted() {
            guard let before = old.enums[name] else { continue }
            guard let after = new.enums[name] else {
                add("enum-removed", true, name, "", "enum \(name) was removed")
                continue
            }
            for value in before.values {
                if let number = after.number(of: value.name) {
                    if number != value.number {
                        add("enum-value-renumbered", true, name, "value \(value.name)", "was \(value.number), now \(number)")
                    }
                } else {
                    add("enum-value-removed", true, name, "value \(value.name)", "was removed (\(value.number))")
                }
            }
            for value in after.values where before.number(of: value.name) == nil {
                add("enum-value-added", false, name, "value \(value.name)", "was added (\(value.number))")
            }
        }
        return changes.filter(\.breaking) + changes.filter { !$0.breaking }
    }

    private static func compare(
        _ before: ProtoMessage, _ after: ProtoMessage, old: ProtoSchema, new: ProtoSchema,
        add: (String, Bool, String, String, String) -> Void
    ) {
        let name = before.name
        for field in before.fields {
            let place = "field \(field.name) (\(field.number))"
            guard let now = after.field(number: field.number) else {
                if let moved = after.fields.first(where: { $0.name == field.name }) {
                    add("field-renumbered", true, name, place, "is now number \(moved.number): old clients' bytes mean something else")
                } else {
                    add("field-removed", true, name, place, "was removed")
                }
                continue
            }
            if now.name != field.name {
                add("field-renamed", true, name, place, "is now named \(now.name) (\(now.jsonName) in JSON)")
            } else if now.jsonName != field.jsonName {
                add("field-renamed", true, name, place, "is now \(now.jsonName) in JSON")
            }
            let (wasType, isType) = (describe(field, in: old), describe(now, in: new))
            if wasType != isType { add("field-type-changed", true, name, place, "was \(wasType), now \(isType)") }
            let wasOneof = field.oneof.map { before.oneofs[$0] }
            let isOneof = now.oneof.map { after.oneofs[$0] }
            if wasOneof != isOneof {
                add(
                    "field-oneof-changed", true, name, place,
                    "was \(wasOneof.map { "in oneof \($0)" } ?? "in no oneof"), now \(isOneof.map { "in oneof \($0)" } ?? "in none")")
            }
        }
        for field in after.fields where before.field(number: field.number) == nil && !before.fields.contains(where: { $0.name == field.name }) {
            add("field-added", false, name, "field \(field.name) (\(field.number))", "was added")
        }
    }

    /// A field's type as written: `repeated int32`, `map<string, int32>`, `tales.v1.Story`.
    private static func describe(_ field: ProtoField, in schema: ProtoSchema) -> String {
        if field.isMap(in: schema), case .message(let entryName) = field.kind, let entry = schema.messages[entryName],
            let key = entry.field(number: 1), let value = entry.field(number: 2)
        {
            return "map<\(describe(key, in: schema)), \(describe(value, in: schema))>"
        }
        let type: String
        switch field.kind {
        case .scalar(let scalar): type = scalar.rawValue
        case .message(let message): type = message
        case .enumeration(let enumeration): type = enumeration
        }
        switch field.cardinality {
        case .repeated: return "repeated " + type
        // proto3's `optional` (a oneof's member has presence too, and its oneof is compared on its own).
        case .explicit where field.oneof == nil && { if case .scalar = field.kind { true } else { false } }(): return "optional " + type
        default: return type
        }
    }
}
