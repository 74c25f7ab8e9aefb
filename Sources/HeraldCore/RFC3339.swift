/// RFC 3339 date-times (`2026-11-24T20:17:28Z`, `…28.5+01:00`), read without Foundation's
/// formatters, which refuse some the RFC allows (years before 1000, any offset up to ±23:59).
public enum RFC3339 {
    /// The unix seconds of `text` (fractions dropped), or nil when it is not an RFC 3339
    /// date-time with a valid date and time.
    public static func unixSeconds(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= b.count else { return nil }
            var n = 0
            for i in range {
                guard (48...57).contains(b[i]) else { return nil }
                n = n * 10 + Int(b[i] - 48)
            }
            return n
        }
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] | 0x20 == UInt8(ascii: "t"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }
        var i = 19
        if b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < b.count, (48...57).contains(b[i]) { i += 1 }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offset = 0
        if b[i] | 0x20 == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            guard i + 6 == b.count, b[i + 3] == UInt8(ascii: ":"), let h = number(i + 1..<i + 3), let m = number(i + 4..<i + 6), h < 24, m < 60
            else { return nil }
            offset = (h * 3600 + m * 60) * (b[i] == UInt8(ascii: "+") ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59) - offset)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
