import DoppelCore
import DoppelServer
import Foundation

/// Planning walks: sequences of requests chosen to reach every status the contract's state can reach.
extension ProviderVerifier.Run {
    // MARK: Planning

    /// The sequences to send, planned on a scratch engine.
    /// The walks, and why planning stopped early when it did.
    mutating func plannedWalks() -> (walks: [Walk], stopped: String?) {
        let endpoints = walkable
        guard !endpoints.isEmpty else { return ([], nil) }
        var planner = Planner(run: self)
        var walks: [Walk] = []
        var seen: Set<[String]> = []
        // A single step is a walk when it reaches a status the checks of one request do not (a 404 of a record never created).
        func add(_ walk: Walk, single: Bool = false) {
            let key = walk.steps.map(\.id)
            guard walk.steps.count >= (single ? 1 : 2), seen.insert(key).inserted else { return }
            walks.append(walk)
        }
        // Every documented status state can reach, by the shortest sequence.
        let creators = endpoints.filter { $0.method == "POST" }
        var prefixes: [[Endpoint]] = [[]] + creators.map { [$0] }
        for creator in creators {
            for delete in endpoints where delete.method == "DELETE" && delete.path.template.hasPrefix(creator.path.template + "/") {
                prefixes.append([creator, delete])
            }
        }
        var reachedBy: [String: [Endpoint]] = [:]  // endpoint id → shortest 2xx sequence ending in it
        for endpoint in endpoints {
            // Only what can change this endpoint's answer comes before it: a
            // record of a collection it lives under or its body names.
            let named = Self.namedCollections(of: endpoint, contract: contract)
            let relevant = prefixes.filter { prefix in
                guard let creator = prefix.first else { return true }
                let collection = creator.path.template
                return creator.id != endpoint.id
                    && (endpoint.path.template.hasPrefix(collection + "/")
                        || named.contains((collection.split(separator: "/").last.map(String.init) ?? "").lowercased()))
            }
            var best: [Int: [Endpoint]] = [:]
            for prefix in relevant {
                for (status, steps) in planner.firstStatuses(prefix: prefix, repeating: endpoint)
                where best[status].map({ steps.count < $0.count }) ?? true {
                    best[status] = steps
                }
            }
            for status in best.keys.sorted() {
                guard let steps = best[status] else { continue }
                if (200...299).contains(status), reachedBy[endpoint.id] == nil { reachedBy[endpoint.id] = steps }
                add(
                    Walk(purpose: "\(endpoint.id) \(status)", steps: steps),
                    single: !(200...299).contains(status)
                        && !checks.contains {
                            $0.endpointID == endpoint.id && $0.status == status
                        })
            }
        }
        // Each change of state read back: a write that succeeds, then every read whose answer it changes.
        for writer in endpoints where !["GET", "HEAD"].contains(writer.method) {
            guard let steps = reachedBy[writer.id] else { continue }
            for reader in endpoints where reader.method == "GET" && reader.id != writer.id {
                if planner.changes(after: steps, reader: reader) {
                    add(Walk(purpose: "\(reader.id) after \(writer.id)", steps: steps + [reader]))
                }
            }
        }
        // Random sequences from the seed.
        for index in 0..<max(0, options.walks) {
            var steps: [Endpoint] = []
            for _ in 0..<max(2, options.walkLength) {
                steps.append(endpoints[Int(random.next() % UInt64(endpoints.count))])
            }
            add(Walk(purpose: "random walk \(index + 1)", steps: steps))
        }
        let stopped =
            planner.exhausted
            ? "planning stopped after \(Planner.maximumAnswers) answers of the contract's engine (\(endpoints.count) endpoints): the sequences found so far and the random ones are sent; --endpoint plans the rest"
            : nil
        return (walks, stopped)
    }

    /// The collections a body names by a member (`child_id`: `child`, `children`), lowercased.
    static func namedCollections(of endpoint: Endpoint, contract: Contract) -> Set<String> {
        guard let schema = endpoint.body?.schema else { return [] }
        let resolved = contract.schemas[schema.ref ?? ""] ?? schema
        return Set(resolved.properties.map(\.0).compactMap(idStem(of:)).flatMap { [$0, plural($0)] })
    }

    /// Plans on a scratch engine of the contract: each sequence in a session of its own.
    struct Planner {
        let run: ProviderVerifier.Run
        let engine: MockEngine
        var sessions = 0
        /// Answers of the engine so far: planning stops at `maximumAnswers`
        /// (a document of hundreds of operations has tens of thousands of pairs to try).
        var answered = 0
        static let maximumAnswers = 10_000
        var exhausted: Bool { answered >= Self.maximumAnswers }

        init(run: ProviderVerifier.Run) {
            self.run = run
            self.engine = MockEngine(contract: run.verifier.contract, journalCapacity: 10)
        }

        mutating func answer(_ endpoint: Endpoint, side: inout ProviderVerifier.Run.Side) -> MockResponse {
            answered += 1
            let request = run.request(for: endpoint, side: side, oracle: true)
            let response = engine.respond(to: request)
            run.remember(response, of: endpoint, on: &side)
            return response
        }

        /// After `prefix`, the endpoint repeated: each status it first gives, with the sequence that gave it.
        mutating func firstStatuses(prefix: [Endpoint], repeating endpoint: Endpoint) -> [(Int, [Endpoint])] {
            guard !exhausted else { return [] }
            sessions += 1
            var side = ProviderVerifier.Run.Side(session: "doppel-verify-plan-\(sessions)")
            for step in prefix { _ = answer(step, side: &side) }
            var found: [(Int, [Endpoint])] = []
            var seen: Set<Int> = []
            for count in 1...ProviderVerifier.Run.maximumRepeats {
                let status = answer(endpoint, side: &side).status
                if seen.insert(status).inserted { found.append((status, prefix + Array(repeating: endpoint, count: count))) }
                if status >= 500 { break }
            }
            return found
        }

        /// Whether `reader`'s answer after `steps` differs from its answer in a fresh session.
        mutating func changes(after steps: [Endpoint], reader: Endpoint) -> Bool {
            guard !exhausted else { return false }
            sessions += 1
            var fresh = ProviderVerifier.Run.Side(session: "doppel-verify-plan-\(sessions)")
            let before = answer(reader, side: &fresh)
            sessions += 1
            var side = ProviderVerifier.Run.Side(session: "doppel-verify-plan-\(sessions)")
            for step in steps { _ = answer(step, side: &side) }
            let after = answer(reader, side: &side)
            guard before.status == after.status else { return true }
            guard let a = try? JSONReader.parse(before.body), let b = try? JSONReader.parse(after.body) else { return before.body != after.body }
            // Values the contract derives from state, compared as a provider's would be.
            guard let response = reader.documentedResponses.first(where: { $0.name == after.responseName }),
                let place = StateDerivation(endpoint: reader, response: response).places(of: response)
            else { return false }
            var differences: [String] = []
            ProviderVerifier.Run.compare(b, expected: a, stable: a, place: place, at: "", into: &differences)
            return !differences.isEmpty
        }
    }
}
