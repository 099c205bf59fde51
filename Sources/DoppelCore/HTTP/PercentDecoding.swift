/// Decodes `%XX` escapes in URL components.
package enum PercentDecoding {
    /// - Parameter keepingEncodedSlashes: leave `%2F` as it is, for path
    ///   parameters: a parameter matches one segment, and decoding `%2F` would
    ///   hand the contract a value with a `/` that no single segment can hold
    ///   (a record created as `a%2Fb` could never be fetched at `/a/b`).
    package static func decode(_ text: Substring, plusAsSpace: Bool = false, keepingEncodedSlashes: Bool = false) -> String {
        // Byte checks: Foundation's substring search is slow on this hot path.
        guard text.utf8.contains(UInt8(ascii: "%")) || (plusAsSpace && text.utf8.contains(UInt8(ascii: "+"))) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = Array(text.utf8)[...]
        while let b = iterator.popFirst() {
            if b == UInt8(ascii: "%"), iterator.count >= 2,
                let h = hexValue(iterator[iterator.startIndex]), let l = hexValue(iterator[iterator.startIndex + 1]),
                !(keepingEncodedSlashes && h << 4 | l == UInt8(ascii: "/"))
            {
                bytes.append(h << 4 | l)
                iterator = iterator.dropFirst(2)
            } else if plusAsSpace, b == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
