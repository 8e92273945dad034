import Foundation
import GRDB

/// The job's state database: runs, items and (later) the failed-URL blacklist.
///
/// One type owns the connection (GRDB's `AppDatabase` pattern): WAL journal, a private migrator
/// whose migrations are named and never edited once shipped, and methods that keep the invariants.
public final class StateStore: Sendable {
    private let database: DatabaseQueue

    public init(path: String) throws {
        try FileManager.default.createDirectory(atPath: Paths.directory(of: path), withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // NORMAL in WAL mode: a commit survives a process crash; only a power loss can undo the last ones.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        database = try DatabaseQueue(path: path, configuration: configuration)
        try database.writeWithoutTransaction { db in
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
        }
        try Self.migrator.migrate(database)
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
        return migrator
    }

    // MARK: Planning

    /// Fingerprint and output path of every item recorded done.
    func ledger() throws -> [String: LedgerEntry] {
        try database.read { db in
            var entries: [String: LedgerEntry] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT key, fingerprint, output_path FROM item WHERE state = 'done'")
            while let row = try rows.next() {
                entries[row[0]] = LedgerEntry(fingerprint: row[1], outputPath: row[2])
            }
            return entries
        }
    }

    // MARK: Runs

    func beginRun(vipsVersion: String, plan: Plan) throws -> Int64 {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO run (started_at, pid, runner_version, vips_version, planned, up_to_date, blocked)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [Date().timeIntervalSince1970, Int(getpid()), RunnerVersion.string, vipsVersion,
                                 plan.count(.pending), plan.count(.upToDate), plan.count(.blocked)])
            let runID = db.lastInsertedRowID
            let statement = try db.makeStatement(sql: """
                INSERT INTO item (key, source_key, output_name, state, fingerprint, output_path, run_id, updated_at)
                VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET
                    state = 'pending', output_path = excluded.output_path, run_id = excluded.run_id,
                    updated_at = excluded.updated_at,
                    attempts = CASE WHEN fingerprint = excluded.fingerprint THEN attempts ELSE 0 END,
                    fingerprint = excluded.fingerprint
                """)
            let now = Date().timeIntervalSince1970
            for source in plan.sources {
                for item in source.items where item.status == .pending {
                    try statement.execute(arguments: [item.key, source.key, item.outputName, item.fingerprint,
                                                      item.outputPath, runID, now])
                }
            }
            return runID
        }
    }

    func finishRun(_ runID: Int64, summary: RunSummary) throws {
        try database.write { db in
            try db.execute(sql: """
                UPDATE run SET ended_at = ?, done = ?, failed = ?, blocked = ?, outcome = ?, exit_code = ?
                WHERE id = ?
                """, arguments: [Date().timeIntervalSince1970, summary.done, summary.failed, summary.blocked,
                                 summary.interrupted == nil ? "finished" : "interrupted", summary.exitCode, runID])
        }
    }

    // MARK: Recording

    /// Applies a batch of item events in one transaction.
    func record(_ events: [ItemEvent], runID: Int64) throws {
        guard !events.isEmpty else { return }
        try database.write { db in
            let now = Date().timeIntervalSince1970
            let started = try db.cachedStatement(sql: """
                UPDATE item SET state = 'running', attempts = attempts + 1, run_id = ?, updated_at = ? WHERE key = ?
                """)
            let finished = try db.cachedStatement(sql: """
                UPDATE item SET state = ?, error_kind = ?, error_message = ?, duration = ?, run_id = ?, updated_at = ?
                WHERE key = ?
                """)
            for event in events {
                switch event {
                case .started(let key):
                    try started.execute(arguments: [runID, now, key])
                case .finished(let key, _, let outcome):
                    switch outcome {
                    case .done(let duration):
                        try finished.execute(arguments: ["done", nil, nil, duration, runID, now, key])
                    case .failed(let failure, let duration):
                        try finished.execute(arguments: ["failed", failure.kind.rawValue, failure.message, duration,
                                                         runID, now, key])
                    }
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
                          failed: row["failed"], blocked: row["blocked"], outcome: row["outcome"],
                          exitCode: row["exit_code"])
            }
        }
    }

    public func failedItems() throws -> [FailedItemRecord] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT key, source_key, output_name, error_kind, error_message, attempts, updated_at
                FROM item WHERE state = 'failed' ORDER BY source_key, output_name
                """).map { row in
                FailedItemRecord(key: row["key"], source: row["source_key"], output: row["output_name"],
                                 kind: row["error_kind"] ?? "unknown", message: row["error_message"] ?? "",
                                 attempts: row["attempts"], at: Date(timeIntervalSince1970: row["updated_at"]))
            }
        }
    }

    /// For tests and `runner status`: SQLite's own consistency check.
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
    public let done: Int
    public let failed: Int
    public let blocked: Int
    public let outcome: String
    public let exitCode: Int?
}

public struct FailedItemRecord: Sendable, Codable {
    public let key: String
    public let source: String
    public let output: String
    public let kind: String
    public let message: String
    public let attempts: Int
    public let at: Date
}
