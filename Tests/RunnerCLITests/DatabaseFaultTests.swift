import Foundation
import GRDB
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The first state database runner shipped (commit e6e0d5e, "Core skeleton"): its one migration,
/// word for word, and the bookkeeping GRDB's migrator kept of it.
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
    @Test("a state database that is garbage, has damaged pages or is cut short is an error naming it (exit 2): left byte for byte, nothing run, never started over",
          arguments: ["garbage", "damaged pages", "cut short"])
    func damagedDatabase(damage: String) throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg"], to: "in")
        let job = try simpleJob(workspace)
        #expect(try workspace.run([job]).status == 0)
        let path = workspace.path("state.sqlite")
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var random = FuzzRandom(seed: 14)
        switch damage {
        case "garbage": bytes = (0..<8192).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        case "damaged pages": for index in 4096..<bytes.count { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
        default: bytes = Array(bytes.prefix(bytes.count / 3))
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try FileManager.default.removeItem(atPath: workspace.path("out"))
        let before = TreeSnapshot(workspace.root)

        for command in [[job], ["status", job], ["failed", job], ["plan", job], ["report", job], ["prune", job, "--delete"]] {
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
        let job = try slowJob(workspace, count: 30)
        let run = try workspace.start([job, "--log-format", "json"])
        #expect(run.waitUntil { itemEvents(run) >= 4 })
        state.fill()
        let full = run.wait(timeout: 120)
        #expect(full.status == 74, "\(full.stdout.suffix(300)) \(full.stderr)")
        #expect(full.stderr.contains("runner: cannot write the state database \(workspace.path("state/slow.sqlite")) (SQLite: database or disk is full)"),
                "\(full.stderr)")
        #expect(full.stdout.contains("finishing items in flight"), "the run said it was stopping: \(full.stdout.suffix(600))")
        // It stopped: items were left for the next run.
        #expect(itemEvents(run) < 60, "\(itemEvents(run)) items reported")

        try FileManager.default.removeItem(atPath: state.path + "/filler")
        let recorded = try checkRecordsAgainstDisk(workspace, state: "state/slow.sqlite")
        #expect(recorded["done", default: 0] >= 4 && recorded["done", default: 0] < 60, "\(recorded)")
        let next = try workspace.run([job])
        #expect(next.status == 0, "\(next.stderr)")
        try verifyOutputs(workspace, expected: 30)
        #expect(try checkRecordsAgainstDisk(workspace, state: "state/slow.sqlite") == ["done": 60])
    }

    @Test("the state database deleted while a run holds the job: the run stops with a clear error (exit 74), and the next run starts a new one and finishes")
    func databaseDeletedMidRun() throws {
        let workspace = try Workspace()
        let job = try slowJob(workspace, count: 30)
        let run = try workspace.start([job, "--log-format", "json"])
        #expect(run.waitUntil { itemEvents(run) >= 4 })
        try FileManager.default.removeItem(atPath: workspace.path("state/slow.sqlite"))
        let stopped = run.wait(timeout: 120)
        #expect(stopped.status == 74, "\(stopped.stdout.suffix(300)) \(stopped.stderr)")
        #expect(stopped.stderr.contains("runner: the state database \(workspace.path("state/slow.sqlite")) was deleted or replaced while this run held it; stopped"),
                "\(stopped.stderr)")
        #expect(stopped.stdout.contains("was deleted or replaced while this run held it: stopping, finishing items in flight"),
                "\(stopped.stdout.suffix(600))")
        #expect(itemEvents(run) < 60, "it stopped handing out work: \(itemEvents(run)) items reported")
        #expect(temporaryFiles(workspace).isEmpty, "left behind: \(temporaryFiles(workspace))")
        #expect(!FileManager.default.fileExists(atPath: workspace.path("state/slow.sqlite")), "runner did not bring it back")

        let next = try workspace.run([job])
        #expect(next.status == 0, "\(next.stderr)")
        try verifyOutputs(workspace, expected: 30)
        #expect(try checkRecordsAgainstDisk(workspace, state: "state/slow.sqlite") == ["done": 60])
    }
}
