/// Changes a request makes to its session, made in place and undone if the
/// request's transaction fails.
///
/// `Session.transact` used to roll back by working on a copy; but a copy
/// shares storage with the original, so the first write to a collection
/// copied the whole collection, and inserting into one of n records cost
/// O(n). Now every change goes through these methods, which write in place
/// and record how to put back what they replaced; a failed transaction
/// replays that log backwards (`rollBack`). A request that succeeds pays
/// only for what it touches.
extension SessionData {
    /// One change, and how to take it back.
    enum Undo {
        case endpointCall(String, Int?)
        case rateWindow(String, RateWindow?)
        case sequencePosition(String, Int?)
        case stateSize(Int)
        /// The state entry at `path` (a state name, then keys) was `previous`, or absent when nil.
        case stateEntry(path: [StateKey], previous: JSON?)
        /// An item was appended to the list at `path`.
        case appended(path: [StateKey])
        /// `previous` was removed from the list at `path`, at `position`.
        case removedItem(path: [StateKey], position: Int, previous: JSON)
        /// The forced answers before the change.
        case forced([Override])
    }

    /// Forces the answer to `endpointID`'s next call not yet forced; false
    /// when the session holds `maximumForced` already.
    package mutating func force(_ response: ResponseDefinition, endpointID: String) -> Bool {
        guard forced.count < Self.maximumForced else { return false }
        undo.append(.forced(forced))
        forced.append(Override(endpointID: endpointID, call: nil, response: response, delay: nil, fault: nil))
        return true
    }

    /// Drops every forced answer.
    package mutating func dropForced() {
        guard !forced.isEmpty else { return }
        undo.append(.forced(forced))
        forced.removeAll()
    }

    /// The oldest forced answer for `endpointID`, if one waits; it is used up.
    @discardableResult
    mutating func takeForced(endpointID: String) -> Override? {
        guard !forced.isEmpty, let index = forced.firstIndex(where: { $0.endpointID == endpointID }) else { return nil }
        undo.append(.forced(forced))
        return forced.remove(at: index)
    }

    /// The state paths the current transaction changed, in the order first
    /// changed (`stories_used`, `stories.s_1`), at most `MockResponse.maximumChanges`.
    package var changedPaths: [String] {
        var paths: [String] = []
        for step in undo {
            let path: [StateKey]
            switch step {
            case .stateEntry(let at, _), .appended(let at), .removedItem(let at, _, _): path = at
            default: continue
            }
            let text = Self.journalText(of: path)
            if !paths.contains(text) { paths.append(text) }
            if paths.count == MockResponse.maximumChanges { break }
        }
        return paths
    }

    /// A changed path as the journal shows it: its keys joined by dots,
    /// line breaks written `\n`, and (keys may come from requests) cut to
    /// 200 characters. Built in one string, the rare line break and long
    /// path handled apart: it runs in every changing request's transaction.
    static func journalText(of path: [StateKey]) -> String {
        var text = ""
        for (index, key) in path.enumerated() {
            if index > 0 { text += "." }
            switch key {
            case .name(let name): text += name
            case .position(let position): text += String(position)
            }
        }
        if text.utf8.contains(10) { text = text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\\n") }
        // At most 200 bytes are at most 200 characters: counted only past that.
        if text.utf8.count > 200, text.count > 200 { text = String(text.prefix(199)) + "…" }
        return text
    }

    /// Counts a call to an endpoint; returns which call it is (1 for the first).
    mutating func countCall(to endpointID: String) -> Int {
        let previous = endpointCalls[endpointID]
        undo.append(.endpointCall(endpointID, previous))
        endpointCalls[endpointID] = (previous ?? 0) + 1
        return (previous ?? 0) + 1
    }

    mutating func setRateWindow(_ window: RateWindow, for key: String) {
        undo.append(.rateWindow(key, rateWindows[key]))
        rateWindows[key] = window
    }

    /// Moves a sequence on; returns its position before the move.
    mutating func advanceSequence(_ key: String) -> Int {
        let previous = sequencePositions[key]
        undo.append(.sequencePosition(key, previous))
        sequencePositions[key] = (previous ?? 0) + 1
        return previous ?? 0
    }

    /// Puts back everything recorded since the transaction began, newest first.
    mutating func rollBack() {
        while let step = undo.popLast() {
            switch step {
            case .endpointCall(let id, let previous): endpointCalls[id] = previous
            case .rateWindow(let key, let previous): rateWindows[key] = previous
            case .sequencePosition(let key, let previous): sequencePositions[key] = previous
            case .stateSize(let previous): stateSize = previous
            case .forced(let previous): forced = previous
            case .stateEntry(let path, let previous): restore(path) { $0 = previous }
            case .appended(let path):
                restore(path) { list in
                    if case .array(var items)? = list {
                        items.removeLast()
                        list = .array(items)
                    }
                }
            case .removedItem(let path, let position, let previous):
                restore(path) { list in
                    if case .array(var items)? = list {
                        items.insert(previous, at: position)
                        list = .array(items)
                    }
                }
            }
        }
    }

    /// Runs `change` on the state entry at `path` (nil when absent; leaving nil removes it).
    /// Only a failed transaction gets here, so plain copies are fine.
    private mutating func restore(_ path: [StateKey], _ change: (inout JSON?) -> Void) {
        var root: JSON? = .object(state)
        Self.restore(&root, path[...], change)
        if case .object(let restored)? = root { state = restored }
    }

    private static func restore(_ value: inout JSON?, _ path: ArraySlice<StateKey>, _ change: (inout JSON?) -> Void) {
        guard let key = path.first else {
            change(&value)
            return
        }
        switch (value, key) {
        case (.object(var object)?, _):
            var child = object[key.memberName]
            restore(&child, path.dropFirst(), change)
            object[key.memberName] = child
            value = .object(object)
        case (.array(var items)?, .position(let index)) where items.indices.contains(index):
            var child: JSON? = items[index]
            restore(&child, path.dropFirst(), change)
            items[index] = child ?? .null
            value = .array(items)
        default:
            return
        }
    }
}

/// A step of an effect's path below the state: a member name or a list position.
enum StateKey {
    case name(String)
    case position(Int)

    /// The key as an object member's name.
    var memberName: String {
        switch self {
        case .name(let name): name
        case .position(let index): String(index)
        }
    }
}
