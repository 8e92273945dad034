import Foundation
import GRDB
import GRDBSQLite
import Support
import Model

/// The job's state database. One type owns the connection (GRDB's `AppDatabase` pattern): WAL journal,
/// a private migrator whose migrations are never edited once shipped, methods that keep the invariants.
public final class StateStore: Sendable {
    let database: Connection
    /// The job's other state databases (`JobStateLayout.otherLayouts`), opened read-only for planning.
    let others: [Connection]

    /// GRDB's queue, whose reads and writes name its file in a stored value this runner never
    /// writes (`UnknownStoredValue`, the policy in Tables.swift).
    struct Connection: Sendable {
        let queue: DatabaseQueue

        func read<T>(_ body: (Database) throws -> T) throws -> T { try named { try queue.read(body) } }

        @discardableResult
        func write<T>(_ body: (Database) throws -> T) throws -> T { try named { try queue.write(body) } }

        /// `body`'s work in this database (a cursor's next row too: `[StateStore]`'s merges).
        func named<T>(_ body: () throws -> T) throws -> T {
            do { return try body() } catch let unknown as UnknownStoredValue {
                throw StateDatabaseError(path: queue.path, kind: .unknownValue, reason: unknown.description)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_TOOBIG {
                throw StateDatabaseError.naming(queue.path, error)
            }
        }
    }

    /// Opens (creating and migrating) the database at `path` to write it, for a caller that holds
    /// its `RunLock`; `readingAlso` names other state databases of the same job whose records
    /// planning falls back on. A database a newer runner wrote is refused, never migrated.
    public convenience init(path: String, readingAlso otherPaths: [String] = []) throws {
        try FileManager.default.createDirectory(atPath: Paths.directory(of: path), withIntermediateDirectories: true)
        var configuration = Self.configuration
        configuration.prepareDatabase { db in
            // NORMAL in WAL mode: a commit survives a process crash; only a power loss can undo the last ones.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        // A file that is not a database, or a damaged one, is an error naming it: never replaced.
        let database = try StateDatabaseError.naming(path) {
            let database = try DatabaseQueue(path: path, configuration: configuration)
            try database.writeWithoutTransaction { db in
                _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
                _ = try Self.isMigrated(db, at: path, reading: false)
            }
            try Self.migrator.migrate(database)
            return database
        }
        try self.init(database, path: path, readingAlso: otherPaths)
    }

    /// Opens the database at `path` for the commands that only read: read-only, no migration, no lock.
    /// Nil when there is none, or its run was killed before it recorded anything. Another runner's is
    /// refused (`olderRunner`, `newerRunner`): read as this runner's it could only show wrong figures.
    public static func reading(at path: String, readingAlso otherPaths: [String] = []) throws -> StateStore? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let database = try StateDatabaseError.naming(path) { try openForReading(path) }
        guard try StateDatabaseError.naming(path, { try database.read { try isMigrated($0, at: path, reading: true) } }) else {
            try? database.close()
            return nil
        }
        return try StateStore(database, path: path, readingAlso: otherPaths)
    }

    private init(_ database: DatabaseQueue, path: String, readingAlso otherPaths: [String]) throws {
        self.database = Connection(queue: database)
        inode = FileIdentity(path: path)?.inode
        self.path = path
        ownerless = !RunLock.isHeld(statePath: path)
        // A database another process is creating right now has no tables yet: nothing to find there.
        others = try otherPaths.map { Connection(queue: try Self.openForReading($0)) }.filter { other in
            try other.read { db in
                try db.tableExists(ItemRecord.databaseTableName)
                    && db.columns(in: RunRecord.databaseTableName).contains { $0.name == RunRecord.Columns.limits.name }
            }
        }
    }

    /// A connection that only reads. While a run is writing (or a killed one left its WAL), the
    /// `-wal` and its index exist: a read-only connection reads them, and SQLite rebuilds a killed
    /// run's index in the `-shm`, never writing the database. Without a WAL, a read-only connection
    /// would leave an empty `-wal` and `-shm` behind; a connection that may write, but is told to
    /// run queries only, lets SQLite remove them as it closes, as the last connection always does.
    /// In a folder nobody may write (a read-only mount) neither can be made: all the commits are
    /// in the file then and no one can change it, so it is read as immutable.
    private static func openForReading(_ path: String) throws -> DatabaseQueue {
        var configuration = Self.configuration
        if access(path + "-wal", F_OK) == 0 {
            configuration.readonly = true
            return try DatabaseQueue(path: path, configuration: configuration)
        }
        guard access(Paths.directory(of: path), W_OK) == 0 else {
            configuration.readonly = true
            let uri = "file:" + (path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["?", "#", "%"])) ?? path)
            return try DatabaseQueue(path: uri + "?immutable=1", configuration: configuration)
        }
        configuration.prepareDatabase { try $0.execute(sql: "PRAGMA query_only = ON") }
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// The longest value a connection reads or writes, and row a query sorts: 64 MiB, four times the
    /// job-file limit. What runner writes is kilobytes, so a longer value was put there by hand or by
    /// damage, and is refused before it is read (`unknownValue`).
    package static let longestValue = 64 << 20

    /// Every connection's: a 5 s busy timeout, and `longestValue`.
    private static var configuration: Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { _ = sqlite3_limit($0.sqliteConnection, SQLITE_LIMIT_LENGTH, Int32(longestValue)) }
        return configuration
    }

    /// Whether any migration was committed to `db`, once those applied are found to be this runner's:
    /// one this runner does not know is a newer runner's (refused); one not yet applied, an older
    /// runner's database (refused by readers: a run, or `runner migrate`, upgrades it).
    private static func isMigrated(_ db: Database, at path: String, reading: Bool) throws -> Bool {
        let known = migrator.migrations
        let applied = try migrator.appliedIdentifiers(db)
        if let unknown = applied.filter({ !known.contains($0) }).sorted().last {
            throw StateDatabaseError(path: path, kind: .newerRunner, reason: unknown)
        }
        guard !applied.isEmpty else { return false }
        if reading, let missing = known.first(where: { !applied.contains($0) }) {
            throw StateDatabaseError(path: path, kind: .olderRunner, reason: missing)
        }
        return true
    }

    /// Closes the connections now rather than with the last reference: SQLite removes the `-wal` and
    /// `-shm` only on a clean close, and threads winding down could hold the store past the exit (a
    /// later run by another user then found root's `-shm` and could not write). Everything was
    /// committed before, so a failure to close loses nothing and is not an error.
    package func close() {
        try? database.queue.close()
        for other in others { try? other.queue.close() }
    }

    /// No process held the job's run lock when the store was opened (a reader's view; a run holds
    /// it): a run still recorded `running` was killed, and reads show it as the next run will
    /// record it (`DeadRun`).
    let ownerless: Bool

    /// A run's or an item's recorded value as this store's reader shows it (`ownerless`: `DeadRun`).
    func shown(_ outcome: RunOutcome) -> RunOutcome { ownerless && outcome == .running ? DeadRun.outcome : outcome }
    func shown(_ state: ItemState) -> ItemState { ownerless && state == .running ? DeadRun.state : state }

    /// Where the database was opened, and which file that was (its `FileIdentity` inode: a file
    /// put in its place has another).
    let path: String
    private let inode: UInt64?

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
        if let inode, FileIdentity(path: path)?.inode != inode { throw StateDatabaseError(path: path, kind: .moved, reason: "") }
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
            // The limits a run decoded under (`Classifier.limitsDigest`): a failure its content decided
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
        migrator.registerMigration("v7: run not revalidated") { db in
            // URL items a run kept up to date from a cached original whose revalidation failed.
            try db.execute(sql: "ALTER TABLE run ADD COLUMN not_revalidated INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v8: derived values") { db in
            // Per source: what it is (bytes, display size, format, exact content hash) and its derived
            // values (`derive`), each keyed by its identifier and the fingerprint of the source's
            // content it was computed from (`Classifier.derivationFingerprint`).
            try db.execute(sql: """
                CREATE TABLE source (
                    key TEXT PRIMARY KEY NOT NULL,
                    location TEXT NOT NULL,
                    fingerprint TEXT NOT NULL,
                    bytes INTEGER NOT NULL,
                    width INTEGER NOT NULL,
                    height INTEGER NOT NULL,
                    format TEXT NOT NULL,
                    content_hash TEXT,
                    updated_at REAL NOT NULL
                );
                CREATE TABLE derived (
                    source_key TEXT NOT NULL,
                    identifier TEXT NOT NULL,
                    name TEXT NOT NULL,
                    fingerprint TEXT NOT NULL,
                    value TEXT NOT NULL,
                    PRIMARY KEY (source_key, identifier)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v9: output facts") { db in
            // What a done item's output is and what its source was (`OutputFacts`), for the site
            // manifest; NULL unless done. The index lets the manifest page through sources in order.
            try db.execute(sql: """
                ALTER TABLE item ADD COLUMN width INTEGER;
                ALTER TABLE item ADD COLUMN height INTEGER;
                ALTER TABLE item ADD COLUMN bytes INTEGER;
                ALTER TABLE item ADD COLUMN media_type TEXT;
                ALTER TABLE item ADD COLUMN content_hash TEXT;
                ALTER TABLE item ADD COLUMN source_width INTEGER;
                ALTER TABLE item ADD COLUMN source_height INTEGER;
                ALTER TABLE item ADD COLUMN source_format TEXT;
                ALTER TABLE item ADD COLUMN source_hash TEXT;
                CREATE INDEX item_source ON item(source_key, output_name);
                """)
        }
        migrator.registerMigration("v10: source facts") { db in
            // What a source is lives in `source` alone, written for every rendered source; the item
            // columns v9 kept it in go. A source with no row gets one from its first done item (by
            // output name, as the manifest read them), its content unknown: fingerprint empty, bytes
            // 0 (nothing reads a source's bytes but duplicates, which lists sources with derived values).
            // The table is rebuilt without rowid (its key is stored once, not again in an index), its
            // location NULL when it is the key (a file's path): a row per source costs about half.
            try db.execute(sql: """
                CREATE TABLE source_facts (
                    key TEXT PRIMARY KEY NOT NULL,
                    location TEXT,
                    fingerprint TEXT NOT NULL,
                    bytes INTEGER NOT NULL,
                    width INTEGER NOT NULL,
                    height INTEGER NOT NULL,
                    format TEXT NOT NULL,
                    content_hash TEXT,
                    updated_at REAL NOT NULL
                ) WITHOUT ROWID;
                INSERT INTO source_facts
                SELECT key, NULLIF(location, key), fingerprint, bytes, width, height, format, content_hash, updated_at FROM source;
                INSERT INTO source_facts (key, location, fingerprint, bytes, width, height, format, content_hash, updated_at)
                SELECT item.source_key, NULLIF(original.url, item.source_key), '', 0, item.source_width, item.source_height,
                       item.source_format, item.source_hash, item.updated_at
                FROM (SELECT source_key, MIN(output_name), source_width, source_height, source_format, source_hash, updated_at
                      FROM item WHERE state = \(ItemState.done.sql) AND source_format IS NOT NULL GROUP BY source_key) AS item
                LEFT JOIN original ON original.source_key = item.source_key
                WHERE item.source_width IS NOT NULL AND item.source_height IS NOT NULL
                ON CONFLICT(key) DO NOTHING;
                DROP TABLE source;
                ALTER TABLE source_facts RENAME TO source;
                ALTER TABLE item DROP COLUMN source_width;
                ALTER TABLE item DROP COLUMN source_height;
                ALTER TABLE item DROP COLUMN source_format;
                ALTER TABLE item DROP COLUMN source_hash;
                """)
        }
        migrator.registerMigration("v11: shard plan") { db in
            // A shard's last complete plan (`SourceMemory`): the fingerprint of what decided its sources
            // (one row, written last) and its own sources in the order it visited them.
            try db.execute(sql: """
                CREATE TABLE shard_plan (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    inputs TEXT NOT NULL
                );
                CREATE TABLE shard_plan_source (
                    position INTEGER PRIMARY KEY,
                    spec INTEGER NOT NULL,
                    line TEXT
                );
                """)
        }
        migrator.registerMigration("v12: clean folders") { db in
            // Output folders the last sweep found holding no temporary file, each with its
            // `FileIdentity` from before it was read (`AtomicFile.sweep`).
            try db.execute(sql: """
                CREATE TABLE clean_folder (
                    path TEXT PRIMARY KEY,
                    identity TEXT NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v13: shard plan walks") { db in
            // What the last shard plan's folder and glob walks saw at each path they looked at
            // (`WalkedPath`): the record stands only while every one is unchanged.
            try db.execute(sql: """
                CREATE TABLE shard_plan_walked (
                    position INTEGER PRIMARY KEY,
                    path TEXT NOT NULL,
                    seen TEXT NOT NULL
                );
                """)
        }
        migrator.registerMigration("v14: skipped items") { db in
            // A run's items not made because a narrower output of their block holds their bytes (`ItemState.skipped`).
            try db.execute(sql: "ALTER TABLE run ADD COLUMN skipped INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v15: retired outputs") { db in
            // Files an item was recorded done at before it named another or none (`RetiredOutput`):
            // removed once the manifest that stops naming them is out and `keepReplaced` has passed.
            try db.execute(sql: """
                CREATE TABLE retired (
                    path TEXT PRIMARY KEY,
                    item_key TEXT NOT NULL,
                    retired_at REAL NOT NULL,
                    published_at REAL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v16: quality choices") { db in
            // How a done item with a perceptual quality target got its quality (`QualityOutcome`):
            // kept with the fingerprint it was chosen under, so a render of the same item encodes once.
            try db.execute(sql: """
                ALTER TABLE item ADD COLUMN quality INTEGER;
                ALTER TABLE item ADD COLUMN quality_score REAL;
                ALTER TABLE item ADD COLUMN quality_target REAL;
                ALTER TABLE item ADD COLUMN quality_encodes INTEGER;
                ALTER TABLE item ADD COLUMN quality_capped INTEGER;
                ALTER TABLE item ADD COLUMN quality_unscorable TEXT;
                ALTER TABLE item ADD COLUMN quality_default_bytes INTEGER;
                """)
        }
        return migrator
    }
}

/// A run recorded `running` whose process is gone (it was killed: no process holds the job's run
/// lock) ends `interrupted` at its last commit, and its items still `running` are `pending` again:
/// the next run records that (`closeAbandonedRuns`), and every reader shows it so meanwhile.
enum DeadRun {
    static let outcome = RunOutcome.interrupted, state = ItemState.pending

    /// Items still `running` whose run is over (killed, or a second signal abandoned them in
    /// flight) run again: `pending`.
    static func releaseItems(in db: Database) throws {
        try ItemRecord.filter(ItemRecord.Columns.state == ItemState.running).updateAll(db, ItemRecord.Columns.state.set(to: state))
    }
}

extension StateStore {
    /// A consistent copy of the database at `path`, replacing any file there: every committed
    /// record, compacted into one file with no WAL beside it (SQLite's `VACUUM INTO`), for the
    /// bucket that keeps it between runs.
    package func snapshot(to path: String) throws {
        unlink(path)
        try database.named { try database.queue.writeWithoutTransaction { try $0.execute(sql: "VACUUM INTO ?", arguments: [path]) } }
    }
}
