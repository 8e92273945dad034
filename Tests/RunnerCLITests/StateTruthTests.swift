import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `runner status --json`, parsed.
func statusJSON(_ workspace: Workspace, _ job: String) throws -> [String: Any] {
    let status = try workspace.run(["status", job, "--json"])
    #expect(status.status == 0, "\(status.stderr)")
    return try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status.stdout)")
}

/// A job over `in/` with three outputs: `t` (kept), `g` and `m` (edited away by the prune test).
@discardableResult
func threeOutputJob(_ workspace: Workspace, outputs: [String]? = nil) throws -> String {
    let all = [
        #"{"name": "t", "path": "out/t/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}], "format": {"type": "jpeg"}}"#,
        #"{"name": "g", "path": "out/g/{stem}.png", "chain": [{"op": "thumbnail", "width": 24, "fit": "inside"}], "format": {"type": "png"}}"#,
        #"{"name": "m", "path": "out/m/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 16, "fit": "inside"}], "format": {"type": "jpeg"}}"#,
    ]
    return try workspace.writeJob("""
    {"version": 1, "name": "three", "sources": [{"path": "in"}],
     "outputs": [\((outputs ?? all).joined(separator: ",\n"))],
     "state": "state/three.sqlite"}
    """)
}

@Suite("State that tells the truth", .serialized)
struct StateTruthTests {
    @Test("after SIGKILL the next run marks the dead run interrupted at its last commit, and its running items pending")
    func killedRunIsClosed() throws {
        let workspace = try Workspace()
        let job = try twoOutputJob(workspace, count: 20)
        // Killed while both workers hold a source of p010-p019 (started, so recorded running).
        let pauses = try Pauses("worker.task@in/p01", in: workspace)
        let run = try workspace.start([job, "--log-format", "json"], environment: pauses.environment)
        let workers = pauses.wait(for: "worker.task", count: 2, of: run).map(\.pid)
        #expect(workers.count == 2)
        // Killed once the two sources' four items are recorded running (the recorder commits in batches).
        #expect(eventually { (try? StateDatabase(path: workspace.path("state/two.sqlite")).count(state: "running")) ?? 0 >= 4 })
        run.signal(SIGKILL)
        _ = run.wait()
        #expect(eventually { !workers.contains(where: processAlive) })

        let state = try StateDatabase(path: workspace.path("state/two.sqlite"))
        let killed: Int = try #require(try state.scalar("SELECT MAX(id) FROM run"))
        let lastCommit: Double = try #require(try state.scalar("SELECT MAX(updated_at) FROM item WHERE run_id = ?", [killed]))
        let doneByKilled: Int = try #require(try state.scalar("SELECT COUNT(*) FROM item WHERE run_id = ? AND state = 'done'", [killed]))
        let inFlight: Int = try #require(try state.scalar("SELECT COUNT(*) FROM item WHERE state = 'running' AND key LIKE '%@soft'"))
        try #require(inFlight > 0, "the killed run had items in flight")
        let softDone: Int = try #require(try state.scalar("SELECT COUNT(*) FROM item WHERE state = 'done' AND key LIKE '%@soft'"))

        // The next run no longer plans the `soft` items, so only the dead run's bookkeeping can settle them.
        let text = try String(contentsOfFile: job, encoding: .utf8)
        try workspace.writeJob(text.replacing(#/,\s*\{"name": "soft".*?\}\}\]/#.dotMatchesNewlines(), with: "]"))
        let next = try workspace.run([job])
        #expect(next.status == 0, "\(next.stderr)")

        let status = try statusJSON(workspace, job)
        let items = try #require(status["items"] as? [String: Int])
        #expect(items["running"] == nil, "no item of a dead run is still running: \(items)")
        #expect(items["pending"] == 20 - softDone, "the killed run's soft items that did not finish: \(items)")
        let runs = try #require(status["runs"] as? [[String: Any]])
        let dead = try #require(runs.first { $0["id"] as? Int == killed })
        #expect(dead["outcome"] as? String == "interrupted")
        #expect(dead["done"] as? Int == doneByKilled)
        let ended = try #require((dead["endedAt"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) })
        #expect(abs(ended.timeIntervalSince1970 - lastCommit) < 1, "ended at its last commit")
        let line = try #require(try workspace.run(["status", job]).stdout.split(separator: "\n").first { $0.hasPrefix("run \(killed) ") })
        // The text and the JSON each round the same instant to a whole second: they may differ by one.
        let shown = line.split(separator: "last commit ").last.flatMap { ISO8601DateFormatter().date(from: String($0.prefix(20))) }
        #expect(line.contains("interrupted") && shown.map { abs($0.timeIntervalSince(ended)) <= 1 } == true, "\(line)")
    }

    @Test("prune lists, then deletes, outputs whose source is gone, whose path changed or whose output left the job; nothing else")
    func prune() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/wine.webp", "photos/fig-bowl.jpg"], to: "in")
        let job = try threeOutputJob(workspace)
        #expect(try workspace.run([job]).status == 0)
        #expect(workspace.files(in: "out").count == 9)

        // The source wine.webp goes; output g leaves the job; output m moves to out/m2.
        try FileManager.default.removeItem(atPath: workspace.path("in/wine.webp"))
        try threeOutputJob(workspace, outputs: [
            #"{"name": "t", "path": "out/t/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}], "format": {"type": "jpeg"}}"#,
            #"{"name": "m", "path": "out/m2/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 16, "fit": "inside"}], "format": {"type": "jpeg"}}"#,
        ])
        // Files runner did not write: the user's own, and a symlink where a recorded output was.
        try workspace.write("mine", to: "out/t/mine.jpg")
        try workspace.write("precious", to: "precious.png")
        try FileManager.default.removeItem(atPath: workspace.path("out/g/fig-bowl.png"))
        try FileManager.default.createSymbolicLink(atPath: workspace.path("out/g/fig-bowl.png"), withDestinationPath: workspace.path("precious.png"))

        #expect(try workspace.run(["plan", job]).stdout.contains("2 to run, 0 to revalidate, 2 up to date, 0 blocked, 7 orphaned"))
        let listing = try workspace.run(["prune", job])
        #expect(listing.status == 0, "\(listing.stderr)")
        // The gone source's own record (its facts) is listed after the items, as a source to drop.
        #expect(listing.stdout.split(separator: "\n").filter { $0.hasPrefix("drop\t") }.map(String.init) == ["drop\t" + workspace.path("in/wine.webp")])
        let listed = listing.stdout.split(separator: "\n").filter { $0.contains("\t") && !$0.hasPrefix("drop\t") }
        #expect(Set(listed.map { $0.split(separator: "\t")[1] }) == Set(
            ["wine.webp@t", "friends.jpg@g", "wine.webp@g", "fig-bowl.jpg@g", "friends.jpg@m", "wine.webp@m", "fig-bowl.jpg@m"]
                .map { Substring(workspace.path("in/") + $0) }), "\(listing.stdout)")
        #expect(listed.contains { $0.hasPrefix("keep\t") && $0.contains("fig-bowl.jpg@g") && $0.contains("not a regular file") })
        #expect(listing.stdout.contains("7 orphaned items, 6 files to delete, 1 orphaned source record"), "\(listing.stdout)")
        #expect(workspace.files(in: "out").count == 10, "listing deletes nothing")

        // Another run holding the job: prune --delete waits for nothing and changes nothing.
        let lock = open(workspace.path("state/three.sqlite.lock"), O_RDWR)
        #expect(flock(lock, LOCK_EX | LOCK_NB) == 0)
        #expect(try workspace.run(["prune", job, "--delete"]).status == 75)
        close(lock)

        let deleted = try workspace.run(["prune", job, "--delete"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(deleted.stdout.contains("7 orphaned items dropped, 6 files deleted, 1 orphaned source record dropped"), "\(deleted.stdout)")
        #expect(workspace.files(in: "out") == ["g/fig-bowl.png", "t/fig-bowl.jpg", "t/friends.jpg", "t/mine.jpg"])
        #expect(try String(contentsOfFile: workspace.path("precious.png"), encoding: .utf8) == "precious")
        let status = try statusJSON(workspace, job)
        #expect(status["items"] as? [String: Int] == ["done": 2])
        #expect(try workspace.run(["plan", job]).stdout.contains("2 up to date, 0 blocked, 0 orphaned"))
    }

    @Test("prune never deletes a file the job writes now: a renamed output keeps its path")
    func pruneKeepsReusedPaths() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let t = #"{"name": "t", "path": "out/t/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}], "format": {"type": "jpeg"}}"#
        let job = try threeOutputJob(workspace, outputs: [t])
        #expect(try workspace.run([job]).status == 0)
        try threeOutputJob(workspace, outputs: [t.replacingOccurrences(of: #""name": "t""#, with: #""name": "thumb""#)])
        #expect(try workspace.run([job]).stdout.contains("1 done"))

        let deleted = try workspace.run(["prune", job, "--delete"])
        #expect(deleted.stdout.contains("1 orphaned item dropped, 0 files deleted"), "\(deleted.stdout)")
        #expect(deleted.stdout.contains("the job writes this path now"), "\(deleted.stdout)")
        #expect(try #require(ImageProbe.open(workspace.path("out/t/friends.jpg"))).width == 32)
        #expect(try workspace.run([job]).stdout.contains("1 up to date"))
    }

    @Test("plan counts cached URL items as to revalidate, not to run, and asks the server nothing")
    func planRevalidate() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: [server.url("/img/a.jpg"), server.url("/img/b.jpg")])
        #expect(try workspace.run([job]).stdout.contains("2 done"))
        try workspace.write([server.url("/img/a.jpg"), server.url("/img/b.jpg"), server.url("/img/c.jpg")].joined(separator: "\n"),
                            to: "urls.txt")
        try server.reset()

        let plan = try workspace.run(["plan", job])
        #expect(plan.stdout.contains("1 to run, 2 to revalidate, 0 up to date, 0 blocked"), "\(plan.stdout)")
        let listing = try workspace.run(["plan", job, "--list"])
        #expect(listing.stdout.contains("revalidate\t\(server.url("/img/a.jpg"))@t"), "\(listing.stdout)")
        #expect(listing.stdout.contains("pending\t\(server.url("/img/c.jpg"))@t"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(try workspace.run(["plan", job, "--json"]).stdout.utf8)) as? [String: Any])
        #expect(json["revalidate"] as? Int == 2 && json["toRun"] as? Int == 1, "\(json)")
        #expect(try server.stats().counts.isEmpty, "planning sends no request")

        // The run agrees: the two are revalidated unchanged, only the new one is made.
        #expect(try workspace.run([job]).stdout.contains("1 done, 0 failed, 2 up to date"))
    }

    @Test("status, failed, plan and prune on a job that has never run say so and create no database")
    func neverRun() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let job = try threeOutputJob(workspace)
        for command in [["status", job], ["failed", job], ["status", job, "--json"], ["failed", job, "--json"], ["prune", job]] {
            let result = try workspace.run(command)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            if command.count == 2 { #expect(result.stdout.contains("three has not run yet"), "\(command): \(result.stdout)") }
        }
        let status = try statusJSON(workspace, job)
        #expect(status["hasRun"] as? Bool == false)
        #expect(try workspace.run(["plan", job]).stdout.contains("3 to run"))
        #expect(!FileManager.default.fileExists(atPath: workspace.path("state")), "no state folder or database was created")
    }
}
