import Foundation

/// Content negotiation (RFC 9110 section 12.5.1) among the media types an
/// endpoint documents for one status.
///
/// Only where there is a choice: when the endpoint documents the chosen
/// response's status in one media type, `Accept` is not consulted (a
/// client that asks for `application/json` still gets its
/// `application/problem+json`, as servers do). Where it documents several,
/// the chosen response stands when `Accept` admits it (or says nothing);
/// else the documented response of that status in the media type `Accept`
/// prefers (highest quality, then the order the endpoint lists them); else
/// 406 with the list.
enum Negotiation {
    case keep
    case use(ResponseDefinition)
    case refuse([String])

    /// Nothing is computed (no list, no media type) for a request without `Accept`: this runs for every answer.
    static func negotiate(_ chosen: ResponseDefinition, of endpoint: Endpoint, accept: String?) -> Negotiation {
        guard let accept, !accept.isEmpty, let type = mediaType(of: chosen) else { return .keep }
        let alternatives = [endpoint.responses, endpoint.documented].joined()
            .filter { $0.status == chosen.status && mediaType(of: $0).map { $0 != type } ?? false }
        guard !alternatives.isEmpty else { return .keep }
        let ranges = parse(accept)
        let own = quality(of: type, in: ranges)
        // Another media type only when `Accept` prefers it (a higher quality);
        // at the same quality the chosen response stands.
        var best: (quality: Double, response: ResponseDefinition)?
        var seen: [String] = [type]
        for alternative in alternatives {
            guard let other = mediaType(of: alternative) else { continue }
            if !seen.contains(other) { seen.append(other) }
            let q = quality(of: other, in: ranges)
            if q > max(own, best?.quality ?? 0) { best = (q, alternative) }
        }
        if let best { return .use(best.response) }
        if own > 0 { return .keep }
        return .refuse(seen)
    }

    /// The essence of a response's media type, if it has a body.
    static func mediaType(of response: ResponseDefinition) -> String? {
        (response.body.contentType ?? response.stream?.contentType).map(MediaTypes.essence)
    }

    /// `Accept`'s media ranges, lowercased, with their quality (1 unless `q=` says).
    static func parse(_ accept: String) -> [(range: String, quality: Double)] {
        accept.split(separator: ",").prefix(64).compactMap { item in
            let parts = item.split(separator: ";")
            guard let first = parts.first else { return nil }
            let range = first.trimmingCharacters(in: .whitespaces).lowercased()
            guard !range.isEmpty else { return nil }
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if pair.count == 2, pair[0].lowercased() == "q", let q = Double(pair[1]), q.isFinite { quality = min(1, max(0, q)) }
            }
            return (range, quality)
        }
    }

    /// The quality `ranges` give `type`: that of the most specific range that matches it, 0 when none does.
    static func quality(of type: String, in ranges: [(range: String, quality: Double)]) -> Double {
        let main = type.split(separator: "/").first.map(String.init) ?? type
        var best: (specificity: Int, quality: Double)?
        for (range, quality) in ranges {
            let specificity: Int
            if range == type {
                specificity = 2
            } else if range == main + "/*" {
                specificity = 1
            } else if range == "*/*" {
                specificity = 0
            } else {
                continue
            }
            if specificity > (best?.specificity ?? -1) { best = (specificity, quality) }
        }
        return best?.quality ?? 0
    }
}
