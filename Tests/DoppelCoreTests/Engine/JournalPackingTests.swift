import Testing

@testable import DoppelCore

/// The journal keeps each entry packed into bytes; what it gives back must be
/// exactly what it was given, field by field, for every shape an entry takes.
@Suite("Journal packing")
struct JournalPackingTests {
    /// A small deterministic generator, so a failure names its seed.
    struct Numbers {
        var state: UInt64

        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }

        mutating func text() -> String {
            let pieces = ["", "a", "/api/v1/stories/generate", "é", "日本語", "👩‍👩‍👧", "\u{0}", "x y", "%2F?&=", "stories.s_1"]
            return (0..<next(4)).map { _ in pieces[next(pieces.count)] }.joined()
        }

        mutating func optional() -> String? { next(3) == 0 ? nil : text() }

        mutating func number() -> Int {
            [0, 1, -1, 127, 128, 16_383, 16_384, Int.max, Int.min, 200, 402, next(1 << 30)][next(12)]
        }
    }

    struct Given {
        var time: Double
        var session: String
        var method: String
        var path: String
        var query: String?
        var status: Int
        var endpointID: String?
        var responseName: String?
        var durationMicros: Int
        var proxied: Bool
        var sequence: Int
        var reason: Reason?
        var changes: [String]
        var message: String?
        var sent: [String]
    }

    static func given(seed: UInt64) -> [Given] {
        var numbers = Numbers(state: seed)
        return (0..<200).map { _ in
            var reason: Reason?
            if numbers.next(4) > 0 {
                var why = Reason(numbers.optional())
                why.choice = [nil, .first, .afterWhens(checked: numbers.number()), .when(numbers.text())][numbers.next(4)]
                if numbers.next(2) == 0 {
                    why.sequence = (call: numbers.number(), answer: numbers.number(), of: numbers.number(), cycles: numbers.next(2) == 0)
                }
                why.after = numbers.optional()
                reason = why
            }
            let socket = numbers.next(3) == 0
            return Given(
                time: [0, 1_764_000_000.123_456, -1.5, .greatestFiniteMagnitude, 0.1][numbers.next(5)],
                session: numbers.text(), method: socket ? ["RECEIVE", "SEND", "CLOSE", "CALLBACK"][numbers.next(4)] : "POST",
                path: numbers.text(), query: numbers.optional(), status: numbers.number(), endpointID: numbers.optional(),
                responseName: numbers.optional(), durationMicros: numbers.number(), proxied: numbers.next(2) == 0,
                sequence: numbers.number(), reason: reason, changes: (0..<numbers.next(4)).map { _ in numbers.text() },
                message: socket ? numbers.optional() : nil, sent: socket ? (0..<numbers.next(3)).map { _ in numbers.text() } : [])
        }
    }

    @Test(arguments: [1, 2, 3, 42, 0xDEAD_BEEF] as [UInt64])
    func whatIsReadIsWhatWasRecorded(seed: UInt64) {
        let given = Self.given(seed: seed)
        let journal = Journal(capacity: given.count)
        for item in given {
            journal.record(
                time: item.time, session: item.session, method: item.method, path: item.path, query: item.query, status: item.status,
                endpointID: item.endpointID, responseName: item.responseName, durationMicros: item.durationMicros, proxied: item.proxied,
                sequence: item.sequence, reason: item.reason, changes: item.changes, message: item.message, sent: item.sent)
        }
        let read = journal.entries
        #expect(read.count == given.count)
        for (entry, item) in zip(read, given) {
            #expect(entry.sequence == item.sequence)
            #expect(entry.time.bitPattern == item.time.bitPattern)
            #expect(entry.session == item.session)
            #expect(entry.method == item.method)
            #expect(entry.path == item.path)
            #expect(entry.query == item.query)
            #expect(entry.status == item.status)
            #expect(entry.endpointID == item.endpointID)
            #expect(entry.responseName == item.responseName)
            #expect(entry.durationMicros == item.durationMicros)
            #expect(entry.proxied == item.proxied)
            #expect(entry.changes == item.changes)
            #expect(entry.message == item.message)
            #expect(entry.sent == item.sent)
            #expect((entry.why == nil) == (item.reason == nil))
            #expect(entry.why?.given == item.reason?.given)
            #expect(entry.why?.after == item.reason?.after)
            #expect(entry.why?.text == item.reason?.text)
            #expect(entry.why?.sequence.map { "\($0)" } == item.reason?.sequence.map { "\($0)" })
            #expect(entry.why?.choice.map { "\($0)" } == item.reason?.choice.map { "\($0)" })
        }
    }

    /// An HTTP entry read back carries no socket texts, as one recorded never did.
    @Test func anHTTPEntryReadsBackWithoutSocketTexts() {
        let journal = Journal(capacity: 2)
        journal.record(
            time: 1, session: "s", method: "GET", path: "/p", query: nil, status: 200, endpointID: "p", responseName: "ok", durationMicros: 3)
        let entry = journal.entries[0]
        #expect(entry.texts == nil)
        #expect(entry.json == .object(JSONObject(Self.plainFields)))
    }

    static let plainFields: [(String, JSON)] = [
        ("sequence", .int(1)), ("time", .string(UTCCalendar.format(epoch: 1))), ("session", .string("s")), ("method", .string("GET")),
        ("path", .string("/p")), ("query", .null), ("status", .int(200)), ("endpoint", .string("p")), ("response", .string("ok")),
        ("duration_us", .int(3)), ("proxied", .bool(false)), ("reason", .null), ("changes", .array([])),
    ]
}

/// Many writers and a reader at once: every entry read back is whole (its
/// fields agree with each other), none is lost or doubled.
@Suite("Journal packing under load")
struct JournalPackingLoadTests {
    @Test func parallelWritersAndAReaderSeeOnlyWholeEntries() async {
        let journal = Journal(capacity: 20_000)
        let writers = 16
        let each = 1_000
        let torn = await withTaskGroup(of: Int.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for index in 0..<each {
                        let name = "w\(writer)-\(index)"
                        journal.record(
                            time: Double(index), session: "session-\(writer)", method: index % 2 == 0 ? "GET" : "RECEIVE",
                            path: "/\(name)/" + String(repeating: "p", count: index % 300), query: index % 3 == 0 ? nil : name,
                            status: 200 + writer, endpointID: name, responseName: nil, durationMicros: index,
                            reason: Reason(name), changes: [name], message: index % 2 == 0 ? nil : name)
                    }
                    return 0
                }
            }
            group.addTask {
                // Reads while the writers write; counts entries whose fields disagree.
                var torn = 0
                for _ in 0..<20 {
                    for entry in journal.entries where !JournalPackingLoadTests.isWhole(entry) { torn += 1 }
                    await Task.yield()
                }
                return torn
            }
            return await group.reduce(0, +)
        }
        #expect(torn == 0)
        let entries = journal.entries
        #expect(entries.count == writers * each)
        #expect(entries.allSatisfy(Self.isWhole))
        #expect(Set(entries.map(\.endpointID)).count == writers * each)
        #expect(entries.map(\.sequence) == Array(1...(writers * each)))
    }

    static func isWhole(_ entry: Journal.Entry) -> Bool {
        guard let name = entry.endpointID, let writer = Int(name.dropFirst().prefix { $0 != "-" }),
            let index = Int(name.split(separator: "-")[1])
        else { return false }
        return entry.session == "session-\(writer)" && entry.status == 200 + writer && entry.durationMicros == index
            && entry.time == Double(index) && entry.path == "/\(name)/" + String(repeating: "p", count: index % 300)
            && entry.query == (index % 3 == 0 ? nil : name) && entry.why?.given == name && entry.changes == [name]
            && entry.method == (index % 2 == 0 ? "GET" : "RECEIVE") && entry.message == (index % 2 == 0 ? nil : name)
    }
}
