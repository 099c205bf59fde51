/// The keys met so far in one mapping, to find a repeated one: searched while
/// there are few (most contract mappings have a handful of keys), hashed once
/// there are many, so a mapping of thousands of keys stays linear.
struct SeenKeys {
    private var few: [String] = []
    private var many: Set<String>?

    /// Records `key`; false when it was met already.
    mutating func insert(_ key: String) -> Bool {
        if many != nil { return many!.insert(key).inserted }
        if few.contains(key) { return false }
        few.append(key)
        if few.count > 16 {
            many = Set(few)
            few = []
        }
        return true
    }
}
