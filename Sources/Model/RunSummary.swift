/// Counts and outcome of one run, and the exit code it maps to.
public struct RunSummary: Sendable, Codable {
    public var planned = 0
    public var upToDate = 0
    public var done = 0
    public var failed = 0
    public var blocked = 0
    /// Items that failed in an earlier run on the same content and were not tried again.
    public var knownFailures = 0
    /// Items not started because the run was interrupted.
    public var notStarted = 0
    /// The signal that interrupted the run, if one did.
    public var interrupted: Int32?
    /// The time budget ran out: work was left for the next run.
    public var stoppedByBudget = false
    public var elapsedSeconds = 0.0
    /// Worker processes started: one per slot, plus replacements after crashes and recycling.
    public var workersStarted = 0

    /// How the run ended, as the `run` table and `runner status` say it.
    public var outcome: String {
        interrupted != nil ? "interrupted" : stoppedByBudget ? "stopped-by-budget" : "finished"
    }

    /// `--strict`: failures carried over from earlier runs (known failures, blocked URLs) exit 1 too.
    public var strict = false

    public init() {}

    /// 0 nothing new failed; 1 this run recorded a failure (or, with `strict`, any failure is on
    /// record); 124 stopped by the time budget; 130/143 interrupted (SIGINT/SIGTERM). Failures carried over unchanged leave it 0,
    /// so a nightly cron job with one corrupt file does not fail every night.
    public var exitCode: Int32 {
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

/// The exit codes runner documents.
public enum ExitStatus {
    public static let success: Int32 = 0
    public static let someItemsFailed: Int32 = 1
    /// The job file is invalid or unreadable; nothing was run.
    public static let jobFile: Int32 = 2
    /// EX_USAGE: the command line is wrong (swift-argument-parser's code for its own errors too).
    public static let commandLine: Int32 = 64
    /// EX_IOERR: the state database's lock cannot be created or opened (folder, permissions, disk), a
    /// write to the database failed (disk full), or it was deleted while the run held it.
    public static let stateUnavailable: Int32 = 74
    /// EX_TEMPFAIL: another run holds the job's state database.
    public static let locked: Int32 = 75
    /// The time budget ran out with work left (GNU timeout's code for "time ran out"); run again to continue.
    public static let budgetExhausted: Int32 = 124
}
