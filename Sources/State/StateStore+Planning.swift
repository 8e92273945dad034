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
    // MARK: Planning

    /// The state database seen by a planning pass: point lookups inside one transaction, so a
    /// plan of any size reads only the rows of its own items.
    package struct PlanningPass: PlanningLookup {
        let db: Database
        let runID: Int64?

        /// Other state databases of the same job (other shard counts), read only on a miss here:
        /// work done under another `--shard K/N` layout is not done again.
        let others: [DatabaseQueue]
        /// This run's `Classifier.limitsDigest`, for taking over failures recorded elsewhere.
        var limits: String? = nil

        package func recorded(_ itemKey: String) throws -> LedgerEntry? {
            if let entry = try Self.recorded(itemKey, in: db) { return entry }
            for other in others {
                let found = try other.read { db in
                    try Self.recorded(itemKey, in: db).map { ($0, try Row.fetchOne(db, sql: "SELECT * FROM item WHERE key = ?", arguments: [itemKey])) }
                }
                guard let (entry, row) = found else { continue }
                // A run takes the record over, so this database alone answers for its items from now on
                // (status, failed, metrics); a failure only while it stands under this run's limits.
                if let row, runID != nil, entry.failureKind == nil || entry.failedUnder == limits {
                    try Self.takeOver(row, runID: runID, into: db)
                }
                return entry
            }
            return nil
        }

        /// Copies another layout's item row whole, as this run's.
        private static func takeOver(_ row: Row, runID: Int64?, into db: Database) throws {
            try copy(row, into: "item", in: db) { $0 == "run_id" ? runID?.databaseValue ?? .null : nil }
        }

        /// Inserts another database's `row` into `table` unless its key is there, every column this
        /// database has (none dropped silently when a migration adds one); `replacing` may give a
        /// column a value of its own.
        static func copy(_ row: Row, into table: String, in db: Database,
                                 replacing: (String) -> DatabaseValue? = { _ in nil }) throws {
            let known = Set(try db.columns(in: table).map(\.name))
            let columns = row.columnNames.filter(known.contains)
            var values: [DatabaseValue] = []
            for column in columns {
                let own = replacing(column)
                values.append(own ?? row[column])
            }
            try db.execute(sql: "INSERT OR IGNORE INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))",
                           arguments: StatementArguments(values))
        }

        private static func recorded(_ itemKey: String, in db: Database) throws -> LedgerEntry? {
            let statement = try db.cachedStatement(sql: """
                SELECT item.fingerprint, item.output_path, item.state, item.error_kind, run.limits
                FROM item LEFT JOIN run ON run.id = item.run_id
                WHERE item.key = ? AND item.state IN (\(ItemState.done.sql), \(ItemState.failed.sql))
                """)
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
                // fingerprint, output_path and state are NOT NULL; error_kind and run.limits may be NULL.
                let fingerprint = String(sqliteStatement: raw, index: 0), outputPath = String(sqliteStatement: raw, index: 1)
                if String(sqliteStatement: raw, index: 2) == ItemState.done.rawValue {
                    return LedgerEntry(fingerprint: fingerprint, outputPath: outputPath)
                }
                guard let kind = Self.nullableText(raw, 3).flatMap(ItemFailure.Kind.init(rawValue:)), kind.canBeFinal else { return nil }
                return LedgerEntry(fingerprint: fingerprint, outputPath: outputPath, failureKind: kind, failedUnder: Self.nullableText(raw, 4))
            }
        }

        private static func nullableText(_ statement: SQLiteStatement, _ index: CInt) -> String? {
            sqlite3_column_type(statement, index) == SQLITE_NULL ? nil : String(sqliteStatement: statement, index: index)
        }

        package func original(_ sourceKey: String) throws -> CachedOriginal? {
            if let original = try Self.original(sourceKey, in: db) { return original }
            for other in others {
                guard let original = try other.read({ try Self.original(sourceKey, in: $0) }) else { continue }
                if runID != nil { try StateStore.insertOriginal(original, into: db, replacing: false) }
                return original
            }
            return nil
        }

        private static func original(_ sourceKey: String, in db: Database) throws -> CachedOriginal? {
            let statement = try db.cachedStatement(sql: "SELECT * FROM original WHERE source_key = ?")
            return try CachedOriginal.fetchOne(statement, arguments: [sourceKey])
        }

        /// The URL's blacklist entry here, else in another layout's database (taken over, as items
        /// are, so a new shard count does not ask for a known 404 again).
        package func blacklistEntry(_ url: String) throws -> BlacklistEntry? {
            let statement = try db.cachedStatement(sql: "SELECT * FROM blacklist WHERE url = ?")
            if let entry = try BlacklistEntry.fetchOne(statement, arguments: [url]) { return entry }
            for other in others {
                guard let row = try other.read({ try Row.fetchOne($0, sql: "SELECT * FROM blacklist WHERE url = ?", arguments: [url]) }) else { continue }
                if runID != nil { try Self.copy(row, into: "blacklist", in: db) }
                return BlacklistEntry(row: row)
            }
            return nil
        }

        /// Records the run's items of `source` that are not up to date as pending or blocked.
        package func recordPlanned(_ source: PlannedSource) throws {
            guard let runID else { return }
            let statement = try db.cachedStatement(sql: """
                INSERT INTO item (key, source_key, output_name, state, fingerprint, output_path, run_id, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET
                    state = \(ItemState.blocked.sql), run_id = excluded.run_id, updated_at = excluded.updated_at
                WHERE excluded.state = \(ItemState.blocked.sql)
                """)
            let now = Date().timeIntervalSince1970
            // New items are recorded pending. A recorded item keeps its row (done, failed, and why)
            // until a worker starts on it, so a run stopped early (even a --force one) leaves the
            // record as it was; only a blocked URL is recorded at once.
            for item in source.items where item.status != .upToDate && item.status != .knownFailure {
                let state = (item.status == .blocked ? ItemState.blocked : .pending).rawValue
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
