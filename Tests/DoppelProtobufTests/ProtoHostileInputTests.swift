import DoppelCore
import Testing

@testable import DoppelProtobuf

/// Bytes and `.proto` texts nobody wrote on purpose: each is read or
/// refused with a failure, never a crash or a hang. A fixed seed, so a
/// failure is found again.
@Suite("Hostile bytes and .proto texts")
struct ProtoHostileInputTests {
    /// A small deterministic generator (SplitMix64).
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    // Both run for seconds: each gives its thread back now and then
    // (`Task.yield`), so the suite's tests that wait on timers do not starve.
    @Test("Mutated and random bytes decode or fail, as every message type")
    func mutatedBytes() async throws {
        let codec = ProtoCodecTests.codec
        var random = Seeded(state: 45)
        let seeds = ProtoCodecTests.cases.compactMap { $0.written ?? $0.read }.filter { !$0.isEmpty }
        let types = codec.schema.messages.keys.sorted()
        var read = 0
        var refused = 0
        for round in 0..<20_000 {
            if round % 200 == 0 { await Task.yield() }
            var bytes: [UInt8]
            if round % 4 == 0 {
                bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                bytes = seeds[Int.random(in: 0..<seeds.count, using: &random)]
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let index = Int.random(in: 0..<bytes.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: bytes[index] = UInt8.random(in: 0...255, using: &random)
                    case 1: bytes.removeSubrange(index...)
                    default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: index)
                    }
                    if bytes.isEmpty { break }
                }
            }
            let type = types[Int.random(in: 0..<types.count, using: &random)]
            do {
                let json = try codec.decode(bytes, as: type)
                read += 1
                // What was read is written again, and reads back the same.
                let again = try codec.decode(try codec.encode(json, as: type), as: type)
                #expect(ProtoCodecTests.same(again, json), "\(type): \(bytes)")
            } catch {
                refused += 1
            }
        }
        #expect(read > 1_000 && refused > 1_000, "read \(read), refused \(refused)")
    }

    @Test("Mutated .proto texts are read or refused with located problems")
    func mutatedTexts() async throws {
        var random = Seeded(state: 1_945)
        let original = Array(
            try String(contentsOf: ProtoCodecTests.folder.appendingPathComponent("codec.proto"), encoding: .utf8).unicodeScalars)
        let alphabet = Array("{}[]()<>;=,.\"'/-+* \nabc019_".unicodeScalars)
        for round in 0..<1_500 {
            if round % 20 == 0 { await Task.yield() }
            var scalars = original
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let index = Int.random(in: 0..<scalars.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: scalars[index] = alphabet[Int.random(in: 0..<alphabet.count, using: &random)]
                case 1: scalars.remove(at: index)
                default: scalars.removeSubrange(index..<min(scalars.count, index + Int.random(in: 1...40, using: &random)))
                }
                if scalars.isEmpty { break }
            }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars)
            let (schema, problems) = ProtoSchema.read(["codec.proto": text, "shared.proto": ""])
            if schema == nil {
                #expect(problems.contains { $0.severity == .error && $0.location.line >= 1 && $0.location.column >= 1 })
            }
        }
    }
}
