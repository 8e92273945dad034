import Foundation
import GRDB
import GRDBSQLite
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import Imaging
import JobFile
import Planning

extension StateStore {
    // MARK: Pruning

    /// Visits every recorded item, a page at a time so memory stays flat however large the job.
    /// `visit` says whether to drop the item's row; a page's rows are dropped together after its
    /// visits, so whatever a visit removes from disk goes before the row that records it.
    package func sweepItems(_ visit: (RecordedItem) throws -> Bool) throws {
        var after: Int64 = 0
        while true {
            let page = try database.read { db in
                try Row.fetchAll(db, sql: "SELECT rowid, key, output_path, state FROM item WHERE rowid > ? ORDER BY rowid LIMIT 1000",
                                 arguments: [after])
            }
            guard let last = page.last else { return }
            after = last[0]
            var dropped: [String] = []
            for row in page {
                let item = RecordedItem(key: row[1], outputPath: row[2], state: ItemState(rawValue: row[3]) ?? .pending)
                if try visit(item) { dropped.append(item.key) }
            }
            guard !dropped.isEmpty else { continue }
            try database.write { db in
                let statement = try db.makeStatement(sql: "DELETE FROM item WHERE key = ?")
                for key in dropped { try statement.execute(arguments: [key]) }
            }
        }
    }

    /// Visits the key of every recorded source (`source` rows), a page at a time in key order;
    /// `visit` says whether to drop the source's row and its derived values, which go together,
    /// a page in one transaction.
    package func sweepSources(_ visit: (String) throws -> Bool) throws {
        var after = ""
        while true {
            let page = try database.read { db in
                try String.fetchAll(db, sql: "SELECT key FROM source WHERE key > ? ORDER BY key LIMIT 1000", arguments: [after])
            }
            guard let last = page.last else { return }
            after = last
            let dropped = try page.filter(visit)
            guard !dropped.isEmpty else { continue }
            try database.write { db in
                let source = try db.makeStatement(sql: "DELETE FROM source WHERE key = ?")
                let derived = try db.makeStatement(sql: "DELETE FROM derived WHERE source_key = ?")
                for key in dropped {
                    try source.execute(arguments: [key])
                    try derived.execute(arguments: [key])
                }
            }
        }
    }


    // MARK: Reports

    public func stateCounts() throws -> [String: Int] {
        try database.read { db in
            var counts: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) FROM item GROUP BY state") {
                counts[row[0]] = row[1]
            }
            if ownerless, let running = counts.removeValue(forKey: ItemState.running.rawValue) {
                counts[ItemState.pending.rawValue, default: 0] += running
            }
            return counts
        }
    }

    public func recentRuns(limit: Int) throws -> [RunRecord] {
        try database.read { db in
            try RunRecord.fetchAll(db, sql: "SELECT * FROM run ORDER BY id DESC LIMIT ?", arguments: [limit]).map { run in
                var run = run
                if ownerless && run.outcome == .running { run.outcome = .interrupted }
                return run
            }
        }
    }

    /// Failed items by failure kind, with the oldest failure still standing in each.
    package func failureKinds() throws -> [FailureKindRecord] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT COALESCE(error_kind, 'unknown') AS kind, COUNT(*), MIN(updated_at) FROM item
                WHERE state = \(ItemState.failed.sql) GROUP BY kind ORDER BY kind
                """).map { FailureKindRecord(kind: $0[0], count: $0[1], since: Date(timeIntervalSince1970: $0[2])) }
        }
    }

    /// When the last run that exited 0 ended.
    package func lastSuccess() throws -> Date? {
        try database.read { db in
            try Double.fetchOne(db, sql: "SELECT MAX(ended_at) FROM run WHERE exit_code = 0").map(Date.init(timeIntervalSince1970:))
        }
    }

    public func warnedItemCount() throws -> Int {
        try database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM item WHERE state = \(ItemState.done.sql) AND warning IS NOT NULL") ?? 0 }
    }

    /// SQLite's own consistency check (`PRAGMA integrity_check`): "ok" for an intact file.
    public func integrityCheck() throws -> String {
        try database.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "" }
    }
}

extension [StateStore] {
    /// Failed items by failure kind over every store, with the oldest failure still standing in each.
    package func failureKinds() throws -> [FailureKindRecord] {
        var kinds: [String: FailureKindRecord] = [:]
        for kind in try flatMap({ try $0.failureKinds() }) {
            kinds[kind.kind] = kinds[kind.kind].map { FailureKindRecord(kind: kind.kind, count: $0.count + kind.count, since: Swift.min($0.since, kind.since)) } ?? kind
        }
        return kinds.values.sorted { bytewise($0.kind, $1.kind) }
    }

    /// Failed items, of one `kind` or all, in source and output order (the first `limit`; -1: all).
    package func forEachFailedItem(kind: String? = nil, limit: Int = -1, _ body: (FailedItemRecord) throws -> Void) throws {
        try forEachMerged(limit: limit, { db in
            try Row.fetchCursor(db, sql: """
                SELECT key, source_key, output_name, error_kind, error_message, attempts, COALESCE(failed_since, updated_at) AS since
                FROM item WHERE state = \(ItemState.failed.sql) AND (?1 IS NULL OR COALESCE(error_kind, 'unknown') = ?1)
                ORDER BY source_key, output_name LIMIT ?2
                """, arguments: [kind, limit])
        }, as: { row in
            FailedItemRecord(key: row[ItemTable.key], source: row[ItemTable.sourceKey], output: row[ItemTable.outputName],
                             kind: row[ItemTable.errorKind] ?? "unknown", message: row[ItemTable.errorMessage] ?? "",
                             attempts: row[ItemTable.attempts], since: Date(timeIntervalSince1970: row["since"]))
        }, precedes: { bytewise(($0.source, $0.output), ($1.source, $1.output)) }, body)
    }

    /// Done items that rendered with a warning, in source and output order (the first `limit`; -1: all).
    package func forEachWarnedItem(limit: Int = -1, _ body: (WarnedItemRecord) throws -> Void) throws {
        try forEachMerged(limit: limit, { db in
            try Row.fetchCursor(db, sql: """
                SELECT key, source_key, output_name, warning FROM item
                WHERE state = \(ItemState.done.sql) AND warning IS NOT NULL ORDER BY source_key, output_name LIMIT ?
                """, arguments: [limit])
        }, as: { row in
            WarnedItemRecord(key: row[ItemTable.key], source: row[ItemTable.sourceKey], output: row[ItemTable.outputName],
                             warning: row[ItemTable.warning])
        }, precedes: { bytewise(($0.source, $0.output), ($1.source, $1.output)) }, body)
    }

    /// The failed-URL blacklist in URL order (the first `limit`; -1: all).
    package func forEachBlockedURL(limit: Int = -1, _ body: (BlacklistEntry) throws -> Void) throws {
        try forEachMerged(limit: limit, { try Row.fetchCursor($0, sql: "SELECT * FROM blacklist ORDER BY url LIMIT ?", arguments: [limit]) },
                          as: BlacklistEntry.init(row:), precedes: { bytewise($0.url, $1.url) }, body)
    }

    package func blockedURLCount() throws -> Int { try counted("SELECT COUNT(*) FROM blacklist") }

    /// Items with an output or a failure to show in a contact sheet.
    package func sheetItemCount() throws -> Int {
        try counted("SELECT COUNT(*) FROM item WHERE state IN (\(ItemState.done.sql), \(ItemState.failed.sql))")
    }

    /// Streams a contact sheet's items, failed first, then newest first: every `stride`th of them,
    /// at most `limit`. Each store's SQLite sorts rowids only (1,000,000 items: about a second), the
    /// orders are merged here, and only the rows sampled are read whole.
    package func forEachSheetItem(stride: Int, limit: Int, _ body: (SheetItemRecord) throws -> Void) throws {
        try reading { dbs in
            var merge = try OrderedMerge(dbs.map(sheetOrder)) { $0.failed != $1.failed ? $0.failed : $0.at > $1.at }
            var position = 0, given = 0
            while given < limit, let (order, store) = try merge.next() {
                defer { position += 1 }
                guard position % stride == 0, let row = try Row.fetchOne(dbs[store].cachedStatement(sql: """
                    SELECT key, source_key, output_name, output_path, error_kind, error_message, updated_at FROM item WHERE rowid = ?
                    """), arguments: [order.rowid]) else { continue }
                try body(SheetItemRecord(key: row[ItemTable.key], source: row[ItemTable.sourceKey], output: row[ItemTable.outputName],
                                         outputPath: row[ItemTable.outputPath],
                                         failureKind: order.failed ? row[ItemTable.errorKind] ?? "unknown" : nil,
                                         failureMessage: row[ItemTable.errorMessage] ?? "",
                                         at: Date(timeIntervalSince1970: row[ItemTable.updatedAt])))
                given += 1
            }
        }
    }

    /// One store's done and failed items in the sheet's order.
    private func sheetOrder(_ db: Database) throws -> () throws -> (failed: Bool, at: Double, rowid: Int64)? {
        let rows = try Row.fetchCursor(db, sql: """
            SELECT rowid, state = \(ItemState.failed.sql), updated_at FROM item WHERE state IN (\(ItemState.done.sql), \(ItemState.failed.sql))
            ORDER BY 2 DESC, 3 DESC, 1 DESC
            """)
        return { try rows.next().map { ($0[1], $0[2], $0[0]) } }
    }
}

/// An item's row, as much of it as tells whether the job still plans it.
package struct RecordedItem: Sendable {
    package let key: String
    package let outputPath: String
    /// `done` only once its output was written and published at `outputPath`.
    package let state: ItemState
}

public struct RunRecord: Sendable, Codable {
    public let id: Int64
    public let startedAt: Date
    public let endedAt: Date?
    public let pid: Int
    public let runnerVersion: String
    public let vipsVersion: String
    public let planned: Int
    public let upToDate: Int
    /// URL items kept up to date from a cached original that could not be revalidated.
    public let notRevalidated: Int
    public let done: Int
    public let failed: Int
    public let blocked: Int
    public internal(set) var outcome: RunOutcome
    public let exitCode: Int?
}

public struct WarnedItemRecord: Sendable, Codable {
    public let key: String
    public let source: String
    public let output: String
    public let warning: String
}

public struct FailedItemRecord: Sendable, Codable {
    public let key: String
    public let source: String
    public let output: String
    public let kind: String
    public let message: String
    /// Runs that tried it (a blacklisted URL's later runs do not).
    public let attempts: Int
    /// When it first failed, of the failures standing now.
    public let since: Date
}
