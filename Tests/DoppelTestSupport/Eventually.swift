import Foundation

/// Waits until `condition` holds, checking it every `interval`, for at most
/// `seconds`; returns whether it came to hold. The one poll of the live
/// tests: the bound is a loaded machine's margin (the full suite shares two
/// cores), never a claim about speed, and the wait ends as soon as the
/// condition holds.
@discardableResult
package func eventually(
    within seconds: Double, every interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while true {
        if try await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: interval)
    }
}

/// Waits (60 s at most) until a server just started answers its health
/// check. At the suite's start every test's tasks share a few threads with
/// seconds of other tests' computation, and a fresh server's first answer can
/// wait longer than a runner's 10 s limit for a step; after it, the limits
/// the test is about count.
package func untilAnswering(_ base: URL) async {
    let client = TestClient(base: base)
    await eventually(within: 60) { (try? await client.send("GET", "/__doppel/health"))?.status == 200 }
}
