import Foundation

/// Finds the files a test names (contracts, scenarios) the way a test author
/// means them, whatever the working directory of the test process.
public enum TestFiles {
    /// `path` as it is when absolute; otherwise the first that exists of
    /// `path` under the folder of `filePath` (pass `#filePath`) and under
    /// each folder above it. So `"contracts/tales.yaml"` from
    /// `Tests/AppTests/LimitTests.swift` finds the package's
    /// `contracts/tales.yaml`, and `"tales.yaml"` the file beside the test.
    public static func resolve(_ path: String, relativeTo filePath: String) throws(TestServerError) -> String {
        if path.hasPrefix("/") {
            guard FileManager.default.fileExists(atPath: path) else { throw TestServerError(message: "no file at \(path)") }
            return path
        }
        var folder = URL(fileURLWithPath: filePath).deletingLastPathComponent().standardizedFileURL
        var searched: [String] = []
        while true {
            let candidate = folder.appendingPathComponent(path).standardizedFileURL.path
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
            searched.append(folder.path)
            let parent = folder.deletingLastPathComponent()
            if parent.path == folder.path || searched.count > 64 { break }
            folder = parent
        }
        throw TestServerError(message: "no '\(path)' under \(searched.first ?? filePath) or any folder above it")
    }
}
