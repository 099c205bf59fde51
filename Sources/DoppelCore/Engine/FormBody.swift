/// Reads `application/x-www-form-urlencoded` and `multipart/form-data`
/// bodies into name/value form, so they are matched and validated like JSON.
package enum FormBody {
    /// One part of a multipart body.
    package struct Part: Sendable, Equatable {
        package var name: String
        package var filename: String?
        package var contentType: String?
        package var content: [UInt8]

        package init(name: String, filename: String?, contentType: String?, content: [UInt8]) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.content = content
        }

        /// How expressions see the part: its text for a field, an object
        /// `{filename, content_type, size}` for a file.
        package var isFile: Bool { filename != nil }
    }

    /// Why a multipart body could not be read.
    package struct MalformedMultipart: Error, Sendable {
        package let reason: String
    }

    /// `a=1&b=two+words` as decoded pairs.
    package static func urlEncodedPairs(_ body: [UInt8]) -> [(String, String)] {
        RecordedRequest(method: "POST", path: "/", query: String(decoding: body, as: UTF8.self)).queryItems
    }

    /// The `boundary` parameter of a `multipart/form-data` content type.
    package static func boundary(of contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { String($0.trimmingSpaces) }
            guard pair.count == 2, pair[0].lowercased() == "boundary" else { continue }
            let value = pair[1].hasPrefix("\"") && pair[1].hasSuffix("\"") && pair[1].count >= 2 ? String(pair[1].dropFirst().dropLast()) : pair[1]
            return value.isEmpty ? nil : value
        }
        return nil
    }

    /// Splits a multipart body (RFC 7578) into its parts.
    /// `named`: each part must have a `Content-Disposition` name, as form
    /// data's do (`multipart/mixed` parts have none).
    package static func multipartParts(_ body: [UInt8], boundary: String, named: Bool = true) throws(MalformedMultipart) -> [Part] {
        let delimiter = Array(("--" + boundary).utf8)
        guard var position = find(delimiter, in: body, from: 0) else {
            throw MalformedMultipart(reason: "the boundary '\(boundary)' does not occur in the body")
        }
        var parts: [Part] = []
        while true {
            position += delimiter.count
            if body.count >= position + 2, body[position] == UInt8(ascii: "-"), body[position + 1] == UInt8(ascii: "-") {
                return parts
            }
            guard body.count >= position + 2, body[position] == 13, body[position + 1] == 10 else {
                throw MalformedMultipart(reason: "a boundary line must end with CRLF")
            }
            position += 2
            guard let headerEnd = find([13, 10, 13, 10], in: body, from: position) else {
                throw MalformedMultipart(reason: "a part's headers do not end with an empty line")
            }
            let headerText = String(decoding: body[position..<headerEnd], as: UTF8.self)
            let contentStart = headerEnd + 4
            guard let next = find([13, 10] + delimiter, in: body, from: contentStart) else {
                throw MalformedMultipart(reason: "the body ends without its closing boundary")
            }
            var part = Part(name: "", filename: nil, contentType: nil, content: Array(body[contentStart..<next]))
            for line in headerText.split(separator: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].trimmingSpaces.lowercased()
                let value = String(line[line.index(after: colon)...].trimmingSpaces)
                if name == "content-type" { part.contentType = value }
                if name == "content-disposition" {
                    for parameter in value.split(separator: ";").dropFirst() {
                        let pair = parameter.split(separator: "=", maxSplits: 1).map { String($0.trimmingSpaces) }
                        guard pair.count == 2 else { continue }
                        let unquoted =
                            pair[1].hasPrefix("\"") && pair[1].hasSuffix("\"") && pair[1].count >= 2
                            ? String(pair[1].dropFirst().dropLast()) : pair[1]
                        if pair[0].lowercased() == "name" { part.name = unquoted }
                        if pair[0].lowercased() == "filename" { part.filename = unquoted }
                    }
                }
            }
            guard !part.name.isEmpty || !named else { throw MalformedMultipart(reason: "a part has no Content-Disposition name") }
            parts.append(part)
            position = next + 2
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var i = start
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == needle[0] {
                var j = 1
                while j < needle.count, haystack[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }
}
