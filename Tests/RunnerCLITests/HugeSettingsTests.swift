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
