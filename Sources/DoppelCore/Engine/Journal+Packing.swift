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
        /// The fields packed, in one allocation of their exact size (counted
        /// first, by the same layout): `record` packs what it is given
        /// without making an `Entry` first.
        static func pack(
            time: Double, session: String, method: String, path: String, query: String?, status: Int, endpointID: String?,
            responseName: String?, durationMicros: Int, proxied: Bool, why: Reason?, changes: [String], message: String?,
            sent: [String]
        ) -> [UInt8] {
            // The layout, written once: counted first, then written into an array of that size.
            func write<Output: Sink>(to out: inout Output) {
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
                list(changes, to: &out)
                out.optional(message)
                list(sent, to: &out)
                guard let why else { return out.int(0) }
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
            }
            var counter = Counter()
            write(to: &counter)
            return [UInt8](unsafeUninitializedCapacity: counter.count) { buffer, initialized in
                var out = Writer(buffer: buffer)
                write(to: &out)
                assert(out.at == counter.count, "an entry packed into \(out.at) bytes, not the \(counter.count) counted")
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

        /// Where `pack` puts an entry's fields: `Counter` counts their bytes, `Writer` writes them.
        private protocol Sink {
            mutating func int(_ value: Int)
            mutating func double(_ value: Double)
            mutating func string(_ value: String)
            mutating func optional(_ value: String?)
        }

        /// A list: its count, then its items.
        private static func list(_ values: [String], to out: inout some Sink) {
            out.int(values.count)
            for value in values { out.string(value) }
        }

        /// Counts the bytes `Writer` will write.
        private struct Counter: Sink {
            var count = 0

            mutating func int(_ value: Int) {
                let bits = Packing.zigzag(value)
                count += bits == 0 ? 1 : (70 - bits.leadingZeroBitCount) / 7
            }

            mutating func double(_ value: Double) { count += 8 }

            mutating func string(_ value: String) {
                int(value.utf8.count)
                count += value.utf8.count
            }

            mutating func optional(_ value: String?) {
                guard let value else { return int(0) }
                int(value.utf8.count + 1)
                count += value.utf8.count
            }
        }

        /// Writes into memory of the size `Counter` measured; a write past its end traps.
        private struct Writer: Sink {
            let buffer: UnsafeMutableBufferPointer<UInt8>
            var at = 0

            mutating func int(_ value: Int) {
                var rest = Packing.zigzag(value)
                while rest >= 0x80 {
                    put(UInt8(truncatingIfNeeded: rest) | 0x80)
                    rest >>= 7
                }
                put(UInt8(rest))
            }

            mutating func double(_ value: Double) {
                let bits = value.bitPattern
                for shift in stride(from: 0, to: 64, by: 8) { put(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
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

            private mutating func put(_ byte: UInt8) {
                precondition(at < buffer.count, "an entry packed past the bytes counted for it")
                buffer[at] = byte
                at += 1
            }

            private mutating func bytes(of value: String) {
                var value = value
                // A native string is already contiguous UTF-8: one copy of its bytes.
                value.withUTF8 { utf8 in
                    guard let source = utf8.baseAddress, !utf8.isEmpty else { return }
                    precondition(at + utf8.count <= buffer.count, "an entry packed past the bytes counted for it")
                    (buffer.baseAddress! + at).update(from: source, count: utf8.count)
                    at += utf8.count
                }
            }
        }

        private static func zigzag(_ value: Int) -> UInt64 { UInt64(bitPattern: Int64((value << 1) ^ (value >> (Int.bitWidth - 1)))) }

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
