import DoppelCore

/// A structured example of an XML media type written as XML, as OpenAPI
/// means a structured value there: an element per member, a repeated
/// element per array item, text escaped. The root element is named by the
/// schema's `xml.name`, else the component the schema refers to, else
/// `root`. Written here: the mirrored packages have no XML writer, and the
/// mapping is a few lines.
enum XMLExample {
    static func text(_ value: JSON, root: String) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        element(root, value, into: &out)
        return out
    }

    private static func element(_ name: String, _ value: JSON, into out: inout String) {
        let tag = safeName(name)
        switch value {
        case .array(let items):
            for item in items { element(name, item, into: &out) }
        case .object(let object):
            out += "<\(tag)>"
            for pair in object.pairs { element(pair.key, pair.value, into: &out) }
            out += "</\(tag)>"
        case .null:
            out += "<\(tag)/>"
        case .string(let s):
            out += "<\(tag)>\(escaped(s))</\(tag)>"
        default:
            out += "<\(tag)>\(escaped(JSONWriter.encodeString(value)))</\(tag)>"
        }
    }

    /// A name XML allows: letters, digits, `_ - .`, not starting with a digit, `-` or `.`.
    static func safeName(_ name: String) -> String {
        var result = String(name.map { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "." ? $0 : "_" })
        if result.isEmpty || result.first!.isNumber || result.first == "-" || result.first == "." { result = "_" + result }
        return result
    }

    static func escaped(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }
}
