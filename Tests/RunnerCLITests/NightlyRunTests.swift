import Foundation
import Testing
import TestSupport

/// Every JSON object printed on stdout, in order.
func jsonEvents(_ stdout: String) -> [[String: Any]] {
    stdout.split(separator: "\n").compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
}

/// Attempts recorded for the item of the source whose file name is `name`.
func attempts(_ workspace: Workspace, source name: String) throws -> Int? {
    try StateDatabase(path: workspace.path("state.sqlite"))
        .scalar("SELECT attempts FROM item WHERE source_key LIKE ?", ["%/" + name])
}

/// What a nightly cron job sees: failures its sources' content decided are reported once, then
/// carried over quietly until the content changes; exit 1 means something new failed.
@Suite("Nightly runs go quiet", .serialized)
struct NightlyRunTests {
    @Test("a corrupt file fails once; later runs carry it over (exit 0, counted) until it changes or --retry-failed")
    func contentFailureIsFinal() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["broken/truncated.jpg", "photos/friends.jpg"], to: "in")
        let job = try simpleJob(workspace)

        let first = try workspace.run([job])
        #expect(first.status == 1, "a new failure exits 1")
        #expect(first.stdout.contains("1 done, 1 failed"), "\(first.stdout)")

        let second = try workspace.run([job])
        #expect(second.status == 0, "a failure carried over unchanged leaves the exit 0: \(second.stdout)")
        #expect(second.stdout.contains("0 done, 0 failed, 1 up to date"), "\(second.stdout)")
        #expect(second.stdout.contains("1 known failure: runner failed \(job)"), "\(second.stdout)")
        #expect(try attempts(workspace, source: "truncated.jpg") == 1, "the corrupt file is not decoded again")
        let plan = try workspace.run(["plan", job])
        #expect(plan.stdout.contains("0 to run, 0 to revalidate, 1 up to date, 0 blocked, 1 known failure (not retried without --retry-failed)"), "\(plan.stdout)")
        // `runner failed` still lists it, with the decoder's message.
        #expect(try workspace.run(["failed", job]).stdout.contains("truncated.jpg -> t: decode: "))

        let strict = try workspace.run([job, "--strict"])
        #expect(strict.status == 1, "--strict exits 1 for any failure on record")
        #expect(try attempts(workspace, source: "truncated.jpg") == 1)

        // The source changed (a new modification time): its content may decode now, so it is tried.
        let changed = Date().addingTimeInterval(-60)
        try FileManager.default.setAttributes([.modificationDate: changed], ofItemAtPath: workspace.path("in/truncated.jpg"))
        let afterChange = try workspace.run([job])
        #expect(afterChange.status == 1, "a retried failure that fails again is new")
        #expect(afterChange.stdout.contains("0 done, 1 failed"), "\(afterChange.stdout)")
        #expect(try attempts(workspace, source: "truncated.jpg") == 1, "attempts count per content")

        let retried = try workspace.run([job, "--retry-failed"])
        #expect(retried.status == 1)
        #expect(try attempts(workspace, source: "truncated.jpg") == 2)
    }

    @Test("a source that fails every output is one line naming them, not a line per output")
    func oneLinePerFailedSource() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["broken/truncated.jpg", "photos/friends.jpg"], to: "in")
        let outputs = ["small", "medium", "large", "square", "grey"].map { name in
            #"{"name": "\#(name)", "path": "out/{name}/{stem}.jpg", "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "jpeg"}}"#
        }
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}], "outputs": [\(outputs.joined(separator: ", "))], "state": "state.sqlite"}
            """)
        for arguments in [[job], [job, "--quiet", "--force"]] {
            let run = try workspace.run(arguments)
            #expect(run.status == 1)
            #expect(run.stdout.contains("5 done, 5 failed"), "\(run.stdout)")
            let failed = run.stderr.split(separator: "\n").filter { $0.contains("failed: ") }
            #expect(failed.count == 1, "\(run.stderr)")
            #expect(failed.first?.contains("failed: \(workspace.path("in/truncated.jpg")) (small, medium, large, square, grey): decode: ") == true,
                    "\(run.stderr)")
        }
    }

    @Test("a too-large failure stands while the limits stay; raising limits.maxPixels tries it again")
    func limitsDecideToo() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        let tight = try simpleJob(workspace, extra: #", "limits": {"maxPixels": 1000}"#)
        #expect(try workspace.run([tight]).status == 1)
        let again = try workspace.run([tight])
        #expect(again.status == 0)
        #expect(again.stdout.contains("1 known failure"), "\(again.stdout)")
        let roomy = try simpleJob(workspace, extra: #", "limits": {"maxPixels": 100000000}"#)
        let raised = try workspace.run([roomy])
        #expect(raised.status == 0)
        #expect(raised.stdout.contains("1 done, 0 failed"), "\(raised.stdout)")
    }

    @Test("a FIFO among the sources fails once, like a corrupt file: its type is what it is; a real image in its place renders")
    func notARegularFileIsFinal() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        #expect(mkfifo(workspace.path("in/pipe.jpg"), 0o644) == 0)
        let job = try simpleJob(workspace)

        let first = try workspace.run([job])
        #expect(first.status == 1, "a new failure: \(first.stdout)\(first.stderr)")
        #expect(first.stderr.contains("pipe.jpg: not a regular file"), "\(first.stderr)")
        let nights = try (0..<2).map { _ in try workspace.run([job]) }
        #expect(nights.map(\.status) == [0, 0], "carried over: \(nights.map(\.stdout))")
        #expect(nights.allSatisfy { $0.stdout.contains("1 known failure: runner failed \(job)") }, "\(nights.map(\.stdout))")
        #expect(try attempts(workspace, source: "pipe.jpg") == 1, "not tried again")
        #expect(try workspace.run(["failed", job]).stdout.contains("pipe.jpg -> t: unreadable: "))

        // The path's type changed: a photograph now, rendered.
        try FileManager.default.removeItem(atPath: workspace.path("in/pipe.jpg"))
        try FileManager.default.copyItem(atPath: Fixtures.path("photos/fig-bowl.jpg"), toPath: workspace.path("in/pipe.jpg"))
        let replaced = try workspace.run([job])
        #expect(replaced.status == 0, "\(replaced.stdout)\(replaced.stderr)")
        #expect(replaced.stdout.contains("1 done, 0 failed, 1 up to date"), "\(replaced.stdout)")
        #expect(FileManager.default.fileExists(atPath: workspace.path("out/pipe.jpg")))
    }

    @Test("a downloaded body that does not decode is blacklisted: the next run sends no request; --quiet prints nothing but the summary")
    func badImageDataBlacklisted() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: [server.url("/corrupt/a.jpg"), server.url("/img/b.jpg")])
        let first = try workspace.run([job, "--quiet"])
        #expect(first.status == 1)
        #expect(first.stderr.contains("failed: \(server.url("/corrupt/a.jpg")) (t): decode: "), "\(first.stderr)")

        try server.reset()
        let second = try workspace.run([job, "--quiet"])
        #expect(try server.stats().counts["/corrupt/a.jpg"] == nil, "a blacklisted URL gets no request")
        #expect(second.status == 0, "a blocked URL is a failure carried over: \(second.stdout)")
        #expect(second.stdout.contains("1 blocked"), "\(second.stdout)")
        #expect(second.stderr.isEmpty, "quiet prints only this run's failures: \(second.stderr)")
        #expect(second.stdout.split(separator: "\n").count == 1, "quiet prints the summary alone: \(second.stdout)")
        let failed = try workspace.run(["failed", job])
        #expect(failed.stdout.contains("blocked: \(server.url("/corrupt/a.jpg")): decode: "), "\(failed.stdout)")
        #expect(try workspace.run([job, "--strict", "--quiet"]).status == 1)
    }

    @Test("a blacklisted URL is said once, when it fails; later nights count it in the summary and leave the rest to runner failed")
    func blockedSaidOnce() throws {
        let server = try HTTPTestServer()
        let workspace = try Workspace()
        let job = try remoteJob(workspace, urls: [server.url("/status/404/a.jpg"), server.url("/img/b.jpg")])
        let first = try workspace.run([job])
        #expect(first.status == 1)
        #expect(first.stderr.components(separatedBy: server.url("/status/404/a.jpg")).count == 2, "said once: \(first.stderr)")
        #expect(first.stderr.contains("failed: \(server.url("/status/404/a.jpg")) (t): download: HTTP 404 (blacklisted)"), "\(first.stderr)")
        // A 404 was one try, not none.
        let failedFirst = try workspace.run(["failed", job]).stdout
        #expect(failedFirst.contains("download: HTTP 404 (blacklisted) (failing since ") && failedFirst.contains(", 1 attempt)"), "\(failedFirst)")
        for _ in 0..<2 {
            let night = try workspace.run([job])
            #expect(night.status == 0)
            #expect(!night.stderr.contains("/status/404/a.jpg"), "a known-blocked URL is not said again: \(night.stderr)")
            #expect(night.stdout.contains("1 up to date, 1 blocked in "), "\(night.stdout)")
            #expect(night.stdout.contains("; 1 blocked item: runner failed \(job)"), "\(night.stdout)")
        }
        // Three nights later it failed once and was not asked for since: the line says just that.
        let failed = try workspace.run(["failed", job]).stdout
        #expect(failed.contains("blocked: \(server.url("/status/404/a.jpg")): HTTP 404 (first failed "), "\(failed)")
        #expect(failed.contains("failed 1 time, last ") && failed.contains("; not requested since)"), "\(failed)")
        let json = try workspace.run(["failed", job, "--json"]).stdout
        #expect(json.contains(server.url("/status/404/a.jpg")) && !json.contains(#"\/"#), "slashes as they are: \(json)")
    }

    @Test("an output replaced by a folder or emptied is not up to date: the run says so or makes it again")
    func outputMustBeAFile() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg", "photos/fig-bowl.jpg"], to: "in")
        let job = try simpleJob(workspace)
        #expect(try workspace.run([job]).status == 0)
        try FileManager.default.removeItem(atPath: workspace.path("out/friends.jpg"))
        try FileManager.default.createDirectory(atPath: workspace.path("out/friends.jpg"), withIntermediateDirectories: false)
        try Data().write(to: URL(fileURLWithPath: workspace.path("out/fig-bowl.jpg")))
        let next = try workspace.run([job])
        #expect(next.status == 1 && next.stdout.contains("1 done, 1 failed, 0 up to date"), "\(next.stdout)\(next.stderr)")
        #expect(next.stderr.contains("friends.jpg") && next.stderr.contains("write"), "\(next.stderr)")
        #expect(ImageProbe.open(workspace.path("out/fig-bowl.jpg")) != nil, "the emptied output was made again")
    }

    @Test("a failure retried night after night says when it first failed and how many runs tried it")
    func failingSince() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["photos/friends.jpg"], to: "in")
        try FileManager.default.copyItem(atPath: Fixtures.path("broken/truncated.jpg"), toPath: workspace.path("in/truncated.jpg"))
        let job = try simpleJob(workspace)
        func failedItem() throws -> [String: Any] {
            let object = try JSONSerialization.jsonObject(with: Data(try workspace.run(["failed", job, "--json"]).stdout.utf8)) as? [String: Any]
            return try #require((object?["failed"] as? [[String: Any]])?.first)
        }
        #expect(try workspace.run([job]).status == 1)
        // The first failure a day ago, so the latest one cannot be taken for it.
        try StateDatabase.write(workspace.path("state.sqlite"), "UPDATE item SET failed_since = failed_since - 86400")
        let first = try failedItem()
        #expect(try workspace.run([job, "--retry-failed"]).status == 1)
        let again = try failedItem()
        #expect(again["since"] as? String == first["since"] as? String, "the first failure, not the latest: \(first) \(again)")
        #expect(first["attempts"] as? Int == 1 && again["attempts"] as? Int == 2, "\(again)")
    }

    @Test("off a terminal, progress lines start with an ISO 8601 time; JSON runs emit progress events; every event has a time")
    func progressOffTerminal() throws {
        let workspace = try Workspace()
        try FileManager.default.createDirectory(atPath: workspace.path("in"), withIntermediateDirectories: true)
        for index in 0..<12 {
            try FileManager.default.linkItem(atPath: Fixtures.path("extra/ladybird.jpg"), toPath: workspace.path("in/\(index).jpg"))
        }
        let job = try simpleJob(workspace)
        // Each run is held at in/0.jpg until its first progress line is out, however fast the machine.
        let pauses = try Pauses("worker.task@in/0.jpg", in: workspace)
        func held(_ arguments: [String], until printed: (RunningCommand) -> Bool) throws -> CommandResult {
            let run = try workspace.start([job, "-j", "1", "--progress-interval", "0.05"] + arguments, environment: pauses.environment)
            let paused = pauses.wait(for: "worker.task", of: run)
            #expect(paused.count == 1 && run.waitUntil { printed(run) }, "\(run.stdoutSoFar) \(run.stderrSoFar)")
            paused.forEach(pauses.release)
            return run.wait()
        }
        let text = try held([]) { $0.stderrSoFar.contains("items/s") }
        #expect(text.status == 0)
        let iso = #/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z /#
        let lines = text.stderr.split(separator: "\n")
        let progress = lines.filter { $0.contains("items/s") }
        #expect(!progress.isEmpty, "progress lines every 0.05 s: \(text.stderr)")
        for line in lines { #expect(line.contains(iso), "\(line)") }

        let json = try held(["--force", "--log-format", "json"]) { $0.stdoutSoFar.contains(#""event":"progress""#) }
        let events = jsonEvents(json.stdout)
        #expect(events.contains { $0["event"] as? String == "progress" && $0["total"] as? Int == 12 }, "\(json.stdout)")
        // Paths as written: JSON does not need `/` escaped, and a person greps for the path.
        #expect(json.stdout.contains(#""key":"\#(workspace.path("in/0.jpg"))@t""#) && !json.stdout.contains(#"\/"#), "\(json.stdout)")
        for event in events {
            let time = event["time"] as? String ?? ""
            #expect(time.contains(#/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/#), "\(event)")
        }
    }

    @Test("off a terminal, error lines and -v libvips warnings start with the time too; each distinct warning once per source")
    func errorsAndWarningsTimed() throws {
        let workspace = try Workspace()
        try workspace.copyFixtures(["quirky/junk-in-header.jpg", "quirky/bad-crc-text.png", "broken/truncated.jpg"], to: "in")
        let outputs = ["a", "b", "c"].map { name in
            #"{"name": "\#(name)", "path": "out/{name}/{stem}.png", "chain": [{"op": "thumbnail", "width": 32, "fit": "inside"}], "format": {"type": "png"}}"#
        }
        let job = try workspace.writeJob("""
            {"version": 1, "sources": [{"path": "in"}], "outputs": [\(outputs.joined(separator: ", "))], "state": "state.sqlite"}
            """)
        let iso = #/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z /#
        let verbose = try workspace.run([job, "-v", "-j", "1"])
        #expect(verbose.status == 1, "\(verbose.stderr)")
        let lines = verbose.stderr.split(separator: "\n")
        for line in lines { #expect(line.contains(iso), "\(line)") }
        let jpeg = "libvips: \(workspace.path("in/junk-in-header.jpg")): VipsJpeg: Corrupt JPEG data: 6 extraneous bytes before marker 0xc0"
        #expect(lines.filter { $0.hasSuffix(jpeg) }.count == 1, "once for the source's three outputs: \(verbose.stderr)")
        #expect(lines.filter { $0.hasSuffix("libvips: \(workspace.path("in/bad-crc-text.png")): tEXt: CRC error") }.count == 1,
                "\(verbose.stderr)")
        // A damaged tile warns on every read, with its numbers: one line, with how many more there were.
        let tiles = lines.filter { $0.contains("libvips: \(workspace.path("in/truncated.jpg")): error in tile ") }
        #expect(tiles.count == 1 && tiles[0].hasSuffix(" more like it)"), "\(verbose.stderr)")
        // Without -v, none.
        #expect(!(try workspace.run([job, "--force"]).stderr.contains("libvips:")))

        let usage = try workspace.run([job, "--jobs", "0"])
        #expect(usage.status == 64)
        #expect(usage.stderr.split(separator: "\n").first?.contains(#/^\d{4}-\d{2}-\d{2}T[0-9:.]+Z Error: --jobs must be at least 1/#) == true,
                "\(usage.stderr)")
        let missing = try workspace.run([workspace.path("nightly.json")])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains(#/^\d{4}-\d{2}-\d{2}T[0-9:.]+Z runner: /#), "\(missing.stderr)")
    }

    @Test("the ETA reads -- until an item has finished, then the time left")
    func etaUnknownAtFirst() {
        #expect(Reporter.progressLine(job: "j", finished: 0, total: 10, failed: 0, elapsed: 3).hasSuffix("ETA --"))
        #expect(Reporter.progressLine(job: "j", finished: 5, total: 10, failed: 1, elapsed: 5)
            == "j: 5/10 · 1.0 items/s · ETA 0:05 · 1 failed")
    }
}
