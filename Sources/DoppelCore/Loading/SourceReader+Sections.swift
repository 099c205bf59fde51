import Foundation

/// Reading a large YAML file on every core.
///
/// libyaml reads a file one byte after another, and a document of 1,000
/// OpenAPI operations (half a megabyte) took it a third of its load. Such a
/// file is almost all one top-level section (`paths:`, `endpoints:`) whose
/// entries start on lines of one indentation. So each large section is cut
/// at those lines into pieces, the pieces are read on every core, the rest of
/// the file is read beside them (with the sections' lines left blank, so
/// that every line keeps its number), and the pieces are joined into the
/// tree one pass would have built.
///
/// The cut is taken only when it reads what one pass would: any piece that
/// does not read cleanly (an anchor used across pieces, a flow collection or
/// a quoted scalar that spans a cut, a problem of any kind), an anchor name
/// defined in two pieces (or in a piece and the rest of the file), a key repeated
/// between pieces, or a file over the node budget sends the whole file to
/// one pass, which reports what is wrong as always. A file with line breaks
/// other than LF is read in one pass too, because libyaml counts CR, NEL, LS
/// and PS as line breaks and the lines would not be numbered alike.
extension SourceReader {
    /// When and how finely a file is cut.
    struct SectionSplit: Sendable {
        /// Smaller files are read in one pass: threads cost more than they save.
        static let minimumFileSize = 128 << 10
        /// Smaller sections are left to the pass over the rest of the file.
        var minimumSectionSize = 64 << 10
        /// Pieces per section: a few per core, so that cores finish together.
        var pieces = max(2, Parallel.cores) * 3
    }

    /// A top-level section whose value is a block mapping, found by `plan`.
    struct Section {
        /// The line (0-based) of `key:`.
        let keyLine: Int
        /// Where its body (the lines after `key:`) starts and ends.
        let bodyStart: Int
        var bodyEnd: Int
        /// Where and on which line (0-based) each entry of the body starts;
        /// the cuts are made at these.
        var entries: [(offset: Int, line: Int)] = []
        /// The indentation of the entries; nil until the first is seen.
        var indentation: Int?
        /// False once a line shows that the body is not a block mapping.
        var splittable = true
    }

    /// The tree of a YAML file read in sections, or nil when it is not read
    /// that way (too small, nothing to cut, or not read as one pass would).
    static func readInSections(_ bytes: UnsafeBufferPointer<UInt8>, file: String, split: SectionSplit) -> SourceNode? {
        guard let sections = plan(bytes, split: split), !sections.isEmpty else { return nil }

        let skeleton = skeleton(of: bytes, without: sections)
        let pieces = pieces(of: sections, split: split)

        // Read: the skeleton is task 0, each piece a task of its own.
        struct Read {
            var root: SourceNode?
            var nodes = 0
            var isBlockMapping = false
            /// The anchor names it defines.
            var anchors: [String] = []
        }
        let cuts = pieces
        let reads = skeleton.withUnsafeBufferPointer { skeleton in
            nonisolated(unsafe) let skeleton = skeleton
            nonisolated(unsafe) let bytes = bytes
            return Parallel.map(count: cuts.count + 1) { task -> Read in
                var builder: TreeBuilder
                let root: SourceNode?
                if task == 0 {
                    builder = TreeBuilder(file: file)
                    root = builder.read(skeleton)
                } else {
                    let piece = cuts[task - 1]
                    builder = TreeBuilder(file: file, lineOffset: piece.line, depthOffset: 1)
                    root = builder.read(UnsafeBufferPointer(rebasing: bytes[piece.start..<piece.end]))
                }
                guard builder.problem == nil else { return Read() }
                return Read(root: root, nodes: builder.nodes, isBlockMapping: builder.rootIsBlockMapping, anchors: Array(builder.anchors.keys))
            }
        }

        // An anchor defined in two reads: an alias names the latest
        // definition before it in the file, which a read cannot see in
        // another, so the pieces could resolve it otherwise than one pass.
        var defined = Set<String>()
        for read in reads {
            for anchor in read.anchors where !defined.insert(anchor).inserted { return nil }
        }

        // Join, checking that this is the tree one pass builds.
        guard reads[0].isBlockMapping, let skeletonRoot = reads[0].root, var top = skeletonRoot.mappingPairs else { return nil }
        // The skeleton counted an empty value for each section.
        var nodes = reads[0].nodes - sections.count
        var pairsBySection = [[(key: SourceNode, value: SourceNode)]](repeating: [], count: sections.count)
        var rootBySection = [SourceNode?](repeating: nil, count: sections.count)
        for (index, piece) in pieces.enumerated() {
            let read = reads[index + 1]
            guard read.isBlockMapping, let root = read.root, let pairs = root.mappingPairs else { return nil }
            if rootBySection[piece.section] == nil {
                rootBySection[piece.section] = root
            } else {
                nodes -= 1  // Each piece counted a mapping; the section is one.
            }
            nodes += read.nodes
            pairsBySection[piece.section] += pairs
        }
        guard nodes <= maximumNodes else { return nil }
        for (index, section) in sections.enumerated() {
            var keys = Set<String>()
            for pair in pairsBySection[index] {
                guard let key = pair.key.scalarText, keys.insert(key).inserted else { return nil }
            }
            // The skeleton reads `key:` with an empty value at the key's line, column 1.
            guard let slot = top.firstIndex(where: { $0.key.line == section.keyLine + 1 && $0.key.column == 1 }),
                case .scalar("", plain: true) = top[slot].value.kind,
                let first = rootBySection[index]
            else { return nil }
            top[slot].value = SourceNode(kind: .mapping(pairsBySection[index]), fileID: first.fileID, line: first.line, column: first.column)
        }
        return SourceNode(kind: .mapping(top), fileID: skeletonRoot.fileID, line: skeletonRoot.line, column: skeletonRoot.column)
    }

    /// The rest of the file: each section's body as as many empty lines.
    private static func skeleton(of bytes: UnsafeBufferPointer<UInt8>, without sections: [Section]) -> [UInt8] {
        var skeleton: [UInt8] = []
        skeleton.reserveCapacity(bytes.count - sections.reduce(0) { $0 + $1.bodyEnd - $1.bodyStart } + 4096)
        var copied = 0
        for section in sections {
            skeleton.append(contentsOf: bytes[copied..<section.bodyStart])
            let lines = newlines(in: bytes, section.bodyStart..<section.bodyEnd)
            skeleton.append(contentsOf: repeatElement(newline, count: lines))
            copied = section.bodyEnd
        }
        skeleton.append(contentsOf: bytes[copied...])
        return skeleton
    }

    /// A run of whole entries of one section, read as a task of its own.
    private struct Piece {
        let section: Int
        let start: Int
        let end: Int
        let line: Int
    }

    /// The pieces: runs of whole entries of about the same size.
    private static func pieces(of sections: [Section], split: SectionSplit) -> [Piece] {
        var pieces: [Piece] = []
        for (index, section) in sections.enumerated() {
            let target = max(1, (section.bodyEnd - section.bodyStart) / split.pieces)
            var start = (offset: section.bodyStart, line: section.keyLine + 1)
            for entry in section.entries.dropFirst() where entry.offset - start.offset >= target {
                pieces.append(Piece(section: index, start: start.offset, end: entry.offset, line: start.line))
                start = entry
            }
            pieces.append(Piece(section: index, start: start.offset, end: section.bodyEnd, line: start.line))
        }
        return pieces
    }

    private static let newline = UInt8(ascii: "\n")

    /// The large top-level sections of a file worth reading in pieces; nil
    /// when the file must be read in one pass.
    static func plan(_ bytes: UnsafeBufferPointer<UInt8>, split: SectionSplit) -> [Section]? {
        let count = bytes.count
        // Line breaks libyaml counts and this does not: CR, NEL (C2 85), LS and PS (E2 80 A8/A9).
        if find(UInt8(0x0D), in: bytes, from: 0) != nil { return nil }
        var at = 0
        while let lead = find(0xC2, in: bytes, from: at) {
            if lead + 1 < count, bytes[lead + 1] == 0x85 { return nil }
            at = lead + 1
        }
        at = 0
        while let lead = find(0xE2, in: bytes, from: at) {
            if lead + 2 < count, bytes[lead + 1] == 0x80, bytes[lead + 2] == 0xA8 || bytes[lead + 2] == 0xA9 { return nil }
            at = lead + 1
        }

        let space = UInt8(ascii: " ")
        let hash = UInt8(ascii: "#")
        let colon = UInt8(ascii: ":")
        let tab = UInt8(ascii: "\t")
        var sections: [Section] = []
        var open: Section?
        func close(at offset: Int) {
            guard var section = open else { return }
            open = nil
            section.bodyEnd = offset
            if section.splittable, section.entries.count >= 2, section.bodyEnd - section.bodyStart >= split.minimumSectionSize {
                sections.append(section)
            }
        }
        var offset = 0
        var line = 0
        while offset < count {
            let start = offset
            var indentation = 0
            while offset < count, bytes[offset] == space {
                offset += 1
                indentation += 1
            }
            let first: UInt8? = offset < count ? bytes[offset] : nil
            let end = find(newline, in: bytes, from: offset) ?? count
            offset = end + 1  // past the LF
            defer { line += 1 }
            guard let first, first != newline, first != hash else { continue }  // blank or comment
            if indentation == 0 {
                // A top-level line ends the open section; `key:` alone (or
                // with a comment after a space) opens one.
                close(at: start)
                guard isKeyCharacter(first, leading: true) else { continue }
                var keyEnd = start + 1
                while keyEnd < end, isKeyCharacter(bytes[keyEnd], leading: false) { keyEnd += 1 }
                guard keyEnd < end, bytes[keyEnd] == colon else { continue }
                var rest = keyEnd + 1
                while rest < end, bytes[rest] == space || bytes[rest] == tab { rest += 1 }
                if rest == end || bytes[rest] == hash && rest > keyEnd + 1 {
                    open = Section(keyLine: line, bodyStart: min(end + 1, count), bodyEnd: count)
                }
                continue
            }
            guard open != nil, open!.splittable else { continue }
            if open!.indentation == nil {
                open!.indentation = indentation
                // A list, a flow collection or a scalar is not cut.
                if !isEntryStart(first) { open!.splittable = false }
            }
            if indentation == open!.indentation, isEntryStart(first) {
                open!.entries.append((start, line))
            }
        }
        close(at: count)
        return sections
    }

    /// The offset of the first `byte` at or after `from`, found by `memchr`.
    static func find(_ byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        guard from < bytes.count, let base = bytes.baseAddress,
            let found = memchr(base + from, Int32(byte), bytes.count - from)
        else { return nil }
        return UnsafeRawPointer(found) - UnsafeRawPointer(base)
    }

    /// How many LFs there are in `range`.
    static func newlines(in bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int {
        var lines = 0
        var at = range.lowerBound
        while let found = find(newline, in: bytes, from: at), found < range.upperBound {
            lines += 1
            at = found + 1
        }
        return lines
    }

    /// Whether a line's first character, at the entries' indentation, starts
    /// an entry: not a list item, a complex key's `?` or `:`, a tab or a flow
    /// collection's bracket.
    private static func isEntryStart(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "-"), UInt8(ascii: "?"), UInt8(ascii: ":"), UInt8(ascii: "\t"),
            UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ","):
            false
        default:
            true
        }
    }

    /// The characters of a top-level key a section is opened by: a plain name.
    private static func isKeyCharacter(_ byte: UInt8, leading: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"): true
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"): !leading
        default: false
        }
    }
}
