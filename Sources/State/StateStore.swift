import Foundation
import GRDB
import GRDBSQLite
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import Imaging
import Manifest
import Planning

/// The job's state database: runs, items and (later) the failed-URL blacklist.
///
/// One type owns the connection (GRDB's `AppDatabase` pattern): WAL journal, a private migrator
/// whose migrations are named and never edited once shipped, and methods that keep the invariants.
public final class StateStore: Sendable {
    private let database: DatabaseQueue
    /// The job's other state databases (`JobStateLayout.otherLayouts`), opened read-only for planning.
    private let others: [DatabaseQueue]

    /// Opens (creating and migrating) the database at `path`; `readingAlso` names other state
    /// databases of the same job whose records planning falls back on.
    public init(path: String, readingAlso otherPaths: [String] = []) throws {
        try FileManager.default.createDirectory(atPath: Paths.directory(of: path), withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // NORMAL in WAL mode: a commit survives a process crash; only a power loss can undo the last ones.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        // A file that is not a database, or a damaged one, is an error naming it: never replaced.
        database = try StateDatabaseError.naming(path) {
            let database = try DatabaseQueue(path: path, configuration: configuration)
            try database.writeWithoutTransaction { db in
                _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            }
            try Self.migrator.migrate(database)
            return database
        }
        var info = stat()
        fileID = stat(path, &info) == 0 ? FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) : nil
        self.path = path
        ownerless = !RunLock.isHeld(statePath: path)
        var readOnly = Configuration()
        readOnly.readonly = true
        readOnly.busyMode = .timeout(5)
        // A database another process is creating right now has no tables yet: nothing to find there.
        others = try otherPaths.map { try DatabaseQueue(path: $0, configuration: readOnly) }.filter { other in
            try other.read { try $0.tableExists("item") && $0.columns(in: "run").contains { $0.name == "limits" } }
        }
    }

    private init(database: DatabaseQueue) throws {
        self.database = database
        try Self.migrator.migrate(database)
        others = []
        path = ""
        fileID = nil
        ownerless = false
    }

    /// Closes the connections now rather than with the last reference: SQLite checkpoints the WAL
    /// and removes its `-wal` and `-shm` files only on a clean close, and a run's threads still
    /// winding down could hold the store past the process's exit (a later run by another user then
    /// found root's `-shm` and could not write). Everything was committed before; a failure to close
    /// loses nothing, so it is not an error.
    package func close() {
        try? database.close()
        for other in others { try? other.close() }
    }

    /// No process held the job's run lock when the store was opened (a reader's view; a run holds
    /// it): a run still recorded `running` was killed, and reads show it as the next run will
    /// record it, interrupted, with its items still `running` pending again.
    private let ownerless: Bool

    /// Where the database was opened, and which file that was.
    private let path: String
    private let fileID: FileID?

    private struct FileID: Equatable {
        let device: UInt64
        let inode: UInt64
    }

    /// SQLite's `PRAGMA quick_check`: every page is read and its structure checked (about a second
    /// per 250 MB). Whoever is about to write (a run, `prune --delete`) calls it first, so a damaged
    /// database is never written further, nor read as if it held fewer records than it does.
    package func checkIntact() throws {
        let problems = try StateDatabaseError.naming(path) {
            try database.read { try String.fetchAll($0, sql: "PRAGMA quick_check(3)") }
        }
        guard problems == ["ok"] else {
            throw StateDatabaseError(path: path, kind: .damaged, reason: problems.joined(separator: "; "))
        }
    }

    /// Throws `StateDatabaseError` (`moved`) when the database's path no longer names the file this
    /// store has open: it was deleted or replaced, so whatever is recorded now would be lost.
    package func checkStillInPlace() throws {
        guard let fileID else { return }
        var info = stat()
        guard stat(path, &info) == 0, FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) == fileID else {
            throw StateDatabaseError(path: path, kind: .moved, reason: "")
        }
    }

    /// One in-memory database holding the items, runs and blacklist of several state databases of
    /// the same job (its shards), for reports that read a job as one. Run ids are kept apart by
    /// shifting each database's ids by a billion.
    package static func merged(_ paths: [String]) throws -> StateStore {
        let store = try StateStore(database: try DatabaseQueue())
        try store.database.writeWithoutTransaction { db in
            for (index, path) in paths.enumerated() {
                let shift = Int64(index) * 1_000_000_000
                try db.execute(sql: "ATTACH DATABASE ? AS part", arguments: [path])
                try db.inTransaction {
                    let runColumns = try db.columns(in: "run").map(\.name).filter { $0 != "id" }.joined(separator: ", ")
                    try db.execute(sql: "INSERT INTO run (id, \(runColumns)) SELECT id + ?, \(runColumns) FROM part.run", arguments: [shift])
                    let itemColumns = try db.columns(in: "item").map(\.name).filter { $0 != "run_id" }.joined(separator: ", ")
                    try db.execute(sql: "INSERT OR IGNORE INTO item (run_id, \(itemColumns)) SELECT run_id + ?, \(itemColumns) FROM part.item",
                                   arguments: [shift])
                    try db.execute(sql: "INSERT OR IGNORE INTO blacklist SELECT * FROM part.blacklist")
                    try db.execute(sql: "INSERT OR IGNORE INTO original SELECT * FROM part.original")
                    if !RunLock.isHeld(statePath: path) {
                        try db.execute(sql: """
                            UPDATE run SET outcome = \(RunOutcome.interrupted.sql) WHERE outcome = \(RunOutcome.running.sql) AND id > ?;
                            UPDATE item SET state = \(ItemState.pending.sql) WHERE state = \(ItemState.running.sql) AND run_id > ?
                            """, arguments: [shift, shift])
                    }
                    return .commit
                }
                try db.execute(sql: "DETACH DATABASE part")
            }
        }
        return store
    }

    /// The job's database if a run has created it; nil otherwise, and nothing is created.
    public static func existing(at path: String, readingAlso otherPaths: [String] = []) throws -> StateStore? {
        FileManager.default.fileExists(atPath: path) ? try StateStore(path: path, readingAlso: otherPaths) : nil
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        // Frozen: shipped migrations are never edited; add new ones below.
        migrator.registerMigration("v1: runs and items") { db in
            try db.execute(sql: """
                CREATE TABLE run (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    started_at REAL NOT NULL,
                    ended_at REAL,
                    pid INTEGER NOT NULL,
                    runner_version TEXT NOT NULL,
                    vips_version TEXT NOT NULL,
                    planned INTEGER NOT NULL DEFAULT 0,
                    up_to_date INTEGER NOT NULL DEFAULT 0,
                    done INTEGER NOT NULL DEFAULT 0,
                    failed INTEGER NOT NULL DEFAULT 0,
                    blocked INTEGER NOT NULL DEFAULT 0,
                    outcome TEXT NOT NULL DEFAULT 'running',
                    exit_code INTEGER
                );
                CREATE TABLE item (
                    key TEXT PRIMARY KEY NOT NULL,
                    source_key TEXT NOT NULL,
                    output_name TEXT NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    fingerprint TEXT NOT NULL,
                    output_path TEXT NOT NULL,
                    error_kind TEXT,
                    error_message TEXT,
                    duration REAL,
                    run_id INTEGER,
                    updated_at REAL NOT NULL
                );
                CREATE INDEX item_state ON item(state);
                """)
        }
        migrator.registerMigration("v2: blacklist and originals") { db in
            try db.execute(sql: """
                CREATE TABLE blacklist (
                    url TEXT PRIMARY KEY NOT NULL,
                    kind TEXT NOT NULL,
                    http_status INTEGER,
                    message TEXT NOT NULL,
                    first_seen REAL NOT NULL,
                    last_seen REAL NOT NULL,
                    count INTEGER NOT NULL DEFAULT 1
                );
                CREATE TABLE original (
                    source_key TEXT PRIMARY KEY NOT NULL,
                    url TEXT NOT NULL,
                    file TEXT NOT NULL,
                    etag TEXT,
                    last_modified TEXT,
                    content_hash TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    fetched_at REAL NOT NULL,
                    validated_at REAL NOT NULL,
                    used_at REAL NOT NULL
                );
                CREATE INDEX original_used_at ON original(used_at);
                """)
        }
        migrator.registerMigration("v3: item warnings") { db in
            // What a done item should say though it rendered (an ignored ICC profile); NULL when nothing.
            try db.execute(sql: "ALTER TABLE item ADD COLUMN warning TEXT")
        }
        migrator.registerMigration("v4: run limits") { db in
            // The limits a run decoded under (`Planner.limitsDigest`): a failure its content decided
            // stands only while they are the same.
            try db.execute(sql: "ALTER TABLE run ADD COLUMN limits TEXT")
        }
        migrator.registerMigration("v5: originals not revalidated") { db in
            // Why revalidating a cached original last failed, and since when (it served stale
            // meanwhile); NULL once a revalidation succeeds (a saved original replaces the row).
            try db.execute(sql: """
                ALTER TABLE original ADD COLUMN revalidation_error TEXT;
                ALTER TABLE original ADD COLUMN revalidation_failed_since REAL;
                """)
        }
        migrator.registerMigration("v6: item failed since") { db in
            // When an item that is failed now first failed (kept while it fails again); NULL unless failed.
            try db.execute(sql: "ALTER TABLE item ADD COLUMN failed_since REAL")
        }
        return migrator
    }

    // MARK: Planning

    /// The state database seen by a planning pass: point lookups inside one transaction, so a
    /// plan of any size reads only the rows of its own items.
    package struct PlanningPass: PlanningLookup {
        fileprivate let db: Database
        fileprivate let runID: Int64?

        /// Other state databases of the same job (other shard counts), read only on a miss here:
        /// work done under another `--shard K/N` layout is not done again.
        fileprivate let others: [DatabaseQueue]
        /// This run's `Planner.limitsDigest`, for taking over failures recorded elsewhere.
        fileprivate var limits: String? = nil

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
                    try db.execute(sql: """
                        INSERT OR IGNORE INTO item (key, source_key, output_name, state, attempts, fingerprint, output_path,
                            error_kind, error_message, warning, duration, run_id, updated_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, arguments: [row["key"], row["source_key"], row["output_name"], row["state"], row["attempts"],
                                         row["fingerprint"], row["output_path"], row["error_kind"], row["error_message"],
                                         row["warning"], row["duration"], runID, row["updated_at"]])
                }
                return entry
            }
            return nil
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
                guard let kind = Self.nullableText(raw, 3).flatMap(ItemFailure.Kind.init(rawValue:)), kind.isDecidedByContent else { return nil }
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
            return try Row.fetchOne(statement, arguments: [sourceKey]).map(CachedOriginal.init)
        }

        package func blacklistEntry(_ url: String) throws -> BlacklistEntry? {
            let statement = try db.cachedStatement(sql: "SELECT * FROM blacklist WHERE url = ?")
            return try Row.fetchOne(statement, arguments: [url]).map(BlacklistEntry.init)
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

    // MARK: Runs

    /// Starts a run: `body` plans it with lookups and `recordPlanned`, all in one transaction, so
    /// a job-file error found halfway leaves no trace. Returns the run's id and what `body` returned.
    package func beginRun(vipsVersion: String, limitsDigest: String,
                  _ body: (PlanningPass) throws -> PlanCounts) throws -> (Int64, PlanCounts) {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO run (started_at, pid, runner_version, vips_version, limits, planned, up_to_date, blocked)
                VALUES (?, ?, ?, ?, ?, 0, 0, 0)
                """, arguments: [Date().timeIntervalSince1970, Int(getpid()), RunnerVersion.string, vipsVersion, limitsDigest])
            let runID = db.lastInsertedRowID
            let counts = try body(PlanningPass(db: db, runID: runID, others: others, limits: limitsDigest))
            try db.execute(sql: "UPDATE run SET planned = ?, up_to_date = ?, blocked = ? WHERE id = ?",
                           arguments: [counts.pending, counts.upToDate, counts.blocked, runID])
            return (runID, counts)
        }
    }

    /// Closes the runs a killed process left `running`; only call it holding the job's `RunLock`,
    /// which proves that no run is alive. Each becomes `interrupted`, ended at its last commit (its
    /// items' latest update, else its start), with the done and failed items it recorded; its
    /// items still `running` become `pending`.
    package func closeAbandonedRuns() throws {
        try database.write { db in
            try db.execute(sql: """
                UPDATE run SET outcome = \(RunOutcome.interrupted.sql), ended_at = COALESCE(last.at, run.started_at),
                    done = last.done, failed = last.failed
                FROM (SELECT dead.id, MAX(item.updated_at) AS at, COUNT(CASE item.state WHEN \(ItemState.done.sql) THEN 1 END) AS done,
                             COUNT(CASE item.state WHEN \(ItemState.failed.sql) THEN 1 END) AS failed
                      FROM run AS dead LEFT JOIN item ON item.run_id = dead.id
                      WHERE dead.outcome = \(RunOutcome.running.sql) GROUP BY dead.id) AS last
                WHERE run.id = last.id;
                UPDATE item SET state = \(ItemState.pending.sql) WHERE state = \(ItemState.running.sql);
                """)
        }
    }

    package func finishRun(_ runID: Int64, summary: RunSummary) throws {
        try database.write { db in
            try db.execute(sql: """
                UPDATE run SET ended_at = ?, done = ?, failed = ?, up_to_date = ?, blocked = ?, outcome = ?, exit_code = ?
                WHERE id = ?
                """, arguments: [Date().timeIntervalSince1970, summary.done, summary.failed, summary.upToDate, summary.blocked,
                                 summary.outcome, summary.exitCode, runID])
            // Items abandoned in flight (a second signal killed their workers) run again next time.
            try db.execute(sql: "UPDATE item SET state = \(ItemState.pending.sql) WHERE state = \(ItemState.running.sql)")
        }
    }

    // MARK: Recording

    /// Applies a batch of item events in one transaction.
    package func record(_ events: [ItemEvent], runID: Int64) throws {
        guard !events.isEmpty else { return }
        try database.write { db in
            let now = Date().timeIntervalSince1970
            let started = try db.cachedStatement(sql: """
                UPDATE item SET state = \(ItemState.running.sql), attempts = CASE WHEN fingerprint = ?1 THEN attempts + 1 ELSE 1 END,
                    fingerprint = ?1, run_id = ?2, updated_at = ?3
                WHERE key = ?4
                """)
            let unchanged = try db.cachedStatement(sql: """
                UPDATE item SET state = \(ItemState.done.sql), fingerprint = ?, output_path = ?, error_kind = NULL, error_message = NULL,
                    run_id = ?, updated_at = ?
                WHERE key = ?
                """)
            // A failure no worker started (a download, a vanished file) is a try too; `started` counted the others.
            let finished = try db.cachedStatement(sql: """
                UPDATE item SET attempts = attempts + (state <> \(ItemState.running.sql) AND ?1 = \(ItemState.failed.sql)),
                    failed_since = CASE WHEN ?1 = \(ItemState.failed.sql) THEN COALESCE(failed_since, ?8) END,
                    state = ?1, output_path = ?2, error_kind = ?3, error_message = ?4, warning = ?5, duration = ?6,
                    run_id = ?7, updated_at = ?8
                WHERE key = ?9
                """)
            for event in events {
                switch event {
                case .started(let key, let fingerprint):
                    try started.execute(arguments: [fingerprint, runID, now, key])
                case .unchanged(let key, let outputPath, let fingerprint), .notRevalidated(let key, let outputPath, let fingerprint):
                    try unchanged.execute(arguments: [fingerprint, outputPath, runID, now, key])
                case .stillFailed:
                    break  // the recorded failure stands as it is
                case .blacklisted(let url, let kind, let httpStatus, let message):
                    try db.execute(sql: """
                        INSERT INTO blacklist (url, kind, http_status, message, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT(url) DO UPDATE SET kind = excluded.kind, http_status = excluded.http_status,
                            message = excluded.message, last_seen = excluded.last_seen, count = count + 1
                        """, arguments: [url, kind, httpStatus, message, now, now])
                case .unblocked(let url):
                    try db.execute(sql: "DELETE FROM blacklist WHERE url = ?", arguments: [url])
                case .finished(let key, let outputPath, let outcome):
                    let failure = outcome.failure
                    try finished.execute(arguments: [outcome.state.rawValue, outputPath, failure?.kind.rawValue,
                                                     failure?.message ?? outcome.blockedReason, outcome.warning, outcome.seconds,
                                                     runID, now, key])
                }
            }
        }
    }

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

    // MARK: Blacklist (SDWebImage's failedURLs, persistent)

    // URLs go on the blacklist through `record` (`ItemEvent.blacklisted`), with their items.

    /// Removes URLs from the blacklist (all of them when `urls` is nil); returns those removed.
    @discardableResult
    public func unblock(_ urls: [String]?) throws -> Set<String> {
        try database.write { db in
            guard let urls else { return Set(try String.fetchAll(db, sql: "DELETE FROM blacklist RETURNING url")) }
            let statement = try db.makeStatement(sql: "DELETE FROM blacklist WHERE url = ? RETURNING url")
            return Set(try urls.compactMap { try String.fetchOne(statement, arguments: [RemoteURL($0)?.normalized ?? $0]) })
        }
    }

    /// The blacklist by URL (the first `limit`; -1: all).
    public func blockedURLs(limit: Int = -1) throws -> [BlacklistEntry] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM blacklist ORDER BY url LIMIT ?", arguments: [limit]).map(BlacklistEntry.init)
        }
    }

    public func blockedURLCount() throws -> Int {
        try database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM blacklist") ?? 0 }
    }

    // MARK: Originals (downloaded sources)

    /// The least recently used originals to drop so the rest total at most `limit` bytes.
    package func originalsBeyond(_ limit: Int) throws -> [CachedOriginal] {
        try database.read { db in
            var total = try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(size), 0) FROM original") ?? 0
            var dropped: [CachedOriginal] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM original ORDER BY used_at")
            while total > limit, let row = try rows.next() {
                let oldest = CachedOriginal(row)
                dropped.append(oldest)
                total -= oldest.size
            }
            return dropped
        }
    }

    package func saveOriginal(_ original: CachedOriginal) throws {
        try database.write { db in try Self.insertOriginal(original, into: db, replacing: true) }
    }

    fileprivate static func insertOriginal(_ original: CachedOriginal, into db: Database, replacing: Bool) throws {
        try db.execute(sql: """
            INSERT OR \(replacing ? "REPLACE" : "IGNORE") INTO original
                (source_key, url, file, etag, last_modified, content_hash, size, fetched_at, validated_at, used_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [original.sourceKey, original.url, original.file, original.etag, original.lastModified,
                             original.contentHash, original.size, original.fetchedAt, original.validatedAt,
                             original.usedAt])
    }

    /// Marks originals used now (the cache trims least recently used first).
    package func touchOriginals(_ sourceKeys: [String]) throws {
        guard !sourceKeys.isEmpty else { return }
        try database.write { db in
            let statement = try db.makeStatement(sql: "UPDATE original SET used_at = ? WHERE source_key = ?")
            let now = Date().timeIntervalSince1970
            for key in sourceKeys { try statement.execute(arguments: [now, key]) }
        }
    }

    /// Revalidating these cached originals failed transiently and they serve stale: why, and
    /// since the first such failure after their last successful revalidation.
    package func markNotRevalidated(_ sourceKeys: [String], reason: String) throws {
        guard !sourceKeys.isEmpty else { return }
        try database.write { db in
            let statement = try db.makeStatement(sql: """
                UPDATE original SET revalidation_error = ?, revalidation_failed_since = COALESCE(revalidation_failed_since, ?)
                WHERE source_key = ?
                """)
            let now = Date().timeIntervalSince1970
            for key in sourceKeys { try statement.execute(arguments: [reason, now, key]) }
        }
    }

    /// Cached originals serving stale since a revalidation failed, and the oldest such failure.
    public func notRevalidated() throws -> (count: Int, since: Date?) {
        try database.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT COUNT(*), MIN(revalidation_failed_since) FROM original WHERE revalidation_error IS NOT NULL")
            return (row?[0] ?? 0, (row?[1] as Double?).map(Date.init(timeIntervalSince1970:)))
        }
    }

    package func forgetOriginal(_ sourceKey: String) throws {
        try database.write { db in try db.execute(sql: "DELETE FROM original WHERE source_key = ?", arguments: [sourceKey]) }
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
            try Row.fetchAll(db, sql: "SELECT * FROM run ORDER BY id DESC LIMIT ?", arguments: [limit]).map { row in
                RunRecord(id: row["id"], startedAt: Date(timeIntervalSince1970: row["started_at"]),
                          endedAt: (row["ended_at"] as Double?).map { Date(timeIntervalSince1970: $0) },
                          pid: row["pid"], runnerVersion: row["runner_version"], vipsVersion: row["vips_version"],
                          planned: row["planned"], upToDate: row["up_to_date"], done: row["done"],
                          failed: row["failed"], blocked: row["blocked"],
                          outcome: ownerless && row["outcome"] == RunOutcome.running ? .interrupted : row["outcome"],
                          exitCode: row["exit_code"])
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

    /// Done items that rendered with a warning (the first `limit`; -1: all).
    public func warnedItems(limit: Int = -1) throws -> [WarnedItemRecord] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT key, source_key, output_name, warning FROM item
                WHERE state = \(ItemState.done.sql) AND warning IS NOT NULL ORDER BY source_key, output_name LIMIT ?
                """, arguments: [limit]).map { WarnedItemRecord(key: $0["key"], source: $0["source_key"], output: $0["output_name"], warning: $0["warning"]) }
        }
    }

    public func warnedItemCount() throws -> Int {
        try database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM item WHERE state = \(ItemState.done.sql) AND warning IS NOT NULL") ?? 0 }
    }

    /// Failed items, of one `kind` or all (the first `limit`; -1: all).
    public func failedItems(kind: String? = nil, limit: Int = -1) throws -> [FailedItemRecord] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT key, source_key, output_name, error_kind, error_message, attempts, COALESCE(failed_since, updated_at) AS since
                FROM item WHERE state = \(ItemState.failed.sql) AND (?1 IS NULL OR COALESCE(error_kind, 'unknown') = ?1)
                ORDER BY source_key, output_name LIMIT ?2
                """, arguments: [kind, limit]).map { row in
                FailedItemRecord(key: row["key"], source: row["source_key"], output: row["output_name"],
                                 kind: row["error_kind"] ?? "unknown", message: row["error_message"] ?? "",
                                 attempts: row["attempts"], since: Date(timeIntervalSince1970: row["since"]))
            }
        }
    }

    /// Items with an output or a failure to show in a contact sheet.
    package func sheetItemCount() throws -> Int {
        try database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM item WHERE state IN (\(ItemState.done.sql), \(ItemState.failed.sql))") ?? 0 }
    }

    /// Streams a contact sheet's items, failed first, then newest first: every `stride`th of them,
    /// at most `limit`. SQLite sorts rowids only (1,000,000 items: about a second); only the row in
    /// hand is in memory.
    package func forEachSheetItem(stride: Int, limit: Int, _ body: (SheetItemRecord) throws -> Void) throws {
        try database.read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT key, source_key, output_name, state, output_path, error_kind, error_message, updated_at
                FROM (SELECT rowid AS id,
                          ROW_NUMBER() OVER (ORDER BY state = \(ItemState.failed.sql) DESC, updated_at DESC, rowid DESC) - 1 AS position
                      FROM item WHERE state IN (\(ItemState.done.sql), \(ItemState.failed.sql))) AS ranked
                JOIN item ON item.rowid = ranked.id
                WHERE position % ? = 0 ORDER BY position LIMIT ?
                """, arguments: [stride, limit])
            while let row = try rows.next() {
                let failed = row["state"] == ItemState.failed.rawValue
                try body(SheetItemRecord(key: row["key"], source: row["source_key"], output: row["output_name"],
                                         outputPath: row["output_path"],
                                         failureKind: failed ? row["error_kind"] ?? "unknown" : nil,
                                         failureMessage: row["error_message"] ?? "",
                                         at: Date(timeIntervalSince1970: row["updated_at"])))
            }
        }
    }

    /// SQLite's own consistency check (`PRAGMA integrity_check`): "ok" for an intact file.
    public func integrityCheck() throws -> String {
        try database.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "" }
    }
}

extension RunOutcome: DatabaseValueConvertible {}

extension BlacklistEntry {
    init(_ row: Row) {
        self.init(url: row["url"], kind: row["kind"], httpStatus: row["http_status"], message: row["message"],
                  firstSeen: Date(timeIntervalSince1970: row["first_seen"]), lastSeen: Date(timeIntervalSince1970: row["last_seen"]),
                  count: row["count"])
    }
}

extension CachedOriginal {
    init(_ row: Row) {
        self.init(sourceKey: row["source_key"], url: row["url"], file: row["file"], etag: row["etag"],
                  lastModified: row["last_modified"], contentHash: row["content_hash"], size: row["size"],
                  fetchedAt: row["fetched_at"], validatedAt: row["validated_at"], usedAt: row["used_at"])
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
    public let done: Int
    public let failed: Int
    public let blocked: Int
    public let outcome: RunOutcome
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
