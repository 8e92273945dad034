import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import Planning
import Output

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
package final class Reporter: Sendable {
    private struct Counts {
        var total = 0, finished = 0, failed = 0
        var lastLine = 0.0
        var liveLineShown = false
    }

    private let style: ReportStyle
    private let jobName: String
    /// The job file as given, for the hint that names `runner failed`.
    private let jobFile: String
    private let isTerminal: Bool
    /// Seconds between progress lines (and JSON progress events) when stderr is not a terminal.
    private let interval: Double
    private let counts = Mutex(Counts())
    private let started = Date()
    private let stopped = Mutex(false)

    /// Whether libvips' warnings are shown (`-v`).
    private let verbose: Bool

    package init(style: ReportStyle, jobName: String, jobFile: String, interval: Double, verbose: Bool = false) {
        (self.style, self.verbose, self.jobName, self.jobFile, self.interval) = (style, verbose, jobName, jobFile, interval)
        isTerminal = isatty(STDERR_FILENO) == 1
    }

    /// The plan's counts, and what the sweep for temporary files did (JSON only).
    package func planned(_ planned: PlanCounts, sweep: AtomicFile.Sweep) {
        counts.withLock { $0.total = planned.pending }
        switch style {
        case .json: emit(.plan(.init(job: jobName, counts: planned, sweep: sweep)))
        case .text: writeLine("\(jobName): \(planned.described)")
        case .quiet: break
        }
    }

    package func startTicker() {
        guard style != .quiet else { return }
        let thread = Thread { [self] in
            while !stopped.withLock({ $0 }) {
                Thread.sleep(forTimeInterval: isTerminal && style == .text ? 0.5 : min(interval, 1))
                tick()
            }
        }
        thread.start()
    }

    package func itemFinished(key: String, outputPath: String, outcome: ItemOutcome) {
        switch outcome {
        case .done, .skipped: counts.withLock { $0.finished += 1 }
        case .failed: counts.withLock { $0.finished += 1; $0.failed += 1 }
        case .blocked: break  // never counted as work to do
        }
        switch style {
        case .json: emit(.item(.init(key: key, output: outputPath, outcome: outcome)))
        case .text, .quiet:
            // Failures are said per source (`sourceFailed`), not once for each of its outputs. Blocked
            // is old news, said when the URL was blacklisted: the summary counts it, `runner failed` lists it.
            if style == .text, let warning = outcome.warning { writeLine("warning: \(key): \(warning)") }
        }
    }

    /// A source's outputs that failed the same way, as one line: `failed: SOURCE (thumb, large): decode: …`.
    /// JSON has an event per item instead (`itemFinished`).
    package func sourceFailed(_ source: String, outputs: [String], failure: ItemFailure) {
        guard style != .json else { return }
        writeLine("failed: \(source) (\(outputs.joined(separator: ", "))): \(failure.kind.rawValue): \(failure.message)")
    }

    /// A URL source's item with no work to do: revalidated unchanged (up to date), not revalidated
    /// (the origin failing, a cached original served), or failed on this content before (not retried).
    package func itemRevalidated(key: String, outputPath: String, _ state: RunEvent.Item.State) {
        if style == .json { emit(.item(.init(key: key, output: outputPath, state: state))) }
    }

    /// With `-v`: what libvips warned about while rendering `source`, each distinct warning once.
    package func libvipsWarnings(_ source: String, _ warnings: [String]) {
        guard verbose else { return }
        for warning in warnings { say(.libvipsWarning(.init(source: source, message: warning)), else: "libvips: \(source): \(warning)") }
    }

    package func notice(_ message: String) { say(.notice(.init(message: message)), else: message) }

    /// `event` on stdout in JSON, else `line` on stderr.
    private func say(_ event: RunEvent.Body, else line: String) {
        if style == .json { emit(event) } else { writeLine(line) }
    }

    package func finished(_ summary: RunSummary) {
        stopped.withLock { $0 = true }
        clearLiveLine()
        switch style {
        case .json: emit(.summary(.init(job: jobName, summary)))
        case .text, .quiet:
            var line = "\(jobName): \(summary.done) done, \(summary.failed) failed, \(summary.upToDate) up to date"
            if summary.notRevalidated > 0 { line += ", \(summary.notRevalidated) not revalidated (origin failing)" }
            if summary.skipped > 0 { line += ", \(summary.skipped) skipped (same bytes as a narrower output)" }
            if summary.blocked > 0 { line += ", \(summary.blocked) blocked" }
            if summary.notStarted > 0 { line += ", \(summary.notStarted) not started" }
            if summary.derived > 0 { line += ", \(Format.plural(summary.derived, "derived value"))" }
            line += String(format: " in %.1fs", summary.elapsedSeconds)
            if summary.done > 0 && summary.elapsedSeconds > 0 { line += String(format: " (%.1f items/s)", summary.itemsPerSecond) }
            if summary.qualityTargets.outputs > 0 { line += "; quality targets: " + summary.qualityTargets.description }
            if let signal = summary.interrupted { line += "; interrupted by \(String(cString: strsignal(signal)))" }
            if summary.stoppedByBudget { line += "; stopped by the time budget, run again to continue" }
            if let failure = summary.failure {
                line += (failure.afterTheWork ? "; then failed: " : "; stopped: ") + "\(failure) (exit \(failure.exitCode))"
            }
            let carriedOver = [(summary.knownFailures, "known failure"), (summary.blocked, "blocked item")].filter { $0.0 > 0 }
            if !carriedOver.isEmpty {
                line += "; " + carriedOver.map { Format.plural($0.0, $0.1) }.joined(separator: " and ") + ": runner failed \(jobFile)"
            }
            // In a log (cron appends night after night) the summary says which night it was.
            if isatty(STDOUT_FILENO) != 1 { line = Self.timestamp() + " " + line }
            FileDescriptor.writeLog(line + "\n", to: STDOUT_FILENO)
        }
    }

    // MARK: Rendering

    private func tick() {
        let now = Date().timeIntervalSince(started)
        let live = isTerminal && style == .text
        let snapshot: Counts? = counts.withLock { counts in
            if !live && now - counts.lastLine < interval { return nil }
            counts.lastLine = now
            return counts
        }
        guard let snapshot else { return }
        // Under the stop flag's lock: a tick that woke as the run finished never prints after the summary.
        stopped.withLock { stopped in
            guard !stopped else { return }
            guard style != .json else {
                return emit(.progress(.init(job: jobName, finished: snapshot.finished, total: snapshot.total, failed: snapshot.failed, seconds: now)))
            }
            let line = Self.progressLine(job: jobName, finished: snapshot.finished, total: snapshot.total,
                                         failed: snapshot.failed, elapsed: now)
            if live {
                counts.withLock { $0.liveLineShown = true }
                FileDescriptor.writeLog("\r\u{1B}[2K\(line)", to: STDERR_FILENO)
            } else {
                writeLine(line)
            }
        }
    }

    /// `job: 12/40 · 3.1 items/s · ETA 0:09`; the ETA reads `--` until an item has finished,
    /// since no rate is known before.
    package static func progressLine(job: String, finished: Int, total: Int, failed: Int, elapsed: Double) -> String {
        let rate = Double(finished) / max(elapsed, 0.001)
        let eta = finished > 0 ? clock(Double(total - finished) / rate) : "--"
        var text = "\(job): \(finished)/\(total)" + String(format: " · %.1f items/s · ETA ", rate) + eta
        if failed > 0 { text += " · \(failed) failed" }
        return text
    }

    private static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 3600 ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%d:%02d", total / 60, total % 60)
    }

    private func clearLiveLine() {
        if counts.withLock({ $0.liveLineShown }) { FileDescriptor.writeLog("\r\u{1B}[2K", to: STDERR_FILENO) }
    }

    private func writeLine(_ text: String) {
        clearLiveLine()
        Self.writeLog(text, terminal: isTerminal)
    }

    /// A line on stderr. Off a terminal (cron's log) it starts with the time, so a log read the
    /// morning after says when each thing happened.
    package static func writeLog(_ text: String, terminal: Bool = isatty(STDERR_FILENO) == 1) {
        FileDescriptor.writeLog((terminal ? "" : timestamp() + " ") + text + "\n", to: STDERR_FILENO)
    }

    /// One JSON object per line on stdout, each with the time it was written.
    private func emit(_ body: RunEvent.Body) {
        guard let line = try? RunEvent(time: Self.timestamp(), body: body).line() else { return }
        FileDescriptor.writeLog(line + "\n", to: STDOUT_FILENO)
    }

    /// ISO 8601 in UTC with milliseconds, e.g. `2026-11-23T02:30:05.123Z`.
    package static func timestamp(_ date: Date = Date()) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
