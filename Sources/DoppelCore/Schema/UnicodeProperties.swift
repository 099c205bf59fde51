/// The code points of a Unicode property, for `\p{…}` in patterns
/// (ECMA-262's Unicode mode, which JSON Schema patterns use).
///
/// Built from the standard library's scalar properties: the general
/// categories all in one walk over the 1.1 million code points, the other
/// properties in one walk each, and kept: a contract full of `\p{L}` pays once.
enum UnicodeProperties {
    private static let cache = Locked<[String: [ClosedRange<UInt32>]]>([:])

    /// The general categories by their short and long names (UAX #44).
    private static let categories: [String: [Unicode.GeneralCategory]] = {
        let all: [(String, String, Unicode.GeneralCategory)] = [
            ("Lu", "Uppercase_Letter", .uppercaseLetter), ("Ll", "Lowercase_Letter", .lowercaseLetter),
            ("Lt", "Titlecase_Letter", .titlecaseLetter), ("Lm", "Modifier_Letter", .modifierLetter), ("Lo", "Other_Letter", .otherLetter),
            ("Mn", "Nonspacing_Mark", .nonspacingMark), ("Mc", "Spacing_Mark", .spacingMark), ("Me", "Enclosing_Mark", .enclosingMark),
            ("Nd", "Decimal_Number", .decimalNumber), ("Nl", "Letter_Number", .letterNumber), ("No", "Other_Number", .otherNumber),
            ("Pc", "Connector_Punctuation", .connectorPunctuation), ("Pd", "Dash_Punctuation", .dashPunctuation),
            ("Ps", "Open_Punctuation", .openPunctuation), ("Pe", "Close_Punctuation", .closePunctuation),
            ("Pi", "Initial_Punctuation", .initialPunctuation), ("Pf", "Final_Punctuation", .finalPunctuation),
            ("Po", "Other_Punctuation", .otherPunctuation), ("Sm", "Math_Symbol", .mathSymbol), ("Sc", "Currency_Symbol", .currencySymbol),
            ("Sk", "Modifier_Symbol", .modifierSymbol), ("So", "Other_Symbol", .otherSymbol), ("Zs", "Space_Separator", .spaceSeparator),
            ("Zl", "Line_Separator", .lineSeparator), ("Zp", "Paragraph_Separator", .paragraphSeparator), ("Cc", "Control", .control),
            ("Cf", "Format", .format), ("Cs", "Surrogate", .surrogate), ("Co", "Private_Use", .privateUse), ("Cn", "Unassigned", .unassigned),
        ]
        var names: [String: [Unicode.GeneralCategory]] = [:]
        for (short, long, category) in all {
            names[short] = [category]
            names[long] = [category]
            let group = String(short.prefix(1))
            names[group, default: []].append(category)
        }
        for (group, long) in [
            ("L", "Letter"), ("M", "Mark"), ("N", "Number"), ("P", "Punctuation"), ("S", "Symbol"), ("Z", "Separator"), ("C", "Other"),
        ] {
            names[long] = names[group]
        }
        names["LC"] = [.uppercaseLetter, .lowercaseLetter, .titlecaseLetter]
        names["Cased_Letter"] = names["LC"]
        names["digit"] = [.decimalNumber]
        names["punct"] = names["P"]
        names["Combining_Mark"] = names["M"]
        return names
    }()

    /// Every general category's code points, from one walk over Unicode.
    private static let byCategory: [Unicode.GeneralCategory: [ClosedRange<UInt32>]] = {
        var ranges: [Unicode.GeneralCategory: [ClosedRange<UInt32>]] = [:]
        var current: (category: Unicode.GeneralCategory, start: UInt32)?
        for code in UInt32(0)...0x10FFFF {
            // Surrogate code points are no scalars: their category is surrogate.
            let category = Unicode.Scalar(code)?.properties.generalCategory ?? .surrogate
            if let open = current, open.category == category { continue }
            if let open = current { ranges[open.category, default: []].append(open.start...(code - 1)) }
            current = (category, code)
        }
        if let open = current { ranges[open.category, default: []].append(open.start...0x10FFFF) }
        return ranges
    }()

    /// The code points of `name` as sorted ranges; nil for a name not known.
    static func ranges(of name: String) -> [ClosedRange<UInt32>]? {
        if let known = cache.withLock({ $0[name] }) { return known }
        var value = name
        for prefix in ["General_Category=", "gc="] where value.hasPrefix(prefix) { value = String(value.dropFirst(prefix.count)) }
        let test: (Unicode.Scalar) -> Bool
        if let wanted = categories[value] {
            let ranges = wanted.flatMap { byCategory[$0] ?? [] }.sorted { $0.lowerBound < $1.lowerBound }
            cache.withLock { $0[name] = ranges }
            return ranges
        } else {
            switch value {
            case "Any": return [0...0x10FFFF]
            case "ASCII": return [0...0x7F]
            case "Alphabetic", "Alpha": test = { $0.properties.isAlphabetic }
            case "White_Space", "space": test = { $0.properties.isWhitespace }
            case "Uppercase", "Upper": test = { $0.properties.isUppercase }
            case "Lowercase", "Lower": test = { $0.properties.isLowercase }
            default: return nil
            }
        }
        var ranges: [ClosedRange<UInt32>] = []
        var start: UInt32?
        for code in UInt32(0)...0x110000 {
            let inside = code <= 0x10FFFF && Unicode.Scalar(code).map(test) == true
            if inside, start == nil { start = code }
            if !inside, let first = start {
                ranges.append(first...(code - 1))
                start = nil
            }
        }
        cache.withLock { $0[name] = ranges }
        return ranges
    }
}
