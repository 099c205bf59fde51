import DoppelCore

/// Reads `.proto` files (proto3, and proto2's messages without groups) into
/// a `ProtoSchema`, reporting every problem at its line and column. Options
/// other than `packed` and `json_name`, and `extend` blocks (custom options,
/// proto2's extensions), are read and left: they do not change what a
/// message is on the wire or in JSON.
struct ProtoParser {
    private struct Token: Equatable {
        enum Kind: Equatable { case identifier, integer, float, string, symbol, end }
        let kind: Kind
        let text: String
        let line: Int
        let column: Int
    }

    /// A problem that ends the file's reading (the rest cannot be trusted).
    private struct Stop: Error {}

    private let file: String
    private var tokens: [Token] = []
    private var position = 0
    private(set) var diagnostics = DiagnosticCollector()
    private(set) var syntax = "proto2"
    private(set) var package = ""
    private(set) var imports: [(path: String, location: SourceLocation)] = []
    private(set) var messages: [ProtoMessage] = []
    private(set) var enums: [ProtoEnum] = []
    private(set) var services: [ProtoService] = []
    /// The scope each message's and service's references are resolved from.
    private(set) var scopes: [String: String] = [:]

    /// The most nested messages one file may declare in one another.
    static let maximumNesting = 32

    init(file: String, text: String) {
        self.file = file
        tokens = Self.tokenize(text, file: file, diagnostics: &diagnostics)
    }

    /// Reads the whole file.
    mutating func parse() {
        do {
            while !at(.end) {
                if accept(";") { continue }
                let keyword = try identifier("a declaration")
                switch keyword.text {
                case "syntax":
                    try expect("=")
                    let value = try string()
                    guard value.text == "proto3" || value.text == "proto2" else {
                        throw fail("syntax \"\(value.text)\" is not read here; use \"proto3\" or \"proto2\"", at: value)
                    }
                    syntax = value.text
                    try expect(";")
                case "edition":
                    throw fail("protobuf editions are not read here; use syntax = \"proto3\"", at: keyword)
                case "package":
                    package = try fullIdentifier().text
                    try expect(";")
                case "import":
                    if peek.kind == .identifier, ["public", "weak"].contains(peek.text) { position += 1 }
                    let path = try string()
                    imports.append((path.text, location(path)))
                    try expect(";")
                case "option": try skipStatement()
                case "message": try message(in: package, depth: 0)
                case "enum": try enumeration(in: package)
                case "service": try service()
                case "extend": try skipExtension()
                default: throw fail("expected a declaration (message, enum, service, import, package, option), found '\(keyword.text)'", at: keyword)
                }
            }
        } catch {}
    }

    // MARK: Declarations

    private mutating func message(in scope: String, depth: Int) throws {
        let nameToken = try identifier("a message name")
        guard depth < Self.maximumNesting else { throw fail("messages are nested more than \(Self.maximumNesting) deep", at: nameToken) }
        let name = Self.qualified(nameToken.text, in: scope)
        try expect("{")
        var fields: [ProtoField] = []
        var oneofs: [String] = []
        while !accept("}") {
            if at(.end) { throw fail("message \(nameToken.text) is not closed with '}'", at: peek) }
            if accept(";") { continue }
            let word = try identifier("a field or declaration")
            switch word.text {
            case "message": try message(in: name, depth: depth + 1)
            case "enum": try enumeration(in: name)
            case "option", "reserved", "extensions": try skipStatement()
            case "extend": try skipExtension()
            case "oneof":
                let oneofName = try identifier("a oneof name")
                oneofs.append(oneofName.text)
                try expect("{")
                while !accept("}") {
                    if at(.end) { throw fail("oneof \(oneofName.text) is not closed with '}'", at: peek) }
                    if accept(";") { continue }
                    if peek.text == "option" {
                        position += 1
                        try skipStatement()
                        continue
                    }
                    fields.append(try field(type: try fullIdentifier(), cardinality: .explicit, oneof: oneofs.count - 1, in: name))
                }
            case "map":
                fields.append(try mapField(at: word, in: name, depth: depth))
            case "repeated":
                fields.append(try field(type: try fullIdentifier(), cardinality: .repeated, oneof: nil, in: name))
            case "optional", "required":
                if word.text == "required", syntax == "proto3" { throw fail("proto3 has no 'required' fields", at: word) }
                fields.append(try field(type: try fullIdentifier(), cardinality: .explicit, oneof: nil, in: name))
            case "group":
                throw fail("groups are not read here", at: word)
            default:
                // A field without a label: proto3's implicit presence (a message field always has presence).
                fields.append(try field(type: word, cardinality: syntax == "proto3" ? .implicit : .explicit, oneof: nil, in: name))
            }
        }
        var numbers = Set<Int>()
        for field in fields where !numbers.insert(field.number).inserted {
            diagnostics.error("field number \(field.number) is used twice in message \(nameToken.text)", at: field.location)
        }
        messages.append(ProtoMessage(name: name, fields: fields, oneofs: oneofs, isMapEntry: false, location: location(nameToken)))
        scopes[name] = name
    }

    private mutating func field(type: Token, cardinality: ProtoField.Cardinality, oneof: Int?, in scope: String) throws -> ProtoField {
        if type.text == "group" { throw fail("groups are not read here", at: type) }
        let name = try identifier("a field name")
        try expect("=")
        let number = try fieldNumber()
        let options = try fieldOptions()
        // A message field has presence even in proto3; a name is known to be a message or an enum once resolved.
        let kind = ProtoScalar(rawValue: type.text).map { ProtoField.Kind.scalar($0) } ?? .message(type.text)
        let packable = { if case .scalar(let scalar) = kind { scalar.packable } else { true } }()
        let packed = cardinality == .repeated && packable && (options.packed ?? (syntax == "proto3"))
        return ProtoField(
            name: name.text, jsonName: options.jsonName ?? Self.jsonName(name.text), number: number, kind: kind, cardinality: cardinality,
            oneof: oneof, packed: packed, typeName: type.text, location: location(name))
    }

    private mutating func mapField(at word: Token, in scope: String, depth: Int) throws -> ProtoField {
        try expect("<")
        let keyToken = try identifier("a map's key type")
        guard let key = ProtoScalar(rawValue: keyToken.text), ![.double, .float, .bytes].contains(key) else {
            throw fail("a map's key is an integer, bool or string type, not '\(keyToken.text)'", at: keyToken)
        }
        try expect(",")
        let valueType = try fullIdentifier()
        try expect(">")
        let name = try identifier("a field name")
        try expect("=")
        let number = try fieldNumber()
        let options = try fieldOptions()
        let entryName = Self.qualified(Self.entryName(name.text), in: scope)
        let valueKind: ProtoField.Kind = ProtoScalar(rawValue: valueType.text).map { .scalar($0) } ?? .message(valueType.text)
        let entry = ProtoMessage(
            name: entryName,
            fields: [
                ProtoField(
                    name: "key", jsonName: "key", number: 1, kind: .scalar(key), cardinality: .implicit, oneof: nil, packed: false,
                    typeName: keyToken.text, location: location(keyToken)),
                ProtoField(
                    name: "value", jsonName: "value", number: 2, kind: valueKind, cardinality: .implicit, oneof: nil, packed: false,
                    typeName: valueType.text, location: location(valueType)),
            ], oneofs: [], isMapEntry: true, location: location(word))
        messages.append(entry)
        scopes[entryName] = scope
        return ProtoField(
            name: name.text, jsonName: options.jsonName ?? Self.jsonName(name.text), number: number, kind: .message(entryName),
            cardinality: .repeated, oneof: nil, packed: false, typeName: "." + entryName, location: location(name))
    }

    private mutating func enumeration(in scope: String) throws {
        let nameToken = try identifier("an enum name")
        try expect("{")
        var values: [(String, Int)] = []
        while !accept("}") {
            if at(.end) { throw fail("enum \(nameToken.text) is not closed with '}'", at: peek) }
            if accept(";") { continue }
            let valueName = try identifier("an enum value")
            if ["option", "reserved"].contains(valueName.text), peek.text != "=" {
                try skipStatement()
                continue
            }
            try expect("=")
            let negative = accept("-")
            let number = try integer()
            _ = try fieldOptions()
            try expect(";")
            values.append((valueName.text, negative ? -number : number))
        }
        if values.isEmpty { diagnostics.error("enum \(nameToken.text) has no values", at: location(nameToken)) }
        if syntax == "proto3", let first = values.first, first.1 != 0 {
            diagnostics.error("the first value of a proto3 enum is 0 (\(nameToken.text).\(first.0) is \(first.1))", at: location(nameToken))
        }
        enums.append(ProtoEnum(name: Self.qualified(nameToken.text, in: scope), values: values))
    }

    private mutating func service() throws {
        let nameToken = try identifier("a service name")
        let name = Self.qualified(nameToken.text, in: package)
        try expect("{")
        var methods: [ProtoMethod] = []
        while !accept("}") {
            if at(.end) { throw fail("service \(nameToken.text) is not closed with '}'", at: peek) }
            if accept(";") { continue }
            let word = try identifier("rpc")
            if word.text == "option" {
                try skipStatement()
                continue
            }
            guard word.text == "rpc" else { throw fail("expected 'rpc' in service \(nameToken.text), found '\(word.text)'", at: word) }
            let method = try identifier("a method name")
            try expect("(")
            let clientStreaming = peek.text == "stream" && tokens[position + 1].kind == .identifier ? accept("stream") : false
            let input = try fullIdentifier()
            try expect(")")
            guard try identifier("returns").text == "returns" else { throw fail("expected 'returns'", at: tokens[position - 1]) }
            try expect("(")
            let serverStreaming = peek.text == "stream" && tokens[position + 1].kind == .identifier ? accept("stream") : false
            let output = try fullIdentifier()
            try expect(")")
            if accept("{") {
                while !accept("}") {
                    if at(.end) { throw fail("method \(method.text) is not closed with '}'", at: peek) }
                    if accept(";") { continue }
                    _ = try identifier("option")
                    try skipStatement()
                }
            } else {
                try expect(";")
            }
            methods.append(
                ProtoMethod(
                    name: method.text, input: input.text, output: output.text, clientStreaming: clientStreaming, serverStreaming: serverStreaming,
                    location: location(method)))
        }
        services.append(ProtoService(name: name, methods: methods))
        scopes[name] = package
    }

    // MARK: Pieces

    private mutating func fieldNumber() throws -> Int {
        let token = peek
        let number = try integer()
        guard (1...536_870_911).contains(number), !(19_000...19_999).contains(number) else {
            throw fail("field number \(number) is outside 1 to 536870911 (19000 to 19999 are reserved)", at: token)
        }
        return number
    }

    /// `[packed = false, json_name = "x", ...]`: the two that matter here.
    private mutating func fieldOptions() throws -> (packed: Bool?, jsonName: String?) {
        var options: (packed: Bool?, jsonName: String?) = (nil, nil)
        guard accept("[") else { return options }
        repeat {
            let name = try optionName()
            try expect("=")
            let value = try constant()
            if name == "packed" { options.packed = value.text == "true" }
            if name == "json_name" { options.jsonName = value.text }
        } while accept(",")
        try expect("]")
        return options
    }

    private mutating func optionName() throws -> String {
        if accept("(") {
            let inner = try fullIdentifier().text
            try expect(")")
            var name = "(\(inner))"
            while peek.kind == .identifier, peek.text.hasPrefix(".") { name += next().text }
            return name
        }
        return try fullIdentifier().text
    }

    private mutating func constant() throws -> Token {
        if accept("{") {
            // An aggregate option value: skipped whole.
            try skipBlock("an option's value is not closed with '}'")
            return Token(kind: .string, text: "", line: 0, column: 0)
        }
        _ = accept("-") || accept("+")
        guard [.identifier, .integer, .float, .string].contains(peek.kind) else { throw fail("expected a value, found '\(peek.text)'", at: peek) }
        return next()
    }

    /// `extend Options { ... }`: custom options (`google/api/annotations.proto`'s `http`) and proto2's
    /// extensions, read past. An option's value never changes a message on the wire, and an
    /// extension's field is read as an unknown one: skipped.
    private mutating func skipExtension() throws {
        _ = try fullIdentifier()
        try expect("{")
        try skipBlock("an 'extend' block is not closed with '}'")
    }

    /// The rest of a `{` block already opened, whatever it holds, up to its matching `}`.
    private mutating func skipBlock(_ unclosed: String) throws {
        var depth = 1
        while depth > 0 {
            if at(.end) { throw fail(unclosed, at: peek) }
            if peek.text == "{" { depth += 1 }
            if peek.text == "}" { depth -= 1 }
            position += 1
        }
    }

    /// An option, `reserved` or `extensions` statement, up to its `;`.
    private mutating func skipStatement() throws {
        while !accept(";") {
            if at(.end) || peek.text == "}" { throw fail("expected ';'", at: peek) }
            if accept("{") {
                try skipBlock("expected '}'")
                continue
            }
            position += 1
        }
    }

    private var peek: Token { tokens[position] }

    private mutating func next() -> Token {
        defer { position += 1 }
        return tokens[position]
    }

    private func at(_ kind: Token.Kind) -> Bool { peek.kind == kind }

    private mutating func accept(_ symbol: String) -> Bool {
        guard peek.kind == .symbol || peek.kind == .identifier, peek.text == symbol else { return false }
        position += 1
        return true
    }

    private mutating func expect(_ symbol: String) throws {
        guard accept(symbol) else { throw fail("expected '\(symbol)', found \(describe(peek))", at: peek) }
    }

    private mutating func identifier(_ what: String) throws -> Token {
        guard peek.kind == .identifier else { throw fail("expected \(what), found \(describe(peek))", at: peek) }
        return next()
    }

    /// A dotted name (`a.b.C`, `.a.b.C`), as one token.
    private mutating func fullIdentifier() throws -> Token {
        let token = try identifier("a name")
        guard
            token.text.split(separator: ".", omittingEmptySubsequences: false).dropFirst(token.text.hasPrefix(".") ? 1 : 0)
                .allSatisfy({ Self.isIdentifier($0) })
        else { throw fail("'\(token.text)' is not a name", at: token) }
        return token
    }

    private mutating func string() throws -> Token {
        guard peek.kind == .string else { throw fail("expected a string, found \(describe(peek))", at: peek) }
        return next()
    }

    private mutating func integer() throws -> Int {
        guard peek.kind == .integer, let value = Self.integerValue(peek.text) else {
            throw fail("expected a whole number, found \(describe(peek))", at: peek)
        }
        position += 1
        return value
    }

    private func describe(_ token: Token) -> String { token.kind == .end ? "the end of the file" : "'\(token.text)'" }

    private func location(_ token: Token) -> SourceLocation { SourceLocation(file: file, line: token.line, column: token.column) }

    private mutating func fail(_ message: String, at token: Token) -> Stop {
        diagnostics.error(message, at: location(token))
        return Stop()
    }

    // MARK: Names

    static func qualified(_ name: String, in scope: String) -> String { scope.isEmpty ? name : scope + "." + name }

    /// protobuf's JSON name: `child_id` → `childId`.
    static func jsonName(_ name: String) -> String {
        var result = ""
        var upper = false
        for character in name {
            if character == "_" {
                upper = true
            } else if upper {
                result += character.uppercased()
                upper = false
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// A map field's entry message: `labels` → `LabelsEntry`, `child_ids` → `ChildIdsEntry`.
    static func entryName(_ field: String) -> String {
        let camel = jsonName(field)
        return camel.prefix(1).uppercased() + camel.dropFirst() + "Entry"
    }

    static func isIdentifier(_ text: Substring) -> Bool {
        guard let first = text.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else { return false }
        return text.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }

    static func integerValue(_ text: String) -> Int? {
        if text.hasPrefix("0x") || text.hasPrefix("0X") { return Int(text.dropFirst(2), radix: 16) }
        if text.count > 1, text.hasPrefix("0") { return Int(text.dropFirst(), radix: 8) }
        return Int(text)
    }

    // MARK: Tokens

    private static func tokenize(_ text: String, file: String, diagnostics: inout DiagnosticCollector) -> [Token] {
        var tokens: [Token] = []
        let scalars = Array(text.unicodeScalars)
        var index = 0
        var line = 1
        var lineStart = 0
        func isNameScalar(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "_" || scalar == "." || (scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)))
        }
        while index < scalars.count {
            let scalar = scalars[index]
            let column = index - lineStart + 1
            if scalar == "\n" {
                line += 1
                index += 1
                lineStart = index
            } else if scalar.properties.isWhitespace {
                index += 1
            } else if scalar == "/", index + 1 < scalars.count, scalars[index + 1] == "/" {
                while index < scalars.count, scalars[index] != "\n" { index += 1 }
            } else if scalar == "/", index + 1 < scalars.count, scalars[index + 1] == "*" {
                index += 2
                while index < scalars.count, !(scalars[index] == "*" && index + 1 < scalars.count && scalars[index + 1] == "/") {
                    if scalars[index] == "\n" {
                        line += 1
                        lineStart = index + 1
                    }
                    index += 1
                }
                index += 2
            } else if scalar == "\"" || scalar == "'" {
                var value = ""
                index += 1
                while index < scalars.count, scalars[index] != scalar, scalars[index] != "\n" {
                    if scalars[index] == "\\", index + 1 < scalars.count {
                        index += 1
                        switch scalars[index] {
                        case "n": value += "\n"
                        case "t": value += "\t"
                        case "r": value += "\r"
                        case "0": value += "\0"
                        default: value.unicodeScalars.append(scalars[index])
                        }
                    } else {
                        value.unicodeScalars.append(scalars[index])
                    }
                    index += 1
                }
                if index >= scalars.count || scalars[index] != scalar {
                    diagnostics.error("a string is not closed on its line", at: SourceLocation(file: file, line: line, column: column))
                    return tokens + [Token(kind: .end, text: "", line: line, column: column)]
                }
                index += 1
                tokens.append(Token(kind: .string, text: value, line: line, column: column))
            } else if ("0"..."9").contains(scalar) {
                let start = index
                while index < scalars.count, isNameScalar(scalars[index]) || scalars[index] == "+" && "eE".unicodeScalars.contains(scalars[index - 1])
                {
                    index += 1
                }
                let text = String(String.UnicodeScalarView(scalars[start..<index]))
                let isFloat = !text.lowercased().hasPrefix("0x") && text.contains(where: { ".eE".contains($0) })
                tokens.append(Token(kind: isFloat ? .float : .integer, text: text, line: line, column: column))
            } else if isNameScalar(scalar) {
                let start = index
                while index < scalars.count, isNameScalar(scalars[index]) { index += 1 }
                tokens.append(Token(kind: .identifier, text: String(String.UnicodeScalarView(scalars[start..<index])), line: line, column: column))
            } else {
                tokens.append(Token(kind: .symbol, text: String(scalar), line: line, column: column))
                index += 1
            }
        }
        tokens.append(Token(kind: .end, text: "", line: line, column: index - lineStart + 1))
        return tokens
    }
}
