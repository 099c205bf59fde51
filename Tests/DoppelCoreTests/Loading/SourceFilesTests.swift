import Dispatch
import Foundation
import Testing

@testable import DoppelCore

/// File names kept once, numbered, for the nodes read from them.
@Suite struct SourceFilesTests {
    @Test func aNameKeepsItsNumberAndANodeItsPlace() {
        let file = "files-\(UUID().uuidString)/contract.yaml"
        let id = SourceFiles.id(file)
        #expect(SourceFiles.id(file) == id)
        #expect(SourceFiles.id(String(file.utf8.map { Character(UnicodeScalar($0)) })) == id, "the same name, other storage")
        #expect(SourceFiles.name(id) == file)
        let node = SourceNode(kind: .scalar("x", plain: true), location: SourceLocation(file: file, line: 12, column: 7), contentOffset: 1)
        #expect(node.location == SourceLocation(file: file, line: 12, column: 7))
        #expect(node.contentOffset == 1)
        #expect(node.contentLocation == SourceLocation(file: file, line: 12, column: 8))
        // Places past what 32 bits hold are clamped, not wrapped.
        let far = SourceNode(kind: .sequence([]), location: SourceLocation(file: file, line: Int.max, column: -5))
        #expect(far.location.line == Int(Int32.max) && far.location.column == -5)
    }

    @Test func namesGivenFromManyThreadsAtOnceAreEachGivenOneNumber() {
        // 8 threads give numbers to the same 200 names in different orders,
        // and read every name back as they go.
        let names = (0..<200).map { "threads-\(UUID().uuidString)-\($0).yaml" }
        let found = Locked<[[UInt32]]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var ids = [UInt32](repeating: 0, count: names.count)
            for step in 0..<names.count {
                // Each thread from its own start, half of them backwards.
                let rotated = (step + thread * 37) % names.count
                let index = thread % 2 == 0 ? rotated : names.count - 1 - rotated
                ids[index] = SourceFiles.id(names[index])
                precondition(SourceFiles.name(ids[index]) == names[index])
            }
            found.withLock { $0.append(ids) }
        }
        let all = found.withLock { $0 }
        #expect(all.count == 8)
        #expect(all.allSatisfy { $0 == all[0] })
        #expect(Set(all[0]).count == names.count)
        #expect(zip(all[0], names).allSatisfy { SourceFiles.name($0) == $1 })
    }
}
