import Foundation
import Testing
import TestSupport

/// Values the job reader accepts must not trap later, when they are converted for libcurl or libvips.
@Suite("Huge values a job file may hold")
struct HugeSettingsTests {
    @Test("http durations of 1e300 seconds mean no limit: the download runs, the runner does not trap")
    func hugeHTTPDurations() throws {
        let workspace = try Workspace()
        let server = try HTTPTestServer()
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"url": "\(server.url("/img/a.jpg"))"}],
             "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}],
             "http": {"timeout": 1e300, "connectTimeout": 9.3e18, "lowSpeedTime": 1.7976931348623157e308},
             "state": "state.sqlite"}
            """)
        let result = try workspace.run([job])
        #expect(result.status == 0, "\(result.stderr.suffix(500))")
        #expect(workspace.files(in: "out") == ["a.jpg"])
    }
}

@Suite("Huge values a job file may hold, in the worker")
struct HugeChainValuesTests {
    @Test("a watermark scale of 9.3e18 does not crash the worker")
    func hugeWatermarkScale() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["extra/ladybird.jpg"], to: "in")
        try FileManager.default.copyItem(atPath: Fixtures.path("watermark.png"), toPath: workspace.path("watermark.png"))
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "t", "path": "out/{stem}.jpg",
                          "chain": [{"op": "watermark", "image": "watermark.png", "scale": 9.3e18}], "format": {"type": "jpeg"}}],
             "state": "state.sqlite"}
            """)
        let result = try workspace.run([job])
        let state = try StateDatabase(path: workspace.path("state.sqlite"))
        let crashed: Int? = try state.scalar("SELECT COUNT(*) FROM item WHERE error_kind = 'crashed'")
        #expect(crashed == 0, "\(result.stderr.suffix(400))")
        #expect(result.status == 0 || result.status == 1)
    }
}

@Suite("A NUL in a source path")
struct NulSourceTests {
    @Test("runner validate on {\"path\": \"\\u0000\", \"recursive\": true} exits 2 (it crashed with SIGSEGV)")
    func nulSourcePath() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["extra/ladybird.jpg"], to: "sub")
        let job = try workspace.writeJob(#"""
            {"version": 1, "sources": [{"path": "\u0000", "recursive": true}],
             "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [], "format": {"type": "jpeg"}}]}
            """#)
        let result = try workspace.run(["validate", job])
        #expect(result.status == 2, "\(result.stderr.suffix(300))")
        #expect(result.stderr.contains("sources[0].path: must not contain a NUL character"))
    }
}
