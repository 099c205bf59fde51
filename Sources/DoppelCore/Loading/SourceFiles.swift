import Synchronization

/// The names of the files that `SourceNode`s were read from, each kept once,
/// so that a node stores a number instead of the name.
///
/// A String took 16 of each node's bytes, and every node made or freed
/// counted references on the one name shared by all nodes of its file, from
/// every core at once. A document of 1,000 operations has 58,000 nodes: with
/// the name out of the node, each takes a 64-byte block instead of 96.
///
/// Names are appended and never removed or changed, into blocks that are
/// never moved, so they are read without a lock. A name is kept for the
/// life of the process; there is one per file ever read (a server watching
/// one contract keeps one), at most `capacity`, and past that every further
/// file shares one last entry, which names it as such.
enum SourceFiles {
    static let blockSize = 1 << 10
    static let blockCount = 1 << 12
    /// The most names kept: four million.
    static let capacity = blockSize * blockCount

    /// Blocks of names, allocated as needed and never freed or moved.
    nonisolated(unsafe) private static let blocks: UnsafeMutablePointer<UnsafeMutablePointer<String>?> = {
        let blocks = UnsafeMutablePointer<UnsafeMutablePointer<String>?>.allocate(capacity: blockCount)
        blocks.initialize(repeating: nil, count: blockCount)
        return blocks
    }()
    /// The names' numbers, and how many there are; taken for every new name.
    private static let table = Locked<(numbers: [String: UInt32], count: Int)>(([:], 0))
    /// The number given last, found again without the lock while the same
    /// file's nodes are made.
    private static let last = Atomic<UInt32>(UInt32.max)

    /// Puts `name` in the next entry, its block allocated first if need
    /// be, and returns its number; called with the table's lock held.
    @discardableResult
    private static func store(_ name: String, as table: inout (numbers: [String: UInt32], count: Int)) -> UInt32 {
        let id = table.count
        if blocks[id / blockSize] == nil { blocks[id / blockSize] = .allocate(capacity: blockSize) }
        (blocks[id / blockSize]! + id % blockSize).initialize(to: name)
        table.count += 1
        return UInt32(id)
    }

    /// The name with number `id`.
    @inline(__always)
    static func name(_ id: UInt32) -> String {
        blocks[Int(id) / blockSize]![Int(id) % blockSize]
    }

    /// The number of `file`'s name, given it the first time.
    static func id(_ file: String) -> UInt32 {
        let last = last.load(ordering: .acquiring)
        if last != UInt32.max, name(last) == file { return last }
        let id = table.withLock { table -> UInt32 in
            if let id = table.numbers[file] { return id }
            // Past the capacity, one shared last entry, which says so.
            guard table.count < capacity - 1 else {
                if table.count == capacity - 1 { store("(one of more than \(capacity) files read)", as: &table) }
                return UInt32(capacity - 1)
            }
            table.numbers[file] = UInt32(table.count)
            return store(file, as: &table)
        }
        self.last.store(id, ordering: .releasing)
        return id
    }
}
