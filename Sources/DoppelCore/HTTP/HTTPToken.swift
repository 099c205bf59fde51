/// RFC 9110's token (section 5.6.2): what a header's name, a method and a
/// WebSocket subprotocol are made of.
package enum HTTPToken {
    /// Whether `text` is a token: one or more of `A-Z a-z 0-9 ! # $ % & ' * + - . ^ _ ` | ~`.
    package static func isValid(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
    }
}
