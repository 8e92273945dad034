import Foundation
import JobFile
import State

extension JobRunner {
    /// Takes URLs off the blacklist of every state database of the job (each shard keeps its own,
    /// under any shard count); nil `urls`: all of them. Returns the distinct URLs removed.
    public static func unblock(_ job: Job, urls: [String]?) throws -> Set<String> {
        var removed: Set<String> = []
        for database in job.stateLayout.databases where FileManager.default.fileExists(atPath: database.path) {
            // A writer: it holds the job as a run does, so it never edits a database under a running night.
            let lock = try RunLock(statePath: database.path)
            defer { withExtendedLifetime(lock) {} }
            guard FileManager.default.fileExists(atPath: database.path) else { continue }
            let store = try StateStore(path: database.path)
            defer { store.close() }
            removed.formUnion(try StateDatabaseError.naming(database.path) { try store.unblock(urls) })
        }
        return removed
    }

    /// Brings every state database of the job to this runner's schema under the job's run lock,
    /// as a run would before its work; returns their paths. The commands that only read refuse
    /// an older database and name this.
    public static func migrate(_ job: Job) throws -> [String] {
        try job.stateLayout.databases.map(\.path).filter { FileManager.default.fileExists(atPath: $0) }.map { path in
            let lock = try RunLock(statePath: path)
            defer { withExtendedLifetime(lock) {} }
            try StateStore(path: path).close()
            return path
        }
    }
}
