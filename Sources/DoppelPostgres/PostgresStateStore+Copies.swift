import DoppelCore

/// The rows this replica last read or wrote, kept with their versions, so
/// that the next request of a session is decided on the copy and written
/// over its version without reading the row first: one round trip rather
/// than two while no other replica writes the session between
/// (`PostgresStateStore+Optimistic.swift`).
///
/// A copy is never trusted: the write is kept only when the row's version
/// is still the copy's (`UPDATE … WHERE version = v`), and every writer
/// raises the version or removes the row. When another replica wrote in
/// between, the write is lost and its statement returns the row as it is
/// now, on which the request is decided again, as after a plain read; when
/// the row was removed, it is read again. So a stale copy costs the round
/// trip the read would have, and changes no answer.
///
/// Bounded: at most `maximumCopies` rows and `maximumCopyBytes` bytes of
/// them (docs/limits.md); a row larger than a sixteenth of that is not kept,
/// and when full an arbitrary copy makes room.
///
/// (Written here rather than taken from a library: a dictionary under a lock
/// with a byte budget; the mirrored caches are for HTTP responses.)
struct RowCopies {
    static let maximumCopies = 4_096
    static let maximumCopyBytes = 16 << 20

    private var rows: [String: (data: [UInt8], version: Int64)] = [:]
    private(set) var bytes = 0
    var count: Int { rows.count }

    func copy(of id: String) -> (data: [UInt8], version: Int64)? {
        rows[id]
    }

    /// Keeps `data` as session `id`'s row at `version`, in place of any copy before.
    mutating func keep(_ id: String, data: [UInt8], version: Int64) {
        forget(id)
        guard data.count <= Self.maximumCopyBytes / 16 else { return }
        while !rows.isEmpty, rows.count >= Self.maximumCopies || bytes + data.count > Self.maximumCopyBytes {
            let (_, evicted) = rows.remove(at: rows.startIndex)
            bytes -= evicted.data.count
        }
        rows[id] = (data, version)
        bytes += data.count
    }

    mutating func forget(_ id: String) {
        if let old = rows.removeValue(forKey: id) { bytes -= old.data.count }
    }

    mutating func forgetAll() {
        rows.removeAll()
        bytes = 0
    }
}
