import Model
import Manifest
import State

extension JobRunner {
    /// Takes URLs off the blacklist of every state database of the job (each shard keeps its own,
    /// under any shard count); nil `urls`: all of them. Returns the distinct URLs removed.
    public static func unblock(_ job: Job, urls: [String]?) throws -> Set<String> {
        var removed: Set<String> = []
        for database in job.stateLayout.databases {
            guard let store = try StateStore.existing(at: database.path) else { continue }
            defer { store.close() }
            removed.formUnion(try StateDatabaseError.naming(database.path) { try store.unblock(urls) })
        }
        return removed
    }
}
