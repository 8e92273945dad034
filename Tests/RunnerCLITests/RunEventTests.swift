import Foundation
import Testing
import TestSupport
import Reporting

@Suite("--log-format json: the events a run writes and their schema (runner schema --events)", .serialized)
struct RunEventTests {
    @Test("a local and URL job, run, run again in an outage, then interrupted, writes every kind of event and item state, a summary's failure and signal; each line valid against the schema and read back by RunEvent")
    func everyEventValid() throws {
        let workspace = try Workspace()
        let server = try HTTPTestServer()
        try workspace.copyFixtures(["photos/friends.jpg", "broken/truncated.jpg"], to: "in")
        try workspace.write(["/img/a.jpg", "/status/404/x.jpg", "/nocache/n.jpg"].map(server.url).joined(separator: "\n") + "\n", to: "urls.txt")
        // Output c fails on every source (process, decided by the content): known failures once revalidated.
        // Block w's 9000 is skipped for every source: its 8000 makes each at its own width.
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}, {"list": "urls.txt"}],
             "outputs": [{"name": "t", "path": "out/t/{dir}/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "jpeg"}},
                         {"name": "c", "path": "out/c/{dir}/{stem}.jpg", "chain": [{"op": "crop", "x": 100000, "y": 0, "width": 10, "height": 10}], "format": {"type": "jpeg"}},
                         {"name": "w", "path": "out/w/{dir}/{stem}-{width}.jpg", "widths": [8000, 9000], "chain": [], "format": {"type": "jpeg"}}],
             "retry": {"initialDelay": 0.05, "maxDelay": 0.1}, "state": "state.sqlite"}
            """)
        // The first run is held at friends.jpg until a progress event is out.
        let pauses = try Pauses("worker.task@in/friends.jpg", in: workspace)
        let arguments = [job, "--log-format", "json", "-j", "1"]
        let run = try workspace.start(arguments + ["-v", "--progress-interval", "0.1"], environment: pauses.environment)
        let paused = pauses.wait(for: "worker.task", of: run)
        #expect(paused.count == 1)
        #expect(run.waitUntil { run.stdoutSoFar.contains(#""event":"progress""#) })
        paused.forEach(pauses.release)
        let first = run.wait()
        #expect(first.status == 1, "\(first.stderr)")
        // The origin down: a notice, the cached original served unrevalidated, the 404 blocked; then
        // the metrics file cannot be written (a folder in its place): the summary's failure.
        try server.outage("503")
        try FileManager.default.createDirectory(atPath: workspace.path("job.prom"), withIntermediateDirectories: true)
        let second = try workspace.run(arguments + ["--metrics", workspace.path("job.prom")])
        #expect(second.status == 73, "\(second.stderr)")
        // Interrupted at friends.jpg: the summary's signal.
        let forced = try workspace.start(arguments + ["--force"], environment: pauses.environment)
        #expect(pauses.wait(for: "worker.task", of: forced).count == 1)
        forced.signal(SIGINT)
        #expect(forced.waitUntil { forced.stdoutSoFar.contains("finishing items in flight") })
        try pauses.releaseAll()
        let third = forced.wait()
        #expect(third.status == 130, "\(third.stderr)")

        let lines = (first.stdout + second.stdout + third.stdout).split(separator: "\n").map(String.init)
        try workspace.write(lines.joined(separator: "\n") + "\n", to: "events.jsonl")
        for (line, verdict) in zip(lines, try schemaVerdicts(workspace, [workspace.path("events.jsonl")], schema: ["--events"])) {
            #expect(verdict == "ok", "\(line): \(verdict)")
        }
        var seen: Set<String> = []
        var summaries: [RunEvent.Summary] = []
        for line in lines {
            switch try JSONDecoder().decode(RunEvent.self, from: Data(line.utf8)).body {
            case .plan: seen.insert("plan")
            case .item(let item): seen.insert("item " + item.state.rawValue)
            case .libvipsWarning: seen.insert("libvips-warning")
            case .notice: seen.insert("notice")
            case .progress: seen.insert("progress")
            case .summary(let summary): summaries.append(summary)
            }
        }
        #expect(seen == Set(["plan", "libvips-warning", "notice", "progress"] + RunEvent.Item.State.allCases.map { "item " + $0.rawValue }))
        #expect(summaries.map(\.exitCode) == [1, 73, 130])
        #expect(summaries.map(\.interrupted) == [nil, nil, Int(SIGINT)] && summaries[1].failure?.contains("metrics") == true)
    }
}
