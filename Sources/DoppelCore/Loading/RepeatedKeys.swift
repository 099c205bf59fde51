/// Finds a repeated key in one mapping, among the keys already read, where
/// they already are: searched while there are few (most contract mappings
/// have a handful of keys, and this allocates nothing), hashed once there
/// are many, so that a mapping of thousands of keys stays linear.
struct RepeatedKeys {
    private var hashed: Set<String>?

    /// Whether `name` is among the `count` keys before it, `key(i)` giving
    /// the i-th of them; then `name` counts as one of them.
    mutating func isRepeated(_ name: String, count: Int, key: (Int) -> String?) -> Bool {
        if hashed != nil { return !hashed!.insert(name).inserted }
        guard count >= 16 else {
            for index in 0..<count where key(index)?.isSameKey(as: name) == true { return true }
            return false
        }
        var keys = Set<String>(minimumCapacity: count * 2)
        for index in 0..<count {
            if let earlier = key(index) { keys.insert(earlier) }
        }
        let repeated = !keys.insert(name).inserted
        hashed = keys
        return repeated
    }
}
