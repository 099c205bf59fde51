/// A client's pick of a documented response, from its `Prefer` header:
/// `Prefer: code=404`, `Prefer: example=sold-out`, or both
/// (`Prefer: code=200, example=cat`). The convention mock servers for
/// OpenAPI share; other preferences (RFC 7240's `return=minimal`) are ignored.
package struct Preference: Sendable, Equatable {
    package var code: Int?
    package var example: String?
    /// The code as it was written, for messages (`code=999`, not the 0 it is kept as).
    private var codeText: String?

    /// The preference in a `Prefer` header; nil when it asks for neither a code nor an example.
    /// A `code` that is not a status (`code=abc`) is kept as an impossible 0, so it is refused, not ignored.
    package init?(header: String?) {
        guard let header, header.includes("=") else { return nil }
        for item in header.split(whereSeparator: { $0 == "," || $0 == ";" }) {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2 else { continue }
            let name = pair[0].trimmingSpaces.lowercased()
            var value = String(pair[1].trimmingSpaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            switch name {
            case "code":
                code = Int(value).flatMap { (100...599).contains($0) ? $0 : nil } ?? 0
                codeText = String(value.prefix(40))
            case "example": example = value
            default: break
            }
        }
        if code == nil && example == nil { return nil }
    }

    /// The first of `responses` with the preferred status and name.
    package func response(in responses: [ResponseDefinition]) -> ResponseDefinition? {
        responses.first { response in
            (code == nil || response.status == code) && (example == nil || response.name == example)
        }
    }

    /// What was asked, for messages: `code=404, example=missing`.
    package var description: String {
        [code.map { "code=\(codeText ?? String($0))" + ($0 == 0 ? " (not a status)" : "") }, example.map { "example=\($0)" }].compactMap { $0 }
            .joined(separator: ", ")
    }
}
