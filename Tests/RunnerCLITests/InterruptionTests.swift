import Foundation
import Testing
import TestSupport

/// A job with `count` distinct sources (hard links of one 480 x 300 photo, `in/p000.jpg`, ...) and
/// two outputs, on two workers. Tests that stop it mid-run hold its workers at a pause point
/// (`Pauses`), never on its speed.
func twoOutputJob(_ workspace: Workspace, count: Int) throws -> String {
    try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
    for index in 0..<count {
        try FileManager.default.linkItem(atPath: Fixtures.path("extra/ladybird.jpg"),
                                         toPath: workspace.path(String(format: "in/p%03d.jpg", index)))
    }
    return try workspace.writeJob("""
    {"version": 1, "name": "two",
     "sources": [{"path": "in"}],
     "outputs": [
       {"name": "small", "path": "out/small/{stem}.png",
        "chain": [{"op": "thumbnail", "width": 96, "height": 96, "fit": "cover"}], "format": {"type": "png"}},
       {"name": "soft", "path": "out/soft/{stem}.jpg",
        "chain": [{"op": "blur", "sigma": 2}], "format": {"type": "jpeg", "quality": 90}}],
     "concurrency": {"process": 2},
     "state": "state/two.sqlite"}
    """)
}

/// Number of `item` events a `--log-format json` run has printed so far.
func itemEvents(_ command: RunningCommand) -> Int {
    command.stdoutSoFar.split(separator: "\n").count { $0.contains("\"event\":\"item\"") }
}

/// The last line of a `--log-format json` run: its summary event.
func summaryEvent(_ stdout: String) -> [String: Any]? {
    stdout.split(separator: "\n").last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
}

/// Everything a user checks after any stop: each output opens at the right size, no temporary
/// file is left, the database is intact.
func verifyOutputs(_ workspace: Workspace, expected count: Int) throws {
    let small = workspace.files(in: "out/small")
    let soft = workspace.files(in: "out/soft")
    #expect(small.count == count && soft.count == count)
    for file in small {
        let probe = try #require(ImageProbe.open(workspace.path("out/small/" + file)), "\(file)")
        #expect(probe.width == 96 && probe.height == 96)
    }
    for file in soft {
        let probe = try #require(ImageProbe.open(workspace.path("out/soft/" + file)), "\(file)")
        #expect(probe.width == 480, "\(file) is \(probe.width) wide")
    }
    #expect(!workspace.files(in: "out").contains { $0.contains(".runner-tmp-") })
    #expect(try StateDatabase(path: workspace.path("state/two.sqlite")).integrity() == "ok")
}

@Suite("Stopping and resuming", .serialized)
struct InterruptionTests {
    @Test("SIGINT finishes items in flight, records them, exits 130; the next run completes")
    func interruptAndResume() throws {
        let workspace = try Workspace()
        let job = try twoOutputJob(workspace, count: 30)
        // Both workers hold a source of p010-p019 when the signal comes; they go on once it is handled.
        let pauses = try Pauses("worker.task@in/p01", in: workspace)
        let run = try workspace.start([job, "--log-format", "json"], environment: pauses.environment)
        #expect(pauses.wait(for: "worker.task", count: 2, of: run).count == 2)
        run.signal(SIGINT)
        #expect(run.waitUntil { run.stdoutSoFar.contains("finishing items in flight") })
        try pauses.releaseAll()
        let result = run.wait()
        #expect(result.status == 130, "\(result.stderr)")
        let summary = try #require(summaryEvent(result.stdout))
        #expect(summary["event"] as? String == "summary")
        let done = try #require(summary["done"] as? Int)
        #expect(done >= 20 && done < 60)
        #expect((summary["notStarted"] as? Int ?? 0) > 0)

        let state = try StateDatabase(path: workspace.path("state/two.sqlite"))
        #expect(try state.count(state: "done") == done)
        #expect(try state.count(state: "running") == 0, "in-flight items finished and were recorded")
        let outcome: String? = try state.scalar("SELECT outcome FROM run ORDER BY id DESC LIMIT 1")
        #expect(outcome == "interrupted")

        let resumed = try workspace.run([job])
        #expect(resumed.status == 0)
        #expect(resumed.stdout.contains("\(60 - done) done, 0 failed, \(done) up to date"), "\(resumed.stdout)")
        try verifyOutputs(workspace, expected: 30)
    }

    /// Where both workers are held when the runner is killed, and the items committed by then:
    /// before any render, with a staged output of p010-p019 each, before p030-p039.
    @Test("SIGKILL at several moments loses no finished work and never leaves a partial file",
          arguments: [("worker.task@in/p00", 0), ("worker.staged@out/soft/p01", 20), ("worker.task@in/p03", 60)])
    func killAndResume(heldAt point: String, committed: Int) throws {
        let workspace = try Workspace()
        let job = try twoOutputJob(workspace, count: 40)
        let pauses = try Pauses(point, in: workspace)
        let run = try workspace.start([job, "--log-format", "json"], environment: pauses.environment)
        let name = String(point.prefix { $0 != "@" })
        #expect(pauses.wait(for: name, count: 2, of: run).count == 2, "\(run.stdoutSoFar.suffix(600)) \(run.stderrSoFar)")
        #expect(run.waitUntil { itemEvents(run) >= committed })
        let workers = run.children
        run.signal(SIGKILL)
        _ = run.wait()
        // Workers die with their supervisor (PR_SET_PDEATHSIG), and with them their hold on the job.
        #expect(eventually { !workers.contains(where: processAlive) })
        // Nobody holds the job now: status shows the killed run interrupted and nothing running, before any run closes it.
        let status = try #require(try JSONSerialization.jsonObject(with: Data(try workspace.run(["status", job, "--json"]).stdout.utf8)) as? [String: Any])
        #expect((status["items"] as? [String: Int])?["running"] == nil, "\(status)")
        #expect(((status["runs"] as? [[String: Any]])?.first?["outcome"] as? String) == "interrupted", "\(status)")

        let resumed = try workspace.run([job, "--log-format", "json"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let summary = try #require(summaryEvent(resumed.stdout))
        let upToDate = try #require(summary["upToDate"] as? Int)
        #expect((summary["done"] as? Int ?? 0) + upToDate == 80)
        #expect(upToDate >= committed, "the resumed run picked up where the killed one stopped")
        try verifyOutputs(workspace, expected: 40)
        #expect(try StateDatabase(path: workspace.path("state/two.sqlite")).count(state: "done") == 80)
    }

    @Test("a second SIGTERM abandons items in flight: exit 143, nothing partial, the next run completes")
    func doubleTerminate() throws {
        let workspace = try Workspace()
        let job = try twoOutputJob(workspace, count: 30)
        // A worker holds p010 (paused, never let go) when the signals come.
        let pauses = try Pauses("worker.task@in/p010", in: workspace)
        let run = try workspace.start([job, "--log-format", "json"], environment: pauses.environment)
        #expect(pauses.wait(for: "worker.task", of: run).count == 1)
        let workers = run.children
        run.signal(SIGTERM)
        // Two signals delivered before the first is handled merge into one: wait for its notice.
        #expect(run.waitUntil { run.stdoutSoFar.contains("finishing items in flight") })
        run.signal(SIGTERM)
        let result = run.wait()
        #expect(result.status == 143, "\(result.stderr)")
        #expect(result.stdout.contains("abandoning items in flight"))
        // The process is gone: status says so at once, with no item left running.
        let status = try #require(try JSONSerialization.jsonObject(with: Data(try workspace.run(["status", job, "--json"]).stdout.utf8)) as? [String: Any])
        #expect((status["items"] as? [String: Int])?["running"] == nil, "\(status)")
        #expect(((status["runs"] as? [[String: Any]])?.first?["outcome"] as? String) == "interrupted", "\(status)")
        #expect(((status["runs"] as? [[String: Any]])?.first?["exitCode"] as? Int) == 143, "\(status)")
        #expect(eventually { !workers.contains(where: processAlive) })
        let resumed = try workspace.run([job])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        try verifyOutputs(workspace, expected: 30)
    }

    @Test("workers are recycled after recycleAfter sources and the run still completes")
    func recycling() throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        for index in 0..<9 {
            try FileManager.default.linkItem(atPath: Fixtures.path("extra/ladybird.jpg"), toPath: workspace.path("in/\(index).jpg"))
        }
        let job = try simpleJob(workspace, extra: #", "concurrency": {"process": 1, "recycleAfter": 2}"#)
        let result = try workspace.run([job, "--log-format", "json"])
        #expect(result.status == 0)
        let summary = try #require(summaryEvent(result.stdout))
        #expect(summary["workersStarted"] as? Int == 5)
        #expect(summary["done"] as? Int == 9)
    }

    @Test("temporary files left by a dead process are removed at the next start")
    func staleTemporariesRemoved() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let job = try simpleJob(workspace)
        try workspace.write("partial", to: "out/.friends.jpg.runner-tmp-999999999")
        #expect(try workspace.run([job]).status == 0)
        #expect(workspace.files(in: "out") == ["friends.jpg"])
    }
}

/// The `item` events of a finished `--log-format json` run, decoded.
func itemEvents(_ stdout: String) -> [[String: Any]] {
    stdout.split(separator: "\n").compactMap { line in
        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]).flatMap { $0["event"] as? String == "item" ? $0 : nil }
    }
}
