/// Reads one YAML mapping of a contract, reporting unknown keys (with a
/// did-you-mean), duplicate keys and values of the wrong kind as diagnostics.
struct MappingReader {
    let node: SourceNode
    let context: String
    /// The mapping's known keys with their values, in order. Contract
    /// mappings have a few keys each, so they are searched, not hashed.
    private var fields: [(key: SourceNode, value: SourceNode)] = []

    /// Reads `node` as a mapping with the given keys; nil (and a diagnostic) when it is not a mapping.
    init?(_ node: SourceNode, allowed: Set<String>, context: String, diagnostics: inout DiagnosticCollector) {
        guard let pairs = node.mappingPairs else {
            if case .scalar("", plain: true) = node.kind {
                self.node = node
                self.context = context
                return
            }
            diagnostics.error("\(context) must be a mapping, not \(node.kindDescription)", at: node.location)
            return nil
        }
        self.node = node
        self.context = context
        // Most mappings are clean, and then their own pairs are the fields.
        var repeated = RepeatedKeys()
        var clean = true
        for index in pairs.indices {
            guard let key = pairs[index].key.scalarText, allowed.contains(key),
                !repeated.isRepeated(key, count: index, key: { pairs[$0].key.scalarText })
            else {
                clean = false
                break
            }
        }
        if clean {
            fields = pairs
            return
        }
        var kept: [(key: SourceNode, value: SourceNode)] = []
        repeated = RepeatedKeys()
        for pair in pairs {
            guard let key = pair.key.scalarText else {
                diagnostics.error("keys in \(context) must be plain strings", at: pair.key.location)
                continue
            }
            if !allowed.contains(key) {
                diagnostics.error("unknown key '\(key)' in \(context)\(Suggestion.hint(for: key, in: allowed))", at: pair.key.location)
                continue
            }
            guard !repeated.isRepeated(key, count: kept.count, key: { kept[$0].key.scalarText }) else {
                diagnostics.error("duplicate key '\(key)' in \(context)", at: pair.key.location)
                continue
            }
            kept.append(pair)
        }
        fields = kept
    }

    /// The keys read, in order.
    var keys: [String] { fields.compactMap { $0.key.scalarText } }

    subscript(key: String) -> SourceNode? {
        for index in fields.indices where fields[index].key.scalarText?.isSameKey(as: key) == true { return fields[index].value }
        return nil
    }

    func has(_ key: String) -> Bool { self[key] != nil }

    /// A required key; reports its absence.
    func required(_ key: String, diagnostics: inout DiagnosticCollector) -> SourceNode? {
        if let value = self[key] { return value }
        diagnostics.error("\(context) needs '\(key)'", at: node.location)
        return nil
    }

    func string(_ key: String, diagnostics: inout DiagnosticCollector) -> String? {
        guard let value = self[key] else { return nil }
        guard let text = value.scalarText else {
            diagnostics.error("'\(key)' in \(context) must be a string, not \(value.kindDescription)", at: value.location)
            return nil
        }
        return text
    }

    func int(_ key: String, diagnostics: inout DiagnosticCollector) -> Int? {
        guard let value = self[key] else { return nil }
        guard case .int(let i) = value.json else {
            diagnostics.error("'\(key)' in \(context) must be an integer", at: value.location)
            return nil
        }
        return i
    }

    func number(_ key: String, diagnostics: inout DiagnosticCollector) -> Double? {
        guard let value = self[key] else { return nil }
        guard let n = value.json.numberValue else {
            diagnostics.error("'\(key)' in \(context) must be a number", at: value.location)
            return nil
        }
        return n
    }

    func bool(_ key: String, diagnostics: inout DiagnosticCollector) -> Bool? {
        guard let value = self[key] else { return nil }
        guard case .bool(let b) = value.json else {
            diagnostics.error("'\(key)' in \(context) must be true or false", at: value.location)
            return nil
        }
        return b
    }

    /// The entries of a mapping-valued key, in order.
    func entries(_ key: String, diagnostics: inout DiagnosticCollector) -> [(name: String, keyNode: SourceNode, value: SourceNode)] {
        guard let value = self[key] else { return [] }
        return MappingReader.entries(of: value, context: "'\(key)' in \(context)", diagnostics: &diagnostics)
    }

    static func entries(
        of node: SourceNode, context: String, diagnostics: inout DiagnosticCollector
    ) -> [(name: String, keyNode: SourceNode, value: SourceNode)] {
        if case .scalar("", plain: true) = node.kind { return [] }
        guard let pairs = node.mappingPairs else {
            diagnostics.error("\(context) must be a mapping, not \(node.kindDescription)", at: node.location)
            return []
        }
        var repeated = RepeatedKeys()
        var result: [(String, SourceNode, SourceNode)] = []
        result.reserveCapacity(pairs.count)
        for pair in pairs {
            guard let name = pair.key.scalarText else {
                diagnostics.error("keys in \(context) must be plain strings", at: pair.key.location)
                continue
            }
            guard !repeated.isRepeated(name, count: result.count, key: { result[$0].0 }) else {
                diagnostics.error("duplicate key '\(name)' in \(context)", at: pair.key.location)
                continue
            }
            result.append((name, pair.key, pair.value))
        }
        return result
    }
}
