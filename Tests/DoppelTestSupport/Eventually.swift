import Foundation

/// Waits until `condition` holds, checking it every `interval`, for at most
/// `seconds`; returns whether it came to hold. The one poll of the live
/// tests: the bound is a loaded machine's margin (the full suite shares two
/// cores), never a claim about speed, and the wait ends as soon as the
/// condition holds.
@discardableResult
func eventually(
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
