import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The database and its WAL as bytes, to show a command left them as they were (a WAL that is
/// not there reads as empty: SQLite's readers may create an empty one, and the index beside it).
private func stateBytes(_ workspace: Workspace, _ name: String = "state.sqlite") -> [String: Data] {
    var files: [String: Data] = [:]
    for suffix in ["", "-wal"] {
        files[name + suffix] = FileManager.default.contents(atPath: workspace.path(name + suffix)) ?? Data()
    }
    return files
}

/// The commands that only read, for a job with a manifest path and a dHash.
private let readCommands: [[String]] = [["status"], ["status", "--json"], ["failed"], ["report"], ["duplicates"],
                                        ["manifest", "--out", "-"], ["plan"]]

/// One photo, a thumbnail, a manifest and a dHash, so every read command has something to read.
private func readableJob(_ workspace: Workspace) throws -> String {
    try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg"], to: "in")
    return try simpleJob(workspace, extra: #", "derive": ["dhash"], "manifest": {"path": "site/images.json"}"#)
}

@Suite("Read commands only read", .serialized)
struct ReadCommandTests {
    @Test("a state one migration behind: every read command refuses it (exit 65) naming runner migrate, and leaves it byte for byte; migrate upgrades it")
    func olderState() throws {
        let workspace = try Workspace()
        let job = try readableJob(workspace)
        #expect(try workspace.run([job]).status == 0)
        // As the runner before v13 left it (v13 is frozen: this stays a valid older state).
        try StateDatabase.write(workspace.path("state.sqlite"), """
            DROP TABLE shard_plan_walked; DELETE FROM grdb_migrations WHERE identifier = 'v13: shard plan walks'
            """)
        let before = stateBytes(workspace)
        for command in readCommands {
            let result = try workspace.run(command + [job])
            #expect(result.status == 65, "\(command): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("was written by an older runner (it lacks migration \"v13: shard plan walks\")")
                    && result.stderr.contains("runner migrate JOB"), "\(command): \(result.stderr)")
            #expect(stateBytes(workspace) == before, "\(command) changed the state's files")
        }
        let migrated = try workspace.run(["migrate", job])
        #expect(migrated.status == 0 && migrated.stdout.contains("state.sqlite: up to date"), "\(migrated.stdout) \(migrated.stderr)")
        for command in readCommands {
            let result = try workspace.run(command + [job])
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
        #expect(try workspace.run([job]).stdout.contains("0 done, 0 failed, 2 up to date"))
    }

    @Test("a state a newer runner wrote is refused by name by every command, a run and migrate included (exit 65), and left byte for byte")
    func newerState() throws {
        let workspace = try Workspace()
        let job = try readableJob(workspace)
        #expect(try workspace.run([job]).status == 0)
        try StateDatabase.write(workspace.path("state.sqlite"), "INSERT INTO grdb_migrations VALUES ('v99: from a newer runner')")
        let before = stateBytes(workspace)
        for command in readCommands + [[], ["migrate"], ["unblock", "--all"], ["prune", "--delete"]] {
            let result = try workspace.run(command + [job])
            #expect(result.status == 65, "\(command): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("was written by a newer runner (its migration \"v99: from a newer runner\" is unknown"),
                    "\(command): \(result.stderr)")
            #expect(stateBytes(workspace) == before, "\(command) changed the state's files")
        }
    }

    @Test("a value runner never writes (a state edited by hand) is an error naming the file, the column and the value (exit 2), and the state is left as it is")
    func unknownValue() throws {
        let workspace = try Workspace()
        let job = try readableJob(workspace)
        #expect(try workspace.run([job]).status == 0)
        let item = "WHERE rowid = (SELECT MIN(rowid) FROM item)"
        try StateDatabase.write(workspace.path("state.sqlite"), "UPDATE item SET state = 'gone-fishing' \(item)")
        let before = stateBytes(workspace)
        for command in [["status"], ["status", "--json"], ["report"], ["manifest", "--out", "-"]] {
            let result = try workspace.run(command + [job])
            #expect(result.status == 2 && result.stderr.contains("state.sqlite holds a value runner never writes (item.state holds \"gone-fishing\")"),
                    "\(command): \(result.status) \(result.stderr)")
            #expect(stateBytes(workspace) == before, "\(command) changed the state's files")
        }
        try StateDatabase.write(workspace.path("state.sqlite"), "UPDATE item SET state = 'failed', error_kind = 'gone-fishing' \(item)")
        for command in [["failed"], []] {
            let result = try workspace.run(command + [job])
            #expect(result.status == 2 && result.stderr.contains("(item.error_kind holds \"gone-fishing\")"), "\(command): \(result.status) \(result.stderr)")
        }
        #expect(try StateDatabase(path: workspace.path("state.sqlite")).rows("SELECT error_kind FROM item \(item)") == [["gone-fishing"]])
    }

    @Test("right after a run is killed, the read commands show its records (interrupted, nothing running) without writing the database")
    func afterAKill() throws {
        let workspace = try Workspace()
        let job = try twoOutputJob(workspace, count: 20)
        let pauses = try Pauses("worker.task@in/p01", in: workspace)
        let run = try workspace.start([job, "--log-format", "json"], environment: pauses.environment)
        let workers = pauses.wait(for: "worker.task", count: 2, of: run).map(\.pid)
        try #require(workers.count == 2)
        // p000-p009 rendered: killed once their 20 items are committed (reported).
        #expect(run.waitUntil { itemEvents(run) >= 20 })
        run.signal(SIGKILL)
        _ = run.wait()
        #expect(eventually { !workers.contains(where: processAlive) })
        // The killed run's commits are in its WAL. Its index (-shm) is zeroed, as a writer killed
        // while updating it leaves it: SQLite rebuilds it before anyone reads.
        let index = try FileHandle(forWritingTo: URL(fileURLWithPath: workspace.path("state/two.sqlite-shm")))
        try index.write(contentsOf: Data(count: 136))
        try index.close()
        let before = stateBytes(workspace, "state/two.sqlite")
        #expect(before["state/two.sqlite-wal"]?.isEmpty == false, "the kill left a WAL")
        let status = try statusJSON(workspace, job)
        let items = try #require(status["items"] as? [String: Int])
        let done = try #require(items["done"])
        #expect(done >= 20 && items["running"] == nil && done + (items["pending"] ?? 0) == 40, "\(status)")
        #expect(((status["runs"] as? [[String: Any]])?.first?["outcome"] as? String) == "interrupted", "\(status)")
        for command in [["failed"], ["plan"], ["report"]] {
            let result = try workspace.run(command + [job])
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
        #expect(stateBytes(workspace, "state/two.sqlite") == before, "a read command wrote the state")
        let resumed = try workspace.run([job])
        #expect(resumed.status == 0 && resumed.stdout.contains("\(40 - done) done, 0 failed, \(done) up to date"), "\(resumed.stdout)")
    }

    @Test("a state on a read-only file system is read by every read command")
    func readOnlyFileSystem() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg"], to: "in")
        let state = try mountTmpfs(workspace, "state", size: "8m")
        defer { state.unmount() }
        let job = try simpleJob(workspace, extra: #", "derive": ["dhash"]"#)
        try workspace.writeJob(try String(contentsOfFile: job, encoding: .utf8)
            .replacingOccurrences(of: #""state": "state.sqlite""#, with: #""state": "state/job.sqlite""#))
        #expect(try workspace.run([job]).status == 0)
        try state.remount(readOnly: true)
        defer { try? state.remount(readOnly: false) }
        for command in [["status"], ["failed"], ["duplicates"], ["manifest", "--out", "-"], ["plan"]] {
            let result = try workspace.run(command + [job])
            #expect(result.status == 0, "\(command): \(result.status) \(result.stderr)")
        }
        #expect(try workspace.run(["status", job]).stdout.contains("items: 2 done"))
    }
}
