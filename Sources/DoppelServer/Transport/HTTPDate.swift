import DoppelCore
import Foundation

/// `Date` header values.
enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The current time as a header value.
    static func now() -> String { format(epochSecond: Int(Date().timeIntervalSince1970)) }

    /// `Mon, 23 Nov 2026 03:56:35 GMT` for seconds since 1970.
    static func format(epochSecond: Int) -> String {
        let c = UTCCalendar.components(epoch: Double(epochSecond))
        let weekday = days[((epochSecond / 86400) % 7 + 7) % 7]
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(weekday), \(two(c.day)) \(months[c.month - 1]) \(c.year) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) GMT"
    }
}
