import Foundation

extension ContractLoader {
    static let delayKeys: Set<String> = ["min", "max"]
    static let eventKeys: Set<String> = ["event", "data", "id", "retry", "delay"]
    static let responseKeys: Set<String> = [
        "when", "ref", "name", "status", "description", "headers", "body", "text", "base64", "file", "chunks", "interval", "events",
        "items", "items_from_schema", "item_schema", "content_type", "let", "effects", "schema", "body_from_schema", "delay", "fault", "push",
        "callbacks",
    ]
    static let referenceKeys: Set<String> = ["when", "ref", "name", "description", "let", "effects", "delay", "fault", "push", "callbacks"]
    static let sequenceKeys: Set<String> = ["when", "sequence", "then", "per", "description"]

    /// A response given either as the name of a shared response or inline.
    mutating func readResponseReference(_ node: SourceNode, name: String, scope: Set<String>, endpointLets: [String]) -> ResponseDefinition? {
        if let refName = node.scalarText, node.mappingPairs == nil {
            guard let shared = namedResponses[refName] else {
                diagnostics.error("undefined response '\(refName)'\(Suggestion.hint(for: refName, in: namedResponses.keys))", at: node.location)
                return nil
            }
            return shared
        }
        return readResponse(node, name: name, scope: scope, endpointLets: endpointLets)
    }

    /// Reads one response: inline, or `ref:` to a shared one with its own `when`, `let` and `effects`.
    mutating func readResponse(_ node: SourceNode, name: String, scope: Set<String>, endpointLets: [String]) -> ResponseDefinition? {
        if node["sequence"] != nil { return readSequence(node, name: name, scope: scope, endpointLets: endpointLets) }
        let isReference = node["ref"] != nil
        let allowed = isReference ? Self.referenceKeys : Self.responseKeys
        let context = "response \(name)"
        guard let reader = MappingReader(node, allowed: allowed, context: context, diagnostics: &diagnostics) else {
            if isReference {
                for key in node.mappingPairs?.compactMap({ $0.key.scalarText }) ?? [] where !allowed.contains(key) && Self.responseKeys.contains(key)
                {
                    diagnostics.error("'\(key)' cannot be combined with 'ref'; change the shared response instead", at: node.location)
                }
            }
            return nil
        }
        let when = reader["when"].flatMap { compileExpression($0, roots: scope.union(endpointLets)) }
        let bindings = readBindings(reader["let"], roots: scope.union(endpointLets), context: context)
        let bindingNames = endpointLets + bindings.map(\.0)
        let effectRoots = scope.union(bindingNames)
        var effects = reader["effects"].map { readEffects($0, roots: effectRoots) } ?? []

        if isReference {
            guard let refNode = reader["ref"], let refName = refNode.scalarText else { return nil }
            guard let shared = namedResponses[refName] else {
                diagnostics.error("undefined response '\(refName)'\(Suggestion.hint(for: refName, in: namedResponses.keys))", at: refNode.location)
                return nil
            }
            effects = shared.effects + effects
            var response = ResponseDefinition(
                name: reader.string("name", diagnostics: &diagnostics) ?? refName, when: when, status: shared.status, headers: shared.headers,
                body: shared.body,
                bindings: bindings + shared.bindings, effects: effects, location: node.location)
            response.stream = shared.stream
            response.delay = readDelay(reader["delay"]) ?? shared.delay
            response.fault = readFault(reader["fault"]) ?? shared.fault
            response.pushes = shared.pushes + (reader["push"].map { readPushes($0, roots: effectRoots, context: context) } ?? [])
            response.callbacks = shared.callbacks + (reader["callbacks"].map { readCallbacks($0, roots: effectRoots, context: context) } ?? [])
            return response
        }

        var status = 200
        if let statusNode = reader["status"] {
            if case .int(let value) = statusNode.json, (100...599).contains(value) {
                status = value
            } else {
                diagnostics.error("status must be an HTTP status code from 100 to 599", at: statusNode.location)
            }
        }
        let renderRoots = effectRoots
        var headers: [(String, ValueTemplate)] = []
        for entry in reader.entries("headers", diagnostics: &diagnostics) {
            if let template = compileTemplate(entry.value, roots: renderRoots) {
                headers.append((entry.name, template))
            }
        }
        let explicitType = reader.string("content_type", diagnostics: &diagnostics)
        var body = readBody(reader, roots: renderRoots, explicitType: explicitType, context: context)
        var schema: Schema?
        if let schemaNode = reader["schema"], let read = readSchema(schemaNode, context: "schema of \(context)") {
            schema = read
            if reader.bool("body_from_schema", diagnostics: &diagnostics) == true {
                if case .empty = body {
                    // Generated once, here: the same value for every request.
                    if let value = SchemaSampler(registry: schemas).sample(read) {
                        if let explicitType, !MediaTypes.isJSON(explicitType) {
                            // A text media type gets text: a string as it is, anything else as its JSON text.
                            body = .text(.constant(.string(value.stringValue ?? JSONWriter.encodeString(value))), contentType: explicitType)
                        } else {
                            body = .json(.constant(value), encoded: JSONWriter.encode(value), contentType: explicitType ?? "application/json")
                        }
                    } else {
                        // A warning: an OpenAPI document (whose responses all ask for one) is served despite it.
                        diagnostics.warning(
                            "no body can be generated from the schema of \(context): a value would recurse without end or hold more than \(SchemaSampler.maximumSize) values and characters, so the response is sent without a body; write the body instead",
                            at: reader["body_from_schema"]!.location)
                    }
                } else {
                    diagnostics.error(
                        "'body_from_schema' of \(context) stands for a body; give one or the other", at: reader["body_from_schema"]!.location)
                }
            }
            if case .json(let template, _, _) = body, let value = template.constantValue {
                pendingExamples.append((value, read, reader["body"]?.location ?? node.location, "the body of \(context)"))
            }
        }
        let ownName = readName(reader, default: name, context: context)
        if reader.has("body_from_schema"), reader["schema"] == nil {
            diagnostics.error("'body_from_schema' of \(context) needs a 'schema' to generate the body from", at: reader["body_from_schema"]!.location)
        }
        var response = ResponseDefinition(
            name: ownName, when: when, status: status, headers: headers, body: body, bindings: bindings,
            effects: effects, location: node.location)
        response.schema = schema
        response.description = reader.string("description", diagnostics: &diagnostics)
        if let node = reader["item_schema"] { response.itemSchema = readSchema(node, context: "item_schema of \(context)") }
        response.stream = readStream(reader, roots: renderRoots, explicitType: explicitType, itemSchema: response.itemSchema, context: context)
        if let node = reader["item_schema"] {
            // What it describes must be a stream of items Doppel can read back one by one.
            let type = response.stream?.contentType ?? explicitType ?? ""
            if response.stream == nil || SequentialMedia(type) == nil {
                diagnostics.error(
                    "'item_schema' of \(context) describes the items of a streamed body ('items', 'events', or 'chunks' of a sequential content_type: text/event-stream, application/jsonl, application/x-ndjson, application/json-seq, multipart/mixed)",
                    at: node.location)
            }
        }
        response.delay = readDelay(reader["delay"])
        response.fault = readFault(reader["fault"])
        if let pushNode = reader["push"] { response.pushes = readPushes(pushNode, roots: renderRoots, context: context) }
        if let callbacksNode = reader["callbacks"] { response.callbacks = readCallbacks(callbacksNode, roots: renderRoots, context: context) }
        if response.fault == .malformedJSON, !(response.body.contentType.map(MediaTypes.isJSON) ?? false) {
            diagnostics.error("fault malformed_json needs a JSON body to break", at: reader["fault"]!.location)
        }
        return response
    }

    /// A mapping's `name`: a non-empty string, else `name` (with an error when one is given that is not).
    mutating func readName(_ reader: MappingReader, default name: String, context: String) -> String {
        guard let nameNode = reader["name"] else { return name }
        if let text = nameNode.scalarText, nameNode.mappingPairs == nil, !text.isEmpty { return text }
        diagnostics.error("'name' of \(context) must be a non-empty string", at: nameNode.location)
        return name
    }

    /// `sequence:`: the n-th selection answers with the n-th response of the list.
    private mutating func readSequence(_ node: SourceNode, name: String, scope: Set<String>, endpointLets: [String]) -> ResponseDefinition? {
        let context = "sequence \(name)"
        guard let reader = MappingReader(node, allowed: Self.sequenceKeys, context: context, diagnostics: &diagnostics) else { return nil }
        let when = reader["when"].flatMap { compileExpression($0, roots: scope.union(endpointLets)) }
        let key = reader["per"].flatMap { compileExpression($0, roots: scope.union(endpointLets)) }
        var exhausted: SequenceDefinition.Exhausted? = .repeatLast
        if let thenNode = reader["then"], let text = thenNode.scalarText {
            exhausted = SequenceDefinition.Exhausted(rawValue: text)
            if exhausted == nil { diagnostics.error("'then' of \(context) must be repeat_last or cycle", at: thenNode.location) }
        }
        guard let listNode = reader["sequence"], let items = listNode.sequenceItems, !items.isEmpty else {
            diagnostics.error("'sequence' of \(context) must be a non-empty list of responses", at: reader["sequence"]?.location ?? node.location)
            return nil
        }
        var responses: [ResponseDefinition] = []
        for (index, item) in items.enumerated() {
            if let whenNode = item["when"] {
                diagnostics.error("responses in a sequence are taken in turn and cannot have 'when'; put it on the sequence", at: whenNode.location)
            }
            if let response = readResponse(item, name: "\(name).sequence[\(index)]", scope: scope, endpointLets: endpointLets) {
                responses.append(response)
            }
        }
        guard responses.count == items.count, let exhausted else { return nil }
        var sequence = ResponseDefinition(
            name: name, when: when, status: responses[0].status, headers: [], body: .empty, bindings: [], effects: [], location: node.location)
        sequence.sequence = SequenceDefinition(responses: responses, exhausted: exhausted, key: key)
        return sequence
    }

    /// `delay: 250ms`, `delay: 100ms-300ms` or `delay: {min: 10s, max: 30s}`.
    mutating func readDelay(_ node: SourceNode?) -> Delay? {
        guard let node else { return nil }
        if let text = node.scalarText {
            guard let delay = Delay.parse(text) else {
                diagnostics.error("delay must be a duration like 250ms or a range like 10s-30s", at: node.location)
                return nil
            }
            return delay
        }
        guard let reader = MappingReader(node, allowed: Self.delayKeys, context: "delay", diagnostics: &diagnostics),
            let low = reader.string("min", diagnostics: &diagnostics).flatMap(CalendarDuration.parse),
            let high = reader.string("max", diagnostics: &diagnostics).flatMap(CalendarDuration.parse),
            low.months == 0, high.months == 0, high.seconds >= low.seconds
        else {
            diagnostics.error("delay needs 'min' and 'max' durations, min no larger than max", at: node.location)
            return nil
        }
        return Delay(minimum: low.seconds, maximum: high.seconds)
    }

    mutating func readFault(_ node: SourceNode?) -> Fault? {
        guard let node, let text = node.scalarText else { return nil }
        guard let fault = Fault(rawValue: text) else {
            diagnostics.error(
                "unknown fault '\(text)'\(Suggestion.hint(for: text, in: Fault.allCases.map(\.rawValue))); faults are \(Fault.allCases.map(\.rawValue).joined(separator: ", "))",
                at: node.location)
            return nil
        }
        return fault
    }

    /// `chunks` with `interval`, `items` (or `items_from_schema`) with `interval`, or `events`.
    private mutating func readStream(
        _ reader: MappingReader, roots: Set<String>, explicitType: String?, itemSchema: Schema?, context: String
    ) -> StreamDefinition? {
        if reader.has("items") || reader.has("items_from_schema") {
            return readItems(reader, roots: roots, explicitType: explicitType, itemSchema: itemSchema, context: context)
        }
        if let chunksNode = reader["chunks"] {
            guard let items = chunksNode.sequenceItems, !items.isEmpty else {
                diagnostics.error("'chunks' in \(context) must be a non-empty list", at: chunksNode.location)
                return nil
            }
            let templates = items.compactMap { compileTemplate($0, roots: roots) }
            guard let interval = readInterval(reader, context: context) else { return nil }
            return .chunks(templates, interval: interval, contentType: explicitType ?? "text/plain; charset=utf-8")
        }
        if let node = reader["interval"], !reader.has("chunks") {
            diagnostics.error("'interval' in \(context) only applies to 'chunks' and 'items'", at: node.location)
        }
        guard let eventsNode = reader["events"] else { return nil }
        guard let items = eventsNode.sequenceItems, !items.isEmpty else {
            diagnostics.error("'events' in \(context) must be a non-empty list", at: eventsNode.location)
            return nil
        }
        var events: [EventDefinition] = []
        for item in items {
            guard let event = MappingReader(item, allowed: Self.eventKeys, context: "an event of \(context)", diagnostics: &diagnostics),
                let dataNode = event.required("data", diagnostics: &diagnostics),
                let data = compileTemplate(dataNode, roots: roots)
            else { continue }
            events.append(
                EventDefinition(
                    event: event.string("event", diagnostics: &diagnostics), data: data, id: event["id"]?.json.interpolationText,
                    retry: event.int("retry", diagnostics: &diagnostics), delay: readDelay(event["delay"])?.minimum ?? 0))
        }
        return .events(events)
    }

    /// `interval`: seconds between a stream's parts, 0 when not given; nil,
    /// with an error, when it is not a duration.
    private mutating func readInterval(_ reader: MappingReader, context: String) -> Double? {
        guard let node = reader["interval"] else { return 0 }
        guard let duration = node.scalarText.flatMap(CalendarDuration.parse), duration.months == 0 else {
            diagnostics.error("'interval' in \(context) must be a duration like 100ms", at: node.location)
            return nil
        }
        return duration.seconds
    }

    /// The most items `items_from_schema` generates.
    static let maximumGeneratedItems = 100

    /// `items` (each a template), or `items_from_schema: N` (N values
    /// generated from `item_schema` once, here), of a sequential media type.
    private mutating func readItems(
        _ reader: MappingReader, roots: Set<String>, explicitType: String?, itemSchema: Schema?, context: String
    ) -> StreamDefinition? {
        let type = explicitType ?? "application/jsonl"
        let at = (reader["items"] ?? reader["items_from_schema"])!.location
        guard let media = SequentialMedia(type) else {
            diagnostics.error(
                "'items' of \(context) are sent as a sequential media type (text/event-stream, application/jsonl, application/x-ndjson, application/json-seq, multipart/mixed); content_type '\(type)' is not one",
                at: at)
            return nil
        }
        var templates: [ValueTemplate] = []
        if let node = reader["items"] {
            if let countNode = reader["items_from_schema"] {
                diagnostics.error("'items_from_schema' of \(context) stands for 'items'; give one or the other", at: countNode.location)
            }
            if node.sequenceItems == nil, case .string(let text) = node.json, text.includes("{{") {
                // One expression that gives the list, rendered per request.
                guard let template = compileTemplate(node, roots: roots), let interval = readInterval(reader, context: context) else { return nil }
                return .itemsOf(template, interval: interval, media: media, contentType: SequentialMedia.withBoundary(type))
            }
            guard let list = node.sequenceItems, !list.isEmpty else {
                diagnostics.error(
                    "'items' in \(context) must be a non-empty list, or one expression that gives the list (\"{{ map(…) }}\")", at: node.location)
                return nil
            }
            for item in list {
                guard let template = compileTemplate(item, roots: roots) else { continue }
                templates.append(template)
                if let itemSchema, let value = template.constantValue {
                    pendingExamples.append((value, itemSchema, item.location, "an item of \(context)"))
                }
            }
        } else if let countNode = reader["items_from_schema"] {
            guard case .int(let count) = countNode.json, (1...Self.maximumGeneratedItems).contains(count) else {
                diagnostics.error(
                    "'items_from_schema' of \(context) must be a number of items from 1 to \(Self.maximumGeneratedItems)", at: countNode.location)
                return nil
            }
            guard let itemSchema else {
                diagnostics.error("'items_from_schema' of \(context) needs an 'item_schema' to generate the items from", at: countNode.location)
                return nil
            }
            guard let value = SchemaSampler(registry: schemas).sample(itemSchema) else {
                diagnostics.warning(
                    "no item can be generated from the item_schema of \(context): a value would recurse without end or hold more than \(SchemaSampler.maximumSize) values and characters, so the response is sent without items; write 'items' instead",
                    at: countNode.location)
                return nil
            }
            templates = Array(repeating: .constant(value), count: count)
        }
        guard let interval = readInterval(reader, context: context), !templates.isEmpty else { return nil }
        return .items(templates, interval: interval, media: media, contentType: SequentialMedia.withBoundary(type))
    }

    private mutating func readBody(_ reader: MappingReader, roots: Set<String>, explicitType: String?, context: String) -> ResponseBody {
        let bodyKeys = ["body", "text", "base64", "file", "chunks", "events", "items"].filter { reader.has($0) }
        if bodyKeys.count > 1 {
            diagnostics.error("\(context) has \(bodyKeys.map { "'\($0)'" }.joined(separator: " and ")); give only one body", at: reader.node.location)
        }
        if let node = reader["body"] {
            guard let template = compileTemplate(node, roots: roots) else { return .empty }
            let encoded = template.constantValue.map(JSONWriter.encode)
            return .json(template, encoded: encoded, contentType: explicitType ?? "application/json")
        }
        if let node = reader["text"] {
            guard node.scalarText != nil, let template = compileTemplate(node, roots: roots) else {
                diagnostics.error("'text' in \(context) must be a string", at: node.location)
                return .empty
            }
            return .text(template, contentType: explicitType ?? "text/plain; charset=utf-8")
        }
        if let node = reader["base64"] {
            guard let text = node.scalarText, let data = Data(base64Encoded: text.filter { !$0.isWhitespace }) else {
                diagnostics.error("'base64' in \(context) is not valid base64", at: node.location)
                return .empty
            }
            return .bytes([UInt8](data), contentType: explicitType ?? "application/octet-stream")
        }
        if let node = reader["file"], let path = node.scalarText {
            return readBodyFile(path, at: node.location, explicitType: explicitType, roots: roots)
        }
        return .empty
    }

    /// The file `path` names beside the contract, links followed; nil when it resolves outside the contract's folder.
    func fileInFolder(_ path: String) -> URL? {
        let url = directory.appendingPathComponent(path).standardizedFileURL.resolvingSymlinksInPath()
        let base = directory.resolvingSymlinksInPath().path
        return url.path.hasPrefix(base.hasSuffix("/") ? base : base + "/") ? url : nil
    }

    /// A body read from a file beside the contract; paths that leave the contract's folder are refused.
    private mutating func readBodyFile(_ path: String, at location: SourceLocation, explicitType: String?, roots: Set<String>) -> ResponseBody {
        guard let url = fileInFolder(path) else {
            diagnostics.error("body file '\(path)' resolves outside the contract's folder", at: location)
            return .empty
        }
        bodyFiles.withLock { _ = $0.insert(url.path) }
        let bytes: [UInt8]
        switch SourceReader.readBytes(url.path, what: "body file") {
        case .success(let read): bytes = read
        case .failure(let reason):
            diagnostics.error("cannot read body file '\(path)': \(reason.message)", at: location)
            return .empty
        }
        let type = explicitType ?? MediaTypes.forExtension(url.pathExtension)
        if MediaTypes.isJSON(type) {
            do {
                let value = try JSONReader.parse(bytes)
                return .json(.constant(value), encoded: bytes, contentType: type)
            } catch {
                diagnostics.error("body file '\(path)' is not valid JSON: \(error)", at: location)
                return .empty
            }
        }
        return .bytes(bytes, contentType: type)
    }

    /// `let:` bindings, in order; each may use the ones before it.
    mutating func readBindings(_ node: SourceNode?, roots: Set<String>, context: String) -> [(String, ValueTemplate)] {
        guard let node else { return [] }
        var bindings: [(String, ValueTemplate)] = []
        var visible = roots
        for entry in MappingReader.entries(of: node, context: "'let' of \(context)", diagnostics: &diagnostics) {
            if Roots.Slot(name: entry.name) != nil || entry.name == "it" {
                diagnostics.error("'\(entry.name)' is a built-in name and cannot be bound by let", at: entry.keyNode.location)
                continue
            }
            if let template = compileTemplate(entry.value, roots: visible, bareExpression: true) {
                bindings.append((entry.name, template))
            }
            visible.insert(entry.name)
        }
        return bindings
    }

    /// Effects: a list of `state.x += 1`, `state.c[id] = value`, `delete state.c[id]`.
    mutating func readEffects(_ node: SourceNode, roots: Set<String>) -> [Effect] {
        let items = node.sequenceItems ?? [node]
        var effects: [Effect] = []
        for item in items {
            guard let text = item.scalarText else {
                diagnostics.error("an effect must be a string like 'state.count += 1'", at: item.location)
                continue
            }
            switch EffectParser.parse(text, stateKinds: stateNames) {
            case .success(let parsed):
                let location = item.contentLocation
                if let value = parsed.value { check(value, roots: roots, at: location, offsetBase: parsed.valueOffset) }
                for case .index(let index) in parsed.path { check(index, roots: roots, at: location, offsetBase: 0) }
                effects.append(
                    Effect(name: parsed.name, path: parsed.path, operation: parsed.operation, value: parsed.value, source: text, location: location))
            case .failure(let failure):
                diagnostics.error("bad effect: \(failure.message)", at: item.contentLocation.advanced(by: failure.offset))
            }
        }
        return effects
    }
}
