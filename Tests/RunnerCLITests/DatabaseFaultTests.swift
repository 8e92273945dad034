import Foundation
import GRDB
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The first state database runner shipped (commit e6e0d5e, "Core skeleton"): its one migration,
/// word for word, and the bookkeeping GRDB's migrator kept of it. A copy, not StateStore's own
/// text: an edit to the shipped migration must make this test fail, not follow along.
enum FirstSchema {
    static let migration = "v1: runs and items"
    static let sql = """
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
        """
}

@Suite("When the state database is damaged, full, deleted or old", .serialized)
struct DatabaseFaultTests {
    @Test("a state database that is garbage, has damaged pages, is cut short or is damaged where no run reads is an error naming it (exit 2): left byte for byte, nothing run, never started over",
          arguments: ["garbage", "damaged pages", "cut short", "a page no run reads"])
    func damagedDatabase(damage: String) throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg"], to: "in")
        let job = try simpleJob(workspace)
        #expect(try workspace.run([job]).status == 0)
        let path = workspace.path("state.sqlite")
        // Every page in the file itself: a run that exits before its last connection closes leaves
        // the newest pages in the WAL, where damage to the file would not reach them.
        let checkpoint = try DatabaseQueue(path: path)
        try checkpoint.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try checkpoint.close()
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        // The downloaded originals' table: a job of local files never reads it.
        let unread: Int = try #require(try StateDatabase(path: path).scalar("SELECT rootpage FROM sqlite_master WHERE name = 'original'"))
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var random = FuzzRandom(seed: 14)
        switch damage {
        case "garbage": bytes = (0..<8192).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        case "damaged pages": for index in 4096..<bytes.count { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
        case "cut short": bytes = Array(bytes.prefix(bytes.count / 3))
        default: for index in ((unread - 1) * 4096)..<(unread * 4096) { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try FileManager.default.removeItem(atPath: workspace.path("out"))
        let before = TreeSnapshot(workspace.root)

        // What only reads may still read what is intact; whatever writes checks every page first.
        let readers = damage == "a page no run reads" ? [] : [["status", job], ["failed", job], ["plan", job], ["report", job]]
        for command in [[job], ["prune", job, "--delete"]] + readers {
            let result = try workspace.run(command)
            #expect(result.status == 2, "\(command): \(result.stdout) \(result.stderr)")
            #expect(result.stderr.contains("runner: state database \(path) is damaged or is not a runner state database (SQLite: "),
                    "\(command): \(result.stderr)")
            #expect(!result.stderr.contains("Error: SQLite"), "\(command): \(result.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(bytes), "the database was left as it was")
        // Nothing else was written either (the run's lock file only says who held it last).
        #expect(TreeSnapshot(workspace.root).changes(since: before).filter { !$0.hasSuffix(".lock") } == [])
    }

    @Test("a state database on a full disk: a clear error before any work (exit 74), and a run with space finishes")
    func stateFolderFullBeforeTheRun() throws {
        let workspace = try Workspace()
        let state = try mountTmpfs(workspace, "state", size: "1m")
        defer { state.unmount() }
        try photoSources(workspace, count: 4)
        let job = try oneOutputJob(workspace)
        state.fill()
        let full = try workspace.run([job])
        #expect(full.status == 74, "\(full.stdout) \(full.stderr)")
        #expect(full.stderr.contains("runner: cannot write the state database \(workspace.path("state/job.sqlite")) (SQLite: "),
                "\(full.stderr)")
        #expect(full.stderr.contains("disk is full") || full.stderr.contains("No space left on device"), "\(full.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.path("out")), "nothing was processed")

        try FileManager.default.removeItem(atPath: state.path + "/filler")
        let next = try workspace.run([job])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try checkRecordsAgainstDisk(workspace, state: "state/job.sqlite") == ["done": 4])
    }

    @Test("the state database's disk fills mid-run: the run stops with a clear error (exit 74), nothing is recorded done that is not on disk, and a run with space finishes")
    func stateFolderFillsMidRun() throws {
        let workspace = try Workspace()
        let state = try mountTmpfs(workspace, "state", size: "4m")
        defer { state.unmount() }
        let (job, run, pauses) = try startSlowRun(workspace)
        state.fill()
        try pauses.releaseAll()
        let full = run.wait()
        #expect(full.status == 74, "\(full.stdout.suffix(300)) \(full.stderr)")
        #expect(full.stderr.contains("runner: cannot write the state database \(workspace.path("state/two.sqlite")) (SQLite: database or disk is full)"),
                "\(full.stderr)")
        #expect(full.stdout.contains("finishing items in flight"), "the run said it was stopping: \(full.stdout.suffix(600))")
        // It stopped: items were left for the next run.
        #expect(itemEvents(run) < 60, "\(itemEvents(run)) items reported")

        try FileManager.default.removeItem(atPath: state.path + "/filler")
        let recorded = try checkRecordsAgainstDisk(workspace, state: "state/two.sqlite")
        #expect(recorded["done", default: 0] >= 4 && recorded["done", default: 0] < 60, "\(recorded)")
        try nextRunFinishesSlowJob(workspace, job)
    }

    @Test("the state database deleted while a run holds the job: the run stops with a clear error (exit 74), and the next run starts a new one and finishes")
    func databaseDeletedMidRun() throws {
        let workspace = try Workspace()
        let (job, run, pauses) = try startSlowRun(workspace)
        try FileManager.default.removeItem(atPath: workspace.path("state/two.sqlite"))
        try pauses.releaseAll()
        let stopped = run.wait()
        #expect(stopped.status == 74, "\(stopped.stdout.suffix(300)) \(stopped.stderr)")
        #expect(stopped.stderr.contains("runner: the state database \(workspace.path("state/two.sqlite")) was deleted or replaced while this run held it; stopped"),
                "\(stopped.stderr)")
        #expect(stopped.stdout.contains("was deleted or replaced while this run held it: stopping, finishing items in flight"),
                "\(stopped.stdout.suffix(600))")
        #expect(itemEvents(run) < 60, "it stopped handing out work: \(itemEvents(run)) items reported")
        #expect(temporaryFiles(workspace).isEmpty, "left behind: \(temporaryFiles(workspace))")
        #expect(!FileManager.default.fileExists(atPath: workspace.path("state/two.sqlite")), "runner did not bring it back")

        try nextRunFinishesSlowJob(workspace, job)
    }

    @Test("a state database made by the first shipped schema is migrated: its done items stay up to date (nothing redone), its runs stay listed")
    func migrationFromTheFirstSchema() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg", "photos/wine.webp", "broken/truncated.jpg"], to: "in")
        let job = try simpleJob(workspace)
        // Today's runner makes the outputs; its fingerprints (which cover runner's version and the
        // recipe) are what the old records must carry for the items to be up to date.
        #expect(try workspace.run([job]).status == 1)
        let made = try StateDatabase(path: workspace.path("state.sqlite"))
        let items = try made.rows("SELECT key, source_key, output_name, state, fingerprint, output_path, error_kind, error_message FROM item ORDER BY key")
        let vipsVersion: String = try #require(try made.scalar("SELECT vips_version FROM run"))
        #expect(items.count == 4)
        for suffix in ["", "-wal", "-shm"] { unlink(workspace.path("state.sqlite" + suffix)) }

        // The database as the first runner left it after one run: done items, one decode failure.
        let old = try DatabaseQueue(path: workspace.path("state.sqlite"))
        try old.writeWithoutTransaction { db in
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            try db.inTransaction {
                try db.execute(sql: FirstSchema.sql)
                try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [FirstSchema.migration])
                return .commit
            }
            let started = Date().timeIntervalSince1970 - 86_400
            try db.execute(sql: """
                INSERT INTO run (started_at, ended_at, pid, runner_version, vips_version, planned, up_to_date, done, failed, blocked, outcome, exit_code)
                VALUES (?, ?, 4242, '0.1.0', ?, 4, 0, 3, 1, 0, 'finished', 1)
                """, arguments: [started, started + 2, vipsVersion])
            for item in items {
                try db.execute(sql: """
                    INSERT INTO item (key, source_key, output_name, state, attempts, fingerprint, output_path, error_kind, error_message, duration, run_id, updated_at)
                    VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, 0.25, 1, ?)
                    """, arguments: [item[0], item[1], item[2], item[3], item[4], item[5],
                                     item[6].isEmpty ? nil : item[6], item[7].isEmpty ? nil : item[7], started + 1])
            }
        }
        try old.close()
        let outputs = TreeSnapshot(workspace.path("out"))

        // The failure's limits were never recorded, so it is tried once more; the done items are not.
        let migrated = try workspace.run([job])
        #expect(migrated.status == 1, "\(migrated.stderr)")
        #expect(migrated.stdout.contains("0 done, 1 failed, 3 up to date"), "\(migrated.stdout)")
        #expect(TreeSnapshot(workspace.path("out")) == outputs, "no output was written again")
        let state = try StateDatabase(path: workspace.path("state.sqlite"))
        #expect(try state.integrity() == "ok")
        // In the order they ran (by name, "v10" would sort before "v1").
        let migrations = try state.rows("SELECT identifier FROM grdb_migrations ORDER BY rowid").map { $0[0] }
        #expect(migrations.count >= 4 && migrations.first == FirstSchema.migration, "\(migrations)")
        #expect(try state.rows("SELECT id, pid, outcome FROM run ORDER BY id").first == ["1", "4242", "finished"])
        #expect(try state.states() == Dictionary(uniqueKeysWithValues: items.map { ($0[0], $0[3]) }))
        let statusRuns = try #require(try statusJSON(workspace, job)["runs"] as? [[String: Any]])
        #expect(statusRuns.count == 2 && statusRuns.contains { $0["id"] as? Int == 1 && $0["done"] as? Int == 3 }, "\(statusRuns)")

        let again = try workspace.run([job])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("0 done, 0 failed, 3 up to date") && again.stdout.contains("; 1 known failure"), "\(again.stdout)")
        #expect(TreeSnapshot(workspace.path("out")) == outputs)
    }
}
