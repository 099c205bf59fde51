import Foundation

/// Runs `body` with the path of `text` written as `contract.yaml` in a
/// folder of its own (with `files` beside it), removed afterwards.
package func withTemporaryContract<T>(
    _ text: String, files: [String: String] = [:], _ body: (String) async throws -> T
) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("contract-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    for (name, content) in files { try content.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8) }
    let file = folder.appendingPathComponent("contract.yaml")
    try text.write(to: file, atomically: true, encoding: .utf8)
    return try await body(file.path)
}
