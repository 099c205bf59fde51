// libyaml, as Yams carries it. Doppel reads its events directly: Yams's
// `compose` builds a tree of its own `Node`s (with a duplicate-key pass that
// hashes every key of every mapping) that would then be copied into
// `SourceNode`s, which took three quarters of the time to read a large
// document. Reading events builds each `SourceNode` once.
internal import CYaml
import Foundation

/// The C library's `read`, which `SourceReader.read` hides inside the type.
private func readPOSIX(_ descriptor: Int32, _ buffer: UnsafeMutablePointer<UInt8>, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

/// Reads YAML text into a `SourceNode` tree, turning syntax errors into diagnostics.
///
/// The tree is bounded (`docs/limits.md`): at most `maximumNodes` nodes once
/// aliases are expanded, so a few hundred bytes of nested aliases (a
/// "billion laughs" document) are refused instead of filling memory, and at
/// most `maximumDepth` levels deep.
package enum SourceReader {
    /// The most nodes a document may have, aliases expanded.
    package static let maximumNodes = 1_000_000
    /// The deepest nesting of mappings and lists.
    package static let maximumDepth = 256
    /// The largest contract or scenario file read, in bytes.
    package static let maximumFileSize = 16 << 20

    /// Parses one YAML document. Syntax errors become a diagnostic at their mark.
    package static func read(_ text: String, file: String) -> Result<SourceNode?, ContractError> {
        var text = text
        return text.withUTF8 { parse($0, file: file) }
    }

    /// Parses UTF-8 YAML where it is (libyaml reads it in place): a large
    /// file in sections on every core when that reads as one pass would.
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, file: String) -> Result<SourceNode?, ContractError> {
        if bytes.count >= SectionSplit.minimumFileSize, let root = readInSections(bytes, file: file, split: SectionSplit()) {
            return .success(root)
        }
        var builder = TreeBuilder(file: file)
        let root = builder.read(bytes)
        if let problem = builder.problem {
            return .failure(ContractError(diagnostics: [longKey(in: bytes, file: file) ?? problem]))
        }
        return .success(root)
    }

    /// libyaml takes a key written without `? ` up to 1,024 characters: a
    /// longer JSON key fails as a YAML syntax error far from its cause. The
    /// key is named instead (JSON documents are read as YAML, and a key of
    /// that length in an API document is rare enough not to read them twice).
    static func longKey(in bytes: UnsafeBufferPointer<UInt8>, file: String) -> Diagnostic? {
        var line = 1
        var column = 1
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
                index += 1
                continue
            }
            guard byte == UInt8(ascii: "\"") else {
                if byte & 0xC0 != 0x80 { column += 1 }
                index += 1
                continue
            }
            // A double-quoted string: its length in characters, then what follows it.
            let (startLine, startColumn) = (line, column)
            var characters = 0
            index += 1
            column += 1
            while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\n") {
                if bytes[index] == UInt8(ascii: "\\") {
                    index += 1
                    column += 1
                }
                if index < bytes.count, bytes[index] & 0xC0 != 0x80 {
                    characters += 1
                    column += 1
                }
                index += 1
            }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { continue }
            index += 1
            column += 1
            var next = index
            while next < bytes.count, bytes[next] == UInt8(ascii: " ") || bytes[next] == UInt8(ascii: "\t") { next += 1 }
            if characters > 1_024, next < bytes.count, bytes[next] == UInt8(ascii: ":") {
                return Diagnostic(
                    at: SourceLocation(file: file, line: startLine, column: startColumn),
                    "a mapping key of \(characters) characters: Doppel reads JSON as YAML, whose parser takes keys of up to 1,024 characters; shorten the key, or write the document as YAML with the key after '? '"
                )
            }
        }
        return nil
    }

    /// Reads a contract or scenario file as UTF-8 text, with a clear diagnostic
    /// for what is not one: a missing file, a folder, a device, an oversized
    /// file, or bytes that are not UTF-8 (located at the first bad byte).
    package static func readFile(_ file: String, what: String) -> Result<String, ContractError> {
        let bytes: [UInt8]
        switch readBytes(file, what: what) {
        case .success(let read): bytes = read
        case .failure(let reason): return .failure(ContractError(diagnostics: [unreadable(file, what: what, reason)]))
        }
        if let text = String(validating: bytes, as: UTF8.self) { return .success(text) }
        return .failure(ContractError(diagnostics: [notUTF8(bytes, file: file, what: what)]))
    }

    /// Reads and parses a contract or scenario file: `readFile` and `read`
    /// in one, with the same diagnostics, without making a String of the
    /// whole text. libyaml refuses bytes that are not UTF-8 as it reads
    /// them, and reads them all to finish, so the text is checked for UTF-8
    /// only when it does not read.
    package static func readTree(file: String, what: String) -> Result<SourceNode?, ContractError> {
        let bytes: [UInt8]
        switch readBytes(file, what: what) {
        case .success(let read): bytes = read
        case .failure(let reason): return .failure(ContractError(diagnostics: [unreadable(file, what: what, reason)]))
        }
        return bytes.withUnsafeBufferPointer { buffer in
            let read = parse(buffer, file: file)
            // Bytes that are not UTF-8 are reported first, wherever they are,
            // as `readFile` reports them.
            if case .failure = read, String(validating: buffer, as: UTF8.self) == nil {
                return .failure(ContractError(diagnostics: [notUTF8(bytes, file: file, what: what)]))
            }
            return read
        }
    }

    private static func unreadable(_ file: String, what: String, _ reason: Unreadable) -> Diagnostic {
        Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "cannot read \(what): \(reason.message)")
    }

    /// The diagnostic for bytes that are not UTF-8, at the first bad byte.
    private static func notUTF8(_ bytes: [UInt8], file: String, what: String) -> Diagnostic {
        var line = 1
        var lineStart = 0
        var offset = 0
        while offset < bytes.count {
            let length = utf8SequenceLength(bytes, at: offset)
            if length == 0 { break }
            if bytes[offset] == 0x0A {
                line += 1
                lineStart = offset + 1
            }
            offset += length
        }
        let column = (String(decoding: bytes[lineStart..<offset], as: UTF8.self).count) + 1
        return Diagnostic(
            at: SourceLocation(file: file, line: line, column: column),
            "the \(what) is not UTF-8 text: byte 0x\(String(bytes[offset], radix: 16, uppercase: true)) at byte offset \(offset)")
    }

    /// Why a file could not be read, in a few words for a diagnostic.
    package struct Unreadable: Error, Sendable {
        package let message: String
    }

    /// The bytes of a regular file of at most `maximumFileSize` bytes; anything
    /// else (missing, a folder, a FIFO or device that would block or never end,
    /// too large, unreadable) is refused with the reason.
    package static func readBytes(_ file: String, what: String) -> Result<[UInt8], Unreadable> {
        // POSIX calls rather than FileManager: its attribute dictionary and
        // Data copy took 2 ms of the 50 ms a document of 1,000 operations
        // takes to load. The file is looked at before it is opened (a FIFO
        // or a device is never opened), and again once open.
        var info = stat()
        guard stat(file, &info) == 0 else {
            return .failure(Unreadable(message: errno == EACCES ? "permission denied or unreadable" : "no such file"))
        }
        if info.st_mode & S_IFMT == S_IFDIR { return .failure(Unreadable(message: "it is a folder, not a file")) }
        guard info.st_mode & S_IFMT == S_IFREG else { return .failure(Unreadable(message: "not a regular file")) }
        let tooLarge = { (size: Int) in Unreadable(message: "\(size) bytes is more than the \(maximumFileSize >> 20) MiB a \(what) may have") }
        if Int(info.st_size) > maximumFileSize { return .failure(tooLarge(Int(info.st_size))) }
        let descriptor = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(Unreadable(message: "permission denied or unreadable")) }
        defer { close(descriptor) }
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return .failure(Unreadable(message: "not a regular file")) }
        if Int(info.st_size) > maximumFileSize { return .failure(tooLarge(Int(info.st_size))) }
        // Read to the end, whatever the size said: a file may grow or shrink
        // meanwhile; one byte more than the limit shows it is too large.
        // Each part is read into fresh capacity, not zeroed first.
        var bytes: [UInt8] = []
        var room = min(Int(info.st_size) + 1, maximumFileSize + 1)
        while true {
            var failed = false
            let part = [UInt8](unsafeUninitializedCapacity: room) { buffer, count in
                count = 0
                while count < buffer.count {
                    let got = readPOSIX(descriptor, buffer.baseAddress! + count, buffer.count - count)
                    if got < 0, errno == EINTR { continue }
                    if got < 0 { failed = true }
                    if got <= 0 { break }
                    count += got
                }
            }
            if failed { return .failure(Unreadable(message: "permission denied or unreadable")) }
            if bytes.isEmpty { bytes = part } else { bytes += part }
            if bytes.count > maximumFileSize { return .failure(tooLarge(bytes.count)) }
            if part.count < room { break }  // the end of the file
            room = min(64 << 10, maximumFileSize + 1 - bytes.count)
        }
        return .success(bytes)
    }

    /// The length of the valid UTF-8 sequence at `offset`, or 0 when it is not one.
    private static func utf8SequenceLength(_ bytes: [UInt8], at offset: Int) -> Int {
        let first = bytes[offset]
        let length: Int
        switch first {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return 0
        }
        guard offset + length <= bytes.count else { return 0 }
        let slice = Array(bytes[offset..<offset + length])
        return String(validating: slice, as: UTF8.self) == nil ? 0 : length
    }

    /// Builds `SourceNode`s from libyaml's events: scalars with their style
    /// and place, mappings and lists, anchors and aliases (an alias is a copy
    /// of its anchor's node, counted against the node budget as expanded).
    struct TreeBuilder {
        let file: String
        /// The file's number in `SourceFiles`, for every node.
        let fileID: UInt32
        /// Lines before the text read, when it is a section of a file.
        var lineOffset = 0
        /// Levels of nesting around the text read, when it is a section of a file.
        var depthOffset = 0
        /// Whether the root is a block mapping (not a flow `{...}` one).
        var rootIsBlockMapping = false
        var nodes = 0
        var problem: Diagnostic?
        var anchors: [String: (node: SourceNode, count: Int)] = [:]

        /// A mapping or list being read. Its finished members wait on
        /// `members`, the one stack all open containers share, and become one
        /// array of exactly their count when it ends: no array per container
        /// growing as it is read.
        struct Frame {
            let isMapping: Bool
            let line: Int32
            let column: Int32
            let anchor: String?
            /// `nodes` when the container started, to count an anchor's size.
            let start: Int
            /// Where its members start on `members`.
            let first: Int
            /// To find a key the mapping has already.
            var keys = RepeatedKeys()
        }

        var stack: [Frame] = []
        /// The finished members of every open container, innermost last; a
        /// mapping's keys and values alternate.
        var members: [SourceNode] = []
        var root: SourceNode?
        var documents = 0

        init(file: String, lineOffset: Int = 0, depthOffset: Int = 0) {
            self.file = file
            self.fileID = SourceFiles.id(file)
            self.lineOffset = lineOffset
            self.depthOffset = depthOffset
        }

        func location(_ mark: yaml_mark_t) -> SourceLocation {
            SourceLocation(file: file, line: Int(mark.line) + 1 + lineOffset, column: Int(mark.column) + 1)
        }

        /// A mark as a node's line and column.
        func place(_ mark: yaml_mark_t) -> (line: Int32, column: Int32) {
            (Int32(clamping: Int(mark.line) + 1 + lineOffset), Int32(clamping: Int(mark.column) + 1))
        }

        mutating func fail(_ message: String, at location: SourceLocation) {
            if problem == nil { problem = Diagnostic(at: location, message) }
        }

        /// Reads UTF-8 YAML text (libyaml reads it in place).
        mutating func read(_ bytes: UnsafeBufferPointer<UInt8>) -> SourceNode? {
            var parser = yaml_parser_t()
            guard yaml_parser_initialize(&parser) == 1 else {
                fail("YAML: the parser could not start (out of memory)", at: SourceLocation(file: file, line: 1 + lineOffset, column: 1))
                return nil
            }
            defer { yaml_parser_delete(&parser) }
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            // libyaml wants a pointer even for empty input.
            let empty: [UInt8] = [0]
            empty.withUnsafeBufferPointer { placeholder in
                yaml_parser_set_input_string(&parser, bytes.baseAddress ?? placeholder.baseAddress, bytes.count)
                var event = yaml_event_t()
                while problem == nil {
                    guard yaml_parser_parse(&parser, &event) == 1 else {
                        syntaxError(parser)
                        return
                    }
                    let done = event.type == YAML_STREAM_END_EVENT
                    handle(&event)
                    yaml_event_delete(&event)
                    if done { return }
                }
            }
            return problem == nil ? root : nil
        }

        mutating func syntaxError(_ parser: yaml_parser_t) {
            let problemText = parser.problem.map { String(cString: $0) } ?? "unknown error"
            let contextText = parser.context.map { String(cString: $0) }
            let at = location(parser.problem_mark)
            switch parser.error {
            case YAML_READER_ERROR:
                fail("YAML: \(problemText)", at: SourceLocation(file: file, line: 1, column: 1))
            case YAML_MEMORY_ERROR:
                fail("YAML: out of memory", at: SourceLocation(file: file, line: 1, column: 1))
            default:
                if problemText.contains("Maximum nesting level") || contextText?.contains("Maximum nesting level") == true {
                    fail("YAML nests deeper than the parser allows (1000 levels; Doppel reads at most \(maximumDepth))", at: at)
                } else {
                    fail("YAML syntax: \(contextText.map { "\($0) " } ?? "")\(problemText)\(SourceReader.syntaxHint(problemText))", at: at)
                }
            }
        }

        static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            pointer.map { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
        }

        /// Counts a node against the budget and the depth limit; false when one is exceeded.
        mutating func admit(_ count: Int, at mark: yaml_mark_t) -> Bool {
            nodes += count
            if nodes > maximumNodes {
                fail("the YAML expands to more than \(maximumNodes) nodes (aliases of aliases?); Doppel reads at most that many", at: location(mark))
                return false
            }
            if stack.count + depthOffset > maximumDepth {
                fail("YAML nests deeper than \(maximumDepth) levels", at: location(mark))
                return false
            }
            return true
        }

        mutating func handle(_ event: inout yaml_event_t) {
            switch event.type {
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    fail("YAML syntax: expected a single document in the stream, but found another document", at: location(event.start_mark))
                }
            case YAML_SCALAR_EVENT:
                guard admit(1, at: event.start_mark) else { return }
                let here = place(event.start_mark)
                let scalar = event.data.scalar
                let text =
                    scalar.value.map {
                        String(decoding: UnsafeBufferPointer(start: $0, count: Int(scalar.length)), as: UTF8.self)
                    } ?? ""
                let quoted = scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE || scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE
                let node = SourceNode(
                    kind: .scalar(text, plain: scalar.style == YAML_PLAIN_SCALAR_STYLE), fileID: fileID, line: here.line, column: here.column,
                    contentOffset: quoted ? 1 : 0)
                if let anchor = Self.string(scalar.anchor) { anchors[anchor] = (node, 1) }
                add(node)
            case YAML_ALIAS_EVENT:
                let name = Self.string(event.data.alias.anchor) ?? ""
                guard let anchored = anchors[name] else {
                    fail("YAML syntax: found undefined alias", at: location(event.start_mark))
                    return
                }
                guard admit(anchored.count, at: event.start_mark) else { return }
                add(anchored.node)
            case YAML_MAPPING_START_EVENT, YAML_SEQUENCE_START_EVENT:
                guard admit(1, at: event.start_mark) else { return }
                let here = place(event.start_mark)
                let isMapping = event.type == YAML_MAPPING_START_EVENT
                if stack.isEmpty, root == nil { rootIsBlockMapping = isMapping && event.data.mapping_start.style == YAML_BLOCK_MAPPING_STYLE }
                let anchor = Self.string(isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor)
                stack.append(Frame(isMapping: isMapping, line: here.line, column: here.column, anchor: anchor, start: nodes, first: members.count))
            case YAML_MAPPING_END_EVENT, YAML_SEQUENCE_END_EVENT:
                guard let frame = stack.popLast() else { return }
                let kind: SourceNode.Kind
                if frame.isMapping {
                    var pairs: [(key: SourceNode, value: SourceNode)] = []
                    pairs.reserveCapacity((members.count - frame.first) / 2)
                    var index = frame.first
                    while index + 1 < members.count {
                        pairs.append((key: members[index], value: members[index + 1]))
                        index += 2
                    }
                    kind = .mapping(pairs)
                } else {
                    kind = .sequence(Array(members[frame.first...]))
                }
                members.removeSubrange(frame.first...)
                let node = SourceNode(kind: kind, fileID: fileID, line: frame.line, column: frame.column)
                // The container itself was counted when it started.
                if let anchor = frame.anchor { anchors[anchor] = (node, nodes - frame.start + 1) }
                add(node)
            default:
                break
            }
        }

        /// Puts a finished node into the container being read, or makes it the root.
        mutating func add(_ node: SourceNode) {
            guard let top = stack.indices.last else {
                root = node
                return
            }
            let count = members.count - stack[top].first
            if stack[top].isMapping, count % 2 == 0, let name = node.scalarText {
                let first = stack[top].first
                // Taken out of the frame while it is searched, so that its
                // set (when it has one) is not copied to grow.
                var keys = stack[top].keys
                stack[top].keys = RepeatedKeys()
                let repeated = keys.isRepeated(name, count: count / 2) { members[first + 2 * $0].scalarText }
                stack[top].keys = keys
                if repeated { fail("YAML: duplicate key '\(name)' in a mapping", at: node.location) }
            }
            members.append(node)
        }
    }
}

extension SourceReader {
    /// What libyaml's words usually mean, said plainly: most of its syntax
    /// errors are a line indented unlike its neighbours, or a `: ` inside a
    /// plain value.
    static func syntaxHint(_ problem: String) -> String {
        if problem.contains("did not find expected key") || problem.contains("did not find expected '-' indicator") {
            return " (check the indentation: this line is indented differently from the keys beside it)"
        }
        if problem.contains("mapping values are not allowed") {
            return " (a value holding ': ' must be quoted, or a line is indented under a key that already has a value)"
        }
        if problem.contains("found character that cannot start any token") {
            return " (a tab? YAML indents with spaces only; or quote a value starting with @ or `)"
        }
        return ""
    }
}
