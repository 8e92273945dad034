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

/// A job over `in/` with three outputs.
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
        let job = try slowJob(workspace, count: 40)
        let run = try workspace.start([job, "--log-format", "json"])
        #expect(run.waitUntil { itemEvents(run) >= 4 })
        run.signal(SIGKILL)
        _ = run.wait()
        // Orphaned workers finish the source they hold and exit when their input closes.
        usleep(300_000)

        let state = try StateDatabase(path: workspace.path("state/slow.sqlite"))
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
        #expect(items["pending"] == 40 - softDone, "the killed run's soft items that did not finish: \(items)")
        let runs = try #require(status["runs"] as? [[String: Any]])
        let dead = try #require(runs.first { $0["id"] as? Int == killed })
        #expect(dead["outcome"] as? String == "interrupted")
        #expect(dead["done"] as? Int == doneByKilled)
        let ended = try #require((dead["endedAt"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) })
        #expect(abs(ended.timeIntervalSince1970 - lastCommit) < 1, "ended at its last commit")
        let line = try #require(try workspace.run(["status", job]).stdout.split(separator: "\n").first { $0.hasPrefix("run \(killed) ") })
        #expect(line.contains("interrupted") && line.contains("last commit \(ISO8601DateFormatter().string(from: ended))"), "\(line)")
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
        #expect(json["revalidate"] as? Int == 2 && json["pending"] as? Int == 1, "\(json)")
        #expect(try server.stats().counts.isEmpty, "planning sends no request")

        // The run agrees: the two are revalidated unchanged, only the new one is made.
        #expect(try workspace.run([job]).stdout.contains("1 done, 0 failed, 2 up to date"))
    }

    @Test("status and failed on a job that has never run say so and create no database")
    func neverRun() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let job = try threeOutputJob(workspace)
        for command in [["status", job], ["failed", job], ["status", job, "--json"], ["failed", job, "--json"]] {
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
