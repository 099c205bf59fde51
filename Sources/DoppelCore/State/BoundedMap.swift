/// A dictionary with a most-entries bound: adding a key to a full map first
/// drops the least recently written tenth.
///
/// Used for state keyed by what clients send (rate windows and sequence
/// positions `per` a header, say), so that a client inventing keys cannot
/// grow a session without limit. Dropping a tenth at once keeps the cost of
/// the sort amortised to O(log n) per insertion.
package struct BoundedMap<Value: Sendable>: Sendable {
    private var entries: [String: (value: Value, written: Int)] = [:]
    private var tick = 0
    /// The most keys held.
    package let capacity: Int

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    package subscript(key: String) -> Value? {
        get { entries[key]?.value }
        set {
            guard let newValue else {
                entries.removeValue(forKey: key)
                return
            }
            if entries[key] == nil, entries.count >= capacity { dropOldest() }
            tick += 1
            entries[key] = (newValue, tick)
        }
    }

    package var count: Int { entries.count }

    package var keys: [String] { Array(entries.keys) }

    /// Every entry, least recently written first: writing them in this
    /// order into an empty map makes the same map (`SessionData+Coding`).
    package var inWriteOrder: [(key: String, value: Value)] {
        entries.sorted { $0.value.written < $1.value.written }.map { ($0.key, $0.value.value) }
    }

    private mutating func dropOldest() {
        let drop = max(1, capacity / 10)
        let oldest = entries.sorted { $0.value.written < $1.value.written }.prefix(drop).map(\.key)
        for key in oldest { entries.removeValue(forKey: key) }
    }
}
