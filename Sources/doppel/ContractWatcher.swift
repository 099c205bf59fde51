import DoppelCore
import Foundation

/// Watches a contract for `doppel serve --watch`: its file and the body
/// files it reads, polled every `interval` by modification time and size.
/// Polling, not inotify or FSEvents: the same on Linux and macOS, and a
/// quarter second is quick enough for a person editing a file.
struct ContractWatcher: Sendable {
    let contractFile: String
    var interval: Duration = .milliseconds(250)

    struct Stamp: Equatable {
        let modified: Date?
        let size: Int?
    }

    static func stamps(_ files: [String]) -> [String: Stamp] {
        var stamps: [String: Stamp] = [:]
        for file in files {
            // Through symbolic links: `attributesOfItem` describes a link
            // itself, which does not change when the file it points to does.
            let attributes = try? FileManager.default.attributesOfItem(atPath: URL(fileURLWithPath: file).resolvingSymlinksInPath().path)
            stamps[file] = Stamp(modified: attributes?[.modificationDate] as? Date, size: (attributes?[.size] as? NSNumber)?.intValue)
        }
        return stamps
    }

    /// Calls `changed` after each change to the contract or one of `bodyFiles`,
    /// once the files have stood still for one interval (an editor may write a
    /// file in several steps), until the task is cancelled. `changed` returns
    /// the body files to watch from then on (nil keeps the list).
    ///
    /// `baseline`: the files' stamps when the contract was read. A change
    /// made after the read and before this task starts (a busy machine may
    /// take seconds to start it) is then a change too, not the baseline.
    func run(bodyFiles: [String], since baseline: [String: Stamp]? = nil, changed: @Sendable () async -> [String]?) async {
        var files = [contractFile] + bodyFiles
        var last = baseline ?? Self.stamps(files)
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            var now = Self.stamps(files)
            guard now != last else { continue }
            // Settle: wait until two looks agree.
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                let again = Self.stamps(files)
                if again == now { break }
                now = again
            }
            if let newBodyFiles = await changed() { files = [contractFile] + newBodyFiles }
            last = Self.stamps(files)
        }
    }
}
