/// Writes `JSON` values as compact UTF-8 bytes, keys in their stored order.
public enum JSONWriter {
    /// Encodes a value to UTF-8 bytes.
    public static func encode(_ value: JSON) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out)
        return out
    }

    /// Encodes a value, or nil as soon as the text grows past `limit` bytes:
    /// a value that shares one large string many times is small to hold
    /// and large to write, so the writer stops rather than the caller
    /// walking the value twice.
    package static func encode(_ value: JSON, limit: Int) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out, limit: limit)
        return out.count > limit ? nil : out
    }

    /// Encodes a value to a String.
    public static func encodeString(_ value: JSON) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    /// Encodes a value with two-space indentation, for people to read.
    public static func encodePretty(_ value: JSON) -> String {
        var out: [UInt8] = []
        writePretty(value, indent: 0, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func write(_ value: JSON, into out: inout [UInt8], limit: Int = .max) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d): writeDouble(d, into: &out)
        case .string(let s): writeString(s, into: &out)
        // Members and elements are read in place, through buffer pointers:
        // iterating would copy, and so retain and release, every one of
        // them, and the values written are mostly shared by every event loop.
        case .array(let items):
            out.append(UInt8(ascii: "["))
            items.withUnsafeBufferPointer { items in
                for i in items.indices {
                    if out.count > limit { return }
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    write(items[i], into: &out, limit: limit)
                }
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            object.withMembers { keys, values in
                for i in keys.indices {
                    if out.count > limit { return }
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    writeString(keys[i], into: &out)
                    out.append(UInt8(ascii: ":"))
                    write(values[i], into: &out, limit: limit)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writePretty(_ value: JSON, indent: Int, into out: inout [UInt8]) {
        func pad(_ n: Int) { out.append(contentsOf: [UInt8](repeating: UInt8(ascii: " "), count: n * 2)) }
        switch value {
        case .array(let items) where !items.isEmpty:
            out.append(contentsOf: "[\n".utf8)
            for (i, item) in items.enumerated() {
                pad(indent + 1)
                writePretty(item, indent: indent + 1, into: &out)
                out.append(contentsOf: (i < items.count - 1 ? ",\n" : "\n").utf8)
            }
            pad(indent)
            out.append(UInt8(ascii: "]"))
        case .object(let object) where !object.isEmpty:
            out.append(contentsOf: "{\n".utf8)
            for (i, pair) in object.pairs.enumerated() {
                pad(indent + 1)
                writeString(pair.key, into: &out)
                out.append(contentsOf: ": ".utf8)
                writePretty(pair.value, indent: indent + 1, into: &out)
                out.append(contentsOf: (i < object.count - 1 ? ",\n" : "\n").utf8)
            }
            pad(indent)
            out.append(UInt8(ascii: "}"))
        default:
            write(value, into: &out)
        }
    }

    private static func writeDouble(_ d: Double, into out: inout [UInt8]) {
        guard d.isFinite else {
            out.append(contentsOf: "null".utf8)
            return
        }
        // Swift prints the shortest representation that round-trips ("9.99",
        // "0.0", "1e-05"), every one of which is valid JSON.
        out.append(contentsOf: "\(d)".utf8)
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    package static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Read in place: `withUTF8` would need a mutable copy of the string.
        if s.utf8.withContiguousStorageIfAvailable({ writeEscaped($0, into: &out) }) == nil {
            var copy = s
            copy.withUTF8 { writeEscaped($0, into: &out) }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        // Runs of bytes that need no escape (nearly all of them) are copied whole.
        var start = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<(index - 1)]))
            start = index
            // Byte by byte: an array literal here would be allocated at every escape.
            out.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
            case 0x0A: out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "t"))
            default:
                out.append(UInt8(ascii: "u"))
                out.append(UInt8(ascii: "0"))
                out.append(UInt8(ascii: "0"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
    }
}

extension JSON {
    /// About how long the value's JSON text is (strings are counted without escapes).
    package var encodedSize: Int { encodedSize(stoppingAbove: .max) }

    /// Whether the value's JSON text would be longer than `limit` bytes,
    /// found without writing it and stopping as soon as it is: a value that
    /// shares one large string many times is large to write, small to hold.
    package func exceedsEncodedSize(_ limit: Int) -> Bool {
        encodedSize(stoppingAbove: limit) > limit
    }

    /// The encoded size, or the first running total above `limit`.
    private func encodedSize(stoppingAbove limit: Int) -> Int {
        var total = 0
        var pending: [JSON] = [self]
        while let value = pending.popLast() {
            switch value {
            case .string(let s): total += s.utf8.count + 2
            case .array(let items):
                total += 2 + items.count
                pending.append(contentsOf: items)
            case .object(let object):
                total += 2
                for pair in object.pairs {
                    total += pair.key.utf8.count + 4
                    pending.append(pair.value)
                }
            default: total += 8
            }
            if total > limit { return total }
        }
        return total
    }
}
