import Foundation

/// The contract's `auth:` schemes, the names that refer to them, and the challenge and 401 a scheme answers with.
extension ContractLoader {
    /// Reads `auth`; returns the default schemes' names (any one admits a request).
    mutating func readAuth(_ node: SourceNode?) -> [String] {
        guard let node, let reader = MappingReader(node, allowed: Self.authKeys, context: "auth", diagnostics: &diagnostics) else { return [] }
        for entry in reader.entries("schemes", diagnostics: &diagnostics) {
            let context = "auth scheme '\(entry.name)'"
            guard let spec = MappingReader(entry.value, allowed: Self.authSchemeKeys, context: context, diagnostics: &diagnostics) else { continue }
            guard entry.name != "none" else {
                diagnostics.error("'none' is reserved for public endpoints; name the scheme otherwise", at: entry.keyNode.location)
                continue
            }
            let kind: AuthScheme.Kind
            switch spec.string("type", diagnostics: &diagnostics) {
            case "bearer":
                kind = .bearer
            case "basic":
                kind = .basic
            case "api_key":
                let header = spec.string("header", diagnostics: &diagnostics)
                let query = spec.string("query", diagnostics: &diagnostics)
                let cookie = spec.string("cookie", diagnostics: &diagnostics)
                guard header != nil || query != nil || cookie != nil else {
                    diagnostics.error("\(context) needs 'header', 'query' and/or 'cookie': where the key is sent", at: entry.value.location)
                    continue
                }
                kind = .apiKey(header: header?.lowercased(), query: query, cookie: cookie)
            case let other?:
                diagnostics.error(
                    "unknown auth type '\(other)' in \(context)\(Suggestion.hint(for: other, in: ["bearer", "basic", "api_key"]))",
                    at: spec["type"]!.location)
                continue
            case nil:
                diagnostics.error("\(context) needs 'type': bearer, basic or api_key", at: entry.value.location)
                continue
            }
            var accepted: Set<String>?
            for listKey in ["tokens", "keys", "users"] {
                guard let listNode = spec[listKey] else { continue }
                guard let items = listNode.sequenceItems?.compactMap(\.scalarText) else {
                    diagnostics.error("'\(listKey)' of \(context) must be a list of strings", at: listNode.location)
                    continue
                }
                if listKey == "users", kind == .basic {
                    for item in listNode.sequenceItems ?? [] where !(item.scalarText?.contains(":") ?? false) {
                        diagnostics.error("a user of \(context) is written 'name:password'", at: item.location)
                    }
                }
                accepted = (accepted ?? []).union(items)
            }
            // An undefined one is reported, and the scheme still declared, so
            // that endpoints naming it are not also wrong.
            let failure =
                spec["failure"].flatMap { readResponseReference($0, name: "\(entry.name).failure", scope: Self.requestRoots, endpointLets: []) }
                ?? Self.defaultUnauthorized(at: entry.value.location, challenge: Self.challenge(for: kind, realm: realm))
            var issued: String?
            if let issuedNode = spec["issued"], let collection = issuedNode.scalarText {
                if kindsOfState[collection] == .collection {
                    issued = collection
                } else {
                    diagnostics.error(
                        "'issued' of \(context) must name a state collection of issued tokens\(Suggestion.hint(for: collection, in: kindsOfState.filter { $0.value == .collection }.keys))",
                        at: issuedNode.location)
                }
            }
            var format: AuthScheme.TokenFormat?
            if let formatNode = spec["format"] {
                if let text = formatNode.scalarText, let known = AuthScheme.TokenFormat(rawValue: text), kind == .bearer {
                    format = known
                } else if kind != .bearer {
                    diagnostics.error("'format' of \(context) is for bearer tokens", at: formatNode.location)
                } else {
                    diagnostics.error(
                        "unknown token format '\(formatNode.scalarText ?? "")' in \(context)\(Suggestion.hint(for: formatNode.scalarText ?? "", in: ["jwt"])); Doppel knows jwt",
                        at: formatNode.location)
                }
            }
            var pattern: Schema.Pattern?
            if let patternNode = spec["pattern"] {
                if kind == .basic {
                    diagnostics.error("'pattern' of \(context) is for bearer tokens and API keys", at: patternNode.location)
                } else if let source = patternNode.scalarText {
                    do {
                        pattern = try Schema.Pattern(source)
                    } catch {
                        diagnostics.error("unusable 'pattern' in \(context): \(error.message)", at: patternNode.location)
                    }
                }
            }
            let expired = spec["expired"].flatMap {
                readResponseReference($0, name: "\(entry.name).expired", scope: Self.requestRoots, endpointLets: [])
            }
            if expired != nil, issued == nil, format != .jwt, let node = spec["expired"] {
                diagnostics.error("'expired' of \(context) needs 'issued' or 'format: jwt': only issued tokens and JWTs expire", at: node.location)
            }
            var scheme = AuthScheme(name: entry.name, kind: kind, accepted: accepted, issued: issued, failure: failure, expired: expired)
            scheme.format = format
            scheme.pattern = pattern
            authSchemes[entry.name] = scheme
        }
        guard let defaultNode = reader["default"] else { return [] }
        return readSchemeNames(defaultNode, context: "auth default")
    }

    /// `auth:` of an endpoint or the contract's default: a scheme's name, a
    /// list of names (any one admits a request), or `none`.
    mutating func readSchemeNames(_ node: SourceNode, context: String) -> [String] {
        let items = node.sequenceItems ?? [node]
        var names: [String] = []
        for item in items {
            guard let name = item.scalarText, item.mappingPairs == nil else {
                diagnostics.error("\(context) must be a scheme's name, a list of them, or none", at: item.location)
                continue
            }
            if name == "none" {
                if items.count > 1 {
                    diagnostics.error("'none' cannot be listed with schemes: an endpoint is public or it is not", at: item.location)
                }
                continue
            }
            guard authSchemes[name] != nil else {
                let hint = Suggestion.hint(for: name, in: Array(authSchemes.keys) + ["none"])
                diagnostics.error(
                    context == "auth default" ? "auth default '\(name)' is not a declared scheme\(hint)" : "undefined auth scheme '\(name)'\(hint)",
                    at: item.location)
                continue
            }
            if !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// RFC 7617's challenge: a realm (the API's title as a quoted string, in
    /// printable ASCII as a header value must be) and the charset credentials are read in.
    package static func basicChallenge(realm: String) -> String {
        var quoted = realm.filter { $0.asciiValue.map { $0 >= 0x20 && $0 != 0x7F } ?? false }
            .replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        if quoted.isEmpty { quoted = "API" }
        return "Basic realm=\"\(quoted)\", charset=\"UTF-8\""
    }

    /// The challenge of a scheme's built-in 401 (RFC 9110 §11.6.1: a 401
    /// names a scheme the client can answer): Basic with its realm, Bearer,
    /// and for an API key, which has no registered scheme, `ApiKey` with
    /// where the key goes (`ApiKey header="x-api-key"`), never a Bearer
    /// challenge a client would answer with the wrong credentials.
    static func challenge(for kind: AuthScheme.Kind, realm: String) -> String {
        switch kind {
        case .basic: return basicChallenge(realm: realm)
        case .apiKey(let header, let query, let cookie):
            func quoted(_ text: String) -> String {
                "\""
                    + text.filter { $0.asciiValue.map { $0 >= 0x20 && $0 != 0x7F } ?? false }
                    .replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
            }
            let places = [("header", header), ("query", query), ("cookie", cookie)].compactMap { name, value in value.map { "\(name)=\(quoted($0))" }
            }
            return "ApiKey " + places.joined(separator: ", ")
        default: return "Bearer"
        }
    }

    /// The built-in 401 for a scheme that declares no `failure`.
    static func defaultUnauthorized(at location: SourceLocation, challenge: String = "Bearer") -> ResponseDefinition {
        let body: JSON = [
            "type": "urn:doppel:problem:unauthorized", "title": "Unauthorized", "status": 401,
            "detail": "missing or invalid credentials",
        ]
        return ResponseDefinition(
            name: "unauthorized", when: nil, status: 401, headers: [("WWW-Authenticate", .constant(.string(challenge)))],
            body: .json(.constant(body), encoded: JSONWriter.encode(body), contentType: "application/problem+json"),
            bindings: [], effects: [], location: location)
    }
}
