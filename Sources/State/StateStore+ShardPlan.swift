import Foundation
import GRDB
import Planning

/// A shard's last complete plan (`SourceMemory`), in the run's planning transaction (a job-file error
/// rolls it back); a pass that only reads (`runner plan`) replays a record but never writes one.
extension StateStore.PlanningPass: SourceMemory {
    package func replaySources(madeUnder inputs: String, ifEach unchanged: (WalkedPath) -> Bool,
                               _ visit: (SourceEntry) throws -> Void) throws -> Bool {
        guard try ShardPlanSeal.fetchOne(db)?.inputs == inputs else { return false }
        guard try !WalkedPath.fetchCursor(db).contains(where: { !unchanged($0) }) else { return false }
        try SourceEntry.order(SourceEntry.Columns.position).fetchCursor(db).forEach(visit)
        return true
    }

    package func forgetSources() throws {
        guard runID != nil else { return }
        try ShardPlanSeal.deleteAll(db)
        try SourceEntry.deleteAll(db)
        try WalkedPath.deleteAll(db)
    }

    private static let walkedSQL = "INSERT INTO shard_plan_walked (\(WalkedPath.Columns.path), \(WalkedPath.Columns.seen)) VALUES (?, ?)"
    private static let sourceSQL = "INSERT INTO shard_plan_source (\(SourceEntry.Columns.spec), \(SourceEntry.Columns.line)) VALUES (?, ?)"

    package func recordWalked(_ path: WalkedPath) throws {
        guard runID != nil else { return }
        try db.cachedStatement(sql: Self.walkedSQL).execute(arguments: [path.path, path.seen])
    }

    package func recordSource(_ entry: SourceEntry) throws {
        guard runID != nil else { return }
        try db.cachedStatement(sql: Self.sourceSQL).execute(arguments: [entry.spec, entry.line])
    }

    package func sealSources(madeUnder inputs: String) throws {
        guard runID != nil else { return }
        try ShardPlanSeal(inputs: inputs).insert(db)
    }
}
