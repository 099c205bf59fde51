import Foundation

/// Runs `body` with the path of `text` written as `contract.yaml` in a
/// folder of its own (with `files` beside it), removed afterwards.
package func withTemporaryContract<T>(
    _ text: String, files: [String: String] = [:], _ body: (String) async throws -> T
) async throws -> T {
    let folder = try TemporaryContract(text, files: files)
    defer { folder.remove() }
    return try await body(folder.file)
}

/// As the asynchronous one, for a synchronous `body` (a lint).
package func withTemporaryContract<T>(_ text: String, files: [String: String] = [:], _ body: (String) throws -> T) throws -> T {
    let folder = try TemporaryContract(text, files: files)
    defer { folder.remove() }
    return try body(folder.file)
}

/// A contract written in a folder of its own.
private struct TemporaryContract {
    let folder: URL
    let file: String

    init(_ text: String, files: [String: String]) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("contract-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, content) in files { try content.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        let url = folder.appendingPathComponent("contract.yaml")
        try text.write(to: url, atomically: true, encoding: .utf8)
        file = url.path
    }

    func remove() {
        try? FileManager.default.removeItem(at: folder)
    }
}
