extension StringProtocol {
    /// Whether the text contains `needle`, compared byte by byte in UTF-8.
    ///
    /// `contains(_:)` with a string argument resolves to Foundation's, which
    /// bridges to `NSString` on Linux; loading a large contract asks this of
    /// every scalar (is it a template?), where that bridging was visible in
    /// profiles. Both texts are read as contiguous bytes where they are
    /// (native strings always are), not index by index through their views.
    package func includes(_ needle: String) -> Bool {
        let found = utf8.withContiguousStorageIfAvailable { text in
            needle.utf8.withContiguousStorageIfAvailable { wanted in Self.search(text, for: wanted) }
        }
        if let found = found ?? nil { return found }
        return Self.search(Array(utf8), for: Array(needle.utf8))
    }

    private static func search(_ text: UnsafeBufferPointer<UInt8>, for wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = wanted.first else { return true }
        guard wanted.count <= text.count else { return false }
        var start = 0
        let last = text.count - wanted.count
        while start <= last {
            if text[start] == first {
                var offset = 1
                while offset < wanted.count, text[start + offset] == wanted[offset] { offset += 1 }
                if offset == wanted.count { return true }
            }
            start += 1
        }
        return false
    }

    private static func search(_ text: [UInt8], for wanted: [UInt8]) -> Bool {
        text.withUnsafeBufferPointer { text in wanted.withUnsafeBufferPointer { wanted in search(text, for: wanted) } }
    }
}
