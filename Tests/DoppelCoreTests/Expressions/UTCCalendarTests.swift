import DoppelCore
import Testing

@Suite struct UTCCalendarTests {
    @Test(arguments: [
        "1970-01-01T00:00:00Z", "2024-02-29T23:59:59Z", "2025-01-01T00:00:00Z", "1969-12-31T12:00:00Z", "2100-03-01T00:00:00Z",
    ])
    func formatsWhatItParses(text: String) throws {
        #expect(UTCCalendar.format(epoch: try #require(UTCCalendar.parse(text))) == text)
    }

    @Test func parsesOffsetsAndFractions() {
        #expect(UTCCalendar.parse("2025-01-01T03:00:00+03:00") == UTCCalendar.parse("2025-01-01T00:00:00Z"))
        #expect(UTCCalendar.parse("2025-01-01T00:00:00.5Z") == UTCCalendar.parse("2025-01-01T00:00:00Z")! + 0.5)
        #expect(UTCCalendar.parse("2025-13-01") == nil)
        #expect(UTCCalendar.parse("yesterday") == nil)
    }

    @Test func monthArithmeticClampsToShortMonths() {
        let jan31 = UTCCalendar.parse("2025-01-31T08:00:00Z")!
        #expect(UTCCalendar.format(epoch: UTCCalendar.adding(months: 1, to: jan31)) == "2025-02-28T08:00:00Z")
        #expect(UTCCalendar.format(epoch: UTCCalendar.monthStart(epoch: jan31, addingMonths: 12)) == "2026-01-01T00:00:00Z")
        #expect(UTCCalendar.format(epoch: UTCCalendar.monthStart(epoch: jan31, addingMonths: -1)) == "2024-12-01T00:00:00Z")
    }

    @Test func durations() {
        #expect(CalendarDuration.parse("250ms") == CalendarDuration(seconds: 0.25))
        #expect(CalendarDuration.parse("1h30m") == CalendarDuration(seconds: 5400))
        #expect(CalendarDuration.parse("31d") == CalendarDuration(seconds: 31 * 86400))
        #expect(CalendarDuration.parse("1y2mo") == CalendarDuration(months: 14))
        #expect(CalendarDuration.parse("soon") == nil)
    }
}
