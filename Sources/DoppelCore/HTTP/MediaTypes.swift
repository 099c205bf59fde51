/// Media types by file extension, and JSON detection.
package enum MediaTypes {
    package static func forExtension(_ ext: String) -> String {
        switch ext.lowercased() {
        case "json": "application/json"
        case "txt": "text/plain; charset=utf-8"
        case "html", "htm": "text/html; charset=utf-8"
        case "xml": "application/xml"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "gif": "image/gif"
        case "webp": "image/webp"
        case "svg": "image/svg+xml"
        case "pdf": "application/pdf"
        case "mp3": "audio/mpeg"
        case "csv": "text/csv; charset=utf-8"
        default: "application/octet-stream"
        }
    }

    /// `application/json`, `application/problem+json` and other `+json` types.
    /// `application/json` or any `+json` type, parameters and case aside.
    /// Compared byte by byte: it runs for every request with a body, and
    /// Foundation's trimming bridges to `NSString`.
    package static func isJSON(_ type: String) -> Bool {
        var type = type
        return type.withUTF8 { bytes in
            let range = essenceRange(bytes)
            func endsWith(_ suffix: StaticString) -> Bool {
                let count = suffix.utf8CodeUnitCount
                guard range.count >= count else { return false }
                let tail = suffix.utf8Start
                for offset in 0..<count {
                    let byte = bytes[range.upperBound - count + offset]
                    if (byte >= 65 && byte <= 90 ? byte + 32 : byte) != tail[offset] { return false }
                }
                return true
            }
            return endsWith("+json") || (range.count == 16 && endsWith("application/json"))
        }
    }

    /// A media type whose content is text a person reads: `text/*`, and XML,
    /// YAML and form types (JSON aside).
    package static func isText(_ type: String) -> Bool {
        let essence = essence(type)
        return essence.hasPrefix("text/") || essence.hasSuffix("+xml") || essence.hasSuffix("/xml") || essence.hasSuffix("yaml")
            || essence == "application/x-www-form-urlencoded"
    }

    /// A Content-Type's essence: the type and subtype before any parameter,
    /// without surrounding whitespace, in lower case.
    package static func essence(_ type: String) -> String {
        var type = type
        let essence = type.withUTF8 { bytes in String(decoding: UnsafeBufferPointer(rebasing: bytes[essenceRange(bytes)]), as: UTF8.self) }
        return essence.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) ? essence.lowercased() : essence
    }

    /// Where a media type's essence lies in its bytes: before the first `;`, spaces and tabs around it left out.
    private static func essenceRange(_ bytes: UnsafeBufferPointer<UInt8>) -> Range<Int> {
        var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
        var start = 0
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return start..<end
    }
}
