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
        /// Replaced files kept for a site deployed from an earlier manifest (`keepReplaced`), and
        /// those of them past it, which pruning deletes (or deleted).
        public var retired = 0, retiredDue = 0
    }

    /// A replaced file kept for `keepReplaced`: the item it was, where, and when it may go (nil
    /// until the manifest that stops naming it is out); `due`: it may go now.
    public struct Retired: Sendable {
        public let item: String
        public let path: String
        public let removableAfter: Date?
        public let due: Bool
    }

    /// Lists, and with `delete` prunes, the items the job's state databases record (each shard's of the
    /// layout that ran last) but the job no longer plans at their recorded path. Pruning deletes an
    /// orphan's file only where runner wrote it (`CurrentItems.orphan`), then drops its row; a file it
    /// could not delete keeps its row, so a later prune tries again. Then the `source` rows (and derived
    /// values) of sources the job no longer plans (`visitSource`), and last the replaced files kept for
    /// `keepReplaced` (`visitRetired`; `delete` removes those past it). Nil, creating nothing: never run.
    public static func prune(_ job: Job, delete: Bool, _ visit: (Orphan) throws -> Void,
                             visitSource: (String) throws -> Void = { _ in }, visitRetired: (Retired) throws -> Void = { _ in }) throws -> PruneCounts? {
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
        var current = CurrentItems(job: job)
        try Planner(job: job).forEachSource { current.insert($0) }
        var counts = PruneCounts()
        // A site may name an orphan's file in the manifest it was built from: with a manifest, the
        // file is retired (kept for `keepReplaced` after the manifest that drops it), not deleted now.
        let retiring = delete && job.manifest != nil
        for store in stores {
            try store.sweepItems(retiring: retiring) { recorded in
                guard !current.plans(recorded) else { return false }
                let orphan = try current.orphan(recorded, delete: delete && !retiring)
                counts.orphans += 1
                if orphan.keptBecause == nil { counts.files += 1 }
                try visit(orphan)
                if orphan.keptBecause?.isFailure == true {
                    counts.failed += 1
                    return false
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
        // again, as a run would (left alone when its bytes stay the same); then what it no longer
        // names starts its `keepReplaced`, and what is past it goes.
        if delete, counts.orphans + counts.sources > 0 {
            for (part, store) in zip(databases, stores) { try SiteManifestWriter.writeJobManifest(job, stores: [store], shard: part.database.shard) }
        }
        for store in stores { try pruneRetired(job, store: store, delete: delete, counts: &counts, visitRetired) }
        return counts
    }

    /// Lists the replaced files `store` keeps for `keepReplaced`, and with `delete` removes those
    /// past it (the manifest just written counting as the one that stopped naming the rest).
    private static func pruneRetired(_ job: Job, store: StateStore, delete: Bool, counts: inout PruneCounts,
                                     _ visitRetired: (Retired) throws -> Void) throws {
        let now = Date()
        if delete { try store.publishRetired(at: now) }
        let due = Set(try store.retiredOutputs(dueBefore: now.addingTimeInterval(-job.keepReplaced)).map(\.path))
        for retired in try store.retiredOutputs() {
            counts.retired += 1
            if due.contains(retired.path) { counts.retiredDue += 1 }
            try visitRetired(Retired(item: retired.itemKey, path: retired.path,
                                     removableAfter: retired.publishedAt.map { Date(timeIntervalSince1970: $0 + job.keepReplaced) },
                                     due: due.contains(retired.path)))
        }
        if delete { _ = try removeRetired(job, store: store, now: now.addingTimeInterval(1e-3)) }
    }

    /// Removes, through their destinations, the retired files (`RetiredOutput`) whose manifest went
    /// out more than `keepReplaced` ago and that no item is recorded done at, and forgets them; one
    /// that cannot be removed stays for the next run or prune. Returns how many went.
    static func removeRetired(_ job: Job, store: StateStore, now: Date = Date()) throws -> Int {
        var gone: [String] = []
        do {
            for retired in try store.retiredOutputs(dueBefore: now.addingTimeInterval(-job.keepReplaced)) {
                guard let place = job.destination(of: retired.path) else { continue }
                switch try place.remove(retired.path, really: true) {
                // Something else than runner's file there now is not runner's to track.
                case .removed, .missing, .notRegularFile: gone.append(retired.path)
                case .failed, .refused: continue
                }
            }
        } catch {
            try? store.forgetRetired(gone)
            throw error
        }
        try store.forgetRetired(gone)
        return gone.count
    }
}
