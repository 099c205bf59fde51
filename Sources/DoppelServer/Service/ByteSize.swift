/// Parses sizes like `1MiB`, `512KiB`, `64kb` or `1048576` into bytes.
package enum ByteSize {
    /// The largest size accepted (1 TiB); larger or non-finite ones are nil, never a crash.
    package static let maximum = 1 << 40

    package static func parse(_ text: String) -> Int? {
        let lower = text.lowercased().filter { !$0.isWhitespace }
        let units: [(String, Int)] = [
            ("kib", 1024), ("mib", 1 << 20), ("gib", 1 << 30), ("kb", 1000), ("mb", 1_000_000), ("gb", 1_000_000_000), ("k", 1024), ("m", 1 << 20),
            ("b", 1),
        ]
        for (suffix, factor) in units where lower.hasSuffix(suffix) {
            guard let value = Double(lower.dropLast(suffix.count)), value.isFinite, value >= 0 else { return nil }
            let bytes = value * Double(factor)
            guard bytes <= Double(maximum) else { return nil }
            return Int(bytes)
        }
        return Int(lower).flatMap { (0...maximum).contains($0) ? $0 : nil }
    }
}
