import DoppelCore
import DoppelServer
import Foundation

/// A failing walk written as a scenario file that replays it.
extension ProviderVerifier.Run {
    // MARK: The scenario

    /// The failing sequence as a scenario file `doppel run --target` runs:
    /// ids the provider issued are captured and used by the later steps.
    func scenario(_ result: WalkResult) -> String {
        var lines = [
            "# doppel verify --seed \(options.seed): the shortest sequence found that fails",
            "contract: \(URL(fileURLWithPath: contract.file).standardizedFileURL.path)",
            "steps:",
        ]
        if let setup = options.setup {
            lines.insert("# from a fresh start: put the steps of \(setup.file) (--setup) first, and use its token", at: 1)
        }
        var captured: [String: String] = [:]  // id → name
        // Doppel's own sample credentials are written out, so the scenario runs;
        // any other (the user's, one the provider issued) is not.
        let samples = Set(
            contract.authSchemes.values.map { scheme -> String in
                switch sampleCredential(for: scheme, token: nil) {
                case .header(_, let value), .query(_, let value): value
                }
            })
        for (index, step) in result.sent.enumerated() {
            let request = step.request
            func placed(_ text: String) -> String {
                var text = text
                for (id, name) in captured { text = text.replacingOccurrences(of: id, with: "{{ \(name) }}") }
                return text
            }
            let target = placed(request.path) + (request.query.map { "?" + placed($0) } ?? "")
            lines.append("  - request: \(request.method) \(target)")
            let headers = request.headers.filter { !["content-type", "content-length", "doppel-session"].contains($0.name.lowercased()) }
            if !headers.isEmpty {
                lines.append("    headers:")
                for (name, value) in headers {
                    let shown = Redaction.isSecretName(name) && !samples.contains(value) ? "*** (your credentials)" : value
                    lines.append("      \(name): \(JSONWriter.encodeString(.string(shown)))")
                }
            }
            if !request.body.isEmpty, let json = try? JSONReader.parse(request.body) {
                lines.append("    json: \(placed(JSONWriter.encodeString(json)))")
            }
            var expect = "{ status: \(step.expected.status) }"
            if index == result.failedAt, !result.differences.isEmpty, step.target?.status == step.expected.status,
                let wanted = try? JSONReader.parse(step.expected.body),
                let response = step.endpoint.documentedResponses.first(where: { $0.name == step.expected.responseName }),
                let place = StateDerivation(endpoint: step.endpoint, response: response).places(of: response)
            {
                if let values = Self.exactValues(wanted, place: place) {
                    expect = "{ status: \(step.expected.status), body: \(JSONWriter.encodeString(values)) }"
                }
            }
            lines.append("    expect: \(expect)")
            if (200...299).contains(step.expected.status), step.request.method == "POST", step.endpoint.path.parameterNames.isEmpty,
                let object = (try? JSONReader.parse(step.target.map { [UInt8]($0.body) } ?? []))?.objectValue,
                let id = object["id"].flatMap({ $0.stringValue ?? $0.intValue.map(String.init) }), id.count >= 4
            {
                let name =
                    (step.endpoint.path.template.split(separator: "/").last.map(String.init) ?? "record").replacingOccurrences(of: "-", with: "_")
                    + "_id_\(index + 1)"
                captured[id] = name
                lines.append("    capture: { \(name): body.id }")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The parts of a body the contract derives exactly from state, as an expectation.
    static func exactValues(_ value: JSON, place: StateDerivation.Place) -> JSON? {
        switch place {
        case .free: return nil
        case .derived(let plain):
            if case .string = value, !plain { return nil }
            if case .object = value, !plain { return nil }
            if case .array = value, !plain { return nil }
            return value
        case .object(let members):
            guard let object = value.objectValue else { return nil }
            var kept: [(String, JSON)] = []
            for key in members.keys.sorted() {
                if let member = members[key], let inner = object[key], let exact = exactValues(inner, place: member) { kept.append((key, exact)) }
            }
            return kept.isEmpty ? nil : .object(JSONObject(kept))
        case .array:
            return nil
        }
    }
}
