import Foundation

/// Durations and clock times as people write them in job files and on the command line.
public enum Durations {
    /// "7d", "12h", "30m", "90s", "2w" or a plain number of seconds; nil for anything else.
    public static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604_800]
        if let unit = text.last, let scale = units[unit], let value = Double(text.dropLast()), value >= 0 { return value * scale }
        return Double(text).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// `seconds` as a job file would spell it, in the largest unit up to days that divides it: 604800 -> "7d".
    public static func describe(_ seconds: Double) -> String {
        for (unit, scale) in [("d", 86_400.0), ("h", 3600), ("m", 60)]
        where seconds >= scale && seconds.truncatingRemainder(dividingBy: scale) == 0 {
            return "\(Int(seconds / scale))\(unit)"
        }
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }

    /// What `seconds` reads, as a JSON Schema pattern (the spellings people write; `seconds` also
    /// takes Swift's other number forms, such as `1e3`).
    public static let pattern = #"^([0-9]+(\.[0-9]*)?|\.[0-9]+)[smhdw]?$"#

    /// The next time the local clock reads `text` ("06:30", 24-hour) after `now`: a run started at
    /// 23:00 with deadline 06:30 stops the next morning.
    public static func nextOccurrence(of text: String, after now: Date = Date(),
                                      calendar: Calendar = .current) -> Date? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 }),
              let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        return calendar.nextDate(after: now, matching: DateComponents(hour: hour, minute: minute, second: 0),
                                 matchingPolicy: .nextTime)
    }
}
