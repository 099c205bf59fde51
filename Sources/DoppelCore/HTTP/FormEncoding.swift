import Foundation

/// How Doppel writes what a client sends: a percent-encoded query or form
/// value, and a `multipart/form-data` body (RFC 7578). One encoder for the
/// sample requests of export and verify, and for scenario steps.
package enum FormEncoding {
    /// RFC 3986's unreserved characters, the only ones left as they are.
    private static let unreserved = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))

    /// `text` with every character but the unreserved ones as `%XX`.
    package static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    /// One part of a `multipart/form-data` body: its field's name, a file
    /// name for a file field, its media type if given, and its content.
    package typealias Part = (name: String, filename: String?, contentType: String?, content: String)

    /// A `multipart/form-data` body of `parts`, separated by `boundary`.
    package static func multipart(_ parts: [Part], boundary: String) -> [UInt8] {
        var text = ""
        for part in parts {
            text += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part.name)\""
            if let filename = part.filename { text += "; filename=\"\(filename)\"" }
            text += "\r\n"
            if let type = part.contentType { text += "Content-Type: \(type)\r\n" }
            text += "\r\n\(part.content)\r\n"
        }
        return Array((text + "--\(boundary)--\r\n").utf8)
    }
}
