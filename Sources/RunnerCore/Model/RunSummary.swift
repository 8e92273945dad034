/// Counts and outcome of one run, and the exit code it maps to.
public struct RunSummary: Sendable, Codable {
    public var planned = 0
    public var upToDate = 0
    public var done = 0
    public var failed = 0
    public var blocked = 0
    /// Items not started because the run was interrupted.
    public var notStarted = 0
    /// The signal that interrupted the run, if one did.
    public var interrupted: Int32?
    public var elapsedSeconds = 0.0
    /// Worker processes started: one per slot, plus replacements after crashes and recycling.
    public var workersStarted = 0

    public init() {}

    /// 0 all done or up to date; 1 some failed or blocked; 130/143 interrupted (SIGINT/SIGTERM).
    public var exitCode: Int32 {
        if let interrupted { return 128 + interrupted }
        return failed > 0 || blocked > 0 ? ExitStatus.someItemsFailed : ExitStatus.success
    }
}

/// The exit codes runner documents.
public enum ExitStatus {
    public static let success: Int32 = 0
    public static let someItemsFailed: Int32 = 1
    /// The job file is invalid or unreadable; nothing was run.
    public static let jobFile: Int32 = 2
    /// EX_USAGE: the command line is wrong (swift-argument-parser's code for its own errors too).
    public static let commandLine: Int32 = 64
    /// EX_TEMPFAIL: another run holds the job's state database.
    public static let locked: Int32 = 75
}
