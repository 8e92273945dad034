import Foundation
import Testing
import TestSupport

/// How a run ends is one fact: the exit code it prints, returns and records is the same number,
/// and the recorded outcome says why it stopped.
@Suite("How a run ends, printed, returned and recorded alike", .serialized)
struct RunOutcomeTests {
    /// The last run's outcome and exit code as the state database records them.
    func lastRun(_ workspace: Workspace, _ state: String) throws -> [String] {
        try #require(try StateDatabase(path: workspace.path(state)).rows("SELECT outcome, COALESCE(exit_code, '-') FROM run ORDER BY id DESC LIMIT 1").first)
    }

    @Test("a run stopped by a failure of its own (its state database locked past the busy timeout while downloading) is recorded failed with the code it exits with, not as SIGTERM")
    func internalFailureIsNoSignal() throws {
        let workspace = try Workspace()
        let server = try HTTPTestServer()
        let sources = (0..<60).map { "{\"url\": \"\(server.url("/busy/\($0).jpg"))\"}" }.joined(separator: ", ")
        let job = try workspace.writeJob("""
        {"version": 1, "name": "remote", "sources": [\(sources)],
         "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}], "format": {"type": "jpeg"}}],
         "state": "state/remote.sqlite"}
        """)
        // Workers hold their first sources while another process takes the write lock and keeps it
        // past runner's 5 s busy timeout; then their results must be recorded.
        let pauses = try Pauses("worker.task", in: workspace)
        let run = try workspace.start([job, "--log-format", "json"], environment: pauses.environment)
        // Either worker, or both, may be holding a source by now.
        #expect(!pauses.wait(for: "worker.task", of: run).isEmpty)
        let holder = try RunningCommand(systemPython, arguments: ["-c", """
            import sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("BEGIN EXCLUSIVE"); print("locked", flush=True); time.sleep(300)
            """, workspace.path("state/remote.sqlite")], directory: workspace.root, environment: [:])
        #expect(holder.waitUntil { holder.stdoutSoFar.contains("locked") }, "\(holder.stderrSoFar)")
        try pauses.releaseAll()
        // Once the run says it is stopping, the lock is given back: the run records its own end
        // (it waits up to the busy timeout for it), as it would once another writer is done.
        #expect(run.waitUntil { run.stdoutSoFar.contains("stopping, finishing items in flight") }, "\(run.stdoutSoFar.suffix(400))")
        holder.signal(SIGKILL)
        _ = holder.wait()
        let result = run.wait()
        #expect(result.status == 74, "\(result.stdout.suffix(400)) \(result.stderr)")
        #expect(result.stderr.contains("cannot write the state database"), "\(result.stderr)")
        let summary = try #require(summaryEvent(result.stdout), "\(result.stdout.suffix(400))")
        #expect(summary["exitCode"] as? Int == 74 && summary["outcome"] as? String == "failed", "\(summary)")
        #expect(summary["interrupted"] is NSNull, "no signal stopped it: \(summary)")
        #expect(try lastRun(workspace, "state/remote.sqlite") == ["failed", "74"])
        let status = try workspace.run(["status", job]).stdout
        #expect(status.contains("failed exit 74"), "\(status)")
        #expect(!status.contains("interrupted"), "\(status)")
        // Nothing was lost: the next run finishes the rest.
        let next = try workspace.run([job])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(workspace.files(in: "out").count == 60)
    }

    @Test("--metrics into a folder that does not exist is a command-line error before any work")
    func metricsFolderChecked() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let job = try simpleJob(workspace)
        let result = try workspace.run([job, "--metrics", workspace.path("nowhere/job.prom")])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--metrics: no such folder \(workspace.path("nowhere"))"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.path("out")), "nothing was run")
    }

    @Test("a metrics file that cannot be written: the summary is printed, the run exits 73 and records 73; the work stands")
    func metricsWriteFails() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let job = try simpleJob(workspace)
        // /proc exists but takes no new file.
        let result = try workspace.run([job, "--metrics", "/proc/runner-test.prom"])
        #expect(result.status == 73, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("1 done, 0 failed") && result.stdout.contains("then failed: cannot write the metrics file /proc/runner-test.prom"),
                "\(result.stdout)")
        #expect(result.stderr.contains("cannot write the metrics file /proc/runner-test.prom"), "\(result.stderr)")
        #expect(try lastRun(workspace, "state.sqlite") == ["finished", "73"])
        #expect(try workspace.run([job]).stdout.contains("0 done, 0 failed, 1 up to date"), "the work stood")
    }

    @Test("a log reader that goes away (`runner JOB --log-format json | head -1`) loses only the lines: the run finishes and records every item")
    func closedLogReader() throws {
        let workspace = try Workspace()
        for name in ["friends.jpg", "aitzgorri.jpg", "bird-lamp.png"] {
            try workspace.copyFixtures(["photos/" + name], to: "in")
        }
        let job = try simpleJob(workspace)
        // The runner's later lines meet a closed pipe (EPIPE); FileHandle's write trapped on it (SIGILL).
        let result = try RunningCommand("/bin/bash", arguments: ["-c", #""$0" "$1" --log-format json | head -c 1 >/dev/null; exit ${PIPESTATUS[0]}"#,
                                                                  RunnerBinary.path, job],
                                        directory: workspace.root, environment: [:]).wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try lastRun(workspace, "state.sqlite") == ["finished", "0"])
        #expect(workspace.files(in: "out").count == 3)
    }
}
