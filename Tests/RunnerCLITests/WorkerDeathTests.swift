import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("When a worker dies", .serialized)
struct WorkerDeathTests {
    @Test("a worker killed after staging one of a source's outputs leaves no temporary file, even when the source ends crashed")
    func stagedFilesOfACrashedSourceAreRemoved() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/aitzgorri.jpg"], to: "in")
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [
               {"name": "fast", "path": "out/fast/{stem}.jpg",
                "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}], "format": {"type": "jpeg"}},
               {"name": "second", "path": "out/second/{stem}.jpg",
                "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "jpeg"}}],
             "concurrency": {"process": 1}, "state": "state.sqlite"}
            """)
        // Each worker pauses once it has staged the `fast` output, before the other.
        let pauses = try Pauses("worker.staged@out/fast/", in: workspace)
        // -v: a worker's stderr reaches the test's, so a worker that dies of its own says why.
        let run = try workspace.start([job, "--log-format", "json", "-v"], environment: pauses.environment)
        // `.NAME.runner-tmp-PID-HOST`, PID the runner's.
        let staged = ".aitzgorri.jpg.runner-tmp-\(run.process.processIdentifier)-"
        // Twice (the attempt and its retry): the worker holds a staged output; kill it there.
        for attempt in 1...2 {
            let paused = try #require(pauses.wait(for: "worker.staged", of: run).first,
                                      "attempt \(attempt): \(run.stdoutSoFar.suffix(1500)) \(run.stderrSoFar.suffix(1500))")
            #expect(workspace.files(in: "out/fast").contains { $0.hasPrefix(staged) }, "attempt \(attempt): nothing staged")
            kill(paused.pid, SIGKILL)
            pauses.release(paused)
            if attempt == 1 {
                #expect(run.waitUntil { run.stdoutSoFar.contains("retrying it once") })
            }
        }
        let result = run.wait()
        #expect(result.status == 1, "\(result.stderr)")
        let state = try StateDatabase(path: workspace.path("state.sqlite"))
        #expect(try state.count(state: "failed") == 2)
        let kind: String? = try state.scalar("SELECT DISTINCT error_kind FROM item")
        #expect(kind == "crashed")
        #expect(workspace.files(in: "out").isEmpty, "left behind: \(workspace.files(in: "out"))")
    }
}
