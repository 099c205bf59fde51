/// `tokens(s)`: a text cut into pieces of about the size a language model's
/// tokenizer makes, so a contract can count an LLM API's usage and stream
/// its answer as deltas.
///
/// Written here rather than taken from a library: a model's real vocabulary
/// is megabytes of data, differs from model to model, and no Swift package
/// of one is mirrored. A mock needs a count that is deterministic,
/// documented and close to real ones (about four characters of English per
/// token), and pieces that join back to the text exactly.
///
/// The rule, over characters as people count them:
/// - a run of letters (with its marks) is cut into pieces of at most 6;
/// - a run of digits into pieces of at most 3;
/// - any other visible character is a piece of its own;
/// - a single space before a letter, digit or other visible character
///   belongs to that character's first piece (`" world"` is one token);
/// - any other run of whitespace is one piece.
enum TextTokens {
    static let longestWord = 6
    static let longestNumber = 3

    static func pieces(of text: String) -> [String] {
        var pieces: [String] = []
        var index = text.startIndex
        let end = text.endIndex
        while index < end {
            var start = index
            var character = text[index]
            if character.isWhitespace {
                var next = text.index(after: index)
                while next < end, text[next].isWhitespace { next = text.index(after: next) }
                // A final plain space before something visible goes with it.
                let last = text.index(before: next)
                if next < end, text[last] == " " {
                    if last > index {
                        pieces.append(String(text[index..<last]))
                    }
                    index = last
                    start = last
                } else {
                    pieces.append(String(text[index..<next]))
                    index = next
                    continue
                }
                // `index` is the space; the piece takes it and what follows.
                index = text.index(after: index)
                character = text[index]
            }
            let kind = Kind(character)
            var taken = 1
            index = text.index(after: index)
            let most = kind == .letters ? longestWord : kind == .digits ? longestNumber : 1
            while index < end, taken < most, Kind(text[index]) == kind {
                index = text.index(after: index)
                taken += 1
            }
            pieces.append(String(text[start..<index]))
        }
        return pieces
    }

    private enum Kind {
        case letters, digits, other

        init(_ character: Character) {
            if character.isLetter {
                self = .letters
            } else if character.isNumber {
                self = .digits
            } else {
                self = .other
            }
        }
    }
}
