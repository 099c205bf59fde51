import DoppelCore
import Foundation

/// Encodes `multipart/form-data` bodies (RFC 7578) for scenario steps and tests.
public enum MultipartBody {
    /// One part of a `multipart/form-data` body.
    public struct Part: Sendable {
        /// The form field's name.
        public var name: String
        /// The file name, for a file field.
        public var filename: String?
        /// The part's media type, if given.
        public var contentType: String?
        /// The part's content.
        public var content: String

        /// A part named `name` holding `content`.
        public init(name: String, filename: String? = nil, contentType: String? = nil, content: String) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.content = content
        }
    }

    /// The body, with parts separated by `boundary` (the core's `FormEncoding`, which sample requests use too).
    public static func encode(_ parts: [Part], boundary: String) -> Data {
        Data(
            FormEncoding.multipart(
                parts.map { ($0.name, $0.filename, $0.contentType, $0.content) },
                boundary: boundary))
    }
}
