extension Journal {
    /// A journal entry packed into bytes and back, as the ring keeps it.
    ///
    /// Written here rather than taken from a serialisation library: the
    /// format never leaves the process (it is not a file or wire format),
    /// and the entry's few fields need no schema, only lengths and numbers
    /// in one array, so that an entry held is one allocation.
    ///
    /// Integers are zigzag varints; a string is its UTF-8 length and bytes;
    /// an optional string is its length plus one, or 0 for none; a list is
    /// its count and its items; the time is its IEEE bits, little-endian.
    enum Packing {
        /// The fields packed, in one allocation of their exact size: `record`
        /// packs what it is given without making an `Entry` first.
        static func pack(
            time: Double, session: String, method: String, path: String, query: String?, status: Int, endpointID: String?,
            responseName: String?, durationMicros: Int, proxied: Bool, why: Reason?, changes: [String], message: String?,
            sent: [String]
        ) -> [UInt8] {
            var size = 8 + Writer.size(session) + Writer.size(method) + Writer.size(path) + Writer.size(query)
            size += Writer.size(status) + Writer.size(endpointID) + Writer.size(responseName) + Writer.size(durationMicros) + 1
            size += Writer.size(changes) + Writer.size(message) + Writer.size(sent) + 1
            if let why {
                size += Writer.size(why.given) + 1 + Writer.size(why.after) + 1
                switch why.choice {
                case .afterWhens(let checked): size += Writer.size(checked)
                case .when(let source): size += Writer.size(source)
                case .first, nil: break
                }
                if let sequence = why.sequence {
                    size += Writer.size(sequence.call) + Writer.size(sequence.answer) + Writer.size(sequence.of) + 1
                }
            }
            return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
                var out = Writer(buffer: buffer)
                out.double(time)
                out.string(session)
                out.string(method)
                out.string(path)
                out.optional(query)
                out.int(status)
                out.optional(endpointID)
                out.optional(responseName)
                out.int(durationMicros)
                out.int(proxied ? 1 : 0)
                out.list(changes)
                out.optional(message)
                out.list(sent)
                if let why {
                    out.int(1)
                    out.optional(why.given)
                    switch why.choice {
                    case nil: out.int(0)
                    case .first: out.int(1)
                    case .afterWhens(let checked):
                        out.int(2)
                        out.int(checked)
                    case .when(let source):
                        out.int(3)
                        out.string(source)
                    }
                    if let sequence = why.sequence {
                        out.int(1)
                        out.int(sequence.call)
                        out.int(sequence.answer)
                        out.int(sequence.of)
                        out.int(sequence.cycles ? 1 : 0)
                    } else {
                        out.int(0)
                    }
                    out.optional(why.after)
                } else {
                    out.int(0)
                }
                precondition(out.at == size, "an entry packed into \(out.at) bytes, not the \(size) reckoned")
                initialized = out.at
            }
        }

        static func unpack(_ bytes: [UInt8], sequence: Int) -> Entry {
            var input = Reader(bytes: bytes)
            let time = input.double()
            let session = input.string()
            let method = input.string()
            let path = input.string()
            let query = input.optional()
            let status = input.int()
            let endpointID = input.optional()
            let responseName = input.optional()
            let durationMicros = input.int()
            let proxied = input.int() == 1
            let changes = input.list()
            let message = input.optional()
            let sent = input.list()
            var why: Reason?
            if input.int() == 1 {
                var reason = Reason()
                reason.given = input.optional()
                switch input.int() {
                case 1: reason.choice = .first
                case 2: reason.choice = .afterWhens(checked: input.int())
                case 3: reason.choice = .when(input.string())
                default: reason.choice = nil
                }
                if input.int() == 1 {
                    reason.sequence = (call: input.int(), answer: input.int(), of: input.int(), cycles: input.int() == 1)
                }
                reason.after = input.optional()
                why = reason
            }
            var entry = Entry(
                sequence: sequence, time: time, session: session, method: method, path: path, query: query, status: status,
                endpointID: endpointID, responseName: responseName, durationMicros: durationMicros, proxied: proxied, why: why,
                changes: changes)
            // Set only when there is something, as `record` sets them: an HTTP entry carries no texts box.
            if message != nil { entry.message = message }
            if !sent.isEmpty { entry.sent = sent }
            return entry
        }

        /// Writes into memory reserved at the size its `size` functions reckon.
        private struct Writer {
            let buffer: UnsafeMutableBufferPointer<UInt8>
            var at = 0

            static func zigzag(_ value: Int) -> UInt64 { UInt64(bitPattern: Int64((value << 1) ^ (value >> (Int.bitWidth - 1)))) }
            static func size(_ value: Int) -> Int {
                let bits = zigzag(value)
                return bits == 0 ? 1 : (70 - bits.leadingZeroBitCount) / 7
            }
            static func size(_ value: String) -> Int { size(value.utf8.count) + value.utf8.count }
            static func size(_ value: String?) -> Int { value.map { size($0.utf8.count + 1) + $0.utf8.count } ?? 1 }
            static func size(_ values: [String]) -> Int { values.reduce(size(values.count)) { $0 + size($1) } }

            mutating func int(_ value: Int) {
                var rest = Self.zigzag(value)
                while rest >= 0x80 {
                    buffer[at] = UInt8(truncatingIfNeeded: rest) | 0x80
                    at += 1
                    rest >>= 7
                }
                buffer[at] = UInt8(rest)
                at += 1
            }

            mutating func double(_ value: Double) {
                let bits = value.bitPattern
                for shift in stride(from: 0, to: 64, by: 8) {
                    buffer[at] = UInt8(truncatingIfNeeded: bits >> UInt64(shift))
                    at += 1
                }
            }

            mutating func bytes(of value: String) {
                var value = value
                // A native string is already contiguous UTF-8: one copy of its bytes.
                value.withUTF8 { utf8 in
                    guard let source = utf8.baseAddress, !utf8.isEmpty else { return }
                    (buffer.baseAddress! + at).update(from: source, count: utf8.count)
                    at += utf8.count
                }
            }

            mutating func string(_ value: String) {
                int(value.utf8.count)
                bytes(of: value)
            }

            mutating func optional(_ value: String?) {
                guard let value else { return int(0) }
                int(value.utf8.count + 1)
                bytes(of: value)
            }

            mutating func list(_ values: [String]) {
                int(values.count)
                for value in values { string(value) }
            }
        }

        /// Reads what `Writer` wrote; only ever given bytes `pack` made.
        private struct Reader {
            let bytes: [UInt8]
            var at = 0

            mutating func int() -> Int {
                var value: UInt64 = 0
                var shift: UInt64 = 0
                while true {
                    let byte = bytes[at]
                    at += 1
                    value |= UInt64(byte & 0x7F) << shift
                    guard byte & 0x80 != 0 else { break }
                    shift += 7
                }
                let raw = Int(Int64(bitPattern: value))
                return Int(bitPattern: UInt(bitPattern: raw) >> 1) ^ -(raw & 1)
            }

            mutating func double() -> Double {
                var bits: UInt64 = 0
                for shift in stride(from: 0, to: 64, by: 8) {
                    bits |= UInt64(bytes[at]) << UInt64(shift)
                    at += 1
                }
                return Double(bitPattern: bits)
            }

            mutating func text(count: Int) -> String {
                defer { at += count }
                return String(decoding: bytes[at..<at + count], as: UTF8.self)
            }

            mutating func string() -> String { text(count: int()) }

            mutating func optional() -> String? {
                let count = int()
                return count == 0 ? nil : text(count: count - 1)
            }

            mutating func list() -> [String] { (0..<int()).map { _ in string() } }
        }
    }
}
