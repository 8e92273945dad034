import Foundation
import Testing
import TestSupport

/// An origin outage must not turn good items into failures: a cached original whose revalidation
/// fails transiently keeps its up-to-date outputs up to date (RFC 5861's stale-if-error) within
/// `http.staleIfError` of its last successful revalidation.
@Suite("When the origin goes down", .serialized)
struct StaleIfErrorTests {
    enum Outage: String, CaseIterable { case refused, unavailable = "503", timeout = "hang", maintenancePage = "html" }

    func urls(_ server: HTTPTestServer) -> [String] { ["a", "b", "c"].map { server.url("/img/\($0).jpg") } }

    @Test("refused, timing out, 503 or a maintenance page served as 200: items stay up to date, counted not revalidated, said once; exit 0; back with 304, nothing renders again",
          arguments: Outage.allCases)
    func outageKeepsOutputs(outage: Outage) throws {
        let workspace = try Workspace()
        var server: HTTPTestServer? = try HTTPTestServer()
        let port = server!.port
        let sources = urls(server!)
        let job = try remoteJob(workspace, urls: sources)
        #expect(try workspace.run([job]).status == 0)
        let outputs = workspace.files(in: "out/127.0.0.1_\(port)/img")
        #expect(outputs.count == 3)
        let written = outputs.map { workspace.modificationDate("out/127.0.0.1_\(port)/img/" + $0) }

        switch outage {
        case .refused: server = nil
        case .unavailable, .timeout, .maintenancePage: try server!.outage(outage.rawValue)
        }
        // A short timeout for the run in the outage alone (a hung origin times out); the others have the default.
        try remoteJob(workspace, urls: sources, extra: #", "http": {"timeout": 1}"#)
        let down = try workspace.run([job, "--metrics", workspace.path("job.prom")])
        #expect(down.status == 0, "\(down.stdout)\(down.stderr)")
        #expect(down.stdout.contains("0 done, 0 failed, 0 up to date, 3 not revalidated"), "\(down.stdout)")
        #expect((down.stdout + down.stderr).components(separatedBy: "cached originals serve unrevalidated").count - 1 == 1,
                "said once for the origin: \(down.stdout)\(down.stderr)")
        let status = try workspace.run(["status", job]).stdout
        #expect(status.contains("items: 3 done") && status.contains("not revalidated: 3 URL sources"), "\(status)")
        #expect(status.contains("0 up to date, 3 not revalidated, 0 blocked"), "the run's own line counts them: \(status)")
        let metrics = try String(contentsOfFile: workspace.path("job.prom"), encoding: .utf8)
        #expect(metrics.contains("runner_sources_not_revalidated{job=\"remote\"} 3"), "\(metrics)")
        #expect(metrics.contains("runner_run_exit_code{job=\"remote\"} 0"))

        switch outage {
        case .refused: server = try HTTPTestServer(port: port)
        case .unavailable, .timeout, .maintenancePage: try server!.outage("none")
        }
        try server!.reset()
        try remoteJob(workspace, urls: sources)
        let back = try workspace.run([job])
        #expect(back.status == 0 && back.stdout.contains("0 done, 0 failed, 3 up to date"), "\(back.stdout)")
        #expect(try server!.stats().conditional.values.reduce(0, +) == 3, "revalidated with 304s")
        #expect(outputs.map { workspace.modificationDate("out/127.0.0.1_\(port)/img/" + $0) } == written, "nothing rendered again")
        #expect(!(try workspace.run(["status", job]).stdout.contains("not revalidated: ")), "a successful revalidation clears it")
        #expect(!(try workspace.run(["failed", job]).stdout.contains("blocked:")), "the origin's bad night blacklisted nothing")
    }

    @Test("past http.staleIfError, and for a source with no cached original, items fail as download failures (exit 1)")
    func beyondTheWindow() throws {
        let workspace = try Workspace()
        let server = try HTTPTestServer()
        let job = try remoteJob(workspace, urls: Array(urls(server).prefix(2)), extra: #", "http": {"staleIfError": "0s"}"#)
        #expect(try workspace.run([job]).status == 0)
        try server.outage("503")
        let withinNothing = try workspace.run([job])
        #expect(withinNothing.status == 1 && withinNothing.stdout.contains("0 done, 2 failed"), "\(withinNothing.stdout)")

        // With the default window, the cached sources serve stale while a new one, never fetched, fails.
        let second = try Workspace()
        try server.outage("none")
        let cached = try remoteJob(second, urls: Array(urls(server).prefix(2)))
        #expect(try second.run([cached]).status == 0)
        try server.outage("503")
        let mixed = try second.run([try remoteJob(second, urls: urls(server))])
        #expect(mixed.status == 1, "\(mixed.stdout)")
        #expect(mixed.stdout.contains("0 done, 1 failed, 0 up to date, 2 not revalidated"), "\(mixed.stdout)")
    }
}
