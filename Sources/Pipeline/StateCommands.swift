import Foundation
import JobFile
import State

extension JobRunner {
    /// Takes URLs off the blacklist of every state database of the job (each shard keeps its own,
    /// under any shard count); nil `urls`: all of them. Returns the distinct URLs removed.
    public static func unblock(_ job: Job, urls: [String]?) throws -> Set<String> {
        Set(try editEachDatabase(of: job) { path, store in try StateDatabaseError.naming(path) { try store.unblock(urls) } }.joined())
    }

    /// Brings every state database of the job to this runner's schema under the job's run lock,
    /// as a run would before its work; returns their paths. The commands that only read refuse
    /// an older database and name this.
    public static func migrate(_ job: Job) throws -> [String] {
        try editEachDatabase(of: job) { path, _ in path }
    }

    /// `body` on each state database of the job that exists, opened (and so migrated) under its run
    /// lock: a writer holds the job as a run does, so it never edits a database under a running night.
    private static func editEachDatabase<T>(of job: Job, _ body: (String, StateStore) throws -> T) throws -> [T] {
        try job.stateLayout.databases.map(\.path).filter { FileManager.default.fileExists(atPath: $0) }.compactMap { path in
            let lock = try RunLock(statePath: path)
            defer { withExtendedLifetime(lock) {} }
            guard FileManager.default.fileExists(atPath: path) else { return nil }
            let store = try StateStore(path: path)
            defer { store.close() }
            return try body(path, store)
        }
    }
}
