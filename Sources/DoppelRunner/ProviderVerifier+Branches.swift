import DoppelCore
import Foundation

/// Requests beyond the example's: a valid one per value of a body member's
/// enum (a provider that fails on the other `story_type` is caught), and for
/// each response whose `when` refuses input, a request that meets the `when`
/// (a combined story without its `hero_id`), found on a scratch engine of
/// the contract.
extension ProviderVerifier.Run {
    /// One change to the sample body: members left out, members set.
    struct BodyEdit: CustomStringConvertible {
        var removed: [String] = []
        var set: [(String, JSON)] = []

        func apply(_ request: inout RecordedRequest) {
            ProviderVerifier.Run.editBody(&request) { object in
                for (name, value) in set { object[name] = value }
                for name in removed { object[name] = nil }
            }
        }

        var description: String {
            (set.map { "'\($0.0)' = \(JSONWriter.encodeString($0.1))" } + removed.map { "'\($0)' left out" }).joined(separator: ", ")
        }
    }

    /// The most branch requests per endpoint.
    static let maximumBranches = 12
    /// The most edits tried on the scratch engine per refusing rule.
    static let maximumEditsTried = 400

    /// The sample body's object and the body schema's members, when the body is JSON.
    func bodyMembers(of endpoint: Endpoint) -> (sample: JSONObject, properties: [(String, Schema)])? {
        guard let spec = endpoint.body, let schema = spec.schema.map(resolved),
            spec.contentTypes.isEmpty || spec.contentTypes.contains(where: MediaTypes.isJSON),
            case .object(let sample)? = try? JSONReader.parse(samples.request(for: endpoint, from: oracle).body)
        else { return nil }
        return (sample, schema.properties.map { ($0.0, resolved($0.1)) })
    }

    /// A valid request for each other value of each enum member of the
    /// body, and for each `oneOf`/`anyOf` branch (of the body, or of one of
    /// its members) the sample does not take.
    func branches(of endpoint: Endpoint) -> [(String, (inout RecordedRequest) -> Void)] {
        guard let (sample, properties) = bodyMembers(of: endpoint), let whole = endpoint.body?.schema.map(resolved) else { return [] }
        var found: [(String, (inout RecordedRequest) -> Void)] = []
        for (name, schema) in properties {
            for value in schema.enumValues ?? [] where value != sample[name] && !value.isNull && found.count < Self.maximumBranches {
                let edit = BodyEdit(set: [(name, value)])
                found.append(("valid request, body \(edit)", edit.apply))
            }
        }
        let sampler = SchemaSampler(registry: contract.schemas)
        let validator = SchemaValidator(registry: contract.schemas)
        // The body's own branches: each a whole body, kept only where the whole schema takes it.
        // A branch the example already takes is sent by the valid request.
        for (index, branch, value) in Self.branchSamples(of: whole, sampler: sampler) where found.count < Self.maximumBranches {
            guard case .object(var object) = value, !validator.validate(.object(sample), against: branch).isEmpty else { continue }
            // Members outside the branches (the sample's) stay, as a client sends them.
            for (name, member) in sample.pairs where object[name] == nil && whole.properties.contains(where: { $0.0 == name }) {
                object[name] = member
            }
            guard validator.validate(.object(object), against: whole).isEmpty else { continue }
            let body = JSONWriter.encode(.object(object))
            found.append(("valid request, body of branch \(index + 1) of its \(whole.oneOf.isEmpty ? "anyOf" : "oneOf")", { $0.body = body }))
        }
        // A member's branches: the member set to each.
        for (name, schema) in properties {
            for (index, branch, value) in Self.branchSamples(of: schema, sampler: sampler) where found.count < Self.maximumBranches {
                if let sent = sample[name], validator.validate(sent, against: branch).isEmpty { continue }
                var object = sample
                object[name] = value
                guard validator.validate(.object(object), against: whole).isEmpty else { continue }
                let edit = BodyEdit(set: [(name, value)])
                found.append(("valid request, body '\(name)' of branch \(index + 1) of its \(schema.oneOf.isEmpty ? "anyOf" : "oneOf")", edit.apply))
            }
        }
        return found
    }

    /// A sample of each `oneOf` (else `anyOf`) branch of a schema, with the branch's index.
    static func branchSamples(of schema: Schema, sampler: SchemaSampler) -> [(Int, Schema, JSON)] {
        let branches = schema.oneOf.isEmpty ? schema.anyOf : schema.oneOf
        guard branches.count > 1 else { return [] }
        return branches.enumerated().compactMap { index, branch in sampler.sample(branch).map { (index, branch, $0) } }
    }

    /// For each response the contract chooses by a `when` to refuse input
    /// (a 400, a 422, the endpoint's `on_invalid` status), an edit of the
    /// sample body that makes the contract choose it.
    func refusals(of endpoint: Endpoint) -> [(String, (inout RecordedRequest) -> Void)] {
        guard let (sample, properties) = bodyMembers(of: endpoint) else { return [] }
        let rules = endpoint.responses.filter { $0.when != nil && isRefusal($0.status, of: endpoint, asInvalid: true) }
        guard !rules.isEmpty else { return [] }
        let scratch = MockEngine(contract: contract, journalCapacity: 10)
        var tried = 0
        var found: [(String, (inout RecordedRequest) -> Void)] = []
        for rule in rules {
            let source = rule.when!.source
            // Values to try for a member: its enum, the text literals of the rule, a value no list has.
            let literals = Self.textLiterals(in: source).map(JSON.string)
            var sets: [(String, JSON)] = []
            for (name, schema) in properties {
                for value in (schema.enumValues ?? [])
                    + (schema.types == ["string"] || schema.types == nil ? literals + [.string("doppel-verify-not-listed")] : [])
                where value != sample[name] {
                    sets.append((name, value))
                }
            }
            var edits: [BodyEdit] = sample.keys.map { BodyEdit(removed: [$0]) } + sets.map { BodyEdit(set: [$0]) }
            for set in sets { for key in sample.keys where key != set.0 { edits.append(BodyEdit(removed: [key], set: [set])) } }
            let base = self.request(for: endpoint, side: Side(session: "doppel-verify-rule"), oracle: true)
            for edit in edits where tried < Self.maximumEditsTried {
                tried += 1
                var request = base
                request.headers.removeAll { $0.name.lowercased() == MockEngine.sessionHeader }
                request.headers.append((name: "Doppel-Session", value: "doppel-verify-rule-\(tried)"))
                edit.apply(&request)
                let response = scratch.respond(to: request)
                if response.responseName == rule.name, response.status == rule.status {
                    found.append(("rule `\(source)` met (body \(edit))", edit.apply))
                    break
                }
            }
        }
        return found
    }

    /// The text literals of an expression's source: `'hero'`, `"combined"`.
    static func textLiterals(in source: String) -> [String] {
        var literals: [String] = []
        var current: String?
        var quote: Character = "'"
        for character in source {
            if var text = current {
                if character == quote {
                    literals.append(text)
                    current = nil
                } else {
                    text.append(character)
                    current = text
                }
            } else if character == "'" || character == "\"" {
                quote = character
                current = ""
            }
        }
        return Array(Set(literals)).sorted().prefix(16).map { $0 }
    }
}
