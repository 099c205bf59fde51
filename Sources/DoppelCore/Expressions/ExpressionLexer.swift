/// Splits expression text into tokens.
struct ExpressionLexer {
    enum Kind: Equatable {
        case number(JSON)
        case string(String)
        case identifier(String)
        case symbol(String)
        case end
    }

    struct Token {
        let kind: Kind
        /// Character offset of the token's first character.
        let offset: Int
    }

    static func tokenize(_ source: String) throws(ExpressionSyntaxError) -> [Token] {
        let chars = Array(source)
        var tokens: [Token] = []
        var i = 0
        let twoCharSymbols: Set<String> = ["==", "!=", "<=", ">=", "??", "&&", "||", "=>"]
        while i < chars.count {
            let c = chars[i]
            if c.isWhitespace {
                i += 1
                continue
            }
            let start = i
            if c.isNumber {
                var isInteger = true
                while i < chars.count, chars[i].isNumber { i += 1 }
                if i + 1 < chars.count, chars[i] == ".", chars[i + 1].isNumber {
                    isInteger = false
                    i += 1
                    while i < chars.count, chars[i].isNumber { i += 1 }
                }
                // An exponent: 1e3, 2.5E-4.
                if i < chars.count, chars[i] == "e" || chars[i] == "E" {
                    var j = i + 1
                    if j < chars.count, chars[j] == "+" || chars[j] == "-" { j += 1 }
                    if j < chars.count, chars[j].isNumber {
                        isInteger = false
                        i = j
                        while i < chars.count, chars[i].isNumber { i += 1 }
                    }
                }
                let text = String(chars[start..<i])
                if isInteger, let value = Int(text) {
                    tokens.append(Token(kind: .number(.int(value)), offset: start))
                } else if let value = Double(text) {
                    tokens.append(Token(kind: .number(.double(value)), offset: start))
                } else {
                    throw ExpressionSyntaxError(message: "invalid number '\(text)'", offset: start)
                }
                continue
            }
            if c.isLetter || c == "_" {
                while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" { i += 1 }
                tokens.append(Token(kind: .identifier(String(chars[start..<i])), offset: start))
                continue
            }
            if c == "'" || c == "\"" {
                i += 1
                var text = ""
                var closed = false
                while i < chars.count {
                    let d = chars[i]
                    if d == "\\", i + 1 < chars.count {
                        let e = chars[i + 1]
                        switch e {
                        case "n": text.append("\n")
                        case "t": text.append("\t")
                        default: text.append(e)
                        }
                        i += 2
                        continue
                    }
                    if d == c {
                        closed = true
                        i += 1
                        break
                    }
                    text.append(d)
                    i += 1
                }
                guard closed else { throw ExpressionSyntaxError(message: "unterminated string", offset: start) }
                tokens.append(Token(kind: .string(text), offset: start))
                continue
            }
            if i + 1 < chars.count, twoCharSymbols.contains(String(chars[i...i + 1])) {
                tokens.append(Token(kind: .symbol(String(chars[i...i + 1])), offset: start))
                i += 2
                continue
            }
            if "()[]{}.,:+-*/%<>!".contains(c) {
                tokens.append(Token(kind: .symbol(String(c)), offset: start))
                i += 1
                continue
            }
            if c == "=" {
                throw ExpressionSyntaxError(message: "'=' is not an operator here; compare with '=='", offset: start)
            }
            throw ExpressionSyntaxError(message: "unexpected character '\(c)'", offset: start)
        }
        tokens.append(Token(kind: .end, offset: chars.count))
        return tokens
    }
}
