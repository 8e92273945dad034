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
        // The first output is staged at once; the second takes a second or more to render (four blurs:
        // libvips 8.16's are fast enough that one left the retry's window too short to catch).
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [
               {"name": "fast", "path": "out/fast/{stem}.jpg",
                "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}], "format": {"type": "jpeg"}},
               {"name": "slow", "path": "out/slow/{stem}.jpg",
                "chain": [{"op": "resize", "width": 4000, "enlarge": true}, {"op": "blur", "sigma": 12}, {"op": "blur", "sigma": 12},
                          {"op": "blur", "sigma": 12}, {"op": "blur", "sigma": 12}],
                "format": {"type": "jpeg"}}],
             "concurrency": {"process": 1}, "state": "state.sqlite"}
            """)
        // -v: a worker's stderr reaches the test's, so a worker that dies of its own says why.
        let run = try workspace.start([job, "--log-format", "json", "-v"])
        // `.NAME.runner-tmp-PID-HOST`, PID the runner's.
        let staged = ".aitzgorri.jpg.runner-tmp-\(run.process.processIdentifier)-"
        // Twice (the attempt and its retry): wait for the fast output to be staged, then kill the worker.
        for attempt in 1...2 {
            var killed = false
            #expect(run.waitUntil {
                guard workspace.files(in: "out/fast").contains(where: { $0.hasPrefix(staged) }) else { return false }
                for worker in childProcesses(of: run.process.processIdentifier) { kill(worker, SIGKILL); killed = true }
                return killed
            }, "attempt \(attempt): \(run.stdoutSoFar.suffix(1500)) \(run.stderrSoFar.suffix(1500))")
            if attempt == 1 {
                // The retry stages the file again; wait until the dead worker's copy is gone or replaced.
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
