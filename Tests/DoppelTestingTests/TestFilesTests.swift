import DoppelTesting
import Foundation
import Testing

struct TestFilesTests {
    @Test func aRelativePathIsFoundInTheFoldersAboveTheTest() throws {
        let found = try TestFiles.resolve("contracts/tales.yaml", relativeTo: #filePath)
        #expect(found.hasSuffix("/contracts/tales.yaml"))
        #expect(FileManager.default.fileExists(atPath: found))
        // Beside the test file itself.
        #expect(try TestFiles.resolve("TestFilesTests.swift", relativeTo: #filePath) == #filePath)
    }

    @Test func aMissingFileSaysWhereItWasLookedFor() {
        #expect {
            try TestFiles.resolve("contracts/nowhere.yaml", relativeTo: #filePath)
        } throws: { error in
            "\(error)".contains("no 'contracts/nowhere.yaml' under \(URL(fileURLWithPath: #filePath).deletingLastPathComponent().path)")
        }
        #expect(throws: TestServerError.self) { try TestFiles.resolve("/nowhere/tales.yaml", relativeTo: #filePath) }
    }

    @Test func aBrokenContractFailsTheTestThatAsksForIt() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("doppel-testing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("broken.yaml")
        try Data("doppel: 1\nendpoints:\n  x:\n    request: FETCH /x\n".utf8).write(to: file)
        await #expect(throws: ContractError.self) { try await DoppelTestServer.shared(contract: file.path) }
    }
}
