import DoppelTestSupport
import Foundation

/// What a child printed on `handle` up to and including the first read that
/// holds `marker`, or all it printed within 60 s (its end, or a pause).
func readBanner(_ handle: FileHandle, until marker: String) async -> String {
    (try? await offThePool {
        var banner = ""
        let deadline = Date().addingTimeInterval(60)
        while !banner.contains(marker), Date() < deadline {
            guard let data = readSome(handle, within: deadline.timeIntervalSinceNow), !data.isEmpty else { break }
            banner += String(decoding: data, as: UTF8.self)
        }
        return banner
    }) ?? ""
}
