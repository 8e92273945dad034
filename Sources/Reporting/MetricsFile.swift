import Foundation
import Support
import Model
import Imaging
import JobFile
import State

/// Prometheus' text format for node_exporter's textfile collector (`--metrics FILE`), written at the
/// end of every run: items by state, failures by kind, the run's results, and when the job last
/// succeeded (for an alert on a nightly job that has not). Renamed into place: never read half written.
package enum MetricsFile {
    /// States every job file shows, even at 0, so a dashboard's series do not come and go.
    private static let itemStates = ItemState.allCases.sorted { $0.rawValue < $1.rawValue }

    package static func write(_ job: Job, summary: RunSummary, store: StateStore, to path: String) throws {
        do { try AtomicFile.write(Data(try text(job, summary: summary, store: store).utf8), to: path) } catch {
            throw RunFileUnwritable(file: "the metrics file", path: path, reason: "\(error)")
        }
    }

    private static func text(_ job: Job, summary: RunSummary, store: StateStore) throws -> String {
        let now = Date()
        var lines: [String] = []
        func metric(_ name: String, _ help: String, _ samples: [(labels: [(String, String)], value: Double)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) gauge")
            for sample in samples {
                let labels = ([("job", job.name)] + sample.labels).map { "\($0.0)=\"\(escaped($0.1))\"" }
                lines.append("\(name){\(labels.joined(separator: ","))} \(canonicalNumber(sample.value))")
            }
        }
        let states = try store.stateCounts()
        metric("runner_items", "Items of the job by state, as its state database records them.",
               itemStates.map { ([("state", $0.rawValue)], Double(states[$0] ?? 0)) })
        metric("runner_failures", "Failed items of the job by failure kind.",
               try store.failureKinds().map { ([("kind", $0.kind.rawValue)], Double($0.count)) })
        let stale = try store.notRevalidated()
        metric("runner_sources_not_revalidated", "URL sources served from a cached original whose revalidation last failed (http.staleIfError).",
               [([], Double(stale.count))])
        let results: [(String, Int)] = [("done", summary.done), ("failed", summary.failed), ("up_to_date", summary.upToDate),
                                        ("not_revalidated", summary.notRevalidated),
                                        ("blocked", summary.blocked), ("skipped", summary.skipped), ("known_failure", summary.knownFailures),
                                        ("not_started", summary.notStarted)]
        metric("runner_run_items", "Items of the last run by result.", results.map { ([("result", $0.0)], Double($0.1)) })
        metric("runner_run_duration_seconds", "How long the last run took.", [([], summary.elapsedSeconds)])
        metric("runner_run_items_per_second", "Items the last run finished per second.", [([], summary.itemsPerSecond)])
        metric("runner_run_exit_code", "The last run's exit code (see the README's exit codes).",
               [([], Double(summary.exitCode))])
        metric("runner_run_end_timestamp_seconds", "When the last run ended (Unix time).", [([], now.timeIntervalSince1970)])
        metric("runner_info", "runner's version and the libvips it runs on.",
               [([("version", RunnerVersion.string), ("libvips", VipsRuntime.version)], 1)])
        // Written before the run's end is recorded: a run exiting 0 is itself the last success.
        if let success = summary.exitCode == ExitStatus.success ? now : try store.lastSuccess() {
            metric("runner_last_success_timestamp_seconds", "When a run of the job last exited 0 (Unix time).",
                   [([], success.timeIntervalSince1970)])
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Label values escape backslash, double quote and newline (the exposition format's rule).
    private static func escaped(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
