import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("Workers that hang or run away")
struct WorkerLimitTests {
    @Test("a worker that stops answering is killed after limits.itemTimeout: its source fails as crashed, the source queued behind it and the rest are done, the run ends")
    func hungWorkerIsReplaced() throws {
        let workspace = try Workspace()
        try photoSources(workspace, count: 3)
        try FileManager.default.copyItem(atPath: Fixtures.path("photos/friends.jpg"), toPath: workspace.path("in/hangme.jpg"))
        // The hang never ends; the timeout is long enough that no real render on a loaded machine reaches it.
        let job = try oneOutputJob(workspace, extra: #", "limits": {"itemTimeout": 8}"#)
        let run = try workspace.start([job, "-j", "1"], environment: ["RUNNER_TEST_HANG_ON": "hangme"])
        let result = run.wait()
        #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("3 done, 1 failed"), "\(result.stdout)")
        let failed = try failures(workspace, job)
        #expect(failed.count == 1 && failed["hangme.jpg@o"]?.kind == "crashed", "\(failed)")
        #expect(failed["hangme.jpg@o"]?.message.contains("stopped answering and was killed after limits.itemTimeout (8 s)") == true,
                "\(failed)")
        // Tried once: a source that outlasted the watchdog would only outlast it again.
        #expect(!result.stderr.contains("retrying it once"), "\(result.stderr)")
        #expect(try checkRecordsAgainstDisk(workspace, state: "state/job.sqlite") == ["done": 3, "failed": 1])
        #expect(childProcesses(of: run.pid).isEmpty, "no worker outlived the run")
    }

    @Test("an image whose full decode would need more than limits.maxMemory fails as too-large from its header; a smaller one is done")
    func decodeOverMaxMemory() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        // 8000 x 8000 grey: a few hundred bytes of PNG, 61 MiB decoded.
        try VipsCLI.run("vips", ["black", workspace.path("in/wide.png"), "8000", "8000"])
        let job = try oneOutputJob(workspace, extra: #", "limits": {"maxMemory": 16000000}"#)
        let result = try workspace.run([job])
        #expect(result.status == 1, "\(result.stderr)")
        let failed = try failures(workspace, job)
        #expect(failed.count == 1 && failed["wide.png@o"]?.kind == "too-large", "\(failed)")
        #expect(failed["wide.png@o"]?.message == "image needs 61 MiB decoded (8000x8000, 1 bands of 1 bytes), over limits.maxMemory 16000000 (15 MiB)",
                "\(failed)")
        #expect(workspace.files(in: "out") == ["friends.png"])
        // The limit decided it: raising it tries the source again.
        try oneOutputJob(workspace, extra: #", "limits": {"maxMemory": 100000000}"#)
        #expect(try workspace.run([job]).stdout.contains("1 done, 0 failed, 1 up to date"))
    }

    @Test("a render that runs away past the worker's address space (twice limits.maxMemory plus 1 GiB) fails its own item with libvips' out-of-memory message; the source's other output is done")
    func runawayRenderIsCapped() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/aitzgorri.jpg"], to: "in")
        // The header promises 3 MiB; the second output asks for a 20000-pixel-wide result (about 760 MB).
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "small", "path": "out/small/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "jpeg"}},
                         {"name": "huge", "path": "out/huge/{stem}.jpg", "chain": [{"op": "resize", "width": 20000, "enlarge": true}], "format": {"type": "jpeg"}}],
             "limits": {"maxMemory": 16777216}, "state": "state/job.sqlite"}
            """)
        let result = try workspace.run([job])
        #expect(result.status == 1, "\(result.stderr)")
        let failed = try failures(workspace, job)
        #expect(failed.count == 1 && failed["aitzgorri.jpg@huge"]?.message.contains("out of memory") == true, "\(failed)")
        #expect(workspace.files(in: "out") == ["small/aitzgorri.jpg"])
        #expect(try checkRecordsAgainstDisk(workspace, state: "state/job.sqlite") == ["done": 1, "failed": 1])
    }
}
