/// Dates as ISO 8601 strings in UTC, computed without platform formatters so
/// that every machine renders `2025-01-01T00:00:00Z` the same way.
package enum UTCCalendar {
    package struct Components: Sendable, Equatable {
        package var year: Int, month: Int, day: Int
        package var hour: Int = 0, minute: Int = 0, second: Int = 0
    }

    /// Days from 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    package static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    package static func civil(days z0: Int) -> (year: Int, month: Int, day: Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Instants from the year 1 to the year 9999, the ones dates are written for.
    package static let supported: ClosedRange<Double> = -62_135_596_800...253_402_300_799

    package static func components(epoch: Double) -> Components {
        // Clamped so that no instant, however it was computed, can trap.
        let seconds = Int((epoch.isFinite ? epoch : 0).clamped(to: supported).rounded(.down))
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let rest = seconds - days * 86400
        let (y, m, d) = civil(days: days)
        return Components(year: y, month: m, day: d, hour: rest / 3600, minute: rest % 3600 / 60, second: rest % 60)
    }

    package static func epoch(_ c: Components) -> Double {
        Double(days(year: c.year, month: c.month, day: c.day) * 86400 + c.hour * 3600 + c.minute * 60 + c.second)
    }

    /// `2025-01-01T00:00:00Z` for an instant in seconds since 1970.
    package static func format(epoch: Double) -> String {
        let c = components(epoch: epoch)
        // Written digit by digit: this runs for every `clock.now` and `now()`.
        return String(unsafeUninitializedCapacity: 20) { buffer in
            var i = 0
            func put(_ byte: UInt8) {
                buffer[i] = byte
                i += 1
            }
            // Every field fits its width: years are 1...9999 (`supported`).
            func digits(_ n: Int, _ width: Int) {
                var n = n
                for k in stride(from: width - 1, through: 0, by: -1) {
                    buffer[i + k] = UInt8(48 + n % 10)
                    n /= 10
                }
                i += width
            }
            digits(c.year, 4)
            put(UInt8(ascii: "-"))
            digits(c.month, 2)
            put(UInt8(ascii: "-"))
            digits(c.day, 2)
            put(UInt8(ascii: "T"))
            digits(c.hour, 2)
            put(UInt8(ascii: ":"))
            digits(c.minute, 2)
            put(UInt8(ascii: ":"))
            digits(c.second, 2)
            put(UInt8(ascii: "Z"))
            return i
        }
    }

    /// Parses `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS[.fff]]` with `Z` or `±HH:MM`.
    package static func parse(_ text: String) -> Double? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    private static func parse(utf8 chars: UnsafeBufferPointer<UInt8>) -> Double? {
        var i = 0
        func number(_ width: Int) -> Int? {
            guard i + width <= chars.count else { return nil }
            var n = 0
            for k in 0..<width {
                let c = chars[i + k]
                guard c >= 48, c <= 57 else { return nil }
                n = n * 10 + Int(c - 48)
            }
            i += width
            return n
        }
        // A byte, not a Character: this runs for every `month_start(clock.now)`.
        func take(_ c: Unicode.Scalar) -> Bool {
            if i < chars.count, chars[i] == UInt8(truncatingIfNeeded: c.value) {
                i += 1
                return true
            }
            return false
        }
        guard let year = number(4), take("-"), let month = number(2), take("-"), let day = number(2),
            (1...12).contains(month), (1...daysInMonth(month, of: year)).contains(day)
        else { return nil }
        var c = Components(year: year, month: month, day: day)
        var fraction = 0.0
        if i == chars.count { return epoch(c) }
        guard take("T") || take("t") || take(" "), let h = number(2), take(":"), let mi = number(2) else { return nil }
        c.hour = h
        c.minute = mi
        if take(":") {
            guard let s = number(2) else { return nil }
            c.second = s
            if take(".") {
                var scale = 0.1
                while i < chars.count, chars[i] >= 48, chars[i] <= 57 {
                    fraction += Double(chars[i] - 48) * scale
                    scale /= 10
                    i += 1
                }
            }
        }
        guard c.hour < 24, c.minute < 60, c.second < 61 else { return nil }
        var offset = 0
        if take("Z") || take("z") {
        } else if i < chars.count, chars[i] == UInt8(ascii: "+") || chars[i] == UInt8(ascii: "-") {
            let sign = chars[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let oh = number(2), oh <= 23 else { return nil }
            _ = take(":")
            guard let om = number(2), om <= 59 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        }
        guard i == chars.count else { return nil }
        return epoch(c) + fraction - Double(offset)
    }

    /// Days in a month of the proleptic Gregorian calendar (February 29 in leap years).
    package static func daysInMonth(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// The first instant of the month containing `epoch`, moved by `months`.
    package static func monthStart(epoch: Double, addingMonths months: Int) -> Double {
        let c = components(epoch: epoch)
        let total = c.year * 12 + (c.month - 1) + months
        let year = total >= 0 ? total / 12 : (total - 11) / 12
        return self.epoch(Components(year: year, month: total - year * 12 + 1, day: 1))
    }

    /// The same day and time `months` later, clamped to the end of a shorter month.
    package static func adding(months: Int, to epoch: Double) -> Double {
        let c = components(epoch: epoch)
        let start = monthStart(epoch: epoch, addingMonths: months)
        let target = components(epoch: start)
        let nextStart = monthStart(epoch: epoch, addingMonths: months + 1)
        let daysInMonth = Int((nextStart - start) / 86400)
        let day = min(c.day, daysInMonth)
        return self.epoch(Components(year: target.year, month: target.month, day: day, hour: c.hour, minute: c.minute, second: c.second))
            + (epoch - epoch.rounded(.down))
    }
}

/// Durations as contracts and scenarios write them: `250ms`, `40s`, `5m`, `2h`, `31d`, `1w`, `1mo`, `1y`.
/// (Not `Duration`: that would hide Swift's own in every file that imports DoppelTesting.)
package struct CalendarDuration: Sendable, Equatable {
    package var seconds: Double
    package var months: Int

    package init(seconds: Double = 0, months: Int = 0) {
        self.seconds = seconds
        self.months = months
    }

    /// Parses one or more `<number><unit>` parts: `1h30m`, `250ms`, `1mo`.
    package static func parse(_ text: String) -> CalendarDuration? {
        var result = CalendarDuration()
        let chars = Array(text.trimmingSpaces)
        guard !chars.isEmpty else { return nil }
        var i = 0
        while i < chars.count {
            let start = i
            while i < chars.count, chars[i].isNumber || chars[i] == "." { i += 1 }
            // Up to a thousand years in any unit: enough for a mock's clock, and no overflow.
            guard i > start, let value = Double(String(chars[start..<i])), value <= 1e12 else { return nil }
            let unitStart = i
            while i < chars.count, chars[i].isLetter { i += 1 }
            switch String(chars[unitStart..<i]) {
            case "ms": result.seconds += value / 1000
            case "s": result.seconds += value
            case "m", "min": result.seconds += value * 60
            case "h": result.seconds += value * 3600
            case "d": result.seconds += value * 86400
            case "w": result.seconds += value * 604800
            case "mo":
                guard value == value.rounded(), value <= 12_000 else { return nil }
                result.months += Int(value)
            case "y":
                guard value == value.rounded(), value <= 1_000 else { return nil }
                result.months += Int(value) * 12
            default: return nil
            }
        }
        // The sum too stays within a thousand years, however many parts it has,
        // so converting it to whole seconds or nanoseconds can never overflow.
        guard result.seconds <= Self.maximumSeconds, result.months <= 12_000 else { return nil }
        return result
    }

    /// The longest duration accepted: a thousand years, in seconds.
    package static let maximumSeconds: Double = 1000 * 366 * 86400

    /// Applies the duration to an instant.
    package func added(to epoch: Double) -> Double {
        (months == 0 ? epoch : UTCCalendar.adding(months: months, to: epoch)) + seconds
    }
}

extension Comparable {
    func clamped(to range: ClosedRange<Self>) -> Self { min(max(self, range.lowerBound), range.upperBound) }
}

extension StringProtocol {
    var trimmingSpaces: SubSequence {
        var s = self[...]
        while s.first?.isWhitespace == true { s.removeFirst() }
        while s.last?.isWhitespace == true { s.removeLast() }
        return s
    }
}
