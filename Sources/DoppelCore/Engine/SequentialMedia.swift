/// OpenAPI 3.2's sequential media types: a body that is a sequence of
/// items, each written and read on its own (`itemSchema`). Written item by
/// item as a stream is sent, and read back item by item so that each is
/// checked against the item schema (a request body, `doppel verify`).
///
/// Written here: each framing is a few lines over Doppel's JSON reader and
/// writer, and no maintained Swift package reads all four.
package enum SequentialMedia: Sendable, Equatable {
    /// `text/event-stream`: each item an event `{data, event, id, retry}` (WHATWG HTML §9.2).
    case events
    /// `application/jsonl`, `application/x-ndjson` and other JSON Lines types: one JSON text per line.
    case jsonLines
    /// `application/json-seq` and `+json-seq` types (RFC 7464): each JSON text after a record separator.
    case jsonSequence
    /// `multipart/mixed` (RFC 2046): each item a part, JSON or text.
    case multipart(boundary: String)

    /// The boundary Doppel writes when a `multipart/mixed` type has none.
    package static let boundary = "doppel-item-boundary-5f3c1a"

    /// The framing of a media type, or nil when it is not sequential.
    package init?(_ contentType: String) {
        let essence = MediaTypes.essence(contentType)
        switch essence {
        case "text/event-stream": self = .events
        case "application/jsonl", "application/jsonlines", "application/x-jsonlines", "application/x-ndjson", "application/ndjson":
            self = .jsonLines
        case "application/json-seq": self = .jsonSequence
        case "multipart/mixed": self = .multipart(boundary: FormBody.boundary(of: contentType) ?? Self.boundary)
        default:
            if essence.hasSuffix("+json-seq") { self = .jsonSequence } else if essence.hasSuffix("+jsonl") { self = .jsonLines } else { return nil }
        }
    }

    /// `multipart/mixed` with the boundary Doppel writes, when the type gives none.
    package static func withBoundary(_ contentType: String) -> String {
        guard MediaTypes.essence(contentType) == "multipart/mixed", FormBody.boundary(of: contentType) == nil else { return contentType }
        return contentType + "; boundary=" + boundary
    }

    /// One item as bytes on the wire. `last`: a multipart body's closing
    /// delimiter follows it. Nil when the item cannot be written (a JSON
    /// text over `limit` bytes).
    package func write(_ item: JSON, last: Bool, limit: Int) -> [UInt8]? {
        switch self {
        case .events:
            // An event object as its fields; anything else is the data.
            var fields: JSONObject = item.objectValue ?? JSONObject()
            if item.objectValue == nil { fields["data"] = item }
            var text = ""
            if let name = fields["event"], name != .null { text += "event: \(Self.line(name.interpolationText))\n" }
            if let id = fields["id"], id != .null { text += "id: \(Self.line(id.interpolationText))\n" }
            if let retry = fields["retry"]?.intValue { text += "retry: \(retry)\n" }
            let data: String
            switch fields["data"] ?? .null {
            case .string(let string): data = string
            case .null: data = ""
            case let other:
                guard let encoded = JSONWriter.encode(other, limit: limit) else { return nil }
                data = String(decoding: encoded, as: UTF8.self)
            }
            for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
            return Array((text + "\n").utf8)
        case .jsonLines:
            guard let encoded = JSONWriter.encode(item, limit: limit) else { return nil }
            return encoded + [10]
        case .jsonSequence:
            guard let encoded = JSONWriter.encode(item, limit: limit) else { return nil }
            return [0x1E] + encoded + [10]
        case .multipart(let boundary):
            let content: [UInt8]
            let type: String
            if case .string(let text) = item {
                content = Array(text.utf8)
                type = "text/plain; charset=utf-8"
            } else {
                guard let encoded = JSONWriter.encode(item, limit: limit) else { return nil }
                content = encoded
                type = "application/json"
            }
            return Array("--\(boundary)\r\nContent-Type: \(type)\r\n\r\n".utf8) + content + Array("\r\n\(last ? "--\(boundary)--\r\n" : "")".utf8)
        }
    }

    /// A field value on one line: line breaks would end the field.
    private static func line(_ text: String) -> String {
        text.contains(where: { $0 == "\n" || $0 == "\r" }) ? String(text.map { $0 == "\n" || $0 == "\r" ? " " : $0 }) : text
    }

    /// Why a body could not be read item by item.
    package struct Unreadable: Error, Sendable, Equatable {
        package let reason: String

        package init(reason: String) { self.reason = reason }
    }

    /// A body's items, in order: events as objects (`data` as the text it
    /// carries, `retry` as an integer), JSON items parsed, multipart parts
    /// parsed when JSON (by their type) and text otherwise. At most
    /// `maximumItems` are read; an item that is not what its framing says
    /// is an error naming it.
    package func read(_ body: [UInt8], maximumItems: Int = 10_000) throws(Unreadable) -> [JSON] {
        var items: [JSON] = []
        func add(_ item: JSON) throws(Unreadable) {
            guard items.count < maximumItems else { throw Unreadable(reason: "more than \(maximumItems) items") }
            items.append(item)
        }
        func parse(_ bytes: ArraySlice<UInt8>, _ number: Int) throws(Unreadable) -> JSON {
            do { return try JSONReader.parse(Array(bytes)) } catch {
                throw Unreadable(reason: "item \(number) is not JSON: \(error.description)")
            }
        }
        switch self {
        case .jsonLines:
            for line in body.split(separator: 10, omittingEmptySubsequences: false) {
                let trimmed = line.last == 13 ? line.dropLast() : line
                if trimmed.allSatisfy({ $0 == 32 || $0 == 9 }) { continue }
                try add(try parse(trimmed, items.count))
            }
        case .jsonSequence:
            // RFC 7464 §2.4: a text that does not parse is an error here (a client may skip it; a contract check may not).
            if let first = body.first(where: { ![32, 9, 10, 13].contains($0) }), first != 0x1E {
                throw Unreadable(reason: "a JSON text sequence must start each item with a record separator (0x1E)")
            }
            for record in body.split(separator: 0x1E, omittingEmptySubsequences: true) {
                if record.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 10 || $0 == 13 }) { continue }
                try add(try parse(record, items.count))
            }
        case .multipart(let boundary):
            let parts: [FormBody.Part]
            do { parts = try FormBody.multipartParts(body, boundary: boundary, named: false) } catch {
                throw Unreadable(reason: error.reason)
            }
            for part in parts {
                if part.contentType.map(MediaTypes.isJSON) ?? false {
                    try add(try parse(part.content[...], items.count))
                } else {
                    try add(.string(String(decoding: part.content, as: UTF8.self)))
                }
            }
        case .events:
            // WHATWG HTML §9.2.6: fields up to an empty line make an event; comments (`:`) are skipped.
            let text = String(decoding: body, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            var event = JSONObject()
            var data: [Substring] = []
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.isEmpty {
                    if !data.isEmpty {
                        event["data"] = .string(data.joined(separator: "\n"))
                        try add(.object(event))
                    }
                    event = JSONObject()
                    data = []
                    continue
                }
                if line.hasPrefix(":") { continue }
                let colon = line.firstIndex(of: ":")
                let name = String(line[..<(colon ?? line.endIndex)])
                var value = colon.map { line[line.index(after: $0)...] } ?? ""
                if value.hasPrefix(" ") { value = value.dropFirst() }
                switch name {
                case "data": data.append(value)
                case "event": event["event"] = .string(String(value))
                case "id": event["id"] = .string(String(value))
                case "retry": if let retry = Int(value), retry >= 0 { event["retry"] = .int(retry) }
                default: continue
                }
            }
        }
        return items
    }
}
