/// Parses UTF-8 JSON text into `JSON`, keeping key order and the difference
/// between integers and fractional numbers.
public struct JSONReader {
    /// Why a text is not JSON, and where.
    public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong.
        public let message: String
        /// Byte offset into the input.
        public let offset: Int
        public var description: String { "\(message) at byte \(offset)" }

        /// An error at byte `offset`.
        public init(message: String, offset: Int) {
            self.message = message
            self.offset = offset
        }
    }

    /// Nesting deeper than this is refused rather than risk the stack.
    public static let maximumDepth = 512

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    private let depthLimit: Int

    private init(_ bytes: [UInt8], depthLimit: Int = JSONReader.maximumDepth) {
        self.bytes = bytes
        self.depthLimit = depthLimit
    }

    /// Parses a complete JSON document.
    public static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> JSON {
        try parse(bytes, maximumDepth: maximumDepth)
    }

    /// Parses a complete JSON document nested at most `maximumDepth` levels:
    /// for what Doppel itself wrote from values a request may nest to the
    /// usual limit (a stored session keeps a body a few levels down).
    package static func parse(_ bytes: [UInt8], maximumDepth: Int) throws(SyntaxError) -> JSON {
        var reader = JSONReader(bytes, depthLimit: maximumDepth)
        reader.skipWhitespace()
        let value = try reader.parseValue()
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw reader.error("unexpected content after the JSON value") }
        return value
    }

    /// Parses a complete JSON document from a String.
    public static func parse(_ text: String) throws(SyntaxError) -> JSON {
        try parse(Array(text.utf8))
    }

    private func error(_ message: String) -> SyntaxError {
        SyntaxError(message: message, offset: index)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(SyntaxError) -> JSON {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectWord("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectWord("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectWord("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character '\(Character(Unicode.Scalar(bytes[index])))'")
        }
    }

    private mutating func expectWord(_ word: StaticString) throws(SyntaxError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of input") }
        let matches = word.withUTF8Buffer { buffer in
            (0..<count).allSatisfy { bytes[index + $0] == buffer[$0] }
        }
        guard matches else { throw error("invalid literal") }
        index += count
    }

    private mutating func enter() throws(SyntaxError) {
        depth += 1
        if depth > depthLimit { throw error("nesting deeper than \(depthLimit) levels") }
    }

    private mutating func parseObject() throws(SyntaxError) -> JSON {
        try enter()
        defer { depth -= 1 }
        index += 1
        var object = JSONObject()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':' after object key") }
            index += 1
            skipWhitespace()
            object[key] = try parseValue()
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input in object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(object)
            }
            throw error("expected ',' or '}' in object")
        }
    }

    private mutating func parseArray() throws(SyntaxError) -> JSON {
        try enter()
        defer { depth -= 1 }
        index += 1
        var items: [JSON] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input in array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            throw error("expected ',' or ']' in array")
        }
    }

    private mutating func parseString() throws(SyntaxError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: bytes[start..<index], as: UTF8.self)
                index += 1
                return s
            }
            if b == UInt8(ascii: "\\") || b < 0x20 { break }
            index += 1
        }
        var out: [UInt8] = Array(bytes[start..<index])
        while index < bytes.count {
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of input in string") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): out.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired surrogate in string") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("invalid surrogate pair in string") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw error("invalid unicode escape") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw error("invalid escape in string")
                }
            case 0..<0x20:
                throw error("control character in string")
            default:
                out.append(b)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func parseHex4() throws(SyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("unexpected end of input in unicode escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt32
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(b - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(b - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in unicode escape")
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(SyntaxError) -> JSON {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let i = Int(text) { return .int(i) }
        guard let d = Double(text) else { throw error("invalid number") }
        // 1e400 reads as infinity: no JSON number, and no integer either.
        guard d.isFinite else { throw SyntaxError(message: "number \(text.prefix(40)) is out of range", offset: start) }
        return .double(d)
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
}
