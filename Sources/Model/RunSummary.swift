import Support

/// Counts and outcome of one run, and the exit code it maps to.
public struct RunSummary: Sendable, Codable {
    public var planned = 0
    public var upToDate = 0
    public var done = 0
    public var failed = 0
    public var blocked = 0
    /// Items not made because a narrower output of their block holds their bytes (`ItemState.skipped`).
    public var skipped = 0
    /// Items that failed in an earlier run on the same content and were not tried again.
    public var knownFailures = 0
    /// URL items kept up to date from a cached original whose revalidation failed transiently
    /// (`http.staleIfError`): not failures.
    public var notRevalidated = 0
    /// Derived values (`derive`) this run computed and stored, one per value per source.
    public var derived = 0
    /// Items not started because the run was interrupted.
    public var notStarted = 0
    /// The signal that interrupted the run, if one did.
    public var interrupted: Int32?
    /// The time budget ran out: work was left for the next run.
    public var stoppedByBudget = false
    /// What stopped the run on a failure of its own, or failed once its work was done (the
    /// `--metrics` file); its exit code wins over every other.
    public var failure: RunFailure?
    public var elapsedSeconds = 0.0
    /// What the outputs with a quality target made this run did.
    public var qualityTargets = QualityTotals()
    /// Worker processes started: one per slot, plus replacements after crashes and recycling.
    public var workersStarted = 0

    /// How the run ended, as the `run` table and `runner status` say it.
    public var outcome: RunOutcome {
        if let failure, !failure.afterTheWork { return .failed }
        return interrupted != nil ? .interrupted : stoppedByBudget ? .stoppedByBudget : .finished
    }

    /// `--strict`: failures carried over from earlier runs (known failures, blocked URLs) exit 1 too.
    public var strict = false

    public init() {}

    /// 0 nothing new failed; 1 this run recorded a failure (or, with `strict`, any failure is on
    /// record); 124 stopped by the time budget; 130/143 interrupted (SIGINT/SIGTERM); a failure of
    /// the run's own, its code. Failures carried over unchanged leave it 0, so a nightly cron job
    /// with one corrupt file does not fail every night.
    public var exitCode: Int32 {
        if let failure { return failure.exitCode }
        if let interrupted { return 128 + interrupted }
        if stoppedByBudget { return ExitStatus.budgetExhausted }
        let carriedOver = knownFailures + blocked
        return failed > 0 || (strict && carriedOver > 0) ? ExitStatus.someItemsFailed : ExitStatus.success
    }
}

extension RunSummary {
    /// Throughput as summaries, metrics and reports give it: items finished (done or failed) per second.
    package static func itemsPerSecond(done: Int, failed: Int, seconds: Double) -> Double {
        seconds > 0 ? Double(done + failed) / seconds : 0
    }

    public var itemsPerSecond: Double { Self.itemsPerSecond(done: done, failed: failed, seconds: elapsedSeconds) }
}

/// How a run ended: the `run` table's `outcome`, spelled once.
public enum RunOutcome: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case running, finished, interrupted
    case stoppedByBudget = "stopped-by-budget"
    /// Stopped on a failure of its own (`RunSummary.failure`).
    case failed

    public var description: String { rawValue }
}

/// A failure that ended a run, as printed, recorded and returned: one exit code everywhere.
public struct RunFailure: Sendable, Codable, Equatable, CustomStringConvertible {
    public let message: String
    public let exitCode: Int32
    /// The work itself ended as it would have; only a step after it failed (the metrics file).
    public let afterTheWork: Bool

    public init(_ error: any Error, afterTheWork: Bool = false) {
        message = "\(error)"
        exitCode = ExitStatus.code(for: error)
        self.afterTheWork = afterTheWork
    }

    public var description: String { message }
}
