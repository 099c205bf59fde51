import Foundation

/// A body as a person or an agent reads it: text where it is UTF-8, else
/// base64, cut to a limit. The dashboard's event stream and the agent's
/// `send_request` both show bodies this way.
package struct BodyPreview: Sendable {
    /// The shown bytes as text, when they are UTF-8 (a character the cut
    /// split, up to three bytes of it, left out).
    package let text: String?
    /// The shown bytes in base64, when they are not text.
    package let base64: String?
    /// The whole body's length.
    package let bytes: Int
    /// Whether the body was longer than the limit.
    package let truncated: Bool

    package init(_ body: [UInt8], limit: Int) {
        let cut = body.count > limit
        let shown = cut ? Array(body.prefix(limit)) : body
        text = (0...(cut ? 3 : 0)).lazy.compactMap { String(validating: shown.dropLast($0), as: UTF8.self) }.first
        base64 = text == nil ? Data(shown).base64EncodedString() : nil
        bytes = body.count
        truncated = cut
    }
}
