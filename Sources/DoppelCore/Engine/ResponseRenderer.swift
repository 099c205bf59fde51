/// Stage 6: fills a response's templates and encodes its body.
package struct ResponseRenderer: Sendable {
    package init() {}

    /// The response rendered, and how it goes out: whole, streamed, or broken by its fault.
    package func render(
        _ response: ResponseDefinition, in context: EvaluationContext, endpointID: String?
    ) throws(EvaluationError) -> Decision.Delivery {
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(response.headers.count + 1)
        var hasContentType = false
        for (name, template) in response.headers {
            let value = try template.render(in: context)
            if value.isNull { continue }
            if name.caseInsensitiveEquals("content-type") { hasContentType = true }
            headers.append((name: name, value: value.interpolationText))
        }
        var body: [UInt8]
        switch response.body {
        case .empty:
            body = []
        case .json(let template, let encoded, _):
            if let encoded {
                body = encoded
            } else {
                guard let encoded = JSONWriter.encode(try template.render(in: context), limit: Expression.maximumBuild) else {
                    throw .budget("the response body")
                }
                body = encoded
            }
        case .text(let template, _):
            // A string as it is; anything else as its JSON text (what interpolation gives), within the budget.
            let value = try template.render(in: context)
            if case .string(let text) = value {
                body = Array(text.utf8)
            } else {
                guard let encoded = JSONWriter.encode(value, limit: Expression.maximumBuild) else { throw .budget("the response body") }
                body = encoded
            }
        case .bytes(let bytes, _):
            body = bytes
        }
        var stream: [StreamPart]?
        if let definition = response.stream {
            stream = try Self.render(definition, in: context)
        }
        if !hasContentType, let type = response.stream?.contentType ?? response.body.contentType {
            headers.append((name: "Content-Type", value: type))
        }
        if response.fault == .malformedJSON {
            // A prefix of a JSON text that stops before its end never parses.
            body = Array(body.prefix(max(1, body.count / 2)))
        }
        let rendered = MockResponse(status: response.status, headers: headers, body: body, endpointID: endpointID, responseName: response.name)
        if let fault = response.fault, fault != .malformedJSON { return .fault(rendered, fault) }
        if let stream { return .stream(rendered, stream) }
        return .whole(rendered)
    }

    /// Each item written as its media type frames it, `interval` apart.
    private static func parts(_ values: [JSON], interval: Double, media: SequentialMedia) throws(EvaluationError) -> [StreamPart] {
        var parts: [StreamPart] = []
        parts.reserveCapacity(values.count)
        for (index, value) in values.enumerated() {
            guard let bytes = media.write(value, last: index == values.count - 1, limit: Expression.maximumBuild) else {
                throw .budget("an item of the response")
            }
            parts.append(StreamPart(delay: index == 0 ? 0 : interval, bytes: bytes))
        }
        return parts
    }

    static func render(_ stream: StreamDefinition, in context: EvaluationContext) throws(EvaluationError) -> [StreamPart] {
        switch stream {
        case .chunks(let chunks, let interval, _):
            var parts: [StreamPart] = []
            for (index, chunk) in chunks.enumerated() {
                parts.append(StreamPart(delay: index == 0 ? 0 : interval, bytes: Array(try chunk.render(in: context).interpolationText.utf8)))
            }
            return parts
        case .items(let items, let interval, let media, _):
            var values: [JSON] = []
            values.reserveCapacity(items.count)
            for item in items { values.append(try item.render(in: context)) }
            return try parts(values, interval: interval, media: media)
        case .itemsOf(let template, let interval, let media, _):
            let value = try template.render(in: context)
            guard case .array(let values) = value else {
                throw EvaluationError("'items' must give a list, not \(value.typeName)")
            }
            guard values.count <= StreamDefinition.maximumItems else {
                throw EvaluationError(
                    "'items' gave \(values.count) items, more than a stream sends (\(StreamDefinition.maximumItems))", exceedsBudget: true)
            }
            return try parts(values, interval: interval, media: media)
        case .events(let events):
            var parts: [StreamPart] = []
            for event in events {
                var text = ""
                if let name = event.event { text += "event: \(name)\n" }
                if let id = event.id { text += "id: \(id)\n" }
                if let retry = event.retry { text += "retry: \(retry)\n" }
                let data = try event.data.render(in: context).interpolationText
                for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
                parts.append(StreamPart(delay: event.delay, bytes: Array((text + "\n").utf8)))
            }
            return parts
        }
    }
}
