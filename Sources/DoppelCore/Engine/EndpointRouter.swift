/// Stage 1: finds the endpoint for a request's method and path, capturing
/// path parameters, or explains why none fits.
package struct EndpointRouter: Sendable {
    /// What routing decided.
    package enum Route: Sendable {
        case matched(Endpoint, parameters: [String: String])
        case methodNotAllowed(allowed: [String])
        case notFound(nearMisses: [NearMiss])
    }

    let endpoints: [Endpoint]
    /// Endpoints by segment count, then by their text at one chosen segment,
    /// so that routing cost does not grow with the number of endpoints.
    let buckets: [Int: Bucket]
    /// Endpoints whose path ends in `{name...}`, which take paths of any
    /// length past their fixed segments; tried with the bucket's, in order.
    let rest: [Int]

    /// The endpoints with one segment count. `position` is the segment whose
    /// literal text tells them apart best; `byText` lists, for each text
    /// there, the endpoints with that literal, and `others` those with a
    /// parameter there (which can match any text), each in contract order.
    struct Bucket: Sendable {
        let position: Int
        let byText: [String: [Int]]
        let others: [Int]

        /// The endpoints that can match, in contract order: those with the
        /// segment's text merged with those with a parameter there. Merged
        /// here rather than stored per text, which cost time and memory of
        /// texts × parameters when the table was built.
        func candidates(_ segments: [Substring]) -> [Int] {
            guard let literal = byText[String(segments[position])] else { return others }
            guard !others.isEmpty else { return literal }
            var merged: [Int] = []
            merged.reserveCapacity(literal.count + others.count)
            var i = 0
            var j = 0
            while i < literal.count || j < others.count {
                if j == others.count || (i < literal.count && literal[i] < others[j]) {
                    merged.append(literal[i])
                    i += 1
                } else {
                    merged.append(others[j])
                    j += 1
                }
            }
            return merged
        }
    }

    package init(endpoints: [Endpoint]) {
        self.endpoints = endpoints
        var grouped: [Int: [Int]] = [:]
        for (index, endpoint) in endpoints.enumerated() where endpoint.path.restParameter == nil {
            grouped[endpoint.path.segments.count, default: []].append(index)
        }
        rest = endpoints.indices.filter { endpoints[$0].path.restParameter != nil }
        var buckets: [Int: Bucket] = [:]
        for (count, members) in grouped {
            func literal(_ index: Int, at position: Int) -> String? {
                let parts = endpoints[index].path.segments[position]
                if parts.count == 1, case .literal(let text) = parts[0] { return text }
                return nil
            }
            // The position with the most distinct literal texts discriminates best (the first such).
            let distinct = (0..<count).map { position in Set(members.compactMap { literal($0, at: position) }).count }
            let position = distinct.indices.max { distinct[$0] < distinct[$1] || (distinct[$0] == distinct[$1] && $0 > $1) } ?? 0
            var others: [Int] = []
            var byText: [String: [Int]] = [:]
            for member in members {
                if count > 0, let text = literal(member, at: position) {
                    byText[text, default: []].append(member)
                } else {
                    others.append(member)
                }
            }
            buckets[count] = Bucket(position: position, byText: byText, others: others)
        }
        self.buckets = buckets
    }

    /// Routes a request. `conditions` evaluates an endpoint's `match`
    /// conditions; it returns the failing ones' texts.
    package func route(method: String, path: String, conditions: (Endpoint, [String: String]) -> [String]) -> Route {
        let segments = Self.segments(of: path)
        var allowed: [String] = []
        var conditionMisses: [NearMiss] = []
        var candidates = buckets[segments.count]?.candidates(segments) ?? []
        if !rest.isEmpty {
            let longer = rest.filter { endpoints[$0].path.segments.count < segments.count }
            if !longer.isEmpty { candidates = (candidates + longer).sorted() }
        }
        for index in candidates {
            let endpoint = endpoints[index]
            guard let parameters = endpoint.path.match(segments) else { continue }
            guard endpoint.method == method || (method == "HEAD" && endpoint.method == "GET") else {
                if !allowed.contains(endpoint.method) { allowed.append(endpoint.method) }
                continue
            }
            let failed = endpoint.match.isEmpty ? [] : conditions(endpoint, parameters)
            if failed.isEmpty { return .matched(endpoint, parameters: parameters) }
            conditionMisses.append(
                NearMiss(endpointID: endpoint.id, signature: endpoint.signature, reasons: failed.map { "match condition '\($0)' is false" }))
        }
        if !conditionMisses.isEmpty { return .notFound(nearMisses: conditionMisses) }
        if !allowed.isEmpty {
            if allowed.contains("GET"), !allowed.contains("HEAD") { allowed.append("HEAD") }
            return .methodNotAllowed(allowed: allowed)
        }
        return .notFound(nearMisses: nearMisses(method: method, segments: segments))
    }

    /// The split path: `/a/b` gives `["a", "b"]`; `/` gives `[""]`.
    package static func segments(of path: String) -> [Substring] {
        // Split on the bytes: the generic `split` costs a closure call per character.
        let utf8 = path.utf8
        var start = utf8.first == UInt8(ascii: "/") ? utf8.index(after: utf8.startIndex) : utf8.startIndex
        var segments: [Substring] = []
        segments.reserveCapacity(8)
        var index = start
        while index < utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                segments.append(Substring(utf8[start..<index]))
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        segments.append(Substring(utf8[start..<utf8.endIndex]))
        return segments
    }

    /// Up to three endpoints ranked by how much of the path they share, each
    /// with the first way it differs (ties in contract order). The score:
    /// leading segments that agree ×4, a first differing literal spelled
    /// almost alike ×2, the same method 1; 0 or less is not near at all.
    package func nearMisses(method: String, segments: [Substring]) -> [NearMiss] {
        // The best three kept as the endpoints are scored, by index: sorting
        // every endpoint (each copied with its references) made an unmatched
        // request to a document of 1,100 operations cost 50 matched ones.
        // Many endpoints share a literal at one place (`/things5/...`): each
        // misspelling is measured once.
        struct Spelling: Hashable {
            let index: Int
            let literal: String
        }
        var near: [Spelling: Bool] = [:]
        func isNear(_ index: Int, _ literal: String) -> Bool {
            let key = Spelling(index: index, literal: literal)
            if let known = near[key] { return known }
            let answer = PathTemplate.isNearMisspelling(segments[index], of: literal)
            near[key] = answer
            return answer
        }
        var best: [(index: Int, score: Int)] = []
        best.reserveCapacity(4)
        for index in endpoints.indices {
            let nearness = endpoints[index].path.nearness(to: segments, near: isNear)
            let score = nearness.agreement * 4 + nearness.spelling * 2 + (endpoints[index].method == method ? 1 : 0)
            guard score > 0, best.count < 3 || score > best[best.count - 1].score else { continue }
            let at = best.firstIndex { $0.score < score } ?? best.count
            best.insert((index, score), at: at)
            if best.count > 3 { best.removeLast() }
        }
        return best.map { entry in
            let endpoint = endpoints[entry.index]
            return NearMiss(endpointID: endpoint.id, signature: endpoint.signature, reasons: reasons(endpoint, method: method, segments: segments))
        }
    }

    private func reasons(_ endpoint: Endpoint, method: String, segments: [Substring]) -> [String] {
        var reasons: [String] = []
        if endpoint.method != method { reasons.append("method is \(endpoint.method), not \(method)") }
        let expected = endpoint.path.segments
        if endpoint.path.restParameter != nil {
            if segments.count <= expected.count {
                reasons.append(
                    "path has \(segments.count) segment\(segments.count == 1 ? "" : "s"), \(endpoint.path.template) needs more than \(expected.count)"
                )
            }
        } else if expected.count != segments.count {
            reasons.append("path has \(segments.count) segment\(segments.count == 1 ? "" : "s"), \(endpoint.path.template) has \(expected.count)")
        }
        for (index, (parts, segment)) in zip(expected, segments).enumerated() {
            if PathTemplate(segments: [parts], parameterNames: []).match([segment]) == nil {
                let want = parts.map { part -> String in
                    switch part {
                    case .literal(let text): text
                    case .parameter(let name): "{\(name)}"
                    }
                }.joined()
                reasons.append("path segment \(index + 1) is '\(segment)', expected '\(want)'")
                break
            }
        }
        return reasons
    }
}

extension PathTemplate {
    init(segments: [[Part]], parameterNames: [String]) {
        self.template = ""
        self.segments = segments
        self.parameterNames = parameterNames
    }
}
