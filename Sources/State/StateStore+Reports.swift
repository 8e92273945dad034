import Foundation
import GRDB
import Support
import Model

private typealias Item = ItemRecord.Columns
private typealias Run = RunRecord.Columns

extension StateStore {
    // MARK: Pruning

    /// Visits every recorded item, a page at a time so memory stays flat however large the job.
    /// `visit` says whether to drop the item's row; a page's rows are dropped together after its
    /// visits, so whatever a visit removes from disk goes before the row that records it.
    /// With `retiring`, a dropped row's done file is retired with it (`RetiredOutput`), not lost.
    package func sweepItems(retiring: Bool = false, _ visit: (ItemRecord) throws -> Bool) throws {
        try sweep(after: Int64(0), page: { db, after in
            try Row.fetchAll(db, sql: "SELECT rowid, * FROM item WHERE rowid > ? ORDER BY rowid LIMIT 1000", arguments: [after])
                .map { ($0[0] as Int64, try ItemRecord(row: $0)) }
        }, visit: visit) { db, dropped in
            let now = Date().timeIntervalSince1970
            for item in dropped where retiring && item.state == .done {
                try RetiredOutput(path: item.outputPath, itemKey: item.key, retiredAt: now, publishedAt: nil).insert(db, onConflict: .ignore)
            }
            try ItemRecord.filter(dropped.map(\.key).contains(Item.key)).deleteAll(db)
        }
    }

    /// Visits the key of every recorded source (`source` rows), a page at a time in key order;
    /// `visit` says whether to drop the source's row and its derived values, which go together,
    /// a page in one transaction.
    package func sweepSources(_ visit: (String) throws -> Bool) throws {
        try sweep(after: "", page: { db, after in
            try String.fetchAll(db, StoredSource.select(StoredSource.Columns.key).filter(StoredSource.Columns.key > after)
                .order(StoredSource.Columns.key).limit(1000)).map { ($0, $0) }
        }, visit: visit) { db, dropped in
            try StoredSource.filter(dropped.contains(StoredSource.Columns.key)).deleteAll(db)
            try StoredDerivedValue.filter(dropped.contains(StoredDerivedValue.Columns.sourceKey)).deleteAll(db)
        }
    }

    /// The sweeps' loop: each page of records after `start`, with where the next page starts, is read,
    /// visited, then what `visit` dropped goes through `drop` in one transaction.
    private func sweep<Place, Record>(after start: Place, page: (Database, Place) throws -> [(Place, Record)],
                                      visit: (Record) throws -> Bool, drop: (Database, [Record]) throws -> Void) throws {
        var after = start
        while true {
            let records = try database.read { db in try page(db, after) }
            guard let last = records.last else { return }
            after = last.0
            let dropped = try records.map(\.1).filter(visit)
            if !dropped.isEmpty { try database.write { db in try drop(db, dropped) } }
        }
    }

    // MARK: Reports

    public func stateCounts() throws -> [ItemState: Int] {
        try database.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT \(Item.state), COUNT(*) FROM item GROUP BY \(Item.state)")
            return Dictionary(try rows.map { (shown(try $0.stored(Item.state, of: ItemRecord.self)), $0[1] as Int) }, uniquingKeysWith: +)
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

    static let warned = ItemRecord.filter(Item.state == ItemState.done && Item.warning != nil)

    /// What the quality targets of the done items recorded here did (`QualityTotals`).
    package func qualityTotals() throws -> QualityTotals {
        try database.read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT COUNT(*), TOTAL(CASE WHEN \(Item.qualityDefaultBytes) IS NOT NULL THEN \(Item.bytes) END), TOTAL(\(Item.qualityDefaultBytes)),
                       TOTAL(\(Item.qualityEncodes)), TOTAL(\(Item.qualityCapped)),
                       TOTAL(\(Item.qualityScore) < \(Item.qualityTarget)), TOTAL(\(Item.qualityUnscorable) IS NOT NULL)
                FROM item WHERE \(Item.state) = \(ItemState.done.sql) AND \(Item.qualityTarget) IS NOT NULL
                """)!
            let total = { (index: Int) in Int(row[index] as Double) }
            return QualityTotals(outputs: row[0], bytes: total(1), defaultBytes: total(2), encodes: total(3), capped: total(4),
                                 belowTarget: total(5), unscorable: total(6))
        }
    }

    public func warnedItemCount() throws -> Int {
        try database.read { try Self.warned.fetchCount($0) }
    }

    /// Items with an output or a failure to show in a contact sheet.
    static let sheetItems = ItemRecord.filter([ItemState.done, .failed].contains(Item.state))

    /// SQLite's own consistency check (`PRAGMA integrity_check`): "ok" for an intact file.
    public func integrityCheck() throws -> String {
        try database.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "" }
    }
}

extension [StateStore] {
    /// Failed items by failure kind over every store, with the oldest failure still standing in each.
    package func failureKinds() throws -> [FailureKindRecord] {
        let kinds = Dictionary(try flatMap { try $0.failureKinds() }.map { ($0.kind, $0) }) { first, other in
            FailureKindRecord(kind: first.kind, count: first.count + other.count, since: Swift.min(first.since, other.since))
        }
        return kinds.values.sorted { bytewise($0.kind.rawValue, $1.kind.rawValue) }
    }

    /// Failed items, of one `kind` or all, in source and output order (the first `limit`; -1: all).
    package func forEachFailedItem(kind: ItemFailure.Kind? = nil, limit: Int = -1, _ body: (FailedItemRecord) throws -> Void) throws {
        var failed = ItemRecord.filter(Item.state == ItemState.failed)
        if let kind { failed = failed.filter(Item.errorKind == kind) }
        try forEachMerged(failed.order(Item.sourceKey, Item.outputName), limit: limit, as: { item in
            item.failure.map {
                FailedItemRecord(key: item.key, source: item.sourceKey, output: item.outputName, kind: $0.kind, message: $0.message,
                                 attempts: item.attempts, since: item.failedSince ?? item.updatedAt)
            }
        }, precedes: { bytewise(($0.source, $0.output), ($1.source, $1.output)) }, body)
    }

    /// Done items that rendered with a warning, in source and output order (the first `limit`; -1: all).
    package func forEachWarnedItem(limit: Int = -1, _ body: (WarnedItemRecord) throws -> Void) throws {
        try forEachMerged(StateStore.warned.order(Item.sourceKey, Item.outputName), limit: limit, as: {
            WarnedItemRecord(key: $0.key, source: $0.sourceKey, output: $0.outputName, warning: $0.warning ?? "")
        }, precedes: { bytewise(($0.source, $0.output), ($1.source, $1.output)) }, body)
    }

    /// The failed-URL blacklist in URL order (the first `limit`; -1: all).
    package func forEachBlockedURL(limit: Int = -1, _ body: (BlacklistEntry) throws -> Void) throws {
        try forEachMerged(BlacklistEntry.order(BlacklistEntry.Columns.url), limit: limit, as: { $0 }, precedes: { bytewise($0.url, $1.url) }, body)
    }

    package func blockedURLCount() throws -> Int { try counted(BlacklistEntry.all()) }

    package func sheetItemCount() throws -> Int { try counted(StateStore.sheetItems) }

    /// Streams a contact sheet's items (done or failed), failed first, then newest first: every
    /// `stride`th of them, at most `limit`. Each store's SQLite sorts rowids only (1,000,000 items:
    /// about a second), the orders are merged here, and only the rows sampled are read whole.
    package func forEachSheetItem(stride: Int, limit: Int, _ body: (ItemRecord) throws -> Void) throws {
        try reading { dbs in
            var merge = try OrderedMerge(dbs.map(sheetOrder)) { $0.failed != $1.failed ? $0.failed : $0.at > $1.at }
            var position = 0, given = 0
            while given < limit, let (order, store) = try merge.next() {
                defer { position += 1 }
                guard position % stride == 0, let item = try self[store].database.named({
                    try ItemRecord.filter(Column.rowID == order.rowid).fetchOne(dbs[store])
                }) else { continue }
                try body(item)
                given += 1
            }
        }
    }

    /// One store's done and failed items in the sheet's order.
    private func sheetOrder(_ db: Database) throws -> () throws -> (failed: Bool, at: Double, rowid: Int64)? {
        let failed = Item.state == ItemState.failed
        let rows = try StateStore.sheetItems.select(Column.rowID, failed, Item.updatedAt)
            .order(failed.desc, Item.updatedAt.desc, Column.rowID.desc).asRequest(of: Row.self).fetchCursor(db)
        return { try rows.next().map { ($0[1], $0[2], $0[0]) } }
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
    /// Not made: a narrower output of their block holds their bytes.
    public let skipped: Int
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
