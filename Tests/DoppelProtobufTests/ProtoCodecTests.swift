import DoppelCore
import Foundation
import Testing

@testable import DoppelProtobuf

/// The codec held to Python's protobuf: `Cases/cases.json` holds messages
/// of `Cases/codec.proto` as the official runtime encodes them and writes
/// them in JSON (`Cases/make-cases.py`, re-checked in CI).
@Suite("The protobuf codec, against Python's protobuf")
struct ProtoCodecTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let message: String
        let json: JSON?
        /// Python's bytes for `json`.
        let written: [UInt8]?
        /// Bytes Python reads as `json`, though it would write them otherwise.
        let read: [UInt8]?
        /// Bytes Python refuses.
        let refused: [UInt8]?
        var testDescription: String { name }
    }

    static let folder = Bundle.module.url(forResource: "Cases", withExtension: nil)!

    static let cases: [Case] = {
        let text = try! String(contentsOf: folder.appendingPathComponent("cases.json"), encoding: .utf8)
        guard case .array(let items) = try! JSONReader.parse(Array(text.utf8)) else { return [] }
        func bytes(_ value: JSON?) -> [UInt8]? {
            guard case .string(let hex)? = value else { return nil }
            var out: [UInt8] = []
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 2)
                out.append(UInt8(hex[index..<next], radix: 16)!)
                index = next
            }
            return out
        }
        return items.map { item in
            Case(
                name: item["name"]?.stringValue ?? "", message: item["message"]?.stringValue ?? "", json: item["json"], written: bytes(item["hex"]),
                read: bytes(item["read"]), refused: bytes(item["refused"]))
        }
    }()

    static let codec: ProtoCodec = {
        let (schema, diagnostics) = ProtoSchema.load(file: "codec.proto", folder: folder)
        precondition(diagnostics.isEmpty, "\(diagnostics)")
        return ProtoCodec(schema: schema!)
    }()

    @Test func theCasesAreThere() {
        #expect(Self.cases.count >= 30)
        #expect(Self.cases.contains { $0.refused != nil } && Self.cases.contains { $0.read != nil })
    }

    @Test("Python's bytes read as Python's JSON", arguments: cases.filter { $0.written != nil || $0.read != nil })
    func decodes(_ testCase: Case) throws {
        let decoded = try Self.codec.decode(testCase.written ?? testCase.read!, as: testCase.message)
        #expect(Self.same(decoded, testCase.json!), "\(JSONWriter.encodeString(decoded))")
    }

    @Test("Python's JSON written as Python's bytes", arguments: cases.filter { $0.written != nil })
    func encodes(_ testCase: Case) throws {
        let encoded = try Self.codec.encode(testCase.json!, as: testCase.message)
        #expect(encoded == testCase.written!, "\(encoded.map { String(format: "%02x", $0) }.joined())")
    }

    @Test("Bytes Python refuses are refused", arguments: cases.filter { $0.refused != nil })
    func refuses(_ testCase: Case) {
        #expect(throws: ProtoCodec.Failure.self) { try Self.codec.decode(testCase.refused!, as: testCase.message) }
    }

    /// JSON values alike as the mapping means them: numbers by value (2 and 2.0 are one number).
    static func same(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
        case (.double(let x), .double(let y)): return x == y || (x.isNaN && y.isNaN)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.pairs.allSatisfy { pair in y[pair.key].map { same(pair.value, $0) } ?? false }
        default: return a == b
        }
    }
}
