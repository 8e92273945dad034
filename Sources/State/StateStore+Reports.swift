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

private typealias Item = ItemRecord.Columns
private typealias Run = RunRecord.Columns

extension StateStore {
    // MARK: Pruning

    /// Visits every recorded item, a page at a time so memory stays flat however large the job.
    /// `visit` says whether to drop the item's row; a page's rows are dropped together after its
    /// visits, so whatever a visit removes from disk goes before the row that records it.
    package func sweepItems(_ visit: (ItemRecord) throws -> Bool) throws {
        var after: Int64 = 0
        while true {
            let page = try database.read { db in
                try Row.fetchAll(db, sql: "SELECT rowid, * FROM item WHERE rowid > ? ORDER BY rowid LIMIT 1000", arguments: [after])
                    .map { ($0[0] as Int64, try ItemRecord(row: $0)) }
            }
            guard let last = page.last else { return }
            after = last.0
            let dropped = try page.map(\.1).filter(visit).map(\.key)
            guard !dropped.isEmpty else { continue }
            try database.write { db in try ItemRecord.filter(dropped.contains(Item.key)).deleteAll(db) }
        }
    }

    /// Visits the key of every recorded source (`source` rows), a page at a time in key order;
    /// `visit` says whether to drop the source's row and its derived values, which go together,
    /// a page in one transaction.
    package func sweepSources(_ visit: (String) throws -> Bool) throws {
        var after = ""
        while true {
            let page = try database.read { db in
                try String.fetchAll(db, StoredSource.select(StoredSource.Columns.key).filter(StoredSource.Columns.key > after)
                    .order(StoredSource.Columns.key).limit(1000))
            }
            guard let last = page.last else { return }
            after = last
            let dropped = try page.filter(visit)
            guard !dropped.isEmpty else { continue }
            try database.write { db in
                try StoredSource.filter(dropped.contains(StoredSource.Columns.key)).deleteAll(db)
                try StoredDerivedValue.filter(dropped.contains(StoredDerivedValue.Columns.sourceKey)).deleteAll(db)
            }
        }
    }


    // MARK: Reports

    public func stateCounts() throws -> [ItemState: Int] {
        try database.read { db in
            var counts: [ItemState: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT \(Item.state), COUNT(*) FROM item GROUP BY \(Item.state)") {
                counts[shown(try row.stored(Item.state, of: ItemRecord.self)), default: 0] += row[1]
            }
            return counts
        }
    }

    public func recentRuns(limit: Int) throws -> [RunRecord] {
        try database.read { db in
            try RunRecord.order(Run.id.desc).limit(limit).fetchAll(db).map { run in
                var run = run
                run.outcome = shown(run.outcome)
                return run
            }
        }
    }

    /// Failed items by failure kind, with the oldest failure still standing in each.
    package func failureKinds() throws -> [FailureKindRecord] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT \(Item.errorKind), COUNT(*), MIN(\(Item.updatedAt)) FROM item
                WHERE \(Item.state) = \(ItemState.failed.sql) GROUP BY \(Item.errorKind) ORDER BY \(Item.errorKind)
                """).map {
                FailureKindRecord(kind: try $0.stored(Item.errorKind, of: ItemRecord.self), count: $0[1],
                                  since: Date(timeIntervalSince1970: $0[2]))
            }
        }
    }

    /// When the last run that exited 0 ended.
    package func lastSuccess() throws -> Date? {
        try database.read { db in
            try RunRecord.filter(Run.exitCode == 0).select(max(Run.endedAt), as: Double.self).fetchOne(db)
                .map(Date.init(timeIntervalSince1970:))
        }
    }

    private static let warned = ItemRecord.filter(Item.state == ItemState.done && Item.warning != nil)

    /// Done items that rendered with a warning (the first `limit`; -1: all).
    public func warnedItems(limit: Int = -1) throws -> [WarnedItemRecord] {
        try database.read { db in
            try Self.warned.order(Item.sourceKey, Item.outputName).limit(limit).fetchAll(db).map {
                WarnedItemRecord(key: $0.key, source: $0.sourceKey, output: $0.outputName, warning: $0.warning ?? "")
            }
        }
    }

    public func warnedItemCount() throws -> Int {
        try database.read { try Self.warned.fetchCount($0) }
    }

    /// Failed items, of one `kind` or all (the first `limit`; -1: all).
    public func failedItems(kind: ItemFailure.Kind? = nil, limit: Int = -1) throws -> [FailedItemRecord] {
        try database.read { db in
            var failed = ItemRecord.filter(Item.state == ItemState.failed)
            if let kind { failed = failed.filter(Item.errorKind == kind) }
            return try failed.order(Item.sourceKey, Item.outputName).limit(limit).fetchAll(db).compactMap { item in
                item.failure.map {
                    FailedItemRecord(key: item.key, source: item.sourceKey, output: item.outputName, kind: $0.kind, message: $0.message,
                                     attempts: item.attempts, since: item.failedSince ?? item.updatedAt)
                }
            }
        }
    }

    private static let sheetItems = ItemRecord.filter([ItemState.done, .failed].contains(Item.state))

    /// Items with an output or a failure to show in a contact sheet.
    package func sheetItemCount() throws -> Int {
        try database.read { try Self.sheetItems.fetchCount($0) }
    }

    /// Streams a contact sheet's items (done or failed), failed first, then newest first: every
    /// `stride`th of them, at most `limit`. SQLite sorts rowids only (1,000,000 items: about a
    /// second); only the row in hand is in memory.
    package func forEachSheetItem(stride: Int, limit: Int, _ body: (ItemRecord) throws -> Void) throws {
        try database.read { db in
            let items = try ItemRecord.fetchCursor(db, sql: """
                SELECT item.*
                FROM (SELECT rowid AS id,
                          ROW_NUMBER() OVER (ORDER BY \(Item.state) = \(ItemState.failed.sql) DESC, \(Item.updatedAt) DESC, rowid DESC) - 1
                              AS position
                      FROM item WHERE \(Item.state) IN (\(ItemState.done.sql), \(ItemState.failed.sql))) AS ranked
                JOIN item ON item.rowid = ranked.id
                WHERE position % ? = 0 ORDER BY position LIMIT ?
                """, arguments: [stride, limit])
            while let item = try items.next() { try body(item) }
        }
    }

    /// SQLite's own consistency check (`PRAGMA integrity_check`): "ok" for an intact file.
    public func integrityCheck() throws -> String {
        try database.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "" }
    }
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
    public let kind: ItemFailure.Kind
    public let message: String
    /// Runs that tried it (a blacklisted URL's later runs do not).
    public let attempts: Int
    /// When it first failed, of the failures standing now.
    public let since: Date
}
