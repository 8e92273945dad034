import Foundation

/// Counts, sizes, durations and times as runner prints them.
package enum Format {
    /// `1 file`, `2 files`; with `grouped`, the count as `count(_:)` spells it (`1,000 items`).
    package static func plural(_ value: Int, _ noun: String, grouped: Bool = false) -> String {
        "\(grouped ? count(value) : String(value)) \(noun)\(value == 1 ? "" : "s")"
    }

    package static func count(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { grouped += "," }
            grouped.append(digit)
        }
        return (value < 0 ? "-" : "") + grouped
    }

    package static func ordinal(_ value: Int) -> String {
        let suffix = (11...13).contains(value % 100) ? "th" : [1: "st", 2: "nd", 3: "rd"][value % 10] ?? "th"
        return count(value) + suffix
    }

    package static func rate(_ perSecond: Double) -> String {
        perSecond < 10 ? String(format: "%.1f", perSecond) : count(Int(perSecond.rounded()))
    }

    package static func bytes(_ size: Int) -> String {
        if size < 1000 { return "\(size) B" }
        let units = ["kB", "MB", "GB", "TB"]
        var value = Double(size) / 1000, unit = 0
        while value >= 1000 && unit < units.count - 1 { value /= 1000; unit += 1 }
        return String(format: value < 10 ? "%.1f %@" : "%.0f %@", value, units[unit])
    }

    package static func duration(_ seconds: Double) -> String {
        if seconds < 10 { return String(format: "%.1f s", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3600) h \(whole % 3600 / 60) min"
    }

    /// Local time with its offset from UTC (`2026-11-25 02:30:05 +01:00`): a report is read on
    /// other machines and in other zones than the one that wrote it.
    package static func date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss xxx"
        return formatter.string(from: date)
    }

    package static func relative(_ date: Date, now: Date) -> String {
        let seconds = Int(now.timeIntervalSince(date))
        switch seconds {
        case ..<60: return "just now"
        case ..<3600: return "\(seconds / 60) min ago"
        case ..<86_400: return "\(seconds / 3600) h ago"
        default: return plural(seconds / 86_400, "day") + " ago"
        }
    }
}
