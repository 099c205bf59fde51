/// Stage 6: fills a response's templates and encodes its body.
public struct ResponseRenderer: Sendable {
    public init() {}

    public func render(_ response: ResponseDefinition, in context: EvaluationContext, endpointID: String?) throws(EvaluationError) -> MockResponse {
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(response.headers.count + 1)
        var hasContentType = false
        for (name, template) in response.headers {
            let value = try template.render(in: context)
            if value.isNull { continue }
            if name.caseInsensitiveEquals("content-type") { hasContentType = true }
            headers.append((name: name, value: value.interpolationText))
        }
        let body: [UInt8]
        switch response.body {
        case .empty:
            body = []
        case .json(let template, let encoded, _):
            if let encoded {
                body = encoded
            } else {
                body = JSONWriter.encode(try template.render(in: context))
            }
        case .text(let template, _):
            body = Array(try template.render(in: context).interpolationText.utf8)
        case .bytes(let bytes, _):
            body = bytes
        }
        if !hasContentType, let type = response.body.contentType {
            headers.append((name: "Content-Type", value: type))
        }
        return MockResponse(status: response.status, headers: headers, body: body, endpointID: endpointID, responseName: response.name)
    }
}
