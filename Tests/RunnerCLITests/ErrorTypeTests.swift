import Foundation
import Testing
import TestSupport

/// Each failure is told as what it is: the machine's, the server's, or a broken worker's, with the
/// exit code and the retry rule that go with it.
@Suite("Failures named for what they are", .serialized)
struct ErrorTypeTests {
    @Test("a state lock that cannot be opened is the machine's problem: exit 74, not a job-file error (2)")
    func lockFileUnavailable() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/aitzgorri.jpg"], to: "in")
        try workspace.write("not a folder", to: "blocker")
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}],
                          "format": {"type": "jpeg"}}],
             "state": "blocker/state.sqlite"}
            """)
        let result = try workspace.run([job])
        #expect(result.status == ExitStatus.stateUnavailable, "\(result.stderr)")
        #expect(result.stderr.contains("cannot open the state lock"), "\(result.stderr)")
        #expect(!result.stderr.contains(": state:"), "not worded as a job-file key: \(result.stderr)")
        #expect(workspace.files(in: "out").isEmpty)
    }

    @Test("a body that cannot be stored here fails `write` with the system's words, is not blacklisted, and is asked for again next run")
    func localDiskFailureDuringDownload() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        try workspace.write("not a folder", to: "blocker")
        let job = try remoteJob(workspace, urls: [server.url("/img/a.jpg")], extra: #", "cache": "blocker/originals""#)
        let first = try workspace.run([job])
        #expect(first.status == 1, "\(first.stderr)")
        let item = try #require(try itemsByPath(workspace)["/img/a.jpg"])
        #expect(item.state == "failed" && item.kind == "write", "\(item)")
        #expect(item.message?.contains("Not a directory") == true, "\(String(describing: item.message))")
        #expect(item.message?.contains("curl error") == false, "\(String(describing: item.message))")
        #expect(try StateDatabase(path: workspace.path("state.sqlite")).scalar("SELECT COUNT(*) FROM blacklist") == 0)
        #expect(try server.stats().counts["/img/a.jpg"] == 1, "a local failure is not retried within the run")
        let second = try workspace.run([job])
        #expect(second.status == 1, "\(second.stderr)")
        #expect(try server.stats().counts["/img/a.jpg"] == 2, "the next run asks again: the URL is not blacklisted")
    }

    @Test("a worker that answers with garbage is a protocol error: killed, its source retried once then failed `crashed`; the run goes on")
    func malformedWorkerReply() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/aitzgorri.jpg", "photos/fig-bowl.jpg"], to: "in")
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}],
             "outputs": [{"name": "t", "path": "out/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}],
                          "format": {"type": "jpeg"}}],
             "concurrency": {"process": 1}, "state": "state.sqlite"}
            """)
        let result = try workspace.run([job], environment: ["RUNNER_TEST_GARBLE_ON": "fig-bowl"])
        #expect(result.status == 1, "\(result.stderr)")
        let printed = result.stdout + result.stderr
        #expect(printed.contains("sent a malformed message") && printed.contains("retrying it once"), "\(printed)")
        let state = try StateDatabase(path: workspace.path("state.sqlite"))
        #expect(try state.count(state: "done") == 1)
        let message: String? = try state.scalar("SELECT error_message FROM item WHERE error_kind = 'crashed'")
        #expect(message?.contains("sent a malformed message") == true, "\(String(describing: message))")
        #expect(workspace.files(in: "out") == ["aitzgorri.jpg"])
    }
}
