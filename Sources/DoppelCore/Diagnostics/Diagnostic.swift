/// A position in a source file, 1-based like compilers and editors count.
public struct SourceLocation: Sendable, Hashable, Comparable {
    /// The file, as it was named when loaded.
    public var file: String
    /// The line, from 1.
    public var line: Int
    /// The column, from 1, in characters.
    public var column: Int

    /// A place in `file`.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// The same location moved `offset` columns to the right.
    package func advanced(by offset: Int) -> SourceLocation {
        SourceLocation(file: file, line: line, column: column + offset)
    }

    public static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        (lhs.file, lhs.line, lhs.column) < (rhs.file, rhs.line, rhs.column)
    }
}

/// One problem found in a contract, printed as `path:line:column: error: message`.
public struct Diagnostic: Sendable, Hashable, CustomStringConvertible {
    /// How bad: an error stops a contract from loading; a warning does not.
    public enum Severity: String, Sendable {
        case error
        case warning
    }

    /// Where the problem is.
    public var location: SourceLocation
    /// Error or warning.
    public var severity: Severity
    /// What is wrong, and where it helps, how to fix it.
    public var message: String

    /// A problem of `severity` at `location`.
    public init(_ severity: Severity = .error, at location: SourceLocation, _ message: String) {
        self.location = location
        self.severity = severity
        self.message = message
    }

    public var description: String {
        "\(location.file):\(location.line):\(location.column): \(severity.rawValue): \(message)"
    }
}

/// Thrown when a contract has one or more errors; carries every diagnostic found.
public struct ContractError: Error, Sendable, CustomStringConvertible {
    /// Every problem found, errors and warnings, in file order.
    public let diagnostics: [Diagnostic]

    /// An error carrying `diagnostics`.
    public init(diagnostics: [Diagnostic]) {
        self.diagnostics = diagnostics.sorted { $0.location < $1.location }
    }

    public var description: String {
        diagnostics.map(\.description).joined(separator: "\n")
    }

    /// The diagnostics a load throws; empty when it succeeds.
    package static func thrown(by load: () throws(ContractError) -> Void) -> [Diagnostic] {
        diagnostics { () throws(ContractError) -> [Diagnostic] in
            try load()
            return []
        }
    }

    /// The diagnostics a load throws, or the warnings it returns when it succeeds.
    package static func diagnostics(of load: () throws(ContractError) -> [Diagnostic]) -> [Diagnostic] {
        do {
            return try load()
        } catch {
            return error.diagnostics
        }
    }
}

/// Collects diagnostics during loading, so that every problem is reported at once.
package struct DiagnosticCollector: Sendable {
    package private(set) var diagnostics: [Diagnostic] = []

    package init() {}

    package var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

    package mutating func error(_ message: String, at location: SourceLocation) {
        diagnostics.append(Diagnostic(.error, at: location, message))
    }

    package mutating func warning(_ message: String, at location: SourceLocation) {
        diagnostics.append(Diagnostic(.warning, at: location, message))
    }

    package mutating func append(contentsOf other: [Diagnostic]) {
        diagnostics.append(contentsOf: other)
    }
}

/// Suggests the closest known word for a misspelt one ("did you mean ...?").
package enum Suggestion {
    /// The candidate nearest to `word` by edit distance, when it is near enough.
    package static func nearest(to word: String, in candidates: some Sequence<String>) -> String? {
        var best: (String, Int)?
        for candidate in candidates {
            let distance = editDistance(word.lowercased(), candidate.lowercased())
            if distance <= max(2, candidate.count / 3), distance < (best?.1 ?? .max) {
                best = (candidate, distance)
            }
        }
        return best?.0
    }

    /// " (did you mean 'x'?)" or an empty string.
    package static func hint(for word: String, in candidates: some Sequence<String>) -> String {
        nearest(to: word, in: candidates).map { " (did you mean '\($0)'?)" } ?? ""
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
