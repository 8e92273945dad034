import Foundation
import JobFile
import Planning
import State
import Reporting

extension JobRunner {
    public struct PruneCounts: Sendable {
        public var orphans = 0
        /// Orphans whose file pruning deletes (or deleted).
        public var files = 0
        /// Orphans whose file could not be checked or deleted: their rows stay.
        public var failed = 0
        /// Recorded sources (facts and derived values) of sources the job no longer plans.
        public var sources = 0
    }

    /// Lists, and with `delete` prunes, the items the job's state databases record (each shard's,
    /// for a sharded job: the layout that ran last) but the job no longer plans at their recorded
    /// path. Pruning deletes an orphan's file only where runner wrote it (`CurrentItems.orphan`),
    /// then drops its row; a file it could not delete keeps its row, so a later prune tries again.
    /// Then the recorded sources (`source` rows and their derived values) of sources the job no
    /// longer plans: `visitSource` sees each key, and `delete` drops them.
    /// Nil when the job has never run; nothing is created then.
    public static func prune(_ job: Job, delete: Bool, _ visit: (Orphan) throws -> Void,
                             visitSource: (String) throws -> Void = { _ in }) throws -> PruneCounts? {
        // The databases that answer for the job now, as status reads them (each shard's of the layout that ran last).
        let found = try JobDatabases(job: job)
        let databases = found.parts
        guard !databases.isEmpty else { return nil }
        // No run may record an item while pruning judges its row; every database is locked before any is touched,
        // and opened to write only then.
        let locks = delete ? try databases.map { try RunLock(statePath: $0.database.path) } : []
        defer { withExtendedLifetime(locks) {} }
        if delete { found.close() }
        let stores = delete ? try databases.map { try StateStore(path: $0.database.path) } : databases.map(\.store)
        defer { stores.forEach { $0.close() } }
        if delete { try stores.forEach { try $0.checkIntact() } }
        // The whole job is planned before anything is touched, so a job-file error changes nothing.
        var current = CurrentItems(outputs: job.outputs, retry: job.remote.retry)
        try Planner(job: job).forEachSource { current.insert($0) }
        var counts = PruneCounts()
        for store in stores {
            try store.sweepItems { recorded in
                guard !current.plans(recorded) else { return false }
                let orphan = try current.orphan(recorded, delete: delete)
                counts.orphans += 1
                if orphan.keptBecause == nil { counts.files += 1 }
                try visit(orphan)
                switch orphan.keptBecause {
                case .failed?, .refused?:
                    counts.failed += 1
                    return false
                default: break
                }
                return delete
            }
            try store.sweepSources { key in
                guard !current.plansSource(key) else { return false }
                counts.sources += 1
                try visitSource(key)
                return delete
            }
        }
        // What the manifest lists changed: each database's manifest (a shard's part) is written
        // again, as a run would (left alone when its bytes stay the same).
        if delete, counts.orphans + counts.sources > 0 {
            for (part, store) in zip(databases, stores) { try SiteManifestWriter.writeJobManifest(job, stores: [store], shard: part.database.shard) }
        }
        return counts
    }
}
