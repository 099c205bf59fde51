import Foundation

/// Loads a scenario file and checks it against its contract.
///
/// The stages: read and parse the YAML; load the contract it names; check
/// `given` names against the contract's state, `overrides` against its
/// endpoints and responses; compile steps (templates that may use values
/// captured by earlier steps, expectations, captures). Every problem is
/// reported, as for contracts, as `path:line:column: error: message`.
public enum ScenarioLoader {
    static let givenKeys: Set<String> = ["state", "clock"]
    static let overrideKeys: Set<String> = ["endpoint", "call", "response", "status", "example", "delay", "fault"]
    static let partKeys: Set<String> = ["name", "filename", "content_type", "content"]
    static let expectKeys: Set<String> = ["status", "headers", "body", "error"]
    static let topKeys: Set<String> = ["contract", "name", "description", "given", "overrides", "headers", "steps"]
    static let stepKeys: Set<String> = [
        "name", "request", "query", "headers", "json", "text", "form", "multipart", "content_type", "timeout", "expect", "capture", "clock",
        "socket", "as", "send", "to", "receive", "closed", "from", "within", "close", "tool", "arguments", "mcp", "params", "graphql",
        "variables", "operation_name", "grpc", "message", "messages", "metadata",
    ]
    /// The keys that make a step a socket step, each with the keys it may have beside it.
    static let socketStepKeys: [String: Set<String>] = [
        "socket": ["name", "socket", "as", "query", "headers", "timeout", "expect"],
        "send": ["name", "send", "to"],
        "receive": ["name", "receive", "from", "within", "capture"],
        "closed": ["name", "closed", "from", "within"],
        "close": ["name", "close"],
    ]

    /// Whether a file is a scenario (it names a `contract`) rather than a contract.
    public static func isScenario(file: String) -> Bool {
        ScenarioCatalog.contractReference(of: URL(fileURLWithPath: file)) != nil
    }

    /// What a file is, by its top-level keys, to name it when it is given
    /// where the other kind belongs (`doppel run CONTRACT`, `doppel serve SCENARIO`).
    public enum FileKind: Sendable, Equatable {
        case scenario, contract, openAPI, other
    }

    /// What `file` holds, read from its top-level keys.
    public static func kind(of file: String) -> FileKind {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8),
            case .success(let node?) = SourceReader.read(text, file: file),
            let keys = node.mappingPairs?.compactMap(\.key.scalarText)
        else { return .other }
        if keys.contains("openapi") || keys.contains("swagger") { return .openAPI }
        if keys.contains("contract"), keys.contains("steps") || keys.contains("state") || keys.contains("overrides") { return .scenario }
        if keys.contains("doppel") || keys.contains("endpoints") { return .contract }
        return keys.contains("contract") ? .scenario : .other
    }

    /// Loads the contract a scenario names; another front end (an OpenAPI
    /// document's) passes its own.
    public typealias ContractLoading = (String) throws(ContractError) -> Contract

    /// Every diagnostic for a scenario file; empty when it is clean.
    public static func lint(
        file: String, loadContract: ContractLoading = { (file: String) throws(ContractError) in try ContractLoader.load(file: file) }
    ) -> [Diagnostic] {
        ContractError.thrown(by: { () throws(ContractError) in _ = try load(file: file, loadContract: loadContract) })
    }

    /// Loads a scenario file; `contract` skips loading the contract again when the caller has it.
    public static func load(
        file: String, contract: Contract? = nil,
        loadContract: ContractLoading = { (file: String) throws(ContractError) in try ContractLoader.load(file: file) }
    ) throws(ContractError) -> Scenario {
        let text: String
        switch SourceReader.readFile(file, what: "scenario") {
        case .success(let read): text = read
        case .failure(let error): throw error
        }
        return try load(text: text, file: file, contract: contract, loadContract: loadContract)
    }

    /// Loads scenario text; `file` names it in diagnostics and anchors the relative contract path.
    public static func load(
        text: String, file: String, contract: Contract? = nil,
        loadContract: ContractLoading = { (file: String) throws(ContractError) in try ContractLoader.load(file: file) }
    ) throws(ContractError) -> Scenario {
        let root: SourceNode
        switch SourceReader.read(text, file: file) {
        case .success(let node?): root = node
        case .success(nil):
            throw ContractError(diagnostics: [Diagnostic(at: SourceLocation(file: file, line: 1, column: 1), "the scenario is empty")])
        case .failure(let error): throw error
        }
        var diagnostics = DiagnosticCollector()
        guard let top = MappingReader(root, allowed: topKeys, context: "the scenario", diagnostics: &diagnostics) else {
            throw ContractError(diagnostics: diagnostics.diagnostics)
        }
        // A caller that gives the contract (an agent's scenario for the
        // served one) needs no `contract:` line.
        let contractNode = contract != nil && !top.has("contract") ? nil : top.required("contract", diagnostics: &diagnostics)
        if let contractNode, contractNode.scalarText == nil {
            diagnostics.error("'contract' must be the contract file's path", at: contractNode.location)
        }
        guard let contractText = contractNode.map({ $0.scalarText }) ?? contract?.file else {
            throw ContractError(diagnostics: diagnostics.diagnostics)
        }
        let directory = URL(fileURLWithPath: file).deletingLastPathComponent()
        let contractFile = contractText.hasPrefix("/") ? contractText : directory.appendingPathComponent(contractText).standardizedFileURL.path
        let loaded: Contract
        if let contract {
            loaded = contract
        } else if let contractNode {
            do {
                loaded = try loadContract(contractFile)
            } catch {
                let problem = error.diagnostics.first { $0.severity == .error }.map { ": \($0)" } ?? ""
                diagnostics.error("the contract '\(contractText)' does not load\(problem)", at: contractNode.location)
                throw ContractError(diagnostics: diagnostics.diagnostics)
            }
        } else {
            throw ContractError(diagnostics: diagnostics.diagnostics)
        }
        var loader = ContractLoader(file: file, referringTo: loaded)
        let name = top.string("name", diagnostics: &diagnostics) ?? URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
        let given = readGiven(top["given"], contract: loaded, loader: &loader)
        let overrides = readOverrides(top["overrides"], contract: loaded, loader: &loader)
        var defaultHeaders: [(String, ValueTemplate)] = []
        for entry in top.entries("headers", diagnostics: &diagnostics) {
            if let template = loader.compileTemplate(entry.value, roots: []) { defaultHeaders.append((entry.name, template)) }
        }
        let steps = readSteps(top["steps"], contract: loaded, loader: &loader)
        loader.diagnostics.append(contentsOf: diagnostics.diagnostics)
        if loader.diagnostics.hasErrors { throw ContractError(diagnostics: loader.diagnostics.diagnostics) }
        var setup = JSONObject()
        if let node = top["given"] { setup["given"] = node.json }
        if let node = top["overrides"] { setup["overrides"] = node.json }
        return Scenario(
            file: file, name: name, description: top["description"]?.scalarText, contractFile: contractFile, given: given,
            overrides: overrides, defaultHeaders: defaultHeaders, steps: steps, setup: setup)
    }

    static func readGiven(_ node: SourceNode?, contract: Contract, loader: inout ContractLoader) -> Given {
        guard let node, let reader = MappingReader(node, allowed: Self.givenKeys, context: "given", diagnostics: &loader.diagnostics) else {
            return Given()
        }
        var given = Given()
        for entry in reader.entries("state", diagnostics: &loader.diagnostics) {
            guard let kind = contract.state.kinds[entry.name] else {
                loader.diagnostics.error(
                    "the contract's state has no '\(entry.name)'\(Suggestion.hint(for: entry.name, in: contract.state.kinds.keys))",
                    at: entry.keyNode.location)
                continue
            }
            var value = entry.value.json
            switch kind {
            case .counter:
                guard case .int = value else {
                    loader.diagnostics.error("counter '\(entry.name)' must be given an integer", at: entry.value.location)
                    continue
                }
            case .collection:
                // Records are written as a list, like in the contract.
                if let items = value.arrayValue {
                    let key = contract.state.collectionKeys[entry.name] ?? "id"
                    var records = JSONObject()
                    for (item, itemNode) in zip(items, entry.value.sequenceItems ?? []) {
                        guard let id = item[key], !id.isNull else {
                            loader.diagnostics.error("a record of collection '\(entry.name)' has no '\(key)'", at: itemNode.location)
                            continue
                        }
                        records[id.interpolationText] = item
                    }
                    value = .object(records)
                } else if value.objectValue == nil {
                    loader.diagnostics.error("collection '\(entry.name)' must be given a list of records", at: entry.value.location)
                    continue
                }
            case .variable:
                break
            }
            given.state.append((entry.name, value))
        }
        if let clockNode = reader["clock"] {
            if let text = clockNode.scalarText {
                if let instant = UTCCalendar.parse(text) {
                    given.clock = ClockChange(set: instant, freeze: true)
                } else {
                    loader.diagnostics.error(
                        "clock must be an ISO 8601 date like 2025-01-01T00:00:00Z, or a mapping of set, advance, freeze", at: clockNode.location)
                }
            } else {
                given.clock = readClockChange(clockNode, loader: &loader)
            }
        }
        return given
    }

    static func readClockChange(_ node: SourceNode, loader: inout ContractLoader) -> ClockChange? {
        guard let object = node.json.objectValue else {
            loader.diagnostics.error("a clock change must be a mapping of set, advance, freeze or reset", at: node.location)
            return nil
        }
        switch ClockChange.parse(object) {
        case .success(let change): return change
        case .failure(let error):
            loader.diagnostics.error(error.message, at: node.location)
            return nil
        }
    }

    static func readOverrides(_ node: SourceNode?, contract: Contract, loader: inout ContractLoader) -> [Override] {
        guard let node else { return [] }
        guard let items = node.sequenceItems else {
            loader.diagnostics.error("overrides must be a list", at: node.location)
            return []
        }
        var overrides: [Override] = []
        for item in items {
            guard let reader = MappingReader(item, allowed: Self.overrideKeys, context: "an override", diagnostics: &loader.diagnostics),
                let endpointNode = reader.required("endpoint", diagnostics: &loader.diagnostics), let id = endpointNode.scalarText
            else { continue }
            guard let endpoint = contract.endpoint(id: id) else {
                loader.diagnostics.error(
                    "the contract has no endpoint '\(id)'\(Suggestion.hint(for: id, in: contract.endpoints.map(\.id)))", at: endpointNode.location)
                continue
            }
            let call = reader.int("call", diagnostics: &loader.diagnostics)
            if let call, call < 1, let callNode = reader["call"] {
                loader.diagnostics.error("'call' counts from 1", at: callNode.location)
            }
            var response: ResponseDefinition?
            if let responseNode = reader["response"] {
                response = loader.readResponseReference(responseNode, name: "override of \(id)", scope: ContractLoader.requestRoots, endpointLets: [])
            }
            if reader.has("status") || reader.has("example") {
                let status = reader.int("status", diagnostics: &loader.diagnostics)
                let example = reader.string("example", diagnostics: &loader.diagnostics)
                let at = (reader["example"] ?? reader["status"])!.location
                if response != nil {
                    loader.diagnostics.error("give an override 'response', or 'status' and/or 'example', not both", at: at)
                } else if status != nil || example != nil {
                    response =
                        example.map { endpoint.documentedResponse(named: $0, status: status) }
                        ?? status.flatMap { endpoint.documentedResponse(status: $0) }
                    if response == nil {
                        let wanted = [status.map { "\($0)" }, example.map { "'\($0)'" }].compactMap { $0 }.joined(separator: " ")
                        var seen: Set<String> = []
                        // By status alone, the statuses; with an example's name, the names too.
                        let offered = endpoint.documentedResponses.map { example == nil ? "\($0.status)" : "\($0.status) \($0.name)" }
                            .filter { seen.insert($0).inserted }
                        loader.diagnostics.error(
                            "endpoint '\(id)' documents no \(wanted) response; it has \(offered.joined(separator: ", "))", at: at)
                    }
                }
            }
            let delay = loader.readDelay(reader["delay"])
            let fault = loader.readFault(reader["fault"])
            if !["response", "status", "example", "delay", "fault"].contains(where: reader.has) {
                loader.diagnostics.error("an override needs a response, status, example, delay or fault", at: item.location)
                continue
            }
            overrides.append(Override(endpointID: id, call: call, response: response, delay: delay, fault: fault))
        }
        return overrides
    }

    static func readSteps(_ node: SourceNode?, contract: Contract, loader: inout ContractLoader) -> [Step] {
        guard let node else { return [] }
        guard let items = node.sequenceItems else {
            loader.diagnostics.error("steps must be a list", at: node.location)
            return []
        }
        let router = EndpointRouter(endpoints: contract.endpoints)
        var steps: [Step] = []
        var captured: Set<String> = []
        var sockets: [String] = []
        for (index, item) in items.enumerated() {
            guard let reader = MappingReader(item, allowed: stepKeys, context: "step \(index + 1)", diagnostics: &loader.diagnostics) else {
                continue
            }
            if reader.has("grpc") {
                if let step = readGRPCStep(reader, index: index, contract: contract, captured: &captured, loader: &loader) { steps.append(step) }
                continue
            }
            for key in ["message", "messages", "metadata"] where reader.has(key) {
                loader.diagnostics.error("'\(key)' belongs to a gRPC step ('grpc: SERVICE/METHOD')", at: reader[key]!.location)
            }
            if let kind = socketStepKeys.keys.sorted().first(where: { reader.has($0) }) {
                if let step = readSocketStep(kind, reader, index: index, router: router, sockets: &sockets, captured: &captured, loader: &loader) {
                    steps.append(step)
                }
                continue
            }
            let expectation = readExpectation(reader["expect"], roots: captured, loader: &loader)
            if let clockNode = reader["clock"] {
                if reader.has("request") {
                    loader.diagnostics.error("a step either sends a request or changes the clock, not both", at: clockNode.location)
                }
                if let change = readClockChange(clockNode, loader: &loader) {
                    steps.append(
                        Step(
                            name: reader.string("name", diagnostics: &loader.diagnostics) ?? "clock",
                            action: .clock(change, clockNode.json.objectValue ?? JSONObject()),
                            expectation: Expectation(), captures: [], location: item.location))
                }
                continue
            }
            if reader.has("tool") || reader.has("mcp") || reader.has("graphql") {
                let call =
                    reader.has("graphql")
                    ? readGraphQLCall(reader, contract: contract, roots: captured, loader: &loader)
                    : readMCPCall(reader, index: index, contract: contract, roots: captured, loader: &loader)
                guard let request = call else { continue }
                let captures = readCaptures(reader, captured: &captured, loader: &loader)
                let name =
                    reader.string("name", diagnostics: &loader.diagnostics)
                    ?? reader["tool"].flatMap(\.scalarText).map { "tool \($0)" } ?? reader["mcp"]?.scalarText
                    ?? reader["operation_name"]?.scalarText.map { "GraphQL \($0)" } ?? "step \(index + 1)"
                steps.append(Step(name: name, action: .request(request), expectation: expectation, captures: captures, location: item.location))
                continue
            }
            guard let request = readRequest(reader, roots: captured, loader: &loader) else {
                if !reader.has("request") { loader.diagnostics.error("step \(index + 1) needs 'request' (or 'clock')", at: item.location) }
                continue
            }
            // A fixed path the contract does not serve fails at run time:
            // unless the step expects that 404 or 405, it is a mistake.
            if case .string(let path)? = request.path.constantValue, let requestNode = reader["request"],
                expectation.status != 404, expectation.status != 405, !expectation.transportError
            {
                let target = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
                switch router.route(method: request.method, path: target, conditions: { _, _ in [] }) {
                case .matched:
                    break
                case .methodNotAllowed(let allowed):
                    loader.diagnostics.error(
                        "no endpoint of the contract takes \(request.method) \(target); it takes \(allowed.joined(separator: ", "))",
                        at: requestNode.location)
                case .notFound(let nearMisses):
                    let hint = nearMisses.first.map { " (the nearest is \($0.endpointID): \($0.signature))" } ?? ""
                    loader.diagnostics.error("no endpoint of the contract serves \(request.method) \(target)\(hint)", at: requestNode.location)
                }
            }
            let captures = readCaptures(reader, captured: &captured, loader: &loader)
            let name = reader.string("name", diagnostics: &loader.diagnostics) ?? reader["request"]?.scalarText ?? "step \(index + 1)"
            steps.append(Step(name: name, action: .request(request), expectation: expectation, captures: captures, location: item.location))
        }
        return steps
    }

    /// A request step's `capture`: expressions over its `status`, `headers` and `body`, named for the steps after it.
    static func readCaptures(_ reader: MappingReader, captured: inout Set<String>, loader: inout ContractLoader) -> [(String, Expression)] {
        var captures: [(String, Expression)] = []
        for entry in reader.entries("capture", diagnostics: &loader.diagnostics) {
            if let expression = loader.compileExpression(entry.value, roots: captured.union(["status", "headers", "body"])) {
                captures.append((entry.name, expression))
            }
        }
        captured.formUnion(captures.map(\.0))
        return captures
    }

    /// A step's `timeout`: a duration, default 30 s.
    static func readTimeout(_ reader: MappingReader, loader: inout ContractLoader) -> Double {
        guard let node = reader["timeout"] else { return 30 }
        if let duration = node.scalarText.flatMap(CalendarDuration.parse), duration.months == 0, duration.seconds > 0 { return duration.seconds }
        loader.diagnostics.error("'timeout' must be a duration like 5s", at: node.location)
        return 30
    }

    static func readExpectation(_ node: SourceNode?, roots: Set<String>, loader: inout ContractLoader) -> Expectation {
        var expectation = Expectation()
        guard let node, let reader = MappingReader(node, allowed: Self.expectKeys, context: "expect", diagnostics: &loader.diagnostics) else {
            return expectation
        }
        if let status = reader.int("status", diagnostics: &loader.diagnostics) {
            if (100...599).contains(status) {
                expectation.status = status
            } else {
                loader.diagnostics.error("status must be an HTTP status code from 100 to 599", at: reader["status"]!.location)
            }
        }
        readExpected(reader, headers: "headers", into: &expectation, roots: roots, loader: &loader)
        return expectation
    }

    /// What an `expect` says besides its status: header (or metadata) values, a body with its matchers, a transport error.
    static func readExpected(
        _ reader: MappingReader, headers key: String, into expectation: inout Expectation, roots: Set<String>, loader: inout ContractLoader
    ) {
        for entry in reader.entries(key, diagnostics: &loader.diagnostics) {
            // A header's value is text: `RateLimit-Remaining: 9` expects "9".
            var value = entry.value
            if case .scalar(let text, plain: true) = value.kind, !value.json.isNull, value.json.stringValue == nil {
                value = SourceNode(kind: .scalar(text, plain: false), location: value.location, contentOffset: value.contentOffset)
            }
            if let template = loader.compileTemplate(value, roots: roots) { expectation.headers.append((entry.name, template)) }
        }
        if let bodyNode = reader["body"] {
            expectation.body = loader.compileTemplate(bodyNode, roots: roots)
            checkMatchers(bodyNode, loader: &loader)
        }
        expectation.transportError = reader.bool("error", diagnostics: &loader.diagnostics) ?? false
        if expectation.transportError, expectation.status != nil || expectation.body != nil {
            loader.diagnostics.error("a step that expects a transport error cannot expect a status or body", at: reader.node.location)
        }
    }

    static func checkMatchers(_ node: SourceNode, loader: inout ContractLoader) {
        switch node.kind {
        case .mapping(let pairs):
            for pair in pairs {
                guard let key = pair.key.scalarText else { continue }
                if key.hasPrefix("$") {
                    if !BodyMatcher.keywords.contains(key) {
                        loader.diagnostics.error(
                            "unknown matcher '\(key)'\(Suggestion.hint(for: key, in: BodyMatcher.keywords))", at: pair.key.location)
                    } else if key == "$regex", (try? Schema.Pattern(pair.value.scalarText ?? "")) == nil {
                        loader.diagnostics.error("invalid regular expression", at: pair.value.location)
                    } else if key == "$type" {
                        let known = ["string", "integer", "number", "boolean", "object", "array", "null"]
                        for item in pair.value.sequenceItems ?? [pair.value] {
                            let type = item.scalarText ?? ""
                            if !known.contains(type) {
                                let formats = ["uuid", "date-time", "date", "email", "uri"].contains(type) ? "; a format is checked with $regex" : ""
                                loader.diagnostics.error(
                                    "unknown $type '\(type)'\(Suggestion.hint(for: type, in: known)): a JSON type (\(known.joined(separator: ", ")))\(formats)",
                                    at: item.location)
                            }
                        }
                    }
                } else {
                    checkMatchers(pair.value, loader: &loader)
                }
            }
        case .sequence(let items):
            for item in items { checkMatchers(item, loader: &loader) }
        case .scalar:
            break
        }
    }
}

extension ContractLoader {
    /// The entries of a mapping-valued key of `reader`, reporting shape problems.
    mutating func diagnosticsEntries(_ reader: MappingReader, _ key: String) -> [(name: String, keyNode: SourceNode, value: SourceNode)] {
        reader.entries(key, diagnostics: &diagnostics)
    }
}

extension ScenarioLoader {
    /// An inline scenario loaded from its JSON text, for `contract`; it
    /// keeps the text, so a shared store can load it again for a session.
    package static func inline(_ text: String, contract: Contract) throws(ContractError) -> Scenario {
        // Named as if it sat beside the contract, so a `file:` body resolves
        // against the contract's folder, with the contract's own checks
        // (never the server's working directory).
        let file = URL(fileURLWithPath: contract.file).deletingLastPathComponent().appendingPathComponent("inline-scenario").path
        var scenario = try ScenarioLoader.load(text: text, file: file, contract: contract)
        scenario.inlineSource = text
        return scenario
    }
}
