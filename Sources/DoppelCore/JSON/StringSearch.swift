extension StringProtocol {
    /// Whether the text contains `needle`, compared byte by byte in UTF-8.
    ///
    /// `contains(_:)` with a string argument resolves to Foundation's, which
    /// bridges to `NSString` on Linux; loading a large contract asks this of
    /// every scalar (is it a template?), where that bridging was visible in
    /// profiles.
    public func includes(_ needle: String) -> Bool {
        var needle = needle
        return needle.withUTF8 { wanted in
            guard let first = wanted.first else { return true }
            let bytes = self.utf8
            var index = bytes.startIndex
            while let found = bytes[index...].firstIndex(of: first) {
                var candidate = found, matched = true
                for byte in wanted {
                    guard candidate != bytes.endIndex, bytes[candidate] == byte else { matched = false; break }
                    candidate = bytes.index(after: candidate)
                }
                if matched { return true }
                index = bytes.index(after: found)
            }
            return false
        }
    }
}
