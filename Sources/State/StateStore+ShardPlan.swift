import Foundation
import GRDB
import Planning

/// A shard's last complete plan (`SourceMemory`), in the run's planning transaction: a job-file
/// error rolls a new record back with everything else. A pass that only reads (`runner plan`)
/// replays a record but never writes one.
extension StateStore.PlanningPass: SourceMemory {
    package func replaySources(madeUnder inputs: String, ifEach unchanged: (WalkedPath) -> Bool,
                               _ visit: (SourceEntry) throws -> Void) throws -> Bool {
        let recorded = try Row.fetchOne(db, sql: "SELECT inputs FROM shard_plan WHERE id = 1")
        guard let recorded, recorded[ShardPlanTable.inputs] as String == inputs else { return false }
        let walked = try Row.fetchCursor(db, sql: "SELECT path, seen FROM shard_plan_walked")
        while let row = try walked.next() {
            guard unchanged(WalkedPath(path: row[ShardPlanWalkedTable.path], seen: row[ShardPlanWalkedTable.seen])) else { return false }
        }
        let rows = try Row.fetchCursor(db, sql: "SELECT spec, line FROM shard_plan_source ORDER BY position")
        while let row = try rows.next() {
            try visit(SourceEntry(spec: row[ShardPlanSourceTable.spec], line: row[ShardPlanSourceTable.line]))
        }
        return true
    }

    package func forgetSources() throws {
        guard runID != nil else { return }
        try db.execute(sql: "DELETE FROM shard_plan; DELETE FROM shard_plan_source; DELETE FROM shard_plan_walked")
    }

    package func recordWalked(_ path: WalkedPath) throws {
        guard runID != nil else { return }
        let statement = try db.cachedStatement(sql: "INSERT INTO shard_plan_walked (path, seen) VALUES (?, ?)")
        try statement.execute(arguments: [path.path, path.seen])
    }

    package func recordSource(_ entry: SourceEntry) throws {
        guard runID != nil else { return }
        let statement = try db.cachedStatement(sql: "INSERT INTO shard_plan_source (spec, line) VALUES (?, ?)")
        try statement.execute(arguments: [entry.spec, entry.line])
    }

    package func sealSources(madeUnder inputs: String) throws {
        guard runID != nil else { return }
        try db.execute(sql: "INSERT INTO shard_plan (id, inputs) VALUES (1, ?)", arguments: [inputs])
    }
}
