import Crypto
import DoppelCore
import Foundation
import OrderedCollections

/// Automatic persisted queries (APQ, Apollo's protocol, which Apollo
/// Client, Apollo iOS and Apollo Kotlin speak when it is turned on): a
/// client sends `extensions.persistedQuery.sha256Hash` without the query;
/// a server that does not know the hash answers `PersistedQueryNotFound`,
/// and the client sends the query with its hash, which the server keeps.
///
/// Kept per server, as a bounded cache: the most recently used queries,
/// at most `maximumCount` and `maximumBytes` of text together.
final class PersistedQueries: Sendable {
    static let maximumCount = 1_000
    static let maximumBytes = 8 << 20

    private struct Kept {
        var queries: OrderedDictionary<String, String> = [:]
        var bytes = 0
    }

    private let kept = Locked(Kept())

    /// The query of a hash, if known (it becomes the most recently used).
    func query(for hash: String) -> String? {
        kept.withLock { kept in
            guard let query = kept.queries.removeValue(forKey: hash) else { return nil }
            kept.queries[hash] = query
            return query
        }
    }

    /// Keeps a query under its hash, the least recently used ones giving way.
    func keep(_ query: String, hash: String) {
        kept.withLock { kept in
            if let old = kept.queries.removeValue(forKey: hash) { kept.bytes -= old.utf8.count }
            kept.queries[hash] = query
            kept.bytes += query.utf8.count
            while kept.queries.count > Self.maximumCount || kept.bytes > Self.maximumBytes, let first = kept.queries.keys.first {
                kept.bytes -= kept.queries.removeValue(forKey: first)?.utf8.count ?? 0
            }
        }
    }

    /// The lowercase hex SHA-256 of a query's text.
    static func hash(_ query: String) -> String {
        SHA256.hash(data: Data(query.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
