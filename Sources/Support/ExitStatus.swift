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
    /// EX_DATAERR: the state database was written by another runner version: a newer one (left as
    /// it is), or an older one that a command which only reads does not upgrade.
    public static let stateVersion: Int32 = 65
    /// EX_TEMPFAIL: another run holds the job's state database.
    public static let locked: Int32 = 75
    /// EX_SOFTWARE: the run stopped on a failure of its own (a damaged plan spool, a worker that
    /// cannot be started); what it recorded stands.
    public static let internalFailure: Int32 = 70
    /// EX_CANTCREAT: the run ended but its `--metrics` file or its site manifest could not be written.
    public static let runFileUnwritable: Int32 = 73
    /// EX_CONFIG: an object store refused the run's requests as configured (credentials, access,
    /// region, bucket), or no credentials could be had; said once with what to fix.
    public static let storeConfiguration: Int32 = 78
    /// EX_UNAVAILABLE: an object store could not be reached, through the retries, to list a source
    /// or to write an output or the state.
    public static let storeUnavailable: Int32 = 69
    /// The time budget ran out with work left (GNU timeout's code for "time ran out"); run again to continue.
    public static let budgetExhausted: Int32 = 124

    /// The code a run or command ends with for `error`: its own documented one, else `internalFailure`.
    public static func code(for error: any Error) -> Int32 {
        (error as? any ExitCoded)?.exitCode ?? internalFailure
    }
}

/// An error with an exit code of its own in the README's table.
public protocol ExitCoded: Error {
    var exitCode: Int32 { get }
}

/// The run's metrics file or site manifest could not be written: its work stands, its exit code says so (73).
package struct RunFileUnwritable: ExitCoded, CustomStringConvertible {
    package let file, path, reason: String
    package init(file: String, path: String, reason: String) { (self.file, self.path, self.reason) = (file, path, reason) }
    package var exitCode: Int32 { ExitStatus.runFileUnwritable }
    package var description: String { "cannot write \(file) \(path): \(reason)" }
}
