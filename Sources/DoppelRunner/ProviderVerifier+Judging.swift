import DoppelCore
import DoppelServer
import Foundation

/// How a run judges the provider's answers: refusals, problems against the contract, relations between values.
extension ProviderVerifier.Run {
    /// ` (unauthorized)`: the name of the response the contract chose, where it has one of its own.
    func describe(_ expected: MockResponse, of endpoint: Endpoint) -> String {
        // A named response says which; `get-item[0]` says nothing more than the status.
        guard let name = expected.responseName, !(name.hasPrefix(endpoint.id + "[") && name.hasSuffix("]")) else { return "" }
        return " (\(name))"
    }

    /// Whether a status is how the contract refuses a request: as invalid
    /// (its `on_invalid`, Doppel's 422 and malformed-body 400), or for
    /// its credentials.
    func isRefusal(_ status: Int, of endpoint: Endpoint, asInvalid: Bool) -> Bool {
        if asInvalid {
            var statuses: Set<Int> = [422]
            if let own = endpoint.onInvalid?.status { statuses.insert(own) }
            if let invalid = contract.fallbacks[.validationFailed]?.status { statuses.insert(invalid) }
            if let malformed = contract.fallbacks[.malformedBody]?.status { statuses.insert(malformed) }
            if endpoint.body != nil { statuses.insert(400) }
            return statuses.contains(status)
        }
        return contract.unauthorizedStatuses(of: endpoint).contains(status)
    }

    /// What differs between an answer and the contract's responses of its
    /// status (and the oracle's own answer, when it gave that status).
    /// `actual` is the answer's body read as JSON (nil when it is not JSON),
    /// read once by the caller for every check of the answer.
    func problems(_ answer: ScenarioRunner.HTTPAnswer, actual: JSON?, status: Int, of endpoint: Endpoint, oracle: MockResponse?) -> [String] {
        let contentType = answer.headers.first { $0.key.lowercased() == "content-type" }?.value
        let candidates = contract.documentedResponses(of: endpoint).filter { $0.status == status }
        var best: [String]?
        for candidate in candidates {
            var found = BodyShape.problems([UInt8](answer.body), contentType: contentType, against: candidate, registry: contract.schemas)
            for (name, _) in candidate.headers where name.lowercased() != "content-type" {
                if !answer.headers.keys.contains(where: { $0.lowercased() == name.lowercased() }) { found.append("header \(name): missing") }
            }
            // A templated body without a schema (a list from `data`, a record
            // read back) is held to the shape of the contract's own rendering
            // of the same request: its types, members and every item.
            if found.isEmpty, candidate.schema == nil, case .json(let template, _, _) = candidate.body, !template.expressions.isEmpty,
                let oracle, oracle.responseName == candidate.name, oracle.status == status,
                let rendered = try? JSONReader.parse(oracle.body), let actual
            {
                BodyShape.shape(of: actual, against: rendered, at: "", into: &found, rendering: true)
            }
            if found.isEmpty { return [] }
            if best == nil || found.count < best!.count { best = found }
        }
        if let oracle {
            // Doppel's own answer (a problem, a rendered body): the same shape.
            let expectedJSON = try? JSONReader.parse(oracle.body)
            if let expectedJSON, let actual {
                var found: [String] = []
                BodyShape.shape(of: actual, against: expectedJSON, at: "", into: &found)
                if found.isEmpty { return [] }
                if best == nil || found.count < best!.count { best = found }
            } else if expectedJSON == nil, candidates.isEmpty {
                return []
            } else if expectedJSON != nil {
                best = best ?? ["the body is not JSON"]
            }
        }
        return best ?? []
    }

    /// The relations between an answer's own values that its response
    /// states (`converted_amount` from `amount` and the answer's `rate`).
    func relations(
        _ answer: ScenarioRunner.HTTPAnswer, actual: JSON?, request: RecordedRequest, of endpoint: Endpoint, oracle: MockResponse
    ) -> [String] {
        let documented = endpoint.documentedResponses
        guard
            let response = (oracle.status == answer.status ? documented.first { $0.name == oracle.responseName } : nil)
                ?? documented.first(where: { $0.status == answer.status }),
            let value = actual
        else { return [] }
        return self.oracle.relationProblems(of: response, for: endpoint, request: request, answer: value)
    }
}
