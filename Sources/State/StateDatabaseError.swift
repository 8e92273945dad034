import Foundation
import GRDB
import Support

/// The job's state database could not be used: runner says which file and why, and never
/// replaces the file or starts the job over on its own.
public struct StateDatabaseError: ExitCoded, CustomStringConvertible {
    public enum Kind: Sendable {
        /// Not a SQLite database, or a damaged one: nothing was run (exit 2).
        case damaged
        /// Holds a value this runner never writes (`reason`: the column and the value), so it was
        /// damaged or edited by hand; a newer runner's is refused as `newerRunner` (exit 2).
        case unknownValue
        /// A write failed (disk full, I/O error, read-only): the run stopped (exit 74).
        case unwritable
        /// Deleted or replaced while this run held it: the run stopped (exit 74).
        case moved
        /// Written by a newer runner (`reason`: a migration this runner does not know): left as it is (exit 65).
        case newerRunner
        /// Written by an older runner (`reason`: the first migration it lacks); a command that only
        /// reads does not upgrade it (exit 65): a run or `runner migrate` does.
        case olderRunner
    }

    public let path: String
    public let kind: Kind
    /// SQLite's own words.
    public let reason: String

    /// What happened, in a few words.
    public var summary: String {
        switch kind {
        case .damaged: "state database \(path) is damaged or is not a runner state database (SQLite: \(reason))"
        case .unknownValue: "state database \(path) holds a value runner never writes (\(reason)): it was damaged or edited by hand"
        case .unwritable: "cannot write the state database \(path) (SQLite: \(reason))"
        case .moved: "the state database \(path) was deleted or replaced while this run held it"
        case .newerRunner: "state database \(path) was written by a newer runner (its migration \"\(reason)\" is unknown to runner \(RunnerVersion.string))"
        case .olderRunner: "state database \(path) was written by an older runner (it lacks migration \"\(reason)\")"
        }
    }

    public var description: String {
        switch kind {
        case .damaged, .unknownValue:
            summary + "; runner leaves it as it is\(kind == .damaged ? " and runs nothing" : ""): restore it from a backup, "
                + "or move it away to start the job over (every item is then redone)"
        case .unwritable:
            summary + "; stopped: what was recorded before stands, and the items this run could not record run again next time"
        case .moved:
            summary + "; stopped: what this run recorded went with it, so the next run starts a new database and redoes "
                + "those items (their outputs on disk are complete)"
        case .newerRunner: summary + "; runner leaves it as it is: use that runner or a newer one"
        case .olderRunner:
            summary + "; this command only reads: `runner migrate JOB` upgrades it (so does the next run of the job)"
        }
    }

    /// The exit code runner documents for it.
    public var exitCode: Int32 {
        switch kind {
        case .damaged, .unknownValue: ExitStatus.jobFile
        case .unwritable, .moved: ExitStatus.stateUnavailable
        case .newerRunner, .olderRunner: ExitStatus.stateVersion
        }
    }

    /// `error` told about the database at `path`, if it is SQLite's; anything else stays as it is.
    package static func naming(_ path: String, _ error: any Error) -> any Error {
        guard let database = error as? DatabaseError else { return error }
        if database.resultCode == .SQLITE_TOOBIG {
            return StateDatabaseError(path: path, kind: .unknownValue, reason: "one over \(Quoted.bytes(StateStore.longestValue))")
        }
        let damaged = [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(database.resultCode)
        return StateDatabaseError(path: path, kind: damaged ? .damaged : .unwritable,
                                  reason: database.message ?? "\(database.resultCode)")
    }

    /// Runs `body`, naming the database at `path` in any SQLite error it throws.
    package static func naming<T>(_ path: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw naming(path, error) }
    }
}
