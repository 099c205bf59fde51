import Foundation

/// The repository's root, found from this file's place (`Tests/DoppelTestSupport/`).
package let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
