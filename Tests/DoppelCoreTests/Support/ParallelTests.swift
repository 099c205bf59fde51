import Foundation
import Testing

@testable import DoppelCore

@Suite struct ParallelTests {
    @Test(arguments: [0, 1, 99, 100, 199, 200, 201, 1_000, 1_001])
    func slicesCoverEveryItemOnceInOrder(count: Int) {
        let items = Array(0..<count)
        let slices = Parallel.mapSlices(items, minimumPerSlice: 100) { Array($0) }
        #expect(slices.flatMap { $0 } == items)
        #expect(slices.allSatisfy { !$0.isEmpty } || count == 0)
        // A few slices a core, each of at least the minimum.
        #expect(slices.count <= max(1, ProcessInfo.processInfo.activeProcessorCount * 4))
        #expect(slices.allSatisfy { $0.count >= 100 } || slices.count == 1)
        // Fewer than two slices' worth runs as one.
        if count < 200 { #expect(slices.count == 1) }
    }
}
