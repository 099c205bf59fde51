import DoppelCore
import Foundation
import NIOConcurrencyHelpers

/// The hosts callbacks may go to (`--callback-allow`): `loopback` (the
/// default: `localhost`, `127.0.0.0/8`, `::1`), a host name or address, a
/// `*.example.com` wildcard, any of them with `:PORT`, or `*` for any host.
/// A callback to any other host is refused and journaled, never sent: a
/// contract (or a vendor's OpenAPI document) cannot make Doppel reach into
/// a network its user did not name.
package struct CallbackAllowList: Sendable, CustomStringConvertible {
    private struct Rule: Sendable {
        let host: String
        let port: Int?
    }

    private let rules: [Rule]
    package let description: String

    /// Reads the `--callback-allow` values; nil, with why, for one that cannot be read.
    package init(_ values: [String]) throws(CallbackAllowError) {
        var rules: [Rule] = []
        for value in values {
            let text = value.trimmingCharacters(in: .whitespaces).lowercased()
            var host = text
            var port: Int?
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]") else { throw CallbackAllowError(value: value) }
                host = String(text[text.index(after: text.startIndex)..<close])
                let after = text[text.index(after: close)...]
                if !after.isEmpty {
                    guard after.first == ":", let number = Int(after.dropFirst()), (1...65535).contains(number) else {
                        throw CallbackAllowError(value: value)
                    }
                    port = number
                }
            } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
                guard let number = Int(text[text.index(after: colon)...]), (1...65535).contains(number) else {
                    throw CallbackAllowError(value: value)
                }
                host = String(text[..<colon])
                port = number
            }
            let wildcard = host.hasPrefix("*.") ? String(host.dropFirst(2)) : host
            guard !host.isEmpty, host == "*" || wildcard.allSatisfy({ $0.isLetter || $0.isNumber || ".-:_".contains($0) }) else {
                throw CallbackAllowError(value: value)
            }
            rules.append(Rule(host: host, port: port))
        }
        self.rules = rules
        description = values.isEmpty ? "no host" : values.joined(separator: ", ")
    }

    /// The default: loopback only.
    package static let loopback = try! CallbackAllowList(["loopback"])

    /// Whether a callback may go to `host` (lowercased, IPv6 without brackets) on `port`.
    package func permits(host: String, port: Int) -> Bool {
        rules.contains { rule in
            guard rule.port == nil || rule.port == port else { return false }
            switch rule.host {
            case "*": return true
            case "loopback": return Self.isLoopback(host)
            case let pattern where pattern.hasPrefix("*."): return host.hasSuffix(pattern.dropFirst(1)) && host.count > pattern.count - 1
            default: return host == rule.host
            }
        }
    }

    /// `localhost`, an IPv4 address in 127.0.0.0/8 written as four decimal numbers, or `::1`.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ part in !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && UInt8(part) != nil })
        else { return false }
        return parts[0] == "127"
    }
}

/// A `--callback-allow` value that cannot be read.
package struct CallbackAllowError: Error, Sendable {
    package let value: String
}

/// Sends the callbacks answers ask for, each in a task of its own: after
/// its delay, to an allowed host only, retried on failure (no answer, 5xx,
/// 429) with a doubling wait, every attempt journaled (`CALLBACK`, counted
/// under `<endpoint>.<name>` with the receiver's status, 0 for none).
///
/// Bounded (docs/limits.md#callbacks): callbacks waiting or in flight, in
/// all and per session (one session cannot take every place); the bytes of
/// their bodies waiting; the bytes of receivers' answers held at once; and
/// the length of a chain (a callback whose receiver is an endpoint that
/// sends callbacks: each request Doppel sends carries its depth in
/// `Doppel-Callback-Depth`). A reset ends its sessions' waiting callbacks.
///
/// Sent with Doppel's own HTTP client (`Upstream`), not AsyncHTTPClient:
/// AsyncHTTPClient 1.37 traps on a status below 100 followed by a body, and
/// a receiver is anyone's server; `Upstream` bounds the whole exchange by
/// one deadline and the body it reads.
package final class CallbackSender: Sendable {
    package let allowed: CallbackAllowList
    /// The most callbacks waiting or in flight at once; more are refused (and journaled).
    package static let maximumPending = 1_000
    /// The most of them one session may have.
    package static let maximumPendingPerSession = 100
    /// The most bytes of callback bodies waiting or in flight at once.
    package static let maximumBodyBytes = 64 << 20
    /// The largest answer of a receiver read (its status is what counts); a larger one fails the attempt.
    package static let maximumAnswerBytes = 1 << 20
    /// The most bytes of receivers' answers held at once, over all callbacks.
    package static let maximumAnswerBytesInFlight = 64 << 20
    /// The longest chain: a callback sent in answer to a request that was itself the `maximumChain`-th callback of one is refused.
    package static let maximumChain = 8
    /// The header that carries a callback's place in a chain.
    package static let depthHeader = "Doppel-Callback-Depth"

    private struct Pending {
        let session: String
        let bodyBytes: Int
        let task: Task<Void, Never>
    }

    private let pending = NIOLockedValueBox([UUID: Pending]())
    /// Receivers' answers, held while read: one budget for every callback.
    private let answers = BodyBudget(limit: CallbackSender.maximumAnswerBytesInFlight)

    package init(allowed: CallbackAllowList = .loopback) {
        self.allowed = allowed
    }

    /// Callbacks waiting or in flight.
    package var count: Int { pending.withLockedValue { $0.count } }

    /// Starts `callbacks`, asked for by an answer of `endpointID` in
    /// `session` to a request `depth` callbacks deep (0: not a callback).
    func send(
        _ callbacks: [RenderedCallback], endpointID: String?, session: String, depth: Int = 0, engine: @escaping @Sendable () -> MockEngine,
        publish: @escaping @Sendable (Journal.Entry) -> Void
    ) {
        for callback in callbacks {
            let id = UUID()
            let target = "\(endpointID ?? "fallbacks").\(callback.name)"
            guard depth < Self.maximumChain else {
                publish(
                    Self.journal(
                        callback, target: target, session: session, engine: engine(), status: 0, micros: 0,
                        reason:
                            "not sent: it would be the \(depth + 1)th callback of a chain (each sent in answer to the one before); a chain ends at \(Self.maximumChain)"
                    ))
                continue
            }
            let refusal = pending.withLockedValue { pending -> String? in
                guard pending.count < Self.maximumPending else { return "\(Self.maximumPending) callbacks are already waiting or in flight" }
                guard pending.values.lazy.filter({ $0.session == session }).count < Self.maximumPendingPerSession else {
                    return "\(Self.maximumPendingPerSession) callbacks of session \(session) are already waiting or in flight"
                }
                let bytes = pending.values.reduce(0) { $0 + $1.bodyBytes }
                guard bytes + callback.body.count <= Self.maximumBodyBytes else {
                    return "the callbacks waiting or in flight already hold \(bytes >> 20) MiB of bodies (at most \(Self.maximumBodyBytes >> 20) MiB)"
                }
                pending[id] = Pending(
                    session: session, bodyBytes: callback.body.count,
                    task: Task { [self] in
                        await deliver(callback, target: target, session: session, depth: depth + 1, engine: engine, publish: publish)
                        _ = self.pending.withLockedValue { $0.removeValue(forKey: id) }
                    })
                return nil
            }
            if let refusal {
                publish(
                    Self.journal(callback, target: target, session: session, engine: engine(), status: 0, micros: 0, reason: "not sent: " + refusal))
            }
        }
    }

    /// Ends every waiting callback (the server is stopping, or every session was reset).
    package func cancelAll() {
        for task in pending.withLockedValue({ pending in
            defer { pending.removeAll() }
            return pending.values.map(\.task)
        }) { task.cancel() }
    }

    /// Ends the callbacks `session` waits to send (it was reset).
    package func cancel(session: String) {
        let tasks = pending.withLockedValue { pending -> [Task<Void, Never>] in
            let ids = pending.filter { $0.value.session == session }.map(\.key)
            return ids.compactMap { pending.removeValue(forKey: $0)?.task }
        }
        for task in tasks { task.cancel() }
    }

    private func deliver(
        _ callback: RenderedCallback, target: String, session: String, depth: Int, engine: @Sendable () -> MockEngine,
        publish: @Sendable (Journal.Entry) -> Void
    ) async {
        if callback.delay > 0 {
            do { try await Task.sleep(nanoseconds: UInt64(callback.delay * 1e9)) } catch { return }
        }
        guard let parts = URLParts(callback.url) else {
            publish(
                Self.journal(
                    callback, target: target, session: session, engine: engine(), status: 0, micros: 0,
                    reason:
                        "not sent: '\(String(callback.url.prefix(200).unicodeScalars.map { $0.value < 0x20 ? " " : Character($0) }))' is not an http or https URL (with a host, and without credentials or control characters)"
                ))
            return
        }
        guard allowed.permits(host: parts.host, port: parts.port) else {
            publish(
                Self.journal(
                    callback, target: target, session: session, engine: engine(), status: 0, micros: 0,
                    reason: "refused, not sent: \(parts.host) is not allowed by --callback-allow (\(allowed))"))
            return
        }
        let bracketed = parts.host.contains(":") ? "[\(parts.host)]" : parts.host
        let client = Upstream(
            base: URL(string: "\(parts.secure ? "https" : "http")://\(bracketed):\(parts.port)")!, timeout: callback.timeout,
            maxBodySize: Self.maximumAnswerBytes, budget: answers)
        defer { Task { await client.shutdown() } }
        let pathEnd = parts.target.firstIndex(of: "?") ?? parts.target.endIndex
        let request = RecordedRequest(
            method: callback.method, path: String(parts.target[..<pathEnd]),
            query: pathEnd < parts.target.endIndex ? String(parts.target[parts.target.index(after: pathEnd)...]) : nil,
            headers: callback.headers.filter { !$0.name.caseInsensitiveEquals(Self.depthHeader) }
                + [(name: "User-Agent", value: "Doppel callbacks"), (name: Self.depthHeader, value: String(depth))],
            body: callback.body)
        var wait = callback.retryDelay
        for attempt in 1...(callback.retries + 1) {
            guard !Task.isCancelled else { return }
            let started = ContinuousClock.now
            let (answer, answered) = await client.forward(request)
            let micros = (ContinuousClock.now - started).wholeMicroseconds
            let failed = !answered || answer.status >= 500 || answer.status == 429
            let of = callback.retries > 0 ? " (attempt \(attempt) of \(callback.retries + 1))" : ""
            let reason =
                answered
                ? "\(callback.method) \(callback.url.prefix(200)) answered \(answer.status)\(of)"
                : "\(callback.method) \(callback.url.prefix(200)) failed\(of): \(answer.status == 504 ? "no answer within \(callback.timeout.formatted()) s (the callback's timeout)" : Self.detail(answer))"
            publish(
                Self.journal(
                    callback, target: target, session: session, engine: engine(), status: answered ? answer.status : 0, micros: micros, reason: reason
                ))
            guard failed, attempt <= callback.retries else { return }
            do { try await Task.sleep(nanoseconds: UInt64(wait * 1e9)) } catch { return }
            wait = min(wait * 2, 60)
        }
    }

    private static func detail(_ problem: MockResponse) -> String {
        // Upstream's problem speaks of an upstream; here it is the receiver.
        ((try? JSONReader.parse(problem.body))?["detail"]?.stringValue ?? "status \(problem.status)").replacingOccurrences(
            of: "The upstream ", with: "")
    }

    private static func journal(
        _ callback: RenderedCallback, target: String, session: String, engine: MockEngine, status: Int, micros: Int,
        reason: String
    ) -> Journal.Entry {
        engine.journalCallback(callback, target: target, session: session, status: status, durationMicros: micros, reason: reason)
    }
}
