import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How a run talks to the person or the log reading it.
public enum ReportStyle: String, Sendable, CaseIterable {
    /// A live progress line on a terminal, progress lines every few seconds elsewhere (cron).
    case text
    /// Only failures and the summary.
    case quiet
    /// One JSON event per line on stdout.
    case json
}

/// Receives run events from every thread and renders them. A sink: it never calls upstream.
final class Reporter: Sendable {
    private struct Counts {
        var total = 0
        var finished = 0
        var done = 0
        var failed = 0
        var lastLine = 0.0
        var liveLineShown = false
    }

    private let style: ReportStyle
    private let jobName: String
    private let isTerminal: Bool
    private let counts = Mutex(Counts())
    private let started = Date()
    private let stopped = Mutex(false)
    /// Seconds between progress lines when stderr is not a terminal.
    static let plainInterval = 5.0

    init(style: ReportStyle, jobName: String) {
        self.style = style
        self.jobName = jobName
        isTerminal = isatty(STDERR_FILENO) == 1
    }

    func planned(_ planned: PlanCounts) {
        counts.withLock { $0.total = planned.pending }
        switch style {
        case .json:
            emit(["event": "plan", "job": jobName, "pending": planned.pending, "upToDate": planned.upToDate,
                  "blocked": planned.blocked])
        case .text:
            writeLine("\(jobName): \(planned.pending) to run, \(planned.upToDate) up to date, \(planned.blocked) blocked")
        case .quiet:
            break
        }
    }

    func startTicker() {
        guard style == .text else { return }
        let thread = Thread { [self] in
            while !stopped.withLock({ $0 }) {
                Thread.sleep(forTimeInterval: isTerminal ? 0.5 : 1)
                tick()
            }
        }
        thread.start()
    }

    func itemFinished(key: String, outputPath: String, outcome: ItemOutcome) {
        counts.withLock { counts in
            switch outcome {
            case .done: counts.done += 1
            case .failed: counts.failed += 1
            case .blocked: return  // never counted as work to do
            }
            counts.finished += 1
        }
        switch style {
        case .json:
            var event: [String: Any] = ["event": "item", "key": key, "output": outputPath]
            switch outcome {
            case .done(let duration, let warning):
                event["state"] = "done"
                event["seconds"] = duration
                if let warning { event["warning"] = warning }
            case .failed(let failure, let duration):
                event["state"] = "failed"
                event["kind"] = failure.kind.rawValue
                event["message"] = failure.message
                event["seconds"] = duration
            case .blocked(let reason):
                event["state"] = "blocked"
                event["message"] = reason
            }
            emit(event)
        case .text, .quiet:
            switch outcome {
            case .failed(let failure, _): writeLine("failed: \(key): \(failure.kind.rawValue): \(failure.message)")
            case .blocked(let reason): writeLine("blocked: \(key): \(reason)")
            case .done(_, let warning?) where style == .text: writeLine("warning: \(key): \(warning)")
            case .done: break
            }
        }
    }

    /// A URL source revalidated unchanged: its item is up to date without any work.
    func itemUnchanged(key: String, outputPath: String) {
        if style == .json { emit(["event": "item", "key": key, "output": outputPath, "state": "up-to-date"]) }
    }

    func notice(_ message: String) {
        switch style {
        case .json: emit(["event": "notice", "message": message])
        case .text, .quiet: writeLine(message)
        }
    }

    func finished(_ summary: RunSummary) {
        stopped.withLock { $0 = true }
        clearLiveLine()
        switch style {
        case .json:
            emit(["event": "summary", "job": jobName, "done": summary.done, "failed": summary.failed,
                  "upToDate": summary.upToDate, "blocked": summary.blocked, "notStarted": summary.notStarted,
                  "seconds": summary.elapsedSeconds, "exitCode": Int(summary.exitCode),
                  "workersStarted": summary.workersStarted,
                  "interrupted": summary.interrupted.map { Int($0) as Any } ?? NSNull()])
        case .text, .quiet:
            var line = "\(jobName): \(summary.done) done, \(summary.failed) failed, \(summary.upToDate) up to date"
            if summary.blocked > 0 { line += ", \(summary.blocked) blocked" }
            if summary.notStarted > 0 { line += ", \(summary.notStarted) not started" }
            line += String(format: " in %.1fs", summary.elapsedSeconds)
            if summary.done > 0 && summary.elapsedSeconds > 0 {
                line += String(format: " (%.1f items/s)", Double(summary.done + summary.failed) / summary.elapsedSeconds)
            }
            if let signal = summary.interrupted { line += "; interrupted by \(String(cString: strsignal(signal)))" }
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }

    // MARK: Rendering

    private func tick() {
        let now = Date().timeIntervalSince(started)
        let line: String? = counts.withLock { counts in
            if !isTerminal && now - counts.lastLine < Self.plainInterval { return nil }
            counts.lastLine = now
            let rate = Double(counts.finished) / max(now, 0.001)
            let remaining = counts.total - counts.finished
            let eta = rate > 0 ? Double(remaining) / rate : 0
            var text = "\(jobName): \(counts.finished)/\(counts.total)"
            text += String(format: " · %.1f items/s · ETA %@", rate, Self.clock(eta))
            if counts.failed > 0 { text += " · \(counts.failed) failed" }
            return text
        }
        guard let line else { return }
        if isTerminal {
            counts.withLock { $0.liveLineShown = true }
            FileHandle.standardError.write(Data("\r\u{1B}[2K\(line)".utf8))
        } else {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    }

    private static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 3600 ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%d:%02d", total / 60, total % 60)
    }

    private func clearLiveLine() {
        if counts.withLock({ $0.liveLineShown }) { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }

    private func writeLine(_ text: String) {
        clearLiveLine()
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    private func emit(_ event: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: event, options: [.sortedKeys]) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
