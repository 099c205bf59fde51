/// A session as bytes, for a store shared by replicas (`doppel serve
/// --state-store`): each request's transaction reads its session's row,
/// decides in it, and writes it back.
///
/// The encoding is Doppel's own JSON (not a database's JSON type), so the
/// state's key order and numbers come back exactly as they were written:
/// a response rendered from a decoded session is byte for byte the one an
/// in-memory session gives (`SessionCodingTests`).
extension SessionData {
    /// The version written in each encoded session; a different one is refused.
    package static let codingVersion = 1

    /// The session as JSON bytes.
    package func encoded() -> [UInt8] {
        var object = JSONObject()
        object["v"] = .int(Self.codingVersion)
        object["state"] = .object(state)
        object["clock"] = .object(JSONObject([("offset", .double(clock.offset)), ("frozen_at", clock.frozenAt.map(JSON.double) ?? .null)]))
        object["sequences"] = .array(sequencePositions.inWriteOrder.map { .array([.string($0.key), .int($0.value)]) })
        object["rates"] = .array(
            rateWindows.inWriteOrder.map { entry in
                .array([.string(entry.key), .double(entry.value.start), .int(entry.value.count), .array(entry.value.hits.map(JSON.double))])
            })
        object["calls"] = .object(JSONObject(endpointCalls.sorted { $0.key < $1.key }.map { ($0.key, JSON.int($0.value)) }))
        if !forced.isEmpty {
            object["forced"] = .array(
                forced.compactMap { override in
                    override.response.map { .array([.string(override.endpointID), .string($0.name), .int($0.status)]) }
                })
        }
        if let scenario {
            object["scenario"] = .object(JSONObject([("name", .string(scenario.name)), ("inline", scenario.inline.map(JSON.string) ?? .null)]))
        }
        return JSONWriter.encode(.object(object))
    }

    /// Why stored bytes are not a session.
    package struct DecodingError: Error, Sendable, CustomStringConvertible {
        package let description: String
    }

    /// A session from `encoded()`'s bytes. `scenario` finds a scenario's
    /// overrides again from its name and, for an inline one, its JSON text;
    /// a scenario it no longer finds leaves the session without one.
    /// `forced` finds a forced answer's response again from its endpoint,
    /// name and status (`Contract.forcibleResponse`); one it does not find is dropped.
    package init(
        decoding bytes: [UInt8], forced response: (String, String, Int) -> ResponseDefinition? = { _, _, _ in nil },
        scenario resolve: (String, String?) -> ActiveScenario?
    ) throws(DecodingError) {
        // Twice the request limit: the state keeps request bodies below its own names and keys.
        guard let json = try? JSONReader.parse(bytes, maximumDepth: 2 * JSONReader.maximumDepth), let object = json.objectValue else {
            throw DecodingError(description: "a stored session is not a JSON object")
        }
        guard object["v"]?.intValue == Self.codingVersion else {
            throw DecodingError(
                description: "a stored session has version \(object["v"].map { JSONWriter.encodeString($0) } ?? "none"), not \(Self.codingVersion)")
        }
        self.init(state: object["state"]?.objectValue ?? JSONObject())
        if let clock = object["clock"]?.objectValue {
            self.clock.offset = clock["offset"]?.numberValue ?? 0
            self.clock.frozenAt = clock["frozen_at"]?.numberValue
        }
        for item in object["sequences"]?.arrayValue ?? [] {
            guard let pair = item.arrayValue, pair.count == 2, let key = pair[0].stringValue, let position = pair[1].intValue else { continue }
            sequencePositions[key] = position
        }
        for item in object["rates"]?.arrayValue ?? [] {
            guard let parts = item.arrayValue, parts.count == 4, let key = parts[0].stringValue else { continue }
            rateWindows[key] = RateWindow(
                start: parts[1].numberValue ?? 0, count: parts[2].intValue ?? 0,
                hits: parts[3].arrayValue?.compactMap(\.numberValue) ?? [])
        }
        if let calls = object["calls"]?.objectValue {
            for (id, count) in calls.pairs { if let count = count.intValue { endpointCalls[id] = count } }
        }
        for item in object["forced"]?.arrayValue ?? [] {
            guard let parts = item.arrayValue, parts.count == 3, let endpoint = parts[0].stringValue, let name = parts[1].stringValue,
                let status = parts[2].intValue, let found = response(endpoint, name, status)
            else { continue }
            forced.append(Override(endpointID: endpoint, call: nil, response: found, delay: nil, fault: nil))
        }
        if let active = object["scenario"]?.objectValue, let name = active["name"]?.stringValue {
            scenario = resolve(name, active["inline"]?.stringValue)
        }
    }
}
