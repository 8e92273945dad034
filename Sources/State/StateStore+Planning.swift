import Foundation
import GRDB
import GRDBSQLite
import Model
import Planning

private typealias Item = ItemRecord.Columns
private typealias Run = RunRecord.Columns

extension StateStore {
    // MARK: Planning

    /// The state database seen by a planning pass: point lookups inside one transaction, so a
    /// plan of any size reads only the rows of its own items.
    package struct PlanningPass: PlanningLookup {
        let db: Database
        let runID: Int64?

        /// Other state databases of the same job (other shard counts), read only on a miss here:
        /// work done under another `--shard K/N` layout is not done again.
        let others: [Connection]
        /// This run's `Classifier.limitsDigest`, for taking over failures recorded elsewhere.
        var limits: String? = nil

        package func recorded(_ itemKey: String) throws -> LedgerEntry? {
            try Self.recorded(itemKey, in: db) ?? takeOver { db in
                guard let entry = try Self.recorded(itemKey, in: db) else { return nil }
                // A failure only while it stands under this run's limits; the row as this run's.
                guard entry.failureKind == nil || entry.failedUnder == limits,
                      let row = try Row.fetchOne(db, sql: Self.itemSQL, arguments: [itemKey]) else { return (entry, []) }
                var columns = Dictionary(row.map { ($0, $1) }, uniquingKeysWith: { first, _ in first })
                columns[Item.runID.name] = runID?.databaseValue ?? .null
                return (entry, [(ItemRecord.databaseTableName, Row(columns))])
            }
        }

        /// A lookup that missed here, made in the other layouts' databases: `find` gives what it
        /// found in the first that has it, with its rows there (table and row). A run takes them
        /// over, copied whole unless their key is here (every column this database has, none
        /// dropped silently when a migration adds one), so this database alone answers for them
        /// from now on (status, failed, metrics) and a new shard count redoes no known work.
        func takeOver<Found>(_ find: (Database) throws -> (Found, [(table: String, row: Row)])?) throws -> Found? {
            for other in others {
                guard let (found, rows) = try other.read(find) else { continue }
                if runID != nil {
                    for (table, row) in rows {
                        let columns = row.columnNames.filter(Set(try db.columns(in: table).map(\.name)).contains)
                        try db.execute(sql: """
                            INSERT OR IGNORE INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(databaseQuestionMarks(count: columns.count)))
                            """, arguments: StatementArguments(columns.map { row[$0] as DatabaseValue }))
                    }
                }
                return found
            }
            return nil
        }

        private static let itemSQL = "SELECT * FROM item WHERE \(Item.key) = ?"
        private static let recordedSQL = """
            SELECT item.\(Item.fingerprint), item.\(Item.outputPath), item.\(Item.state), item.\(Item.errorKind), run.\(Run.limits),
                   item.\(Item.quality), item.\(Item.qualityScore), item.\(Item.qualityTarget), item.\(Item.qualityEncodes),
                   item.\(Item.qualityCapped), item.\(Item.qualityUnscorable), item.\(Item.qualityDefaultBytes)
            FROM item LEFT JOIN run ON run.\(Run.id) = item.\(Item.runID)
            WHERE item.\(Item.key) = ?
            """

        private static func recorded(_ itemKey: String, in db: Database) throws -> LedgerEntry? {
            let statement = try db.cachedStatement(sql: recordedSQL)
            // One lookup per planned item: stepped through SQLite's own API, since GRDB's row cursor
            // (arguments array, cursor and row objects) was most of a 100,000-item rerun's lookup time.
            let raw = statement.sqliteStatement
            return try itemKey.withCString { key in
                // Cleared as well as reset: the binding points into `key`, which ends with this closure.
                defer { sqlite3_reset(raw); sqlite3_clear_bindings(raw) }
                var code = sqlite3_bind_text(raw, 1, key, -1, nil)  // nil: SQLITE_STATIC, no copy
                if code == SQLITE_OK { code = sqlite3_step(raw) }
                switch code {
                case SQLITE_DONE: return nil
                case SQLITE_ROW: break
                default: throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: statement.sql)
                }
                // fingerprint, output_path and state are NOT NULL, and a failed item has a kind; run.limits may be NULL.
                let fingerprint = String(sqliteStatement: raw, index: 0), outputPath = String(sqliteStatement: raw, index: 1)
                switch String(sqliteStatement: raw, index: 2) {
                case ItemState.done.rawValue:
                    return LedgerEntry(fingerprint: fingerprint, outputPath: outputPath, quality: qualityOutcome(raw))
                case ItemState.skipped.rawValue: return LedgerEntry(fingerprint: fingerprint, outputPath: outputPath, skipped: true)
                case ItemState.failed.rawValue: break
                // Not in SQL: an IN list of three constants costs SQLite an ephemeral index per lookup (a 100,000-item rerun +13% CPU).
                default: return nil
                }
                let kind: ItemFailure.Kind = try DatabaseValue(sqliteStatement: raw, index: 3).stored(Item.errorKind, of: ItemRecord.self)
                // A collision is looked up only to tell a standing one from a new one (`Planner.forEachSource`).
                guard kind.canBeFinal || kind == .collision else { return nil }
                return LedgerEntry(fingerprint: fingerprint, outputPath: outputPath, failureKind: kind,
                                   failedUnder: String.fromDatabaseValue(DatabaseValue(sqliteStatement: raw, index: 4)))
            }
        }

        /// The v16 columns (5 on) of the row `raw` is on.
        private static func qualityOutcome(_ raw: OpaquePointer) -> QualityOutcome? {
            guard sqlite3_column_type(raw, 5) != SQLITE_NULL, sqlite3_column_type(raw, 7) != SQLITE_NULL else { return nil }
            let text = { (index: Int32) in sqlite3_column_type(raw, index) == SQLITE_NULL ? nil : String(sqliteStatement: raw, index: index) }
            return QualityOutcome(quality: Int(sqlite3_column_int64(raw, 5)),
                                  score: sqlite3_column_type(raw, 6) == SQLITE_NULL ? nil : sqlite3_column_double(raw, 6),
                                  target: sqlite3_column_double(raw, 7), encodes: Int(sqlite3_column_int64(raw, 8)),
                                  capped: sqlite3_column_int64(raw, 9) != 0, unscorable: text(10),
                                  defaultBytes: sqlite3_column_type(raw, 11) == SQLITE_NULL ? nil : Int(sqlite3_column_int64(raw, 11)))
        }

        package func original(_ sourceKey: String) throws -> CachedOriginal? { try lookUp(Self.originalSQL, sourceKey) }

        /// The URL's blacklist entry here, else in another layout's database (taken over, as items
        /// are, so a new shard count does not ask for a known 404 again).
        package func blacklistEntry(_ url: String) throws -> BlacklistEntry? { try lookUp(Self.blacklistSQL, url) }

        /// The row `sql` finds by `key` here (a cached statement: one lookup per planned source),
        /// else the one it finds in another layout's database, taken over.
        private func lookUp<Record: FetchableRecord & TableRecord>(_ sql: String, _ key: String) throws -> Record? {
            try Record.fetchOne(db.cachedStatement(sql: sql), arguments: [key]) ?? takeOver { db in
                try Row.fetchOne(db, sql: sql, arguments: [key]).map { (try Record(row: $0), [(Record.databaseTableName, $0)]) }
            }
        }

        private static let originalSQL = "SELECT * FROM original WHERE \(CachedOriginal.Columns.sourceKey) = ?"
        private static let blacklistSQL = "SELECT * FROM blacklist WHERE \(BlacklistEntry.Columns.url) = ?"
        private static let plannedSQL = """
            INSERT INTO item (\(Item.key), \(Item.sourceKey), \(Item.outputName), \(Item.state), \(Item.fingerprint), \(Item.outputPath),
                              \(Item.runID), \(Item.updatedAt))
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(\(Item.key)) DO UPDATE SET
                \(Item.state) = \(ItemState.blocked.sql), \(Item.runID) = excluded.\(Item.runID), \(Item.updatedAt) = excluded.\(Item.updatedAt)
            WHERE excluded.\(Item.state) = \(ItemState.blocked.sql)
            """

        /// Records the run's items of `source` that are not up to date as pending or blocked.
        package func recordPlanned(_ source: PlannedSource) throws {
            guard let runID else { return }
            let statement = try db.cachedStatement(sql: Self.plannedSQL)
            let now = Date().timeIntervalSince1970
            // New items are recorded pending. A recorded item keeps its row (done, failed, and why)
            // until a worker starts on it, so a run stopped early (even a --force one) leaves the
            // record as it was; only a blocked URL is recorded at once.
            for item in source.items where item.status != .upToDate && item.status != .knownFailure {
                let state: ItemState = item.status == .blocked ? .blocked : .pending
                try statement.execute(arguments: [item.key, source.key, item.outputName, state,
                                                  item.fingerprint, item.outputPath, runID, now])
            }
        }
    }

    /// Plans without running: `body` gets read-only lookups.
    package func plan<T>(_ body: (PlanningPass) throws -> T) throws -> T {
        try database.read { db in try body(PlanningPass(db: db, runID: nil, others: others)) }
    }
}
